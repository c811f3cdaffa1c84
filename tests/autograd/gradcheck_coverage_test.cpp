// Gradcheck coverage of the differentiable functions: the cases the per-op tests in tests/ops leave
// out (broadcasting on both sides, exponents and ranges, dims and keepdim, batched and bias-less
// linear algebra, indexing along other dims, softmax on inner dims, casts, every layout function,
// conv2d and pooling options, layer_norm without affine terms, losses on N-D shapes).
//
// Every check runs with gradcheck's defaults (f64, eps 1e-6, atol 1e-7, rtol 1e-5) except the casts
// through f32 and bf16 (see there). Inputs stay away from kinks, where finite differences are no
// derivative: relu/abs/leaky_relu at 0, clamp at its bounds, ties of maximum/minimum, of max and
// of max_pool2d windows, huber's |d| = delta and the pre-activation 0 of linear with a fused relu.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "ops/op_test_util.h"
#include "redline/autograd/functions.h"
#include "redline/autograd/gradcheck.h"

namespace redline {
namespace {

using test::away_from_zero;
using test::constant_like;
using test::uniform;
using Vars = std::vector<Variable>;

// Runs gradcheck and names the case and the worst element when it fails.
void check(const std::string& what, const GradcheckFunction& fn, const std::vector<Tensor>& inputs,
           const GradcheckOptions& options = {}) {
  const GradcheckResult result = gradcheck(fn, inputs, options);
  EXPECT_TRUE(result.ok) << what << ": " << result.message;
}

// Values 0.1 * k + offset for k = 0..n-1 in a shuffled order (k = 37 i mod n): any two differ by
// at least 0.1, so no maximum switches under a 1e-6 step.
Tensor distinct(const Shape& shape, double offset) {
  const int64_t n = shape_numel(shape);
  EXPECT_NE(n % 37, 0) << "37 i mod n must be a permutation";
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(0.1 * ((i * 37) % n) + offset);
  return Tensor::from_host<float>(v, shape);
}

double min_abs(const Tensor& t) {
  const std::vector<double> v = ops::cast(t, DType::f64).contiguous().to_vector<double>();
  double m = INFINITY;
  for (double x : v) m = std::min(m, std::fabs(x));
  return m;
}

TEST(GradcheckCoverage, BinaryOpsBroadcastOnBothSides) {
  // a (3, 1) and b (1, 4) both broadcast to (3, 4); b in [0.5, 1.5) keeps div away from 0.
  const std::vector<Tensor> in = {uniform({3, 1}, 21), uniform({1, 4}, 22, 0.5, 1.5)};
  check(
      "add", [](const Vars& v) { return add(v[0], v[1]); }, in);
  check(
      "sub", [](const Vars& v) { return sub(v[0], v[1]); }, in);
  check(
      "mul", [](const Vars& v) { return mul(v[0], v[1]); }, in);
  check(
      "div", [](const Vars& v) { return div(v[0], v[1]); }, in);
  check("div by 0-d", [](const Vars& v) { return div(v[0], v[1]); },
        {uniform({2, 3}, 23), uniform({}, 24, 0.5, 1.5)});
  check(
      "operators", [](const Vars& v) { return (v[0] - 0.5) * v[1] + 2.0 * v[0]; }, in);
  // a on the grid -0.6 + 0.1 k, b 0.05 off that grid: no ties.
  const std::vector<Tensor> untied = {distinct({3, 4}, -0.6),
                                      Tensor::from_host<float>({-0.35f, 0.05f, 0.25f, 0.45f}, {4})};
  check(
      "maximum", [](const Vars& v) { return maximum(v[0], v[1]); }, untied);
  check(
      "minimum", [](const Vars& v) { return minimum(v[1], v[0]); }, untied);
  check("maximum, one side constant",
        [&](const Vars& v) { return maximum(v[0], Variable(constant_like(untied[1], v[0]))); },
        {untied[0]});
}

TEST(GradcheckCoverage, UnaryOpsOverWiderRangesAndExponents) {
  const std::vector<Tensor> signed_in = {away_from_zero({3, 4}, 31)};  // |x| in [0.2, 1.2)
  const std::vector<Tensor> positive = {uniform({3, 4}, 32, 0.3, 2.0)};
  const std::vector<Tensor> wide = {uniform({4, 5}, 33, -3.0, 3.0)};
  check(
      "pow 3 (signed)", [](const Vars& v) { return pow_scalar(v[0], 3.0); }, signed_in);
  check(
      "pow 2 (signed)", [](const Vars& v) { return pow_scalar(v[0], 2.0); }, signed_in);
  check(
      "pow -2 (signed)", [](const Vars& v) { return pow_scalar(v[0], -2.0); }, signed_in);
  check(
      "pow 0.5", [](const Vars& v) { return pow_scalar(v[0], 0.5); }, positive);
  check(
      "pow -1.5", [](const Vars& v) { return pow_scalar(v[0], -1.5); }, positive);
  check(
      "leaky_relu default slope", [](const Vars& v) { return leaky_relu(v[0]); }, signed_in);
  check(
      "leaky_relu slope > 1", [](const Vars& v) { return leaky_relu(v[0], 1.5); }, signed_in);
  check(
      "mul_scalar negative", [](const Vars& v) { return mul_scalar(v[0], -2.5); }, signed_in);
  // Smooth functions over [-3, 3): the tails where sigmoid/tanh saturate and gelu bends.
  check(
      "gelu", [](const Vars& v) { return gelu(v[0]); }, wide);
  check(
      "tanh", [](const Vars& v) { return tanh(v[0]); }, wide);
  check(
      "sigmoid", [](const Vars& v) { return sigmoid(v[0]); }, wide);
  check(
      "exp", [](const Vars& v) { return exp(v[0]); }, wide);
  check(
      "square", [](const Vars& v) { return square(v[0]); }, wide);
  check("log of a large range", [](const Vars& v) { return log(v[0]); },
        {uniform({3, 4}, 34, 0.05, 20.0)});
  check("sqrt of a large range", [](const Vars& v) { return sqrt(v[0]); },
        {uniform({3, 4}, 35, 0.05, 20.0)});
  check(
      "abs, relu composed", [](const Vars& v) { return mul(abs(v[0]), relu(neg(v[0]))); },
      signed_in);
}

TEST(GradcheckCoverage, ClampAndWhereVariants) {
  // Values at least 0.1 away from the bounds -0.5, 0.5 and 0.
  const Tensor x = Tensor::from_host<float>(
      {-1.1f, -0.7f, -0.3f, -0.1f, 0.15f, 0.35f, 0.65f, 1.2f, -0.4f, 0.8f, 0.25f, -0.9f}, {3, 4});
  check("clamp lo only", [](const Vars& v) { return clamp(v[0], -0.5, std::nullopt); }, {x});
  check("clamp lo = 0", [](const Vars& v) { return clamp(v[0], 0.0, 0.5); }, {x});
  check("clamp, no bounds", [](const Vars& v) { return clamp(v[0], std::nullopt, std::nullopt); },
        {x});
  // cond (2, 3); a (3,) and b (2, 1) broadcast to it.
  const Tensor cond =
      ops::cast(Tensor::from_host<uint8_t>({1, 0, 0, 0, 1, 1}, {2, 3}), DType::boolean);
  check("where, both broadcast", [&](const Vars& v) { return where(cond, v[0], v[1]); },
        {uniform({3}, 36), uniform({2, 1}, 37)});
  check("where, b constant",
        [&](const Vars& v) { return where(cond, v[0], Variable(Tensor::zeros({}, v[0].dtype()))); },
        {uniform({2, 3}, 38)});
}

TEST(GradcheckCoverage, ReductionsOverDims) {
  const std::vector<Tensor> in = {uniform({2, 3, 4}, 41)};
  check(
      "sum {-1, 0} keepdim",
      [](const Vars& v) {
        return sum(v[0], {-1, 0}, true);
      },
      in);
  check(
      "sum {1}", [](const Vars& v) { return sum(v[0], {1}); }, in);
  check(
      "sum {2, 0}",
      [](const Vars& v) {
        return sum(v[0], {2, 0});
      },
      in);
  check(
      "sum all dims",
      [](const Vars& v) {
        return sum(v[0], {0, 1, 2});
      },
      in);
  check(
      "mean {0, 2} keepdim",
      [](const Vars& v) {
        return mean(v[0], {0, 2}, true);
      },
      in);
  check(
      "mean {1}", [](const Vars& v) { return mean(v[0], {1}); }, in);
  check(
      "mean {-2} keepdim", [](const Vars& v) { return mean(v[0], {-2}, true); }, in);
  // Tie-free values (0.1 apart), negative ones included.
  const std::vector<Tensor> untied = {distinct({2, 3, 4}, -1.2)};
  check(
      "max all", [](const Vars& v) { return max(v[0]); }, untied);
  check(
      "max -1", [](const Vars& v) { return max(v[0], -1); }, untied);
  check(
      "max 2 keepdim", [](const Vars& v) { return max(v[0], 2, true); }, untied);
  check(
      "max 1", [](const Vars& v) { return max(v[0], 1); }, untied);
  check("max of a 1-D", [](const Vars& v) { return max(v[0], 0); }, {distinct({7}, -0.3)});
}

TEST(GradcheckCoverage, MatmulAndLinear) {
  const Tensor a2 = uniform({3, 5}, 51), b2 = uniform({5, 4}, 52);
  const Tensor a3 = uniform({2, 3, 5}, 53), b3 = uniform({2, 5, 4}, 54);
  const auto mm = [](const Vars& v) { return matmul(v[0], v[1]); };
  check("matmul 2-D", mm, {a2, b2});
  check("matmul batched", mm, {a3, b3});
  check("matmul batched @ shared", mm, {a3, b2});
  check("matmul shared @ batched", mm, {a2, b3});
  check("matmul, b constant",
        [&](const Vars& v) { return matmul(v[0], Variable(constant_like(b3, v[0]))); }, {a3});
  check("matmul, a constant",
        [&](const Vars& v) { return matmul(Variable(constant_like(a2, v[0])), v[0]); }, {b3});
  check("matmul of transposed views",
        [](const Vars& v) { return matmul(transpose(v[0], 0, 1), transpose(v[1], 0, 1)); },
        {uniform({5, 3}, 55), uniform({4, 5}, 56)});

  const Tensor x2 = uniform({4, 5}, 57), x3 = uniform({2, 3, 5}, 62), x1 = uniform({5}, 59);
  const Tensor w = uniform({3, 5}, 60), b = uniform({3}, 61);
  check("linear 2-D", [](const Vars& v) { return linear(v[0], v[1], v[2]); }, {x2, w, b});
  check("linear 2-D, no bias", [](const Vars& v) { return linear(v[0], v[1], Variable()); },
        {x2, w});
  check("linear 3-D, no bias", [](const Vars& v) { return linear(v[0], v[1], Variable()); },
        {x3, w});
  check("linear 1-D", [](const Vars& v) { return linear(v[0], v[1], v[2]); }, {x1, w, b});
  check("linear, weight constant",
        [&](const Vars& v) { return linear(v[0], Variable(constant_like(w, v[0])), Variable()); },
        {x2});
  // The relu kink is at a pre-activation of 0: these seeds keep every |x W^T + b| > 1e-2.
  ASSERT_GT(min_abs(ops::linear(x2, w, b)), 1e-2);
  ASSERT_GT(min_abs(ops::linear(x3.reshape({6, 5}), w, b)), 1e-2);
  ASSERT_GT(min_abs(ops::linear(x2, w, Tensor())), 1e-2);
  const auto relu_linear = [](const Vars& v) {
    return linear(v[0], v[1], v[2], ops::Activation::relu);
  };
  check("linear relu 2-D", relu_linear, {x2, w, b});
  check("linear relu 3-D", relu_linear, {x3, w, b});
  check("linear relu, no bias",
        [](const Vars& v) { return linear(v[0], v[1], Variable(), ops::Activation::relu); },
        {x2, w});
}

TEST(GradcheckCoverage, IndexingAlongOtherDims) {
  // Repeated indices: their gradients must add up.
  const Tensor cols = Tensor::from_host<int64_t>({3, 0, 3, 1, 3}, {5});
  check("index_select dim 1", [&](const Vars& v) { return index_select(v[0], 1, cols); },
        {uniform({3, 4}, 71)});
  check("index_select dim -1 of 3-D", [&](const Vars& v) { return index_select(v[0], -1, cols); },
        {uniform({2, 2, 4}, 72)});
  // gather along dim 0 with fewer rows than x, some picked twice, one never.
  const Tensor rows = Tensor::from_host<int64_t>({3, 0, 3, 3, 1, 3}, {2, 3});
  check("gather dim 0, repeated rows", [&](const Vars& v) { return gather(v[0], 0, rows); },
        {uniform({4, 3}, 73)});
  const Tensor index3 = Tensor::from_host<int64_t>({1, 1, 0, 2, 2, 2, 0, 1}, {2, 2, 2});
  check("gather dim 2 of 3-D", [&](const Vars& v) { return gather(v[0], 2, index3); },
        {uniform({2, 2, 3}, 74)});
  // scatter_add along dim 0 with collisions; and with one side constant.
  const Tensor to_rows = Tensor::from_host<int64_t>({2, 0, 1, 2, 2, 0}, {2, 3});
  const Tensor self = uniform({3, 3}, 75), src = uniform({2, 3}, 76);
  check("scatter_add dim 0", [&](const Vars& v) { return scatter_add(v[0], 0, to_rows, v[1]); },
        {self, src});
  check("scatter_add, self constant",
        [&](const Vars& v) {
          return scatter_add(Variable(constant_like(self, v[0])), 0, to_rows, v[0]);
        },
        {src});
  check("scatter_add, src constant",
        [&](const Vars& v) {
          return scatter_add(v[0], 0, to_rows, Variable(constant_like(src, v[0])));
        },
        {self});
}

TEST(GradcheckCoverage, SoftmaxOnInnerDims) {
  const std::vector<Tensor> in = {uniform({2, 3, 4}, 81, -2, 2)};
  check(
      "softmax 1", [](const Vars& v) { return softmax(v[0], 1); }, in);
  check(
      "softmax -1", [](const Vars& v) { return softmax(v[0], -1); }, in);
  check(
      "softmax 0", [](const Vars& v) { return softmax(v[0], 0); }, in);
  check(
      "log_softmax -2", [](const Vars& v) { return log_softmax(v[0], -2); }, in);
  check(
      "log_softmax 2", [](const Vars& v) { return log_softmax(v[0], 2); }, in);
  check("softmax of a 1-D", [](const Vars& v) { return softmax(v[0], 0); },
        {uniform({6}, 82, -2, 2)});
  check("log_softmax of large logits", [](const Vars& v) { return log_softmax(v[0], 1); },
        {uniform({2, 4}, 83, 50, 60)});
}

TEST(GradcheckCoverage, CastsBetweenFloatingDtypes) {
  check("cast f64 -> f64", [](const Vars& v) { return cast(v[0], DType::f64); },
        {uniform({3, 4}, 91)});
  // Through f32 or bf16 a 1e-6 step would be rounded away, so these two use a step that is exact:
  // f32: x = 5 k / 64 (|x| < 1), eps = 2^-10, x +- eps = (80 k +- 1) / 1024 (10 significant bits);
  // bf16: x = k / 16 (|x| < 1), eps = 2^-6, x +- eps = (4 k +- 1) / 64 (6 bits, bf16 holds 8).
  // The function is linear (x 2 is exact) and its output stays in the low dtype, so the direction
  // gradcheck rounds into it is the one both sides use: the central difference is exact and the
  // tolerances stay the defaults.
  std::vector<float> sixty_fourths, sixteenths;
  for (int k = -11; k < 13; ++k) {
    sixty_fourths.push_back(static_cast<float>(5 * k) / 64.0f);
    sixteenths.push_back(static_cast<float>(k) / 16.0f);
  }
  GradcheckOptions exact_step;
  exact_step.eps = std::ldexp(1.0, -10);
  check(
      "cast f64 -> f32", [](const Vars& v) { return mul_scalar(cast(v[0], DType::f32), 2.0); },
      {Tensor::from_host<float>(sixty_fourths, {4, 6})}, exact_step);
  GradcheckOptions exact_bf16_step;
  exact_bf16_step.eps = std::ldexp(1.0, -6);
  check(
      "cast f64 -> bf16", [](const Vars& v) { return mul_scalar(cast(v[0], DType::bf16), 2.0); },
      {Tensor::from_host<float>(sixteenths, {4, 6})}, exact_bf16_step);
}

TEST(GradcheckCoverage, LayoutFunctions) {
  const std::vector<Tensor> in3 = {uniform({2, 3, 4}, 101)};
  check(
      "transpose 0 2", [](const Vars& v) { return transpose(v[0], 0, 2); }, in3);
  check(
      "transpose -1 -2", [](const Vars& v) { return transpose(v[0], -1, -2); }, in3);
  check(
      "permute with negative dims",
      [](const Vars& v) {
        return permute(v[0], {-1, 0, 1});
      },
      in3);
  check(
      "reshape with -1",
      [](const Vars& v) {
        return reshape(v[0], {4, -1});
      },
      in3);
  check(
      "reshape of a transposed view",
      [](const Vars& v) {
        return reshape(transpose(v[0], 0, 1), {6, 4});
      },
      in3);
  check("squeeze 1", [](const Vars& v) { return squeeze(v[0], 1); }, {uniform({3, 1, 4}, 102)});
  check("squeeze -1", [](const Vars& v) { return squeeze(v[0], -1); }, {uniform({3, 4, 1}, 103)});
  check(
      "unsqueeze -1", [](const Vars& v) { return unsqueeze(v[0], -1); }, in3);
  check(
      "unsqueeze 0", [](const Vars& v) { return unsqueeze(v[0], 0); }, in3);
  const std::vector<Tensor> in4 = {uniform({2, 3, 2, 2}, 104)};
  check(
      "flatten 0", [](const Vars& v) { return flatten(v[0], 0); }, in4);
  check(
      "flatten 2", [](const Vars& v) { return flatten(v[0], 2); }, in4);
  check(
      "flatten -1", [](const Vars& v) { return flatten(v[0], -1); }, in4);
  // Gradients arriving through a non-contiguous view into a broadcasting op.
  check("mul of transposed", [](const Vars& v) { return mul(transpose(v[0], 0, 1), v[1]); },
        {uniform({4, 3}, 105), uniform({3, 1}, 106)});
  const std::vector<Tensor> parts = {uniform({1, 3}, 107), uniform({2, 3}, 108),
                                     uniform({3, 3}, 109)};
  check(
      "cat 0",
      [](const Vars& v) {
        return cat({v[0], v[1], v[2]}, 0);
      },
      parts);
  check(
      "cat -1",
      [](const Vars& v) {
        return cat({transpose(v[0], 0, 1), transpose(v[2], 0, 1)}, -1);
      },
      parts);
  check("cat, one part constant",
        [&](const Vars& v) {
          return cat({v[0], Variable(constant_like(parts[1], v[0]))}, 0);
        },
        {parts[0]});
  const std::vector<Tensor> same = {uniform({2, 3}, 110), uniform({2, 3}, 111),
                                    uniform({2, 3}, 112)};
  check(
      "stack 0",
      [](const Vars& v) {
        return stack({v[0], v[1], v[2]}, 0);
      },
      same);
  check(
      "stack -1",
      [](const Vars& v) {
        return stack({v[0], v[1], v[0]}, -1);
      },
      same);
}

TEST(GradcheckCoverage, Conv2dOptions) {
  const auto conv = [](const ops::Conv2dOptions& o) {
    return [o](const Vars& v) { return conv2d(v[0], v[1], v.size() > 2 ? v[2] : Variable(), o); };
  };
  // Fields: stride h, w; pad h, w; dilation h, w.
  // Stride 2 with a 6x6 input and 3x3 kernel: the last row and column are never read.
  check("stride 2, unread tail", conv({2, 2, 0, 0, 1, 1}),
        {uniform({2, 1, 6, 6}, 121), uniform({2, 1, 3, 3}, 122), uniform({2}, 123)});
  check("dilation h 2, stride w 2, pad w 1", conv({1, 2, 0, 1, 2, 1}),
        {uniform({1, 3, 7, 6}, 124), uniform({2, 3, 2, 3}, 125), uniform({2}, 126)});
  check("pad 2 and dilation 2 both ways", conv({1, 1, 2, 2, 2, 2}),
        {uniform({1, 2, 5, 5}, 127), uniform({3, 2, 3, 3}, 128)});
  check("1x1 kernel, stride 2", conv({2, 2, 0, 0, 1, 1}),
        {uniform({2, 3, 4, 5}, 129), uniform({2, 3, 1, 1}, 130), uniform({2}, 131)});
  const Tensor w = uniform({2, 2, 3, 3}, 133);
  check("weight constant",
        [&](const Vars& v) {
          return conv2d(v[0], Variable(constant_like(w, v[0])), Variable(),
                        ops::Conv2dOptions{1, 1, 1, 1, 1, 1});
        },
        {uniform({1, 2, 4, 4}, 132)});
  check("input constant",
        [&](const Vars& v) {
          const Tensor x = constant_like(uniform({1, 2, 4, 4}, 134), v[0]);
          return conv2d(Variable(x), v[0], v[1], ops::Conv2dOptions{2, 1, 1, 0, 1, 1});
        },
        {w, uniform({2}, 135)});
}

TEST(GradcheckCoverage, PoolingOptions) {
  // Tie-free values (0.1 apart; all negative in the second case, so a padded cell never wins).
  const Tensor x = distinct({1, 2, 5, 6}, 0.0);
  const Tensor negative = distinct({2, 1, 5, 5}, -6.0);
  // Fields: kernel h, w; stride h, w; pad h, w.
  check("max_pool2d stride 1 (overlapping windows)",
        [](const Vars& v) {
          return max_pool2d(v[0], ops::Pool2dOptions{2, 2, 1, 1, 0, 0});
        },
        {x});
  check("max_pool2d non-square, padded",
        [](const Vars& v) {
          return max_pool2d(v[0], ops::Pool2dOptions{2, 3, 2, 1, 1, 1});
        },
        {x});
  check("max_pool2d negative values, padded",
        [](const Vars& v) {
          return max_pool2d(v[0], ops::Pool2dOptions{3, 3, 2, 2, 1, 1});
        },
        {negative});
  check("avg_pool2d default", [](const Vars& v) { return avg_pool2d(v[0]); }, {x});
  check("avg_pool2d non-square, overlapping, padded",
        [](const Vars& v) {
          return avg_pool2d(v[0], ops::Pool2dOptions{3, 2, 1, 2, 1, 0});
        },
        {x});
  check("avg_pool2d stride 1, padded",
        [](const Vars& v) {
          return avg_pool2d(v[0], ops::Pool2dOptions{3, 3, 1, 1, 1, 1});
        },
        {negative});
}

TEST(GradcheckCoverage, LayerNormWithoutAffineTerms) {
  const Tensor x = uniform({2, 3, 5}, 141, -2, 2);
  const Tensor weight = uniform({5}, 142), bias = uniform({5}, 143);
  check("no weight, no bias",
        [](const Vars& v) { return layer_norm(v[0], Variable(), Variable()); }, {x});
  check("weight only", [](const Vars& v) { return layer_norm(v[0], v[1], Variable()); },
        {x, weight});
  check("bias only", [](const Vars& v) { return layer_norm(v[0], Variable(), v[1]); }, {x, bias});
  check("3-D, large eps", [](const Vars& v) { return layer_norm(v[0], v[1], v[2], 0.5); },
        {x, weight, bias});
  check("1-D", [](const Vars& v) { return layer_norm(v[0], v[1], v[2]); },
        {uniform({6}, 144, -2, 2), uniform({6}, 145), uniform({6}, 146)});
}

TEST(GradcheckCoverage, LossesOnNdShapesAndWeights) {
  const Tensor target = uniform({2, 3, 2}, 151, -2, 2);
  const Tensor weight = uniform({2, 3, 2}, 152, 0, 2);
  // Residuals 0.3, 0.7, 1.6, 2.4 in size, with signs: away from 0 and from |d| = 0.5, 1, 2.
  std::vector<float> residual = {0.3f,  -0.7f, 1.6f, -2.4f, -0.3f, 0.7f,
                                 -1.6f, 2.4f,  0.7f, -0.3f, 2.4f,  -1.6f};
  const Tensor prediction = ops::add(target, Tensor::from_host<float>(residual, {2, 3, 2}));
  const std::vector<Tensor> in = {prediction};
  check(
      "mse", [&](const Vars& v) { return mse_loss(v[0], constant_like(target, v[0])); }, in);
  check(
      "mse weighted",
      [&](const Vars& v) {
        return mse_loss(v[0], constant_like(target, v[0]), constant_like(weight, v[0]));
      },
      in);
  for (const double delta : {0.5, 1.0, 2.0}) {
    check(
        "huber delta " + std::to_string(delta),
        [&](const Vars& v) { return huber_loss(v[0], constant_like(target, v[0]), delta); }, in);
    check(
        "huber weighted delta " + std::to_string(delta),
        [&](const Vars& v) {
          return huber_loss(v[0], constant_like(target, v[0]), delta, constant_like(weight, v[0]));
        },
        in);
  }
  const Tensor logits = uniform({5, 4}, 153, -3, 3);
  const Tensor classes = Tensor::from_host<int64_t>({3, 0, 3, 2, 1}, {5});
  const Tensor sample_weight = Tensor::from_host<float>({0.5f, 0.0f, 2.0f, 1.0f, 3.0f}, {5});
  check("cross_entropy", [&](const Vars& v) { return cross_entropy(v[0], classes); }, {logits});
  check("cross_entropy weighted",
        [&](const Vars& v) {
          return cross_entropy(v[0], classes, constant_like(sample_weight, v[0]));
        },
        {logits});
  check("cross_entropy of large logits",
        [&](const Vars& v) { return cross_entropy(v[0], classes); },
        {uniform({5, 4}, 154, 40, 50)});
}

TEST(GradcheckCoverage, SmallNetworkEndToEnd) {
  // linear -> tanh -> linear + residual -> layer_norm -> log_softmax -> weighted cross_entropy;
  // x is used twice so its gradient accumulates over two paths.
  const Tensor classes = Tensor::from_host<int64_t>({1, 0, 2}, {3});
  const Tensor sample_weight = Tensor::from_host<float>({1.0f, 0.5f, 2.0f}, {3});
  check("network",
        [&](const Vars& v) {
          const Variable h = tanh(linear(v[0], v[1], v[2]));
          const Variable z = add(linear(h, v[3], Variable()), v[0]);
          return cross_entropy(layer_norm(z, Variable(), Variable()), classes,
                               constant_like(sample_weight, v[0]));
        },
        {uniform({3, 3}, 161), uniform({4, 3}, 162), uniform({4}, 163), uniform({3, 4}, 164)});
}

}  // namespace
}  // namespace redline
