// f64 on the CPU: casts, elementwise ops, reductions, softmax, matmul, conv2d and pooling against
// double references (tolerances an f32 computation could not meet), f64 gradients, and the
// refusal of f64 by GPU ops (skipped without a GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "ops/op_test_util.h"
#include "redline/autograd/functions.h"
#include "test_util.h"

namespace redline {
namespace {

using Vars = std::vector<Variable>;

// Doubles in [lo, hi) with 53 random bits (f32 cannot hold them), from Philox(seed).
Tensor uniform64(const Shape& shape, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Philox gen(seed, 11, 0);
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (double& x : v) x = lo + (hi - lo) * gen.uniform_double();
  return Tensor::from_host<double>(v, shape);
}

std::vector<double> doubles(const Tensor& t) { return t.contiguous().to_vector<double>(); }

// |got - want| <= tol * max(1, |want|) elementwise.
void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(want[i]))) << "at " << i;
  }
}

// (M, K) @ (K, N) in double, any layout (read through at()).
std::vector<double> reference_matmul(const Tensor& a, const Tensor& b) {
  const int64_t m = a.shape(0), k = a.shape(1), n = b.shape(1);
  std::vector<double> out(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += a.at({i, p}) * b.at({p, j});
      out[i * n + j] = acc;
    }
  }
  return out;
}

TEST(F64, CastsRoundTrip) {
  const std::vector<double> v = {0.1, -2.7, 2.7, 1e-12, 3.0, -1e30};
  const Tensor x = Tensor::from_host<double>(v, {6});
  // f64 -> f32 rounds to nearest; f32 -> f64 is exact.
  const std::vector<float> f = ops::cast(x, DType::f32).to_vector<float>();
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(f[i], static_cast<float>(v[i])) << i;
  const std::vector<double> back = doubles(ops::cast(ops::cast(x, DType::f32), DType::f64));
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(back[i], static_cast<double>(f[i])) << i;
  // f64 -> i64 truncates toward zero; i64 -> f64 -> i64 is exact below 2^53.
  EXPECT_EQ(ops::cast(x.slice(0, 1, 5), DType::i64).to_vector<int64_t>(),
            (std::vector<int64_t>{-2, 2, 0, 3}));
  const int64_t big = (int64_t{1} << 53) - 1;
  const Tensor ints = Tensor::from_host<int64_t>({big, -big, 0, 7}, {4});
  const Tensor as_f64 = ops::cast(ints, DType::f64);
  EXPECT_EQ(as_f64.at({0}), 9007199254740991.0);
  EXPECT_EQ(ops::cast(as_f64, DType::i64).to_vector<int64_t>(), ints.to_vector<int64_t>());
  // bool and the 16-bit floats.
  EXPECT_EQ(ops::cast(x, DType::boolean).to_vector<bool>(),
            (std::vector<bool>{true, true, true, true, true, true}));
  EXPECT_EQ(
      ops::cast(ops::cast(Tensor::from_host<double>({0.5, -3.0}, {2}), DType::bf16), DType::f64)
          .to_vector<double>(),
      (std::vector<double>{0.5, -3.0}));
}

