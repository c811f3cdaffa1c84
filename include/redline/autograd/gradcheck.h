// Finite-difference gradient check of a differentiable function on the CPU, in f64.
//
// Floating inputs are cast to f64 and the function runs in f64 (redline's CPU kernels compute f64
// in double). Its output y is projected on a fixed random direction r (L = sum(r * y), in double
// on the host); the analytic gradient of L from backward() is compared with central differences
// (L(x + eps e_i) - L(x - eps e_i)) / (2 eps) for every element of every floating input. Integer
// and bool inputs are passed through as constants; constants the function captures must be cast
// to its inputs' dtype (ops refuse mixed dtypes).
//
// Tolerances: with eps = 1e-6 the central difference is off by O(eps^2) from truncation and by
// O(1e-16 |L| / eps) = O(1e-10 |L|) from rounding, far below atol + rtol |numeric|; a gradient
// wrong by a factor 1 + 1e-3 fails wherever |gradient| > 1e-4.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "redline/autograd/variable.h"

namespace redline {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-7;
  double rtol = 1e-5;
  uint64_t seed = 1234;
};

struct GradcheckResult {
  bool ok = true;
  double max_abs_error = 0;
  std::string message;  // the worst element when !ok: input, index, analytic and numeric values
};

using GradcheckFunction = std::function<Variable(const std::vector<Variable>&)>;

GradcheckResult gradcheck(const GradcheckFunction& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

}  // namespace redline
