// The scalar maths of the elementwise ops, shared by the CPU kernels and the GPU kernels (the
// contract of the CPU/GPU parity tests): forward values and local derivatives.
#pragma once

#include <cmath>
#include <cstdint>

#include "redline/core/hd.h"

namespace redline::ops {

enum class UnaryOp : uint8_t {
  neg,
  abs,
  relu,
  leaky_relu,  // param: negative slope
  tanh,
  sigmoid,
  exp,
  log,
  sqrt,
  gelu,  // exact (erf) form, as torch.nn.GELU()
  square,
  reciprocal,
  mul_scalar,  // x * param
  add_scalar,  // x + param
  pow_scalar,  // x ^ param
};

enum class BinaryOp : uint8_t { add, sub, mul, div, maximum, minimum, lt, le, gt, ge, eq, ne };

constexpr bool binary_is_comparison(BinaryOp op) { return op >= BinaryOp::lt; }

namespace math {

REDLINE_HD inline float tanh_(float x) { return tanhf(x); }
REDLINE_HD inline double tanh_(double x) { return tanh(x); }
REDLINE_HD inline float exp_(float x) { return expf(x); }
REDLINE_HD inline double exp_(double x) { return exp(x); }
REDLINE_HD inline float log_(float x) { return logf(x); }
REDLINE_HD inline double log_(double x) { return log(x); }
REDLINE_HD inline float sqrt_(float x) { return sqrtf(x); }
REDLINE_HD inline double sqrt_(double x) { return sqrt(x); }
REDLINE_HD inline float erf_(float x) { return erff(x); }
REDLINE_HD inline double erf_(double x) { return erf(x); }
REDLINE_HD inline float pow_(float x, float y) { return powf(x, y); }
REDLINE_HD inline double pow_(double x, double y) { return pow(x, y); }

}  // namespace math

// y = op(x).
template <typename T>
REDLINE_HD inline T unary_forward(UnaryOp op, T x, T param) {
  switch (op) {
    case UnaryOp::neg:
      return -x;
    case UnaryOp::abs:
      return x < T(0) ? -x : x;
    case UnaryOp::relu:
      return x > T(0) ? x : T(0);
    case UnaryOp::leaky_relu:
      return x > T(0) ? x : x * param;
    case UnaryOp::tanh:
      return math::tanh_(x);
    case UnaryOp::sigmoid:
      return T(1) / (T(1) + math::exp_(-x));
    case UnaryOp::exp:
      return math::exp_(x);
    case UnaryOp::log:
      return math::log_(x);
    case UnaryOp::sqrt:
      return math::sqrt_(x);
    case UnaryOp::gelu:
      return T(0.5) * x * (T(1) + math::erf_(x * T(0.70710678118654752440)));
    case UnaryOp::square:
      return x * x;
    case UnaryOp::reciprocal:
      return T(1) / x;
    case UnaryOp::mul_scalar:
      return x * param;
    case UnaryOp::add_scalar:
      return x + param;
    case UnaryOp::pow_scalar:
      return math::pow_(x, param);
  }
  return x;
}

// dx = dy * d op(x) / dx, given x and y = op(x).
template <typename T>
REDLINE_HD inline T unary_backward(UnaryOp op, T x, T y, T dy, T param) {
  switch (op) {
    case UnaryOp::neg:
      return -dy;
    case UnaryOp::abs:
      return x > T(0) ? dy : (x < T(0) ? -dy : T(0));
    case UnaryOp::relu:
      return x > T(0) ? dy : T(0);
    case UnaryOp::leaky_relu:
      return x > T(0) ? dy : dy * param;
    case UnaryOp::tanh:
      return dy * (T(1) - y * y);
    case UnaryOp::sigmoid:
      return dy * y * (T(1) - y);
    case UnaryOp::exp:
      return dy * y;
    case UnaryOp::log:
      return dy / x;
    case UnaryOp::sqrt:
      return dy / (T(2) * y);
    case UnaryOp::gelu: {
      const T cdf = T(0.5) * (T(1) + math::erf_(x * T(0.70710678118654752440)));
      const T pdf = math::exp_(T(-0.5) * x * x) * T(0.39894228040143267794);
      return dy * (cdf + x * pdf);
    }
    case UnaryOp::square:
      return dy * T(2) * x;
    case UnaryOp::reciprocal:
      return -dy * y * y;
    case UnaryOp::mul_scalar:
      return dy * param;
    case UnaryOp::add_scalar:
      return dy;
    case UnaryOp::pow_scalar:
      return dy * param * math::pow_(x, param - T(1));
  }
  return dy;
}

// out = a op b (comparisons give 1 or 0 in T; the kernel stores them as bool).
template <typename T>
REDLINE_HD inline T binary_forward(BinaryOp op, T a, T b) {
  switch (op) {
    case BinaryOp::add:
      return a + b;
    case BinaryOp::sub:
      return a - b;
    case BinaryOp::mul:
      return a * b;
    case BinaryOp::div:
      return a / b;
    case BinaryOp::maximum:
      return a > b ? a : b;
    case BinaryOp::minimum:
      return a < b ? a : b;
    case BinaryOp::lt:
      return a < b;
    case BinaryOp::le:
      return a <= b;
    case BinaryOp::gt:
      return a > b;
    case BinaryOp::ge:
      return a >= b;
    case BinaryOp::eq:
      return a == b;
    case BinaryOp::ne:
      return a != b;
  }
  return a;
}

}  // namespace redline::ops
