// Finite-difference gradient check of a differentiable function on the CPU.
//
// The function's output y is projected on a fixed random direction r (L = sum(r * y), computed
// in double on the host); the analytic gradient of L from backward() is compared with central
// differences (L(x + eps e_i) - L(x - eps e_i)) / (2 eps) for every element of every floating
// input. Integer and bool inputs are passed through as constants.
//
// Precision: redline's tensors have no f64 dtype yet, so the function runs in f32; the
// differences and the comparison run in double. eps and the tolerances below are sized for that
// (a wrong gradient is off by O(1); f32 rounding is O(1e-4) here).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "redline/autograd/variable.h"

namespace redline {

struct GradcheckOptions {
  double eps = 1e-2;
  double atol = 2e-3;
  double rtol = 1e-2;
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
