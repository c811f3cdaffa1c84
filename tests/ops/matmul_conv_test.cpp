// matmul, linear, conv2d and pooling against naive loops; gradients; bad input.
#include <gtest/gtest.h>

#include "ops/op_test_util.h"
#include "redline/autograd/functions.h"

namespace redline {
namespace {

using test::uniform;
using test::values;
using Vars = std::vector<Variable>;

std::vector<float> naive_matmul(const Tensor& a, const Tensor& b) {  // (M, K) @ (K, N)
  const int64_t m = a.shape(0), k = a.shape(1), n = b.shape(1);
  std::vector<float> out(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += a.at({i, p}) * b.at({p, j});
      out[i * n + j] = static_cast<float>(acc);
    }
  }
  return out;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

TEST(Matmul, PlainTransposedAndBatched) {
  const Tensor a = uniform({5, 7}, 1), b = uniform({7, 3}, 2);
  expect_near(values(ops::matmul(a, b)), naive_matmul(a, b), 1e-5);
  // Transposed views go to BLAS without a copy and give the same result.
  const Tensor at = uniform({7, 5}, 3), bt = uniform({3, 7}, 4);
  expect_near(values(ops::matmul(at.transpose(0, 1), bt.transpose(0, 1))),
              naive_matmul(at.transpose(0, 1), bt.transpose(0, 1)), 1e-5);
  const Tensor ba = uniform({4, 5, 7}, 5), bb = uniform({4, 7, 3}, 6);
  const Tensor c = ops::matmul(ba, bb);
  EXPECT_EQ(c.shape(), (Shape{4, 5, 3}));
  for (int64_t i = 0; i < 4; ++i) {
    expect_near(values(c.select(0, i)), naive_matmul(ba.select(0, i), bb.select(0, i)), 1e-5);
  }
  const Tensor shared = ops::matmul(ba, b);  // (4, 5, 7) @ (7, 3)
  expect_near(values(shared.select(0, 2)), naive_matmul(ba.select(0, 2), b), 1e-5);
  EXPECT_ERROR_WITH(ops::matmul(a, a), "inner dimensions differ");
  EXPECT_ERROR_WITH(ops::matmul(ba, uniform({3, 7, 3}, 1)), "batch sizes differ");
  EXPECT_ERROR_WITH(ops::matmul(uniform({2}, 1), b), "2-D or 3-D");
  EXPECT_ERROR_WITH(ops::matmul(a, ops::cast(b, DType::bf16)), "dtypes differ");
}

TEST(Matmul, Gradients) {
  EXPECT_GRADCHECK([](const Vars& v) { return matmul(v[0], v[1]); },
                   (std::vector<Tensor>{uniform({3, 4}, 1), uniform({4, 2}, 2)}));
  EXPECT_GRADCHECK([](const Vars& v) { return matmul(v[0], v[1]); },
                   (std::vector<Tensor>{uniform({2, 3, 4}, 1), uniform({2, 4, 2}, 2)}));
  EXPECT_GRADCHECK([](const Vars& v) { return matmul(v[0], v[1]); },
                   (std::vector<Tensor>{uniform({2, 3, 4}, 1), uniform({4, 2}, 2)}));
  EXPECT_GRADCHECK([](const Vars& v) { return matmul(v[0], v[1]); },
                   (std::vector<Tensor>{uniform({3, 4}, 1), uniform({2, 4, 2}, 2)}));
  EXPECT_GRADCHECK(
      [](const Vars& v) { return linear(v[0], v[1], v[2]); },
      (std::vector<Tensor>{uniform({2, 3, 4}, 1), uniform({5, 4}, 2), uniform({5}, 3)}));
}

TEST(Linear, FusedBiasAndActivation) {
  const Tensor x = uniform({6, 5}, 1), w = uniform({4, 5}, 2), b = uniform({4}, 3);
  const Tensor plain = ops::add(ops::matmul(x, w.transpose(0, 1)), b);
  expect_near(values(ops::linear(x, w, b)), values(plain), 1e-6);
  expect_near(values(ops::linear(x, w, b, ops::Activation::relu)), values(ops::relu(plain)), 1e-6);
  expect_near(values(ops::linear(x, w, b, ops::Activation::gelu)), values(ops::gelu(plain)), 1e-6);
  expect_near(values(ops::linear(x, w, Tensor())), values(ops::matmul(x, w.transpose(0, 1))), 1e-6);
  EXPECT_ERROR_WITH(ops::linear(x, uniform({4, 3}, 1), b), "does not fit weight");
  EXPECT_ERROR_WITH(ops::linear(x, w, uniform({5}, 1)), "bias must be (4,)");
  // Values away from the relu kink at 0.
  const std::vector<Tensor> in = {test::away_from_zero({3, 5}, 4), uniform({4, 5}, 5),
                                  uniform({4}, 6)};
  EXPECT_GRADCHECK([](const Vars& v) { return linear(v[0], v[1], v[2], ops::Activation::relu); },
                   in);
  EXPECT_ERROR_WITH(linear(Variable(x), Variable(w), Variable(b), ops::Activation::gelu),
                    "no backward");
}

TEST(Conv2d, MatchesTheDefinition) {
  const Tensor x = uniform({2, 3, 9, 8}, 1), w = uniform({4, 3, 3, 2}, 2), b = uniform({4}, 3);
  for (const ops::Conv2dOptions o :
       {ops::Conv2dOptions{}, ops::Conv2dOptions{2, 1, 1, 0, 1, 1},
        ops::Conv2dOptions{1, 2, 2, 1, 2, 1}, ops::Conv2dOptions{3, 3, 0, 1, 1, 2}}) {
    Shape shape;
    const std::vector<double> exact = test::reference_conv(x, w, b, o, &shape);
    const std::vector<float> want(exact.begin(), exact.end());
    const Tensor y = ops::conv2d(x, w, b, o);
    EXPECT_EQ(y.shape(), shape);
    expect_near(values(y), want, 1e-5);
  }
  EXPECT_ERROR_WITH(ops::conv2d(x, uniform({4, 2, 3, 3}, 1), Tensor(), {}), "input channels");
  EXPECT_ERROR_WITH(ops::conv2d(x, w, uniform({5}, 1), {}), "bias must be (4,)");
  EXPECT_ERROR_WITH(ops::conv2d(uniform({3, 9, 8}, 1), w, b, {}), "(N, C, H, W)");
  EXPECT_ERROR_WITH(ops::conv2d(x, uniform({4, 3, 12, 3}, 1), b, {}), "does not fit");
  ops::Conv2dOptions bad;
  bad.stride_h = 0;
  EXPECT_ERROR_WITH(ops::conv2d(x, w, b, bad), "must be positive");
}

TEST(Conv2d, Gradients) {
  const std::vector<Tensor> in = {uniform({2, 2, 6, 5}, 1), uniform({3, 2, 3, 2}, 2),
                                  uniform({3}, 3)};
  EXPECT_GRADCHECK([](const Vars& v) { return conv2d(v[0], v[1], v[2]); }, in);
  EXPECT_GRADCHECK(
      [](const Vars& v) {
        return conv2d(v[0], v[1], v[2], ops::Conv2dOptions{2, 1, 1, 2, 1, 2});
      },
      in);
  EXPECT_GRADCHECK([](const Vars& v) { return conv2d(v[0], v[1], Variable()); },
                   (std::vector<Tensor>{in[0], in[1]}));
}

TEST(Pool2d, ValuesAndGradients) {
  const Tensor x = Tensor::arange(0, 16).view({1, 1, 4, 4});
  EXPECT_EQ(values(ops::max_pool2d(x, {}).values), (std::vector<float>{5, 7, 13, 15}));
  EXPECT_EQ(ops::max_pool2d(x, {}).indices.to_vector<int64_t>(),
            (std::vector<int64_t>{5, 7, 13, 15}));
  EXPECT_EQ(values(ops::avg_pool2d(x, {})), (std::vector<float>{2.5, 4.5, 10.5, 12.5}));
  const ops::Pool2dOptions padded{3, 3, 2, 2, 1, 1};
  EXPECT_EQ(ops::max_pool2d(x, padded).values.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(ops::avg_pool2d(x, padded).at({0, 0, 0, 0}), (0 + 1 + 4 + 5) / 9.0f);
  // Distinct values so that the maximum of every window is unique.
  const Tensor distinct = ops::mul_scalar(
      ops::add(Tensor::arange(0, 50).view({1, 2, 5, 5}), uniform({1, 2, 5, 5}, 3, 0, 0.5)), 0.1);
  EXPECT_GRADCHECK([](const Vars& v) { return max_pool2d(v[0]); }, std::vector<Tensor>{distinct});
  EXPECT_GRADCHECK([&](const Vars& v) { return max_pool2d(v[0], padded); },
                   std::vector<Tensor>{distinct});
  EXPECT_GRADCHECK([&](const Vars& v) { return avg_pool2d(v[0], padded); },
                   std::vector<Tensor>{distinct});
  EXPECT_ERROR_WITH(ops::max_pool2d(uniform({2, 4, 4}, 1), {}), "(N, C, H, W)");
  EXPECT_ERROR_WITH(ops::avg_pool2d(x, ops::Pool2dOptions{2, 2, 2, 2, 2, 0}), "at most half");
}

}  // namespace
}  // namespace redline