TEST(F64, ElementwiseReductionsAndSoftmaxComputeInDouble) {
  const Tensor a = uniform64({4, 5}, 1, -2, 2), b = uniform64({5}, 2, 0.5, 1.5);
  const std::vector<double> av = doubles(a), bv = doubles(b);
  std::vector<double> sum_ab, quotient, tanh_a, gelu_a;
  for (size_t i = 0; i < av.size(); ++i) {
    sum_ab.push_back(av[i] + bv[i % 5]);
    quotient.push_back(av[i] / bv[i % 5]);
    tanh_a.push_back(std::tanh(av[i]));
    gelu_a.push_back(0.5 * av[i] * (1.0 + std::erf(av[i] / std::sqrt(2.0))));
  }
  EXPECT_EQ(ops::add(a, b).dtype(), DType::f64);
  EXPECT_EQ(doubles(ops::add(a, b)), sum_ab);  // one IEEE operation: exact
  EXPECT_EQ(doubles(ops::div(a, b)), quotient);
  expect_close(doubles(ops::tanh(a)), tanh_a, 1e-15);
  expect_close(doubles(ops::gelu(a)), gelu_a, 1e-15);
  // The scalar stays a double (0.1f would differ).
  EXPECT_EQ(doubles(ops::mul_scalar(a, 0.1)),
            doubles(ops::mul(a, Tensor::full({}, 0.1, DType::f64))));

  // Sums that f32 loses: 1e8 + 1e-3 - 1e8.
  EXPECT_NEAR(ops::sum(Tensor::from_host<double>({1e8, 1e-3, -1e8}, {3})).item(), 1e-3, 1e-8);
  std::vector<double> row_sums(4, 0.0), row_max(4, -INFINITY);
  for (size_t i = 0; i < av.size(); ++i) {
    row_sums[i / 5] += av[i];
    row_max[i / 5] = std::max(row_max[i / 5], av[i]);
  }
  expect_close(doubles(ops::sum(a, {1})), row_sums, 1e-15);
  EXPECT_EQ(ops::sum(a, {1}).dtype(), DType::f64);
  EXPECT_EQ(doubles(ops::max(a, 1)), row_max);
  std::vector<double> row_means = row_sums;
  for (double& m : row_means) m /= 5.0;
  expect_close(doubles(ops::mean(a, {-1})), row_means, 1e-15);

  std::vector<double> softmax_want, log_softmax_want;
  for (int64_t r = 0; r < 4; ++r) {
    double total = 0;
    for (int64_t j = 0; j < 5; ++j) total += std::exp(av[r * 5 + j] - row_max[r]);
    for (int64_t j = 0; j < 5; ++j) {
      log_softmax_want.push_back(av[r * 5 + j] - row_max[r] - std::log(total));
      softmax_want.push_back(std::exp(log_softmax_want.back()));
    }
  }
  expect_close(doubles(ops::softmax(a, 1)), softmax_want, 1e-15);
  expect_close(doubles(ops::log_softmax(a, -1)), log_softmax_want, 1e-15);
}

TEST(F64, MatmulAndLinearMatchADoubleReference) {
  const Tensor a = uniform64({5, 7}, 1), b = uniform64({7, 3}, 2);
  const Tensor c = ops::matmul(a, b);
  EXPECT_EQ(c.dtype(), DType::f64);
  expect_close(doubles(c), reference_matmul(a, b), 1e-14);
  // Transposed views are read in place.
  const Tensor at = uniform64({7, 5}, 3);
  expect_close(doubles(ops::matmul(at.transpose(0, 1), b)), reference_matmul(at.transpose(0, 1), b),
               1e-14);
  // Batched, and a 2-D operand shared across the batch.
  const Tensor ba = uniform64({3, 5, 7}, 4), bb = uniform64({3, 7, 3}, 5);
  const Tensor batched = ops::matmul(ba, bb), shared = ops::matmul(ba, b);
  for (int64_t i = 0; i < 3; ++i) {
    expect_close(doubles(batched.select(0, i)), reference_matmul(ba.select(0, i), bb.select(0, i)),
                 1e-14);
    expect_close(doubles(shared.select(0, i)), reference_matmul(ba.select(0, i), b), 1e-14);
  }
  // linear: x @ w^T + bias, with the fused relu.
  const Tensor x = uniform64({6, 7}, 6), w = uniform64({4, 7}, 7), bias = uniform64({4}, 8);
  std::vector<double> want = reference_matmul(x, w.transpose(0, 1));
  for (size_t i = 0; i < want.size(); ++i) {
    want[i] = std::max(0.0, want[i] + bias.at({static_cast<int64_t>(i % 4)}));
  }
  expect_close(doubles(ops::linear(x, w, bias, ops::Activation::relu)), want, 1e-14);
}

