// Optimizers against plain double-precision re-statements of torch.optim's update rules, state
// round trips, clipping, and small networks that learn.
#include "redline/optim/optim.h"

#include <gtest/gtest.h>

#include <cmath>

#include "ops/op_test_util.h"
#include "redline/nn/layers.h"

namespace redline::optim {
namespace {

using test::values;

// Runs `steps` updates on p with fixed gradient sequence g_t = sin(t + i) and returns p.
template <typename Opt, typename Options>
std::vector<float> run(const Options& o, int steps, std::vector<float> p0) {
  Variable p(Tensor::from_host<float>(p0, {static_cast<int64_t>(p0.size())}), true);
  Opt opt({p}, o);
  for (int t = 1; t <= steps; ++t) {
    std::vector<float> g(p0.size());
    for (size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>(std::sin(t + 1.0 * i));
    p.set_grad(Tensor::from_host<float>(g, p.shape()));
    opt.step();
  }
  EXPECT_EQ(opt.step_count(), steps);
  return values(p.data());
}

const std::vector<float> kStart = {0.5f, -1.0f, 2.0f};

TEST(Optim, SgdMomentumNesterovWeightDecay) {
  for (bool nesterov : {false, true}) {
    SgdOptions o{0.1, 0.9, 0.0, 0.01, nesterov};
    const std::vector<float> got = run<SGD>(o, 5, kStart);
    for (size_t i = 0; i < kStart.size(); ++i) {
      double p = kStart[i], buf = 0;
      for (int t = 1; t <= 5; ++t) {
        double g = std::sin(t + 1.0 * i) + 0.01 * p;
        buf = t == 1 ? g : 0.9 * buf + g;
        p -= 0.1 * (nesterov ? g + 0.9 * buf : buf);
      }
      EXPECT_NEAR(got[i], p, 1e-5) << "nesterov " << nesterov;
    }
  }
}

TEST(Optim, AdamAndAdamW) {
  for (bool decoupled : {false, true}) {
    AdamOptions o{0.01, 0.9, 0.999, 1e-8, 0.1};
    const std::vector<float> got = decoupled ? run<AdamW>(o, 6, kStart) : run<Adam>(o, 6, kStart);
    for (size_t i = 0; i < kStart.size(); ++i) {
      double p = kStart[i], m = 0, v = 0;
      for (int t = 1; t <= 6; ++t) {
        double g = std::sin(t + 1.0 * i);
        if (decoupled) {
          p *= 1 - 0.01 * 0.1;
        } else {
          g += 0.1 * p;
        }
        m = 0.9 * m + 0.1 * g;
        v = 0.999 * v + 0.001 * g * g;
        const double mhat = m / (1 - std::pow(0.9, t)), vhat = v / (1 - std::pow(0.999, t));
        p -= 0.01 * mhat / (std::sqrt(vhat) + 1e-8);
      }
      EXPECT_NEAR(got[i], p, 1e-5) << "decoupled " << decoupled;
    }
  }
}

TEST(Optim, RmspropCenteredAsMinAtarDqn) {
  for (bool centered : {false, true}) {
    for (double momentum : {0.0, 0.5}) {
      RmspropOptions o{2.5e-4, 0.95, 0.01, 0.0, momentum, centered};
      const std::vector<float> got = run<RMSprop>(o, 7, kStart);
      for (size_t i = 0; i < kStart.size(); ++i) {
        double p = kStart[i], sq = 0, ga = 0, buf = 0;
        for (int t = 1; t <= 7; ++t) {
          const double g = std::sin(t + 1.0 * i);
          sq = 0.95 * sq + 0.05 * g * g;
          double avg;
          if (centered) {
            ga = 0.95 * ga + 0.05 * g;
            avg = std::sqrt(sq - ga * ga) + 0.01;
          } else {
            avg = std::sqrt(sq) + 0.01;
          }
          if (momentum > 0) {
            buf = momentum * buf + g / avg;
            p -= 2.5e-4 * buf;
          } else {
            p -= 2.5e-4 * g / avg;
          }
        }
        EXPECT_NEAR(got[i], p, 1e-6) << "centered " << centered << " momentum " << momentum;
      }
    }
  }
}

TEST(Optim, LearningRateAndStateLiveInTensors) {
  Variable p(Tensor::from_host<float>({1, 2}, {2}), true);
  Adam opt({p}, AdamOptions{});
  EXPECT_EQ(opt.lr_tensor().shape(), (Shape{1}));
  EXPECT_NEAR(opt.lr(), 1e-3, 1e-9);
  opt.set_lr(0.5);
  EXPECT_EQ(opt.lr_tensor().item(), 0.5);
  p.set_grad(Tensor::from_host<float>({1, -1}, {2}));
  opt.step();
  // Adam's first step moves every element by lr * sign(g).
  EXPECT_NEAR(p.data().at({0}), 0.5, 1e-6);
  EXPECT_NEAR(p.data().at({1}), 2.5, 1e-6);
  NamedTensors state = opt.state();
  ASSERT_EQ(state.size(), 4u);
  EXPECT_EQ(state[0].first, "step");
  EXPECT_EQ(state[2].first, "exp_avg.0");
  // A second optimizer loaded from the state continues identically.
  Variable q(p.data().clone(), true);
  Adam twin({q}, AdamOptions{});
  twin.load_state(state);
  EXPECT_EQ(twin.step_count(), 1);
  p.set_grad(Tensor::from_host<float>({0.3f, 0.2f}, {2}));
  q.set_grad(Tensor::from_host<float>({0.3f, 0.2f}, {2}));
  opt.step();
  twin.step();
  EXPECT_EQ(values(p.data()), values(q.data()));
  SGD sgd({p}, SgdOptions{});
  EXPECT_ERROR_WITH(twin.load_state(sgd.state()), "state has 2 tensors");
  EXPECT_ERROR_WITH(SGD({Variable(Tensor::ones({2}, DType::f32))}, SgdOptions{}),
                    "leaf that requires grad");
  EXPECT_ERROR_WITH(opt.set_lr(-1), "learning rate");
  EXPECT_ERROR_WITH(RMSprop({p}, RmspropOptions{0.1, 1.0}), "alpha");
}

TEST(Optim, ClipGradNorm) {
  Variable a(Tensor::zeros({2}, DType::f32), true), b(Tensor::zeros({1}, DType::f32), true);
  a.set_grad(Tensor::from_host<float>({3, 0}, {2}));
  b.set_grad(Tensor::from_host<float>({4}, {1}));
  const Tensor norm = clip_grad_norm({a, b}, 1.0);
  EXPECT_NEAR(norm.item(), 5.0, 1e-6);
  EXPECT_NEAR(a.grad().at({0}), 0.6, 1e-5);
  EXPECT_NEAR(b.grad().at({0}), 0.8, 1e-5);
  clip_grad_norm({a, b}, 10.0);  // under the limit: unchanged
  EXPECT_NEAR(b.grad().at({0}), 0.8, 1e-5);
  EXPECT_ERROR_WITH(clip_grad_norm({a}, 0.0), "max_norm");
}

TEST(Optim, SmallNetworksLearn) {
  // An MLP fits y = sin(3x) with Adam.
  Generator gen(42, 0);
  nn::Sequential mlp({std::make_shared<nn::Linear>(1, 32, gen), nn::Tanh(),
                      std::make_shared<nn::Linear>(32, 1, gen)});
  Adam adam(mlp.parameters(), AdamOptions{0.01});
  const Tensor x = Tensor::arange(-1, 1, 0.05).reshape({-1, 1});
  std::vector<float> ys;
  for (float v : values(x)) ys.push_back(std::sin(3.0f * v));
  const Tensor y = Tensor::from_host<float>(ys, x.shape());
  double first = 0, last = 0;
  for (int step = 0; step < 300; ++step) {
    const Variable loss = mse_loss(mlp(Variable(x)), y);
    if (step == 0) first = loss.data().item();
    last = loss.data().item();
    adam.zero_grad();
    loss.backward();
    adam.step();
  }
  EXPECT_LT(last, 0.01);
  EXPECT_LT(last, first / 20);

  // A small CNN tells a vertical bar from a horizontal one, with centered RMSprop.
  nn::Sequential cnn({std::make_shared<nn::Conv2d>(1, 4, 3, gen), nn::ReLU(), nn::Flatten(),
                      std::make_shared<nn::Linear>(4 * 3 * 3, 2, gen)});
  RMSprop rms(cnn.parameters(), RmspropOptions{0.01, 0.95, 0.01, 0.0, 0.0, true});
  std::vector<float> pixels(2 * 25, 0.0f);
  for (int k = 0; k < 5; ++k) {
    pixels[k * 5 + 2] = 1.0f;       // image 0: vertical bar
    pixels[25 + 2 * 5 + k] = 1.0f;  // image 1: horizontal bar
  }
  const Tensor images = Tensor::from_host<float>(pixels, {2, 1, 5, 5});
  const Tensor labels = Tensor::from_host<int64_t>({0, 1}, {2});
  double ce = 0;
  for (int step = 0; step < 100; ++step) {
    const Variable loss = cross_entropy(cnn(Variable(images)), labels);
    ce = loss.data().item();
    rms.zero_grad();
    loss.backward();
    rms.step();
  }
  EXPECT_LT(ce, 0.05);
  const Tensor predicted = ops::argmax(cnn(Variable(images)).data(), 1);
  EXPECT_EQ(predicted.to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));
}

}  // namespace
}  // namespace redline::optim
