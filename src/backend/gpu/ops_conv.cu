// im2col / col2im and 2-D pooling, NCHW f32. CPU twins: src/backend/cpu/ops_conv.cpp.
// col2im and the pooling backward passes gather per input pixel (no atomics: deterministic).
#include "backend/gpu/ops_kernels.h"
#include "backend/gpu/ops_launch.h"

namespace redline::gpu {
namespace {

using ops::ConvGeometry;

__global__ void im2col_kernel(const float* x, float* col, ConvGeometry g) {
  const int64_t plane = g.oh * g.ow;
  REDLINE_GRID_STRIDE(at, g.c * g.kh * g.kw * g.n * plane) {
    const int64_t q = at % plane, i = (at / plane) % g.n, r = at / (plane * g.n);
    const int64_t c = r / (g.kh * g.kw), ki = (r / g.kw) % g.kh, kj = r % g.kw;
    const int64_t iy = (q / g.ow) * g.stride_h - g.pad_h + ki * g.dilation_h;
    const int64_t ix = (q % g.ow) * g.stride_w - g.pad_w + kj * g.dilation_w;
    const bool inside = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
    col[at] = inside ? x[((i * g.c + c) * g.h + iy) * g.w + ix] : 0.0f;
  }
}

// x[i, c, iy, ix] += every col entry that im2col read from it (a gather: no atomics).
__global__ void col2im_kernel(const float* col, float* x, ConvGeometry g) {
  const int64_t plane = g.oh * g.ow;
  REDLINE_GRID_STRIDE(at, g.n * g.c * g.h * g.w) {
    const int64_t i = at / (g.c * g.h * g.w), c = (at / (g.h * g.w)) % g.c;
    const int64_t iy = (at / g.w) % g.h, ix = at % g.w;
    float acc = 0.0f;
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      const int64_t ty = iy + g.pad_h - ki * g.dilation_h;
      if (ty < 0 || ty % g.stride_h != 0 || ty / g.stride_h >= g.oh) continue;
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        const int64_t tx = ix + g.pad_w - kj * g.dilation_w;
        if (tx < 0 || tx % g.stride_w != 0 || tx / g.stride_w >= g.ow) continue;
        const int64_t r = (c * g.kh + ki) * g.kw + kj;
        acc += col[(r * g.n + i) * plane + (ty / g.stride_h) * g.ow + tx / g.stride_w];
      }
    }
    x[at] += acc;
  }
}

__global__ void max_pool_kernel(const float* x, float* y, int64_t* indices, ConvGeometry g) {
  REDLINE_GRID_STRIDE(at, g.n * g.c * g.oh * g.ow) {
    const int64_t p = at / (g.oh * g.ow), oy = (at / g.ow) % g.oh, ox = at % g.ow;
    const float* in = x + p * g.h * g.w;
    float best = -INFINITY;
    int64_t best_at = -1;
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      const int64_t iy = oy * g.stride_h - g.pad_h + ki * g.dilation_h;
      if (iy < 0 || iy >= g.h) continue;
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        const int64_t ix = ox * g.stride_w - g.pad_w + kj * g.dilation_w;
        if (ix < 0 || ix >= g.w) continue;
        const float v = in[iy * g.w + ix];
        if (best_at < 0 || v > best || v != v) {
          best = v;
          best_at = iy * g.w + ix;
        }
      }
    }
    y[at] = best;
    indices[at] = best_at < 0 ? 0 : best_at;
  }
}

// One thread per plane: the windows of one plane may overlap, so a plane is summed serially.
__global__ void max_pool_backward_kernel(const float* dy, const int64_t* indices, float* dx,
                                         ConvGeometry g) {
  REDLINE_GRID_STRIDE(p, g.n * g.c) {
    for (int64_t q = 0; q < g.oh * g.ow; ++q) {
      dx[p * g.h * g.w + indices[p * g.oh * g.ow + q]] += dy[p * g.oh * g.ow + q];
    }
  }
}