TEST(F64, Conv2dAndPoolingMatchADoubleReference) {
  const Tensor x = uniform64({2, 3, 9, 8}, 1), w = uniform64({4, 3, 3, 2}, 2);
  const Tensor b = uniform64({4}, 3);
  for (const ops::Conv2dOptions o : {ops::Conv2dOptions{}, ops::Conv2dOptions{2, 1, 1, 0, 1, 1},
                                     ops::Conv2dOptions{1, 2, 2, 1, 2, 1}}) {
    Shape shape;
    const std::vector<double> want = test::reference_conv(x, w, b, o, &shape);
    const Tensor y = ops::conv2d(x, w, b, o);
    EXPECT_EQ(y.dtype(), DType::f64);
    EXPECT_EQ(y.shape(), shape);
    expect_close(doubles(y), want, 1e-14);
  }
  // 2x2 pooling of one plane: the maximum and the mean of each window.
  const Tensor p = uniform64({1, 1, 4, 4}, 4);
  std::vector<double> max_want, mean_want;
  for (int64_t y = 0; y < 2; ++y) {
    for (int64_t z = 0; z < 2; ++z) {
      double m = -INFINITY, total = 0;
      for (int64_t i = 0; i < 2; ++i) {
        for (int64_t j = 0; j < 2; ++j) {
          m = std::max(m, p.at({0, 0, 2 * y + i, 2 * z + j}));
          total += p.at({0, 0, 2 * y + i, 2 * z + j});
        }
      }
      max_want.push_back(m);
      mean_want.push_back(total / 4.0);
    }
  }
  EXPECT_EQ(doubles(ops::max_pool2d(p, {}).values), max_want);
  expect_close(doubles(ops::avg_pool2d(p, {})), mean_want, 1e-15);
}

TEST(F64, GradientsStayInF64) {
  const Variable x(uniform64({2, 2, 5, 5}, 1), true), w(uniform64({3, 2, 3, 3}, 2), true);
  const Variable y = log_softmax(flatten(max_pool2d(relu(conv2d(x, w, Variable())), {}), 1), 1);
  sum(mul(y, y)).backward();
  EXPECT_EQ(x.grad().dtype(), DType::f64);
  EXPECT_EQ(w.grad().dtype(), DType::f64);
  // d/dx sum(x^2) = 2x, exactly in double.
  const Variable z(uniform64({7}, 3), true);
  sum(square(z)).backward();
  EXPECT_EQ(doubles(z.grad()), doubles(ops::mul_scalar(z.data(), 2.0)));
}

TEST(F64, MixedWithF32IsRefused) {
  const Tensor d = uniform64({2, 3}, 1), f = ops::cast(d, DType::f32);
  EXPECT_ERROR_WITH(ops::add(d, f), "dtypes differ");
  EXPECT_ERROR_WITH(ops::matmul(d, f.transpose(0, 1)), "dtypes differ");
  EXPECT_ERROR_WITH(ops::where(ops::gt(d, d), d, f), "dtypes differ");
}

TEST(F64, GpuOpsRefuseIt) {
  REDLINE_REQUIRE_GPU();
  const Device gpu = Device::gpu(0);
  const Tensor host = uniform64({4, 4}, 1);
  const Tensor d = host.to(gpu);  // copies are plain bytes and work
  EXPECT_EQ(d.dtype(), DType::f64);
  EXPECT_EQ(doubles(d), doubles(host));
  EXPECT_EQ(Tensor::full({3}, 0.1, DType::f64, gpu).at({2}), 0.1);
  const std::string refusal =
      "f64 tensors are supported on the CPU only; cast to f32 before moving "
      "to gpu:0";
  EXPECT_ERROR_WITH(ops::add(d, d), refusal);
  EXPECT_ERROR_WITH(ops::relu(d), refusal);
  EXPECT_ERROR_WITH(ops::sum(d), refusal);
  EXPECT_ERROR_WITH(ops::softmax(d, 1), refusal);
  EXPECT_ERROR_WITH(ops::matmul(d, d), refusal);
  EXPECT_ERROR_WITH(ops::conv2d(d.view({1, 1, 4, 4}), d.view({1, 1, 4, 4}), Tensor(), {}), refusal);
  EXPECT_ERROR_WITH(ops::gather(d, 0, Tensor::zeros({1, 4}, DType::i64, gpu)), refusal);
  EXPECT_ERROR_WITH(ops::cast(d, DType::f32), refusal);
  EXPECT_ERROR_WITH(ops::cast(ops::cast(host, DType::f32).to(gpu), DType::f64), refusal);
  EXPECT_ERROR_WITH(tanh(Variable(d, true)), refusal);
  // The way the message suggests works.
  EXPECT_EQ(ops::relu(ops::cast(host, DType::f32).to(gpu)).device(), gpu);
}

}  // namespace
}  // namespace redline
