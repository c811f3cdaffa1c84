// CPU twins of src/backend/gpu/ops_conv.cu: im2col / col2im (convolution is these plus GEMM) and
// 2-D pooling. All NCHW, f32 (the GPU's twins) and f64 (CPU only).
#include <limits>

#include "backend/cpu/ops_kernels.h"

namespace redline::cpu {

using ops::ConvGeometry;

// col row r = (c, ki, kj), column (i, oy, ox): x[i, c, oy*sh - ph + ki*dh, ox*sw - pw + kj*dw].
template <typename T>
void im2col(const T* x, T* col, const ConvGeometry& g) {
  const int64_t rows = g.c * g.kh * g.kw;
  const int64_t plane = g.oh * g.ow;
#pragma omp parallel for collapse(2) if (rows * g.n * plane > (1 << 16))
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < g.n; ++i) {
      const int64_t c = r / (g.kh * g.kw), ki = (r / g.kw) % g.kh, kj = r % g.kw;
      const T* image = x + (i * g.c + c) * g.h * g.w;
      T* out = col + (r * g.n + i) * plane;
      for (int64_t oy = 0; oy < g.oh; ++oy) {
        const int64_t iy = oy * g.stride_h - g.pad_h + ki * g.dilation_h;
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          const int64_t ix = ox * g.stride_w - g.pad_w + kj * g.dilation_w;
          const bool inside = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
          out[oy * g.ow + ox] = inside ? image[iy * g.w + ix] : T(0);
        }
      }
    }
  }
}

template <typename T>
void col2im(const T* col, T* x, const ConvGeometry& g) {
  const int64_t plane = g.oh * g.ow;
#pragma omp parallel for collapse(2) if (g.n * g.c * g.kh * g.kw * plane > (1 << 16))
  for (int64_t i = 0; i < g.n; ++i) {
    for (int64_t c = 0; c < g.c; ++c) {  // (image, channel) planes are independent: no races
      T* image = x + (i * g.c + c) * g.h * g.w;
      for (int64_t ki = 0; ki < g.kh; ++ki) {
        for (int64_t kj = 0; kj < g.kw; ++kj) {
          const int64_t r = (c * g.kh + ki) * g.kw + kj;
          const T* in = col + (r * g.n + i) * plane;
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

template <typename T>
void max_pool2d(const T* x, T* y, int64_t* indices, const ConvGeometry& g) {
#pragma omp parallel for if (g.n * g.c * g.oh * g.ow > (1 << 14))
  for (int64_t p = 0; p < g.n * g.c; ++p) {
    const T* in = x + p * g.h * g.w;
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        T best = -std::numeric_limits<T>::infinity();
        int64_t best_at = -1;
        for (int64_t ki = 0; ki < g.kh; ++ki) {
          const int64_t iy = oy * g.stride_h - g.pad_h + ki * g.dilation_h;
          if (iy < 0 || iy >= g.h) continue;
          for (int64_t kj = 0; kj < g.kw; ++kj) {
            const int64_t ix = ox * g.stride_w - g.pad_w + kj * g.dilation_w;
            if (ix < 0 || ix >= g.w) continue;
            const T v = in[iy * g.w + ix];
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

template <typename T>
void max_pool2d_backward(const T* dy, const int64_t* indices, T* dx, const ConvGeometry& g) {
#pragma omp parallel for if (g.n * g.c * g.oh * g.ow > (1 << 14))
  for (int64_t p = 0; p < g.n * g.c; ++p) {  // planes are independent
    for (int64_t q = 0; q < g.oh * g.ow; ++q) {
      dx[p * g.h * g.w + indices[p * g.oh * g.ow + q]] += dy[p * g.oh * g.ow + q];
    }
  }
}

template <typename T>
void avg_pool2d(const T* x, T* y, const ConvGeometry& g) {
  const T scale = T(1) / static_cast<T>(g.kh * g.kw);
#pragma omp parallel for if (g.n * g.c * g.oh * g.ow > (1 << 14))
  for (int64_t p = 0; p < g.n * g.c; ++p) {
    const T* in = x + p * g.h * g.w;
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        T acc = T(0);
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

template <typename T>
void avg_pool2d_backward(const T* dy, T* dx, const ConvGeometry& g) {
  const T scale = T(1) / static_cast<T>(g.kh * g.kw);
#pragma omp parallel for if (g.n * g.c * g.oh * g.ow > (1 << 14))
  for (int64_t p = 0; p < g.n * g.c; ++p) {
    T* out = dx + p * g.h * g.w;
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        const T v = dy[(p * g.oh + oy) * g.ow + ox] * scale;
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

template void im2col<float>(const float*, float*, const ConvGeometry&);
template void im2col<double>(const double*, double*, const ConvGeometry&);
template void col2im<float>(const float*, float*, const ConvGeometry&);
template void col2im<double>(const double*, double*, const ConvGeometry&);
template void max_pool2d<float>(const float*, float*, int64_t*, const ConvGeometry&);
template void max_pool2d<double>(const double*, double*, int64_t*, const ConvGeometry&);
template void max_pool2d_backward<float>(const float*, const int64_t*, float*, const ConvGeometry&);
template void max_pool2d_backward<double>(const double*, const int64_t*, double*,
                                          const ConvGeometry&);
template void avg_pool2d<float>(const float*, float*, const ConvGeometry&);
template void avg_pool2d<double>(const double*, double*, const ConvGeometry&);
template void avg_pool2d_backward<float>(const float*, float*, const ConvGeometry&);
template void avg_pool2d_backward<double>(const double*, double*, const ConvGeometry&);

}  // namespace redline::cpu
