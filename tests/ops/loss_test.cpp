// Losses (with and without per-element weights) and layer norm: values and gradients.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/op_test_util.h"
#include "redline/autograd/functions.h"

namespace redline {
namespace {

using test::uniform;
using test::values;
using Vars = std::vector<Variable>;

TEST(Loss, MseAndHuberValues) {
  const Variable p(Tensor::from_host<float>({0, 1, 4}, {3}));
  const Tensor t = Tensor::from_host<float>({0.5f, 1, 1}, {3});
  EXPECT_NEAR(mse_loss(p, t).data().item(), (0.25 + 0 + 9) / 3, 1e-6);
  // Huber(delta 1): 0.5*0.25, 0, 1*(3 - 0.5).
  EXPECT_NEAR(huber_loss(p, t).data().item(), (0.125 + 0 + 2.5) / 3, 1e-6);
  EXPECT_NEAR(huber_loss(p, t, 2.0).data().item(), (0.125 + 0 + 2 * (3 - 1)) / 3, 1e-6);
  const Tensor w = Tensor::from_host<float>({2, 1, 0}, {3});
  EXPECT_NEAR(mse_loss(p, t, w).data().item(), (0.5 + 0 + 0) / 3, 1e-6);
  EXPECT_ERROR_WITH(mse_loss(p, Tensor::zeros({2}, DType::f32)), "must have one shape");
  EXPECT_ERROR_WITH(mse_loss(p, t, Tensor::ones({2}, DType::f32)), "weight");
  EXPECT_ERROR_WITH(huber_loss(p, t, 0.0), "delta");
}

TEST(Loss, CrossEntropyValues) {
  const Variable logits(Tensor::from_host<float>({1, 2, 3, 0, 0, 0}, {2, 3}));
  const Tensor target = Tensor::from_host<int64_t>({2, 0}, {2});
  const double z = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  EXPECT_NEAR(cross_entropy(logits, target).data().item(), ((z - 3) + std::log(3.0)) / 2, 1e-5);
  EXPECT_NEAR(cross_entropy(logits, target, Tensor::from_host<float>({0, 2}, {2})).data().item(),
              2 * std::log(3.0) / 2, 1e-5);
  EXPECT_ERROR_WITH(cross_entropy(logits, Tensor::from_host<int32_t>({2, 0}, {2})), "i64");
  EXPECT_ERROR_WITH(cross_entropy(logits, Tensor::from_host<int64_t>({2, 3}, {2})), "out of range");
}

TEST(Loss, Gradients) {
  const Tensor target = uniform({4, 3}, 2, -2, 2);
  const Tensor weight = uniform({4, 3}, 3, 0, 1);
  const std::vector<Tensor> in = {uniform({4, 3}, 1, -2, 2)};
  using test::constant_like;
  EXPECT_GRADCHECK([&](const Vars& v) { return mse_loss(v[0], constant_like(target, v[0])); }, in);
  EXPECT_GRADCHECK(
      [&](const Vars& v) {
        return mse_loss(v[0], constant_like(target, v[0]), constant_like(weight, v[0]));
      },
      in);
  EXPECT_GRADCHECK([&](const Vars& v) { return huber_loss(v[0], constant_like(target, v[0])); },
                   in);
  EXPECT_GRADCHECK(
      [&](const Vars& v) {
        return huber_loss(v[0], constant_like(target, v[0]), 0.5, constant_like(weight, v[0]));
      },
      in);
  const Tensor classes = Tensor::from_host<int64_t>({0, 2, 1, 2}, {4});
  EXPECT_GRADCHECK([&](const Vars& v) { return cross_entropy(v[0], classes); }, in);
  const Tensor class_weight = Tensor::from_host<float>({1, 0.5f, 2, 0}, {4});
  EXPECT_GRADCHECK(
      [&](const Vars& v) {
        return cross_entropy(v[0], classes, constant_like(class_weight, v[0]));
      },
      in);
}

TEST(LayerNorm, NormalizesAndDifferentiates) {
  const Tensor x = uniform({3, 6}, 5, -3, 3);
  const Variable y = layer_norm(Variable(x), Variable(), Variable());
  for (int64_t r = 0; r < 3; ++r) {
    const Tensor row = y.data().select(0, r);
    EXPECT_NEAR(ops::mean(row).item(), 0.0, 1e-5);
    EXPECT_NEAR(ops::mean(ops::square(row)).item(), 1.0, 1e-3);
  }
  EXPECT_GRADCHECK([](const Vars& v) { return layer_norm(v[0], v[1], v[2]); },
                   (std::vector<Tensor>{x, uniform({6}, 6), uniform({6}, 7)}));
}

}  // namespace
}  // namespace redline
