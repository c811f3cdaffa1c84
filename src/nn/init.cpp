#include "redline/nn/init.h"

#include <cmath>
#include <vector>

#include "redline/ops/ops.h"

namespace redline::nn::init {
namespace {

// Draws on the CPU in f32 and stores into t (any device, any floating dtype).
void assign(Tensor& t, const Tensor& host_f32) {
  REDLINE_CHECK(dtype_is_floating(t.dtype()), "initializers need a floating tensor, not {}",
                t.describe());
  t.copy_from(ops::cast(host_f32.reshape(t.shape()), t.dtype()).to(t.device()));
}

void host_generator(const Generator& gen) {
  REDLINE_CHECK(gen.device().is_cpu(),
                "initializers draw on the CPU; pass a CPU Generator (values are the same on "
                "every device)");
}

}  // namespace

int64_t fan_in(const Tensor& t) {
  REDLINE_CHECK(t.dim() >= 2, "fan_in needs a weight with at least 2 dimensions, got {}",
                t.describe());
  return t.numel() / t.shape(0);
}

int64_t fan_out(const Tensor& t) {
  REDLINE_CHECK(t.dim() >= 2, "fan_out needs a weight with at least 2 dimensions, got {}",
                t.describe());
  return t.numel() / t.shape(1);
}

void uniform_(Tensor& t, double lo, double hi, Generator& gen) {
  host_generator(gen);
  Tensor u = Tensor::empty({t.numel()}, DType::f32);
  redline::uniform_(u, gen);
  assign(t, ops::add_scalar(ops::mul_scalar(u, hi - lo), lo));
}

void normal_(Tensor& t, double mean, double std, Generator& gen) {
  host_generator(gen);
  Tensor n = Tensor::empty({t.numel()}, DType::f32);
  redline::normal_(n, gen);
  assign(t, ops::add_scalar(ops::mul_scalar(n, std), mean));
}

void constant_(Tensor& t, double value) { t.fill_(value); }

void uniform_fan_in_(Tensor& t, int64_t fan_in, Generator& gen) {
  REDLINE_CHECK(fan_in > 0, "uniform_fan_in_: fan_in is {}; it must be positive", fan_in);
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  uniform_(t, -bound, bound, gen);
}

void kaiming_uniform_(Tensor& t, Generator& gen, double gain) {
  const double bound = gain * std::sqrt(3.0 / static_cast<double>(fan_in(t)));
  uniform_(t, -bound, bound, gen);
}

void kaiming_normal_(Tensor& t, Generator& gen, double gain) {
  normal_(t, 0.0, gain / std::sqrt(static_cast<double>(fan_in(t))), gen);
}

void xavier_uniform_(Tensor& t, Generator& gen, double gain) {
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(fan_in(t) + fan_out(t)));
  uniform_(t, -bound, bound, gen);
}

void orthogonal_(Tensor& t, Generator& gen, double gain) {
  REDLINE_CHECK(t.dim() >= 2, "orthogonal_ needs at least 2 dimensions, got {}", t.describe());
  host_generator(gen);
  const int64_t rows = t.shape(0), cols = t.numel() / rows;
  // Orthonormalize the columns of a tall (m, n) Gaussian matrix with modified Gram-Schmidt
  // (this is Q of its QR with R's diagonal made positive), transposing when rows < cols.
  const bool flip = rows < cols;
  const int64_t m = flip ? cols : rows, n = flip ? rows : cols;
  Tensor g = Tensor::empty({m * n}, DType::f32);
  redline::normal_(g, gen);
  const std::vector<float> draw = g.to_vector<float>();
  std::vector<double> a(draw.begin(), draw.end());  // (m, n) row-major
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t k = 0; k < j; ++k) {
      double dot = 0;
      for (int64_t i = 0; i < m; ++i) dot += a[i * n + k] * a[i * n + j];
      for (int64_t i = 0; i < m; ++i) a[i * n + j] -= dot * a[i * n + k];
    }
    double norm = 0;
    for (int64_t i = 0; i < m; ++i) norm += a[i * n + j] * a[i * n + j];
    norm = std::sqrt(norm);
    REDLINE_CHECK(norm > 1e-12, "orthogonal_: a degenerate random draw; use another seed");
    for (int64_t i = 0; i < m; ++i) a[i * n + j] /= norm;
  }
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const double v = flip ? a[c * n + r] : a[r * n + c];
      out[r * cols + c] = static_cast<float>(gain * v);
    }
  }
  assign(t, Tensor::from_host<float>(out, {rows * cols}));
}

}  // namespace redline::nn::init
