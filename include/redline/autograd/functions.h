// Differentiable functions on Variables: each runs the op of redline/ops/ops.h and, when grad
// mode is on and an input requires grad, records its backward on the tape.
#pragma once

#include <optional>
#include <vector>

#include "redline/autograd/variable.h"
#include "redline/ops/ops.h"

namespace redline {

// ---- elementwise (broadcasting) -----------------------------------------------------------------
Variable add(const Variable& a, const Variable& b);
Variable sub(const Variable& a, const Variable& b);
Variable mul(const Variable& a, const Variable& b);
Variable div(const Variable& a, const Variable& b);
Variable maximum(const Variable& a, const Variable& b);  // ties split the gradient in half
Variable minimum(const Variable& a, const Variable& b);
Variable add_scalar(const Variable& x, double value);
Variable mul_scalar(const Variable& x, double value);
Variable pow_scalar(const Variable& x, double exponent);

inline Variable operator+(const Variable& a, const Variable& b) { return add(a, b); }
inline Variable operator-(const Variable& a, const Variable& b) { return sub(a, b); }
inline Variable operator*(const Variable& a, const Variable& b) { return mul(a, b); }
inline Variable operator/(const Variable& a, const Variable& b) { return div(a, b); }
inline Variable operator+(const Variable& a, double b) { return add_scalar(a, b); }
inline Variable operator-(const Variable& a, double b) { return add_scalar(a, -b); }
inline Variable operator*(const Variable& a, double b) { return mul_scalar(a, b); }
inline Variable operator*(double a, const Variable& b) { return mul_scalar(b, a); }

Variable neg(const Variable& x);
Variable abs(const Variable& x);
Variable relu(const Variable& x);
Variable leaky_relu(const Variable& x, double negative_slope = 0.01);
Variable tanh(const Variable& x);
Variable sigmoid(const Variable& x);
Variable exp(const Variable& x);
Variable log(const Variable& x);
Variable sqrt(const Variable& x);
Variable gelu(const Variable& x);
Variable square(const Variable& x);

// The gradient passes where lo <= x <= hi.
Variable clamp(const Variable& x, std::optional<double> lo, std::optional<double> hi);
Variable where(const Tensor& cond, const Variable& a, const Variable& b);

// ---- reductions ---------------------------------------------------------------------------------
Variable sum(const Variable& x);
Variable sum(const Variable& x, const std::vector<int>& dims, bool keepdim = false);
Variable mean(const Variable& x);
Variable mean(const Variable& x, const std::vector<int>& dims, bool keepdim = false);
// Values of the maximum; the gradient goes to the first maximum (argmax).
Variable max(const Variable& x);
Variable max(const Variable& x, int dim, bool keepdim = false);

// ---- linear algebra -----------------------------------------------------------------------------
Variable matmul(const Variable& a, const Variable& b);
// act(x W^T + b) as one fused GEMM; x: (..., in); weight: (out, in); bias: (out,) or undefined
// -> (..., out). act: none or relu (a fused gelu has no backward).
Variable linear(const Variable& x, const Variable& weight, const Variable& bias,
                ops::Activation act = ops::Activation::none);

// ---- indexing -----------------------------------------------------------------------------------
Variable gather(const Variable& x, int dim, const Tensor& index);
Variable index_select(const Variable& x, int dim, const Tensor& index);
Variable scatter_add(const Variable& self, int dim, const Tensor& index, const Variable& src);

// ---- softmax and dtype --------------------------------------------------------------------------
Variable softmax(const Variable& x, int dim);
Variable log_softmax(const Variable& x, int dim);
// Gradients flow between floating dtypes (cast back); integer results are constants.
Variable cast(const Variable& x, DType dtype);

// ---- layout -------------------------------------------------------------------------------------
Variable reshape(const Variable& x, const Shape& shape);
Variable flatten(const Variable& x, int start_dim = 1);  // (N, ...) -> (N, prod(...))
Variable permute(const Variable& x, const std::vector<int>& dims);
Variable transpose(const Variable& x, int dim0, int dim1);
Variable unsqueeze(const Variable& x, int dim);
Variable squeeze(const Variable& x, int dim);
Variable cat(const std::vector<Variable>& xs, int dim);
Variable stack(const std::vector<Variable>& xs, int dim);

// ---- convolution and pooling --------------------------------------------------------------------
Variable conv2d(const Variable& x, const Variable& weight, const Variable& bias,
                const ops::Conv2dOptions& options = {});
Variable max_pool2d(const Variable& x, const ops::Pool2dOptions& options = {});
Variable avg_pool2d(const Variable& x, const ops::Pool2dOptions& options = {});

// ---- normalization ------------------------------------------------------------------------------
// Normalizes over the last dimension: (x - mean) / sqrt(var + eps) * weight + bias (weight, bias
// (D,) or undefined).
Variable layer_norm(const Variable& x, const Variable& weight, const Variable& bias,
                    double eps = 1e-5);

// ---- losses (mean over elements; weight, when given, multiplies each element's loss first:
// mean(weight * loss), the importance-weighted form prioritized replay uses) ----------------------
Variable mse_loss(const Variable& prediction, const Tensor& target, const Tensor& weight = {});
// Huber (smooth L1 at delta = 1): 0.5 d^2 where |d| < delta, delta (|d| - delta / 2) elsewhere.
Variable huber_loss(const Variable& prediction, const Tensor& target, double delta = 1.0,
                    const Tensor& weight = {});
// logits: (N, C); target: (N,) i64 class indices; weight: (N,) or undefined.
Variable cross_entropy(const Variable& logits, const Tensor& target, const Tensor& weight = {});

}  // namespace redline
