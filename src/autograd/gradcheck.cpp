#include "redline/autograd/gradcheck.h"

#include <cmath>

#include "redline/core/philox.h"
#include "redline/ops/ops.h"

namespace redline {
namespace {

std::vector<double> to_doubles(const Tensor& t) {
  return ops::cast(t, DType::f64).to_vector<double>();
}

double project(const Variable& y, const std::vector<double>& r) {
  const std::vector<double> v = to_doubles(y.data());
  double total = 0;
  for (size_t i = 0; i < v.size(); ++i) total += v[i] * r[i];
  return total;
}

}  // namespace

GradcheckResult gradcheck(const GradcheckFunction& fn, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options) {
  std::vector<Tensor> values;
  for (const Tensor& t : inputs) {
    REDLINE_CHECK(t.defined() && t.device().is_cpu(),
                  "gradcheck: inputs must be CPU tensors, got {}", t.describe());
    values.push_back(dtype_is_floating(t.dtype()) ? ops::cast(t, DType::f64) : t.clone());
  }
  auto variables = [&](bool requires_grad) {
    std::vector<Variable> vars;
    for (const Tensor& t : values)
      vars.emplace_back(t, requires_grad && dtype_is_floating(t.dtype()));
    return vars;
  };

  // The projection direction: Philox uniforms in [-1, 1).
  std::vector<Variable> vars = variables(true);
  const Variable y = fn(vars);
  REDLINE_CHECK(y.defined() && dtype_is_floating(y.dtype()),
                "gradcheck: the function must return a floating Variable");
  std::vector<double> r(static_cast<size_t>(y.numel()));
  Philox gen(options.seed, 0, 0);
  for (double& v : r) v = 2.0 * u32_to_unit_float(gen.next_u32()) - 1.0;
  const Tensor direction = ops::cast(Tensor::from_host<double>(r, y.shape()), y.dtype());
  r = to_doubles(direction);  // the direction backward() sees (rounded if y is not f64)
  y.backward(direction);

  GradcheckResult result;
  double worst_excess = 0;
  for (size_t k = 0; k < values.size(); ++k) {
    if (!dtype_is_floating(values[k].dtype())) continue;
    const Tensor& grad = vars[k].grad();
    const std::vector<double> analytic =
        grad.defined() ? to_doubles(grad) : std::vector<double>(values[k].numel(), 0.0);
    Tensor& x = values[k];
    double* data = x.data<double>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double original = data[i];
      data[i] = original + options.eps;
      const double plus_step = data[i] - original;  // the step as represented
      const double plus = project(fn(variables(false)), r);
      data[i] = original - options.eps;
      const double minus_step = original - data[i];
      const double minus = project(fn(variables(false)), r);
      data[i] = original;
      const double numeric = (plus - minus) / (plus_step + minus_step);
      const double error = std::fabs(numeric - analytic[i]);
      const double allowed = options.atol + options.rtol * std::fabs(numeric);
      result.max_abs_error = std::max(result.max_abs_error, error);
      if (error > allowed && error - allowed > worst_excess) {
        worst_excess = error - allowed;
        result.ok = false;
        result.message = format(
            "input {} element {}: analytic gradient {} but finite differences give {} (|error| "
            "{} > {})",
            k, i, analytic[i], numeric, error, allowed);
      }
    }
  }
  return result;
}

}  // namespace redline
