// Helpers of the op and autograd tests: seeded inputs and the gradcheck expectation.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "redline/autograd/gradcheck.h"
#include "redline/core/philox.h"
#include "redline/core/tensor.h"
#include "redline/ops/ops.h"

namespace redline::test {

// Uniform values in [lo, hi), from Philox(seed).
inline Tensor uniform(const Shape& shape, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Philox gen(seed, 7, 0);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (float& x : v) x = static_cast<float>(lo + (hi - lo) * gen.uniform());
  return Tensor::from_host<float>(v, shape);
}

// Values with |x| in [0.2, 1.2) and random signs: away from the kinks of relu, abs, clamp at 0.
inline Tensor away_from_zero(const Shape& shape, uint64_t seed) {
  Philox gen(seed, 9, 0);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (float& x : v) {
    const float magnitude = 0.2f + gen.uniform();
    x = gen.uniform() < 0.5f ? -magnitude : magnitude;
  }
  return Tensor::from_host<float>(v, shape);
}

inline std::vector<float> values(const Tensor& t) { return t.contiguous().to_vector<float>(); }

// Direct convolution in double, the definition. x: (N, C, H, W); w: (O, C, KH, KW); b: (O,) or
// undefined. Returns the output in NCHW order and its shape in *shape.
inline std::vector<double> reference_conv(const Tensor& x, const Tensor& w, const Tensor& b,
                                          const ops::Conv2dOptions& o, Shape* shape) {
  const int64_t n = x.shape(0), c = x.shape(1), h = x.shape(2), wd = x.shape(3);
  const int64_t oc = w.shape(0), kh = w.shape(2), kw = w.shape(3);
  const int64_t oh = (h + 2 * o.pad_h - o.dilation_h * (kh - 1) - 1) / o.stride_h + 1;
  const int64_t ow = (wd + 2 * o.pad_w - o.dilation_w * (kw - 1) - 1) / o.stride_w + 1;
  *shape = {n, oc, oh, ow};
  std::vector<double> out;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t f = 0; f < oc; ++f)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t z = 0; z < ow; ++z) {
          double acc = b.defined() ? b.at({f}) : 0.0;
          for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t p = 0; p < kh; ++p)
              for (int64_t q = 0; q < kw; ++q) {
                const int64_t iy = y * o.stride_h - o.pad_h + p * o.dilation_h;
                const int64_t ix = z * o.stride_w - o.pad_w + q * o.dilation_w;
                if (iy >= 0 && iy < h && ix >= 0 && ix < wd) {
                  acc += x.at({i, ch, iy, ix}) * w.at({f, ch, p, q});
                }
              }
          out.push_back(acc);
        }
  return out;
}

// A constant that a gradcheck function captures, in the dtype of the Variables gradcheck passes it
// (f64): ops refuse mixed dtypes.
inline Tensor constant_like(const Tensor& constant, const Variable& like) {
  return ops::cast(constant, like.dtype());
}

}  // namespace redline::test

#define EXPECT_GRADCHECK(fn, inputs)                                                 \
  do {                                                                               \
    const ::redline::GradcheckResult redline_gc_ = ::redline::gradcheck(fn, inputs); \
    EXPECT_TRUE(redline_gc_.ok) << redline_gc_.message;                              \
  } while (0)

// A redline::Error whose message contains `fragment`.
#define EXPECT_ERROR_WITH(statement, fragment)                                        \
  do {                                                                                \
    try {                                                                             \
      statement;                                                                      \
      ADD_FAILURE() << "expected redline::Error containing \"" << fragment << "\"";   \
    } catch (const ::redline::Error& e) {                                             \
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what(); \
    }                                                                                 \
  } while (0)
