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
