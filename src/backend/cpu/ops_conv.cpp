// CPU twins of src/backend/gpu/ops_conv.cu: im2col / col2im (convolution is these plus GEMM) and
// 2-D pooling. All NCHW, f32.
#include <limits>

#include "backend/cpu/ops_kernels.h"

namespace redline::cpu {

using ops::ConvGeometry;

// col row r = (c, ki, kj), column (i, oy, ox): x[i, c, oy*sh - ph + ki*dh, ox*sw - pw + kj*dw].
void im2col(const float* x, float* col, const ConvGeometry& g) {
  const int64_t rows = g.c * g.kh * g.kw;
  const int64_t plane = g.oh * g.ow;
#pragma omp parallel for collapse(2) if (rows * g.n * plane > (1 << 16))
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < g.n; ++i) {
      const int64_t c = r / (g.kh * g.kw), ki = (r / g.kw) % g.kh, kj = r % g.kw;
      const float* image = x + (i * g.c + c) * g.h * g.w;
      float* out = col + (r * g.n + i) * plane;
      for (int64_t oy = 0; oy < g.oh; ++oy) {
        const int64_t iy = oy * g.stride_h - g.pad_h + ki * g.dilation_h;
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          const int64_t ix = ox * g.stride_w - g.pad_w + kj * g.dilation_w;
          const bool inside = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
          out[oy * g.ow + ox] = inside ? image[iy * g.w + ix] : 0.0f;
        }
      }
    }
  }
}

void col2im(const float* col, float* x, const ConvGeometry& g) {
  const int64_t plane = g.oh * g.ow;
#pragma omp parallel for collapse(2) if (g.n * g.c * g.kh * g.kw * plane > (1 << 16))
  for (int64_t i = 0; i < g.n; ++i) {
    for (int64_t c = 0; c < g.c; ++c) {  // (image, channel) planes are independent: no races
      float* image = x + (i * g.c + c) * g.h * g.w;
      for (int64_t ki = 0; ki < g.kh; ++ki) {
        for (int64_t kj = 0; kj < g.kw; ++kj) {
          const int64_t r = (c * g.kh + ki) * g.kw + kj;
          const float* in = col + (r * g.n + i) * plane;
          for (int64_t oy = 0; oy < g.oh; ++oy) {
            const int64_t iy = oy * g.stride_h - g.pad_h + ki * g.dilation_h;
            if (iy < 0 || iy >= g.h) continue;
            for (int64_t ox = 0; ox < g.ow; ++ox) {
              const int64_t ix = ox * g.stride_w - g.pad_w + kj * g.dilation_w;
              if (ix >= 0 && ix < g.w) image[iy * g.w + ix] += in[oy * g.ow + ox];
            }
          }
        }
      }
    }
  }
}

void max_pool2d(const float* x, float* y, int64_t* indices, const ConvGeometry& g) {
#pragma omp parallel for if (g.n * g.c * g.oh * g.ow > (1 << 14))
  for (int64_t p = 0; p < g.n * g.c; ++p) {
    const float* in = x + p * g.h * g.w;
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        float best = -std::numeric_limits<float>::infinity();
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
        const int64_t at = (p * g.oh + oy) * g.ow + ox;
        y[at] = best;
        indices[at] = best_at < 0 ? 0 : best_at;
      }
    }
  }
}

void max_pool2d_backward(const float* dy, const int64_t* indices, float* dx,
                         const ConvGeometry& g) {
#pragma omp parallel for if (g.n * g.c * g.oh * g.ow > (1 << 14))
  for (int64_t p = 0; p < g.n * g.c; ++p) {  // planes are independent
    for (int64_t q = 0; q < g.oh * g.ow; ++q) {
      dx[p * g.h * g.w + indices[p * g.oh * g.ow + q]] += dy[p * g.oh * g.ow + q];
    }
  }
}

void avg_pool2d(const float* x, float* y, const ConvGeometry& g) {
  const float scale = 1.0f / static_cast<float>(g.kh * g.kw);
#pragma omp parallel for if (g.n * g.c * g.oh * g.ow > (1 << 14))
  for (int64_t p = 0; p < g.n * g.c; ++p) {
    const float* in = x + p * g.h * g.w;
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        float acc = 0.0f;
        for (int64_t ki = 0; ki < g.kh; ++ki) {
          const int64_t iy = oy * g.stride_h - g.pad_h + ki;
          if (iy < 0 || iy >= g.h) continue;
          for (int64_t kj = 0; kj < g.kw; ++kj) {
            const int64_t ix = ox * g.stride_w - g.pad_w + kj;
            if (ix >= 0 && ix < g.w) acc += in[iy * g.w + ix];
          }
        }
        y[(p * g.oh + oy) * g.ow + ox] = acc * scale;
      }
    }
  }
}

void avg_pool2d_backward(const float* dy, float* dx, const ConvGeometry& g) {
  const float scale = 1.0f / static_cast<float>(g.kh * g.kw);
#pragma omp parallel for if (g.n * g.c * g.oh * g.ow > (1 << 14))
  for (int64_t p = 0; p < g.n * g.c; ++p) {
    float* out = dx + p * g.h * g.w;
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        const float v = dy[(p * g.oh + oy) * g.ow + ox] * scale;
        for (int64_t ki = 0; ki < g.kh; ++ki) {
          const int64_t iy = oy * g.stride_h - g.pad_h + ki;
          if (iy < 0 || iy >= g.h) continue;
          for (int64_t kj = 0; kj < g.kw; ++kj) {
            const int64_t ix = ox * g.stride_w - g.pad_w + kj;
            if (ix >= 0 && ix < g.w) out[iy * g.w + ix] += v;
          }
        }
      }
    }
  }
}

}  // namespace redline::cpu