__global__ void avg_pool_kernel(const float* x, float* y, ConvGeometry g) {
  const float scale = 1.0f / static_cast<float>(g.kh * g.kw);
  REDLINE_GRID_STRIDE(at, g.n * g.c * g.oh * g.ow) {
    const int64_t p = at / (g.oh * g.ow), oy = (at / g.ow) % g.oh, ox = at % g.ow;
    const float* in = x + p * g.h * g.w;
    float acc = 0.0f;
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      const int64_t iy = oy * g.stride_h - g.pad_h + ki;
      if (iy < 0 || iy >= g.h) continue;
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        const int64_t ix = ox * g.stride_w - g.pad_w + kj;
        if (ix >= 0 && ix < g.w) acc += in[iy * g.w + ix];
      }
    }
    y[at] = acc * scale;
  }
}

__global__ void avg_pool_backward_kernel(const float* dy, float* dx, ConvGeometry g) {
  const float scale = 1.0f / static_cast<float>(g.kh * g.kw);
  REDLINE_GRID_STRIDE(at, g.n * g.c * g.h * g.w) {
    const int64_t p = at / (g.h * g.w), iy = (at / g.w) % g.h, ix = at % g.w;
    float acc = 0.0f;
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      const int64_t ty = iy + g.pad_h - ki;
      if (ty < 0 || ty % g.stride_h != 0 || ty / g.stride_h >= g.oh) continue;
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        const int64_t tx = ix + g.pad_w - kj;
        if (tx < 0 || tx % g.stride_w != 0 || tx / g.stride_w >= g.ow) continue;
        acc += dy[(p * g.oh + ty / g.stride_h) * g.ow + tx / g.stride_w];
      }
    }
    dx[at] += acc * scale;
  }
}

}  // namespace

void im2col(const float* x, float* col, const ConvGeometry& g, StreamHandle stream) {
  const int64_t n = g.c * g.kh * g.kw * g.n * g.oh * g.ow;
  if (n == 0) return;
  im2col_kernel<<<op_blocks(n), kOpThreads, 0, as_stream(stream)>>>(x, col, g);
  GPU_CHECK_LAUNCH();
}

void col2im(const float* col, float* x, const ConvGeometry& g, StreamHandle stream) {
  const int64_t n = g.n * g.c * g.h * g.w;
  if (n == 0) return;
  col2im_kernel<<<op_blocks(n), kOpThreads, 0, as_stream(stream)>>>(col, x, g);
  GPU_CHECK_LAUNCH();
}

void max_pool2d(const float* x, float* y, int64_t* indices, const ConvGeometry& g,
                StreamHandle stream) {
  const int64_t n = g.n * g.c * g.oh * g.ow;
  if (n == 0) return;
  max_pool_kernel<<<op_blocks(n), kOpThreads, 0, as_stream(stream)>>>(x, y, indices, g);
  GPU_CHECK_LAUNCH();
}

void max_pool2d_backward(const float* dy, const int64_t* indices, float* dx, const ConvGeometry& g,
                         StreamHandle stream) {
  if (g.n * g.c == 0) return;
  max_pool_backward_kernel<<<op_blocks(g.n * g.c), kOpThreads, 0, as_stream(stream)>>>(dy, indices,
                                                                                       dx, g);
  GPU_CHECK_LAUNCH();
}

void avg_pool2d(const float* x, float* y, const ConvGeometry& g, StreamHandle stream) {
  const int64_t n = g.n * g.c * g.oh * g.ow;
  if (n == 0) return;
  avg_pool_kernel<<<op_blocks(n), kOpThreads, 0, as_stream(stream)>>>(x, y, g);
  GPU_CHECK_LAUNCH();
}

void avg_pool2d_backward(const float* dy, float* dx, const ConvGeometry& g, StreamHandle stream) {
  const int64_t n = g.n * g.c * g.h * g.w;
  if (n == 0) return;
  avg_pool_backward_kernel<<<op_blocks(n), kOpThreads, 0, as_stream(stream)>>>(dy, dx, g);
  GPU_CHECK_LAUNCH();
}

}  // namespace redline::gpu
