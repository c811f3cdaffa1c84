// Tensor ops without autograd: argument checks, then the kernel for the tensors' device and
// dtype. The differentiable versions (redline/autograd/functions.h) are built on these; so are the
// backward formulas. Every op returns a new contiguous tensor unless it says otherwise.
//
// Dtypes: floating ops take f32, bf16 or f16 (bf16/f16 compute in f32 and round once on store),
// and f64 on the CPU only (computed in double; a GPU op given f64 throws redline::Error);
// add/sub/mul/maximum/minimum and the comparisons also take i32 and i64. Operands must share the
// dtype and the device; nothing is promoted implicitly (use cast()).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "redline/core/tensor.h"

namespace redline::ops {

// ---- shapes -------------------------------------------------------------------------------------

// The NumPy broadcast of two shapes; throws redline::Error naming both when they do not broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// Sums grad (broadcast from shape) back down to shape.
Tensor sum_to(const Tensor& grad, const Shape& shape);

// ---- elementwise --------------------------------------------------------------------------------

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
// Comparisons give bool tensors.
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
// self += other (other broadcast to self's shape), in place.
void add_(Tensor& self, const Tensor& other);

Tensor add_scalar(const Tensor& x, double value);
Tensor mul_scalar(const Tensor& x, double value);
Tensor pow_scalar(const Tensor& x, double exponent);

Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor gelu(const Tensor& x);
Tensor square(const Tensor& x);
Tensor reciprocal(const Tensor& x);

// min(max(x, lo), hi); either bound may be absent.
Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi);
// cond ? a : b, all three broadcast together; cond is bool.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

// ---- reductions ---------------------------------------------------------------------------------

Tensor sum(const Tensor& x);  // all elements -> 0-d
Tensor sum(const Tensor& x, const std::vector<int>& dims, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, const std::vector<int>& dims, bool keepdim = false);
Tensor max(const Tensor& x);                                    // 0-d
Tensor max(const Tensor& x, int dim, bool keepdim = false);     // values
Tensor argmax(const Tensor& x);                                 // 0-d i64, flat index
Tensor argmax(const Tensor& x, int dim, bool keepdim = false);  // i64, first maximum wins

// ---- linear algebra -----------------------------------------------------------------------------

// a: (M, K) or (B, M, K); b: (K, N) or (B, K, N) -> (M, N) or (B, M, N). A 2-D operand is shared
// across the batch. Transposed views are read in place (no copy).
Tensor matmul(const Tensor& a, const Tensor& b);

enum class Activation : uint8_t { none, relu, gelu };
// act(x @ weight^T + bias) as one GEMM with the bias and relu fused (a cuBLASLt epilogue on
// GPUs; gelu, exact erf form, runs as one pass over the output after it).
// x: (M, K); weight: (N, K); bias: (N,) or undefined -> (M, N).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias,
              Activation act = Activation::none);

// f32 GEMMs on GPUs through TF32 tensor cores (10-bit mantissa products). Off by default, so
// that f32 results match the CPU to f32 rounding; per process.
void set_allow_tf32(bool allow);
bool allow_tf32();

// Deterministic algorithm choice where a GPU library offers a faster non-deterministic one (today
// cuDNN's convolutions, whose fastest backward algorithms accumulate with atomics). Off by
// default, as in PyTorch: the fastest algorithm of the search wins. On: only deterministic
// algorithms, so repeated runs give the same bits. Per process; GPU scatter_add/index_add are
// atomic and not covered.
void set_deterministic(bool on);
bool deterministic();

// ---- indexing -----------------------------------------------------------------------------------

// out[i][j] = x[index[i][j]][j] for dim 0 (and likewise for any dim); index is i64, same rank.
Tensor gather(const Tensor& x, int dim, const Tensor& index);
// out = self with out[index[i][j]][j] += src[i][j] for dim 0 (likewise for any dim).
Tensor scatter_add(const Tensor& self, int dim, const Tensor& index, const Tensor& src);
// Rows of x along dim picked by a 1-D i64 index.
Tensor index_select(const Tensor& x, int dim, const Tensor& index);
// out = self with out.select(dim, index[i]) += src.select(dim, i).
Tensor index_add(const Tensor& self, int dim, const Tensor& index, const Tensor& src);

// ---- softmax ------------------------------------------------------------------------------------

Tensor softmax(const Tensor& x, int dim);
Tensor log_softmax(const Tensor& x, int dim);
// Backward helpers: grad of x given y = softmax(x) (or log_softmax) and dy.
Tensor softmax_backward(const Tensor& y, const Tensor& dy, int dim);
Tensor log_softmax_backward(const Tensor& y, const Tensor& dy, int dim);

// ---- dtype and layout ---------------------------------------------------------------------------

// Any dtype to any dtype (floats to integers truncate toward zero; to bool is x != 0).
Tensor cast(const Tensor& x, DType dtype);
// u8 pixels to floats in [0, 1]: cast(x, dtype) / 255.
Tensor pixels_to_float(const Tensor& x, DType dtype = DType::f32);
Tensor cat(const std::vector<Tensor>& xs, int dim);
Tensor stack(const std::vector<Tensor>& xs, int dim);

// ---- convolution and pooling (NCHW) -------------------------------------------------------------

struct Conv2dOptions {
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
  int dilation_h = 1, dilation_w = 1;
};
// x: (N, C, H, W); w: (O, C, KH, KW); bias: (O,) or undefined -> (N, O, OH, OW).
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dOptions& o);
// dy: (N, O, OH, OW) -> dx (N, C, H, W), dw (O, C, KH, KW), dbias (O,) (when wanted).
struct Conv2dGrads {
  Tensor dx, dw, dbias;
};
Conv2dGrads conv2d_backward(const Tensor& x, const Tensor& w, const Tensor& dy,
                            const Conv2dOptions& o, bool need_dx, bool need_dw, bool need_dbias);

struct Pool2dOptions {
  int kernel_h = 2, kernel_w = 2;
  int stride_h = 2, stride_w = 2;
  int pad_h = 0, pad_w = 0;
};
struct MaxPoolResult {
  Tensor values;   // (N, C, OH, OW)
  Tensor indices;  // (N, C, OH, OW) i64: flat h * W + w of the maximum in its plane
};
MaxPoolResult max_pool2d(const Tensor& x, const Pool2dOptions& o);
Tensor max_pool2d_backward(const Tensor& dy, const Tensor& indices, const Shape& x_shape);
// Average over the window including padding (count_include_pad = true, PyTorch's default).
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& o);
Tensor avg_pool2d_backward(const Tensor& dy, const Shape& x_shape, const Pool2dOptions& o);

}  // namespace redline::ops
