// Modules, layers, initializers, target-network updates.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/op_test_util.h"
#include "redline/nn/init.h"
#include "redline/nn/layers.h"

namespace redline::nn {
namespace {

using test::values;

std::shared_ptr<Sequential> mlp(Generator& gen) {
  return std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
      std::make_shared<Linear>(4, 8, gen), ReLU(), std::make_shared<Linear>(8, 2, gen)});
}

TEST(Module, NamedParametersFollowRegistrationOrder) {
  Generator gen(1, 0);
  const auto net = mlp(gen);
  std::vector<std::string> names;
  for (const auto& [name, v] : net->named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  EXPECT_EQ(net->parameter_count(), 4 * 8 + 8 + 8 * 2 + 2);
  EXPECT_EQ(net->str(), "Sequential(\n  (0): Linear(4, 8)\n  (1): ReLU\n  (2): Linear(8, 2)\n)");
  const Variable y = (*net)(Variable(test::uniform({5, 4}, 1)));
  EXPECT_EQ(y.shape(), (Shape{5, 2}));
  EXPECT_ERROR_WITH((*net)(Variable(test::uniform({5, 3}, 1))), "must end in 4 features");
}

TEST(Module, LinearMatchesItsFormulaAndPyTorchInitBounds) {
  Generator gen(7, 0);
  Linear layer(16, 3, gen);
  const Tensor w = layer.weight().data(), b = layer.bias().data();
  const double bound = 1.0 / std::sqrt(16.0);
  for (float v : values(w)) EXPECT_LE(std::fabs(v), bound);
  for (float v : values(b)) EXPECT_LE(std::fabs(v), bound);
  const Tensor x = test::uniform({2, 16}, 3);
  const Tensor y = layer(Variable(x)).data();
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t o = 0; o < 3; ++o) {
      double acc = b.at({o});
      for (int64_t k = 0; k < 16; ++k) acc += x.at({i, k}) * w.at({o, k});
      EXPECT_NEAR(y.at({i, o}), acc, 1e-5);
    }
  }
  // Same seed, same network.
  Generator again(7, 0);
  Linear twin(16, 3, again);
  EXPECT_EQ(values(twin.weight().data()), values(w));
}

TEST(Module, CopyFromAndPolyak) {
  Generator gen(1, 0);
  const auto online = mlp(gen);
  const auto target = mlp(gen);
  EXPECT_NE(values(online->parameters()[0].data()), values(target->parameters()[0].data()));
  const std::vector<float> before = values(target->parameters()[0].data());
  const std::vector<float> source = values(online->parameters()[0].data());
  target->polyak_update(*online, 0.25);
  const std::vector<float> mixed = values(target->parameters()[0].data());
  for (size_t i = 0; i < mixed.size(); ++i) {
    EXPECT_NEAR(mixed[i], 0.75 * before[i] + 0.25 * source[i], 1e-6);
  }
  target->copy_from(*online);
  for (size_t i = 0; i < online->parameters().size(); ++i) {
    EXPECT_EQ(values(target->parameters()[i].data()), values(online->parameters()[i].data()));
  }
  Generator g2(2, 0);
  Sequential other({std::make_shared<Linear>(4, 8, g2)});
  EXPECT_ERROR_WITH(target->copy_from(other), "hold");
  EXPECT_ERROR_WITH(target->polyak_update(*online, 1.5), "tau");
}

TEST(Module, ConvNetShapesAndLayerNorm) {
  Generator gen(3, 0);
  Sequential net({std::make_shared<Conv2d>(4, 16, 3, gen), ReLU(), Flatten(),
                  std::make_shared<Linear>(16 * 8 * 8, 5, gen), std::make_shared<LayerNorm>(5),
                  Tanh()});
  const Variable y = net(Variable(test::uniform({2, 4, 10, 10}, 1)));
  EXPECT_EQ(y.shape(), (Shape{2, 5}));
  sum(y).backward();
  for (const auto& [name, p] : net.named_parameters()) {
    EXPECT_TRUE(p.grad().defined()) << name;
    EXPECT_EQ(p.grad().shape(), p.shape()) << name;
  }
  net.zero_grad();
  EXPECT_EQ(ops::sum(ops::abs(net.parameters()[0].grad())).item(), 0.0);
  EXPECT_ERROR_WITH(net(Variable(test::uniform({2, 3, 10, 10}, 1))), "must be (N, 4, H, W)");
}

TEST(Init, DistributionsHaveTheirMoments) {
  Generator gen(11, 0);
  Tensor w = Tensor::empty({256, 512}, DType::f32);
  init::kaiming_normal_(w, gen);
  const double var = ops::mean(ops::square(w)).item();
  EXPECT_NEAR(var, 2.0 / 512, 0.05 * 2.0 / 512);
  init::xavier_uniform_(w, gen);
  const double bound = std::sqrt(6.0 / (256 + 512));
  EXPECT_LE(ops::max(ops::abs(w)).item(), bound);
  EXPECT_NEAR(ops::mean(ops::square(w)).item(), bound * bound / 3, 0.05 * bound * bound / 3);
  init::kaiming_uniform_(w, gen);
  EXPECT_LE(ops::max(ops::abs(w)).item(), std::sqrt(2.0) * std::sqrt(3.0 / 512));
  Tensor c = Tensor::empty({3}, DType::f32);
  init::constant_(c, 0.5);
  EXPECT_EQ(values(c), (std::vector<float>{0.5, 0.5, 0.5}));
}

TEST(Init, OrthogonalRowsOrColumnsAreOrthonormal) {
  Generator gen(5, 0);
  for (const Shape& shape : {Shape{6, 4}, Shape{4, 6}, Shape{8, 2, 2, 2}}) {
    Tensor w = Tensor::empty(shape, DType::f32);
    init::orthogonal_(w, gen, 2.0);
    const Tensor m = w.reshape({shape[0], -1});
    const bool tall = m.shape(0) >= m.shape(1);
    const Tensor gram =
        tall ? ops::matmul(m.transpose(0, 1), m) : ops::matmul(m, m.transpose(0, 1));
    const int64_t n = gram.shape(0);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        EXPECT_NEAR(gram.at({i, j}), i == j ? 4.0 : 0.0, 1e-4) << shape_str(shape);
      }
    }
  }
}

}  // namespace
}  // namespace redline::nn
