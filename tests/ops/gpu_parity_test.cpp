// CPU/GPU parity of every op (forward and gradients) per dtype, the optimizers' fused kernels,
// and captured training steps (StepGraph) against the uncaptured loop. Skipped without a GPU.
// Each case prints one line: "parity <case> <dtype>: error <e> (bound <b>) ok|FAIL", where the
// error is max|gpu - cpu| / max(max|cpu|, 1e-6) over the output.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>

#include "ops/op_test_util.h"
#include "redline/core/stream.h"
#include "redline/nn/layers.h"
#include "redline/optim/optim.h"
#include "test_util.h"

namespace redline {
namespace {

const Device kGpu = Device::gpu(0);

double bound_for(DType t) {
  switch (t) {
    case DType::bf16:
      return 2e-2;
    case DType::f16:
      return 5e-3;
    default:
      return 2e-5;
  }
}

double normalized_error(const Tensor& got, const Tensor& want) {
  const std::vector<float> g = ops::cast(got.to(Device::cpu()), DType::f32).to_vector<float>();
  const std::vector<float> w = ops::cast(want.to(Device::cpu()), DType::f32).to_vector<float>();
  if (g.size() != w.size()) return INFINITY;
  double diff = 0, scale = 1e-6;
  for (size_t i = 0; i < g.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(g[i]) - w[i]));
    if (std::isnan(g[i]) != std::isnan(w[i])) diff = INFINITY;
    scale = std::max(scale, std::fabs(static_cast<double>(w[i])));
  }
  return diff / scale;
}

void expect_parity(const std::string& name, DType dtype, const Tensor& gpu, const Tensor& cpu,
                   double bound) {
  ASSERT_EQ(gpu.shape(), cpu.shape()) << name;
  ASSERT_EQ(gpu.dtype(), cpu.dtype()) << name;
  EXPECT_EQ(gpu.device(), kGpu) << name;
  const double err = normalized_error(gpu, cpu);
  std::printf("parity %-28s %-4s: error %.3g (bound %.3g) %s\n", name.c_str(),
              std::string(dtype_name(dtype)).c_str(), err, bound, err <= bound ? "ok" : "FAIL");
  EXPECT_LE(err, bound) << name << " " << dtype_name(dtype);
}

using TensorFn = std::function<Tensor(const std::vector<Tensor>&)>;
using VariableFn = std::function<Variable(const std::vector<Variable>&)>;

// Forward parity for floating inputs cast to dtype (integer inputs stay as they are).
// f32_bound replaces the f32 bound where rounding grows with a reduction length.
void forward_parity(const std::string& name, const TensorFn& fn, const std::vector<Tensor>& inputs,
                    std::initializer_list<DType> dtypes = {DType::f32, DType::bf16, DType::f16},
                    double f32_bound = 0.0) {
  for (DType t : dtypes) {
    std::vector<Tensor> cpu, gpu;
    for (const Tensor& x : inputs) {
      cpu.push_back(dtype_is_floating(x.dtype()) ? ops::cast(x, t) : x);
      gpu.push_back(cpu.back().to(kGpu));
    }
    const double bound = t == DType::f32 && f32_bound > 0.0 ? f32_bound : bound_for(t);
    expect_parity(name, t, fn(gpu), fn(cpu), bound);
  }
}

// Gradient parity (f32): backward of sum(fn(inputs) * r) on both devices.
void gradient_parity(const std::string& name, const VariableFn& fn,
                     const std::vector<Tensor>& inputs) {
  std::vector<Tensor> grads[2];
  for (int side = 0; side < 2; ++side) {
    const Device device = side == 0 ? Device::cpu() : kGpu;
    std::vector<Variable> vars;
    for (const Tensor& x : inputs) vars.emplace_back(x.to(device), dtype_is_floating(x.dtype()));
    const Variable y = fn(vars);
    y.backward(test::uniform(y.shape(), 99).to(device));
    for (const Variable& v : vars) grads[side].push_back(v.requires_grad() ? v.grad() : Tensor());
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!grads[0][i].defined()) continue;
    expect_parity(name + " grad " + std::to_string(i), DType::f32, grads[1][i], grads[0][i], 1e-4);
  }
}

TEST(GpuParity, Elementwise) {
  REDLINE_REQUIRE_GPU();
  const Tensor a = test::uniform({33, 65}, 1, -2, 2), b = test::uniform({65}, 2, 0.5, 1.5);
  const Tensor pos = test::uniform({1000}, 3, 0.1, 3);
  forward_parity("add broadcast", [](auto& v) { return ops::add(v[0], v[1]); }, {a, b});
  forward_parity("sub", [](auto& v) { return ops::sub(v[0], v[1]); }, {a, b});
  forward_parity("mul", [](auto& v) { return ops::mul(v[0], v[1]); }, {a, b});
  forward_parity("div", [](auto& v) { return ops::div(v[0], v[1]); }, {a, b});
  forward_parity("maximum", [](auto& v) { return ops::maximum(v[0], v[1]); }, {a, b});
  forward_parity("transposed add",
                 [](auto& v) { return ops::add(v[0].transpose(0, 1), v[0].transpose(0, 1)); }, {a});
  const std::vector<std::pair<const char*, Tensor (*)(const Tensor&)>> unary = {
      {"relu", ops::relu}, {"tanh", ops::tanh}, {"sigmoid", ops::sigmoid}, {"exp", ops::exp},
      {"gelu", ops::gelu}, {"abs", ops::abs},   {"neg", ops::neg},         {"square", ops::square}};
  for (const auto& [name, f] : unary) forward_parity(name, [f](auto& v) { return f(v[0]); }, {a});
  forward_parity("log", [](auto& v) { return ops::log(v[0]); }, {pos});
  forward_parity("sqrt", [](auto& v) { return ops::sqrt(v[0]); }, {pos});
  forward_parity("leaky_relu", [](auto& v) { return ops::leaky_relu(v[0], 0.1); }, {a});
  forward_parity("clamp", [](auto& v) { return ops::clamp(v[0], -0.5, 0.7); }, {a});
  forward_parity("where",
                 [](auto& v) { return ops::where(ops::gt(v[0], ops::neg(v[0])), v[0], v[1]); },
                 {a, b});
  const Tensor ints = ops::cast(test::uniform({100}, 4, -50, 50), DType::i64);
  expect_parity("i64 mul", DType::i64, ops::mul(ints.to(kGpu), ints.to(kGpu)), ops::mul(ints, ints),
                0);
  const Tensor zero = Tensor::zeros({}, DType::i64);
  expect_parity("i64 lt", DType::boolean, ops::lt(ints.to(kGpu), zero.to(kGpu)),
                ops::lt(ints, zero), 0);
  // Casts between every pair of dtypes the GPU computes (f64 is CPU only: F64.GpuOpsRefuseIt),
  // and u8 pixels.
  const Tensor values = test::uniform({257}, 5, -3, 300);
  for (DType from : kAllDTypes) {
    if (from == DType::f64) continue;
    const Tensor x = ops::cast(values, from);
    for (DType to : kAllDTypes) {
      if (to == DType::f64) continue;
      expect_parity(format("cast {} ->", dtype_name(from)), to, ops::cast(x.to(kGpu), to),
                    ops::cast(x, to), 0);
    }
  }
  const Tensor pixels = ops::cast(test::uniform({4, 10, 10}, 6, 0, 255), DType::u8);
  expect_parity("pixels_to_float", DType::f32, ops::pixels_to_float(pixels.to(kGpu)),
                ops::pixels_to_float(pixels), 0);
}

TEST(GpuParity, ReductionsSoftmaxIndexing) {
  REDLINE_REQUIRE_GPU();
  const Tensor x = test::uniform({7, 300, 5}, 1, -2, 2);
  forward_parity("sum all", [](auto& v) { return ops::sum(v[0]); }, {x});
  forward_parity("sum dim 1", [](auto& v) { return ops::sum(v[0], {1}); }, {x});
  forward_parity("sum dims 0,2", [](auto& v) { return ops::sum(v[0], {0, 2}, true); }, {x});
  forward_parity("mean last", [](auto& v) { return ops::mean(v[0], {-1}); }, {x});
  forward_parity("max all", [](auto& v) { return ops::max(v[0]); }, {x});
  forward_parity("max dim 1", [](auto& v) { return ops::max(v[0], 1); }, {x});
  forward_parity("max dim 2", [](auto& v) { return ops::max(v[0], 2); }, {x});
  const Tensor big = test::uniform({3, 5000}, 2);
  for (const Tensor& t : {x, big}) {
    for (int d = 0; d < t.dim(); ++d) {
      expect_parity(format("argmax dim {}", d), DType::i64, ops::argmax(t.to(kGpu), d),
                    ops::argmax(t, d), 0);
    }
    expect_parity("argmax all", DType::i64, ops::argmax(t.to(kGpu)), ops::argmax(t), 0);
  }
  forward_parity("softmax", [](auto& v) { return ops::softmax(v[0], 1); }, {x});
  forward_parity("log_softmax", [](auto& v) { return ops::log_softmax(v[0], -1); }, {x});
  const Tensor q = test::uniform({64, 18}, 3);
  const Tensor actions = ops::cast(test::uniform({64, 1}, 4, 0, 18), DType::i64);
  forward_parity("gather", [&](auto& v) { return ops::gather(v[0], 1, v[1]); }, {q, actions});
  const Tensor rows = ops::cast(test::uniform({100}, 5, 0, 64), DType::i64);
  forward_parity("index_select", [&](auto& v) { return ops::index_select(v[0], 0, v[1]); },
                 {q, rows});
  forward_parity("index_add", [&](auto& v) { return ops::index_add(v[0], 0, v[2], v[1]); },
                 {q, test::uniform({100, 18}, 6), rows}, {DType::f32});
  forward_parity("scatter_add", [&](auto& v) { return ops::scatter_add(v[0], 1, v[2], v[1]); },
                 {q, test::uniform({64, 1}, 7), actions}, {DType::f32});
  forward_parity("cat",
                 [](auto& v) {
                   return ops::cat({v[0], v[1], v[0]}, 1);
                 },
                 {q, test::uniform({64, 3}, 8)});
  forward_parity("stack", [](auto& v) { return ops::stack({v[0], v[0]}, 0); }, {q});
}

TEST(GpuParity, MatmulLinearConvPool) {
  REDLINE_REQUIRE_GPU();
  for (const Shape& mnk : {Shape{128, 512, 3136}, Shape{32, 128, 1024}, Shape{7, 5, 3}}) {
    const Tensor a = test::uniform({mnk[0], mnk[2]}, 1), b = test::uniform({mnk[2], mnk[1]}, 2);
    const std::string name = format("matmul {}x{}x{}", mnk[0], mnk[1], mnk[2]);
    forward_parity(name, [](auto& v) { return ops::matmul(v[0], v[1]); }, {a, b});
    forward_parity(name + " T", [](auto& v) { return ops::matmul(v[0], v[1].transpose(0, 1)); },
                   {a, b.transpose(0, 1).contiguous()}, {DType::f32});
    ops::set_allow_tf32(true);
    const Tensor cpu = ops::matmul(a, b);
    expect_parity(name + " tf32", DType::f32, ops::matmul(a.to(kGpu), b.to(kGpu)), cpu, 5e-3);
    ops::set_allow_tf32(false);
  }
  forward_parity("batched matmul", [](auto& v) { return ops::matmul(v[0], v[1]); },
                 {test::uniform({6, 33, 17}, 1), test::uniform({6, 17, 9}, 2)});
  forward_parity("shared-operand matmul", [](auto& v) { return ops::matmul(v[0], v[1]); },
                 {test::uniform({33, 17}, 1), test::uniform({6, 17, 9}, 2)}, {DType::f32});
  const Tensor x = test::uniform({64, 256}, 3), w = test::uniform({128, 256}, 4),
               bias = test::uniform({128}, 5);
  // K = 256 products summed in different orders (OpenBLAS vs cuBLASLt): each result can differ
  // by up to K * 2^-24 relative to the largest term on each side, so f32 is held to K * 2^-23
  // (3.1e-5), not the 2e-5 of one-pass ops (GELU's slope, below 1.13, passes it on).
  const double k_bound = 256.0 * std::ldexp(1.0, -23);
  for (auto act : {ops::Activation::none, ops::Activation::relu, ops::Activation::gelu}) {
    forward_parity(
        format("linear act {}", static_cast<int>(act)),
        [act](auto& v) { return ops::linear(v[0], v[1], v[2], act); }, {x, w, bias},
        {DType::f32, DType::bf16, DType::f16}, k_bound);
  }
  // The Nature-CNN layers on 84x84 frames, and a padded, dilated case.
  const Tensor frames = test::uniform({2, 4, 84, 84}, 6);
  const Tensor w1 = test::uniform({32, 4, 8, 8}, 7), b1 = test::uniform({32}, 8);
  forward_parity("conv 8x8 s4",
                 [](auto& v) {
                   return ops::conv2d(v[0], v[1], v[2], {4, 4, 0, 0, 1, 1});
                 },
                 {frames, w1, b1}, {DType::f32});
  const Tensor small = test::uniform({3, 5, 11, 9}, 9), w2 = test::uniform({6, 5, 3, 3}, 10);
  forward_parity("conv pad dil",
                 [](auto& v) {
                   return ops::conv2d(v[0], v[1], Tensor(), {2, 1, 2, 1, 2, 1});
                 },
                 {small, w2}, {DType::f32});
  forward_parity("max_pool",
                 [](auto& v) {
                   return ops::max_pool2d(v[0], {3, 3, 2, 2, 1, 1}).values;
                 },
                 {small});
  forward_parity("avg_pool",
                 [](auto& v) {
                   return ops::avg_pool2d(v[0], {2, 2, 2, 2, 0, 0});
                 },
                 {small});
}

// ops::set_deterministic(true) limits cuDNN to deterministic algorithms: two backward passes give
// the same bits, and both modes stay within the f32 bound of the CPU.
TEST(GpuParity, ConvDeterministicModeRepeatsBitForBit) {
  REDLINE_REQUIRE_GPU();
  const Tensor x = test::uniform({32, 32, 20, 20}, 11), w = test::uniform({64, 32, 4, 4}, 12);
  const ops::Conv2dOptions o{2, 2, 0, 0, 1, 1};
  const Tensor dy = test::uniform({32, 64, 9, 9}, 13);
  const ops::Conv2dGrads cpu = ops::conv2d_backward(x, w, dy, o, true, true, false);
  const Tensor xg = x.to(kGpu), wg = w.to(kGpu), dyg = dy.to(kGpu);
  // The widest sum is dw's, over N*OH*OW = 2592 products, in different orders on each side.
  const double k_bound = 32.0 * 81.0 * std::ldexp(1.0, -23);
  for (const bool deterministic : {false, true}) {
    ops::set_deterministic(deterministic);
    const ops::Conv2dGrads a = ops::conv2d_backward(xg, wg, dyg, o, true, true, false);
    const ops::Conv2dGrads b = ops::conv2d_backward(xg, wg, dyg, o, true, true, false);
    const std::string mode = deterministic ? "deterministic" : "fastest";
    expect_parity("conv backward dx " + mode, DType::f32, a.dx, cpu.dx, k_bound);
    expect_parity("conv backward dw " + mode, DType::f32, a.dw, cpu.dw, k_bound);
    if (deterministic) {
      EXPECT_EQ(a.dx.to(Device::cpu()).to_vector<float>(),
                b.dx.to(Device::cpu()).to_vector<float>());
      EXPECT_EQ(a.dw.to(Device::cpu()).to_vector<float>(),
                b.dw.to(Device::cpu()).to_vector<float>());
    }
  }
  ops::set_deterministic(false);
}

// An out-of-range index found inside a GPU kernel is raised by the next synchronization or op on
// the device, names the op, the index, its position and the dimension's size, and is raised once;
// a later fault is raised again (the record is claimed afresh for each one).
TEST(GpuIndexFaults, OutOfRangeIndexIsRaisedByTheNextCall) {
  REDLINE_REQUIRE_GPU();
  const Tensor x = test::uniform({4, 3}, 21).to(kGpu);
  const Tensor bad = Tensor::from_host<int64_t>({0, 1, 2, 3, 7, 0}, {2, 3}).to(kGpu);
  const Tensor good = Tensor::from_host<int64_t>({0, 1, 2, 3, 3, 0}, {2, 3}).to(kGpu);
  const Tensor y = ops::gather(x, 0, bad);
  EXPECT_ERROR_WITH(Stream::current(kGpu).synchronize(),
                    "gather: index 7 at position 4 of the index tensor is out of range for a "
                    "dimension of size 4");
  EXPECT_EQ(y.to(Device::cpu()).to_vector<float>()[4], 0.0f);  // defined, not stale memory
  EXPECT_NO_THROW(ops::gather(x, 0, good).to(Device::cpu()));
  // Raised by the next op when nothing synchronizes in between.
  ops::index_select(x, 0, Tensor::from_host<int64_t>({2, -1}, {2}).to(kGpu));
  Event done(kGpu);  // waits for the kernel without the stream's check
  done.record();
  done.synchronize();
  EXPECT_ERROR_WITH(ops::add(x, x), "index_select: index -1 at position 1");
  const Tensor src = test::uniform({2, 3}, 22).to(kGpu);
  ops::scatter_add(x, 0, bad, src);
  EXPECT_ERROR_WITH(Stream::current(kGpu).synchronize(), "scatter_add: index 7 at position 4");
  ops::index_add(x, 0, Tensor::from_host<int64_t>({9, 1}, {2}).to(kGpu), src);
  EXPECT_ERROR_WITH(Stream::current(kGpu).synchronize(), "index_add: index 9 at position 0");
  EXPECT_NO_THROW(Stream::current(kGpu).synchronize());
}

TEST(GpuParity, Gradients) {
  REDLINE_REQUIRE_GPU();
  const Tensor a = test::uniform({16, 24}, 1), b = test::uniform({24}, 2, 0.5, 1.5);
  gradient_parity("elementwise chain",
                  [](auto& v) { return mul(tanh(add(v[0], v[1])), sigmoid(div(v[0], v[1]))); },
                  {a, b});
  gradient_parity("gelu leaky clamp",
                  [](auto& v) { return clamp(add(gelu(v[0]), leaky_relu(v[0], 0.1)), -0.5, 0.5); },
                  {a});
  gradient_parity("reductions", [](auto& v) { return add(sum(v[0], {1}), max(v[0], 1)); }, {a});
  gradient_parity("softmax", [](auto& v) { return mul(softmax(v[0], 1), log_softmax(v[0], 1)); },
                  {a});
  gradient_parity("linear relu",
                  [](auto& v) { return linear(v[0], v[1], v[2], ops::Activation::relu); },
                  {a, test::uniform({10, 24}, 3), test::uniform({10}, 4)});
  gradient_parity("batched matmul", [](auto& v) { return matmul(v[0], v[1]); },
                  {test::uniform({3, 5, 7}, 1), test::uniform({7, 4}, 2)});
  const Tensor target = ops::cast(test::uniform({16}, 5, 0, 24), DType::i64);
  gradient_parity("cross_entropy weighted",
                  [&](auto& v) {
                    return cross_entropy(v[0], target.to(v[0].device()),
                                         test::uniform({16}, 6, 0, 1).to(v[0].device()));
                  },
                  {a});
  gradient_parity(
      "huber", [&](auto& v) { return huber_loss(v[0], ops::mul_scalar(v[0].data(), 0.3)); }, {a});
  gradient_parity(
      "conv pool",
      [](auto& v) {
        return max_pool2d(relu(conv2d(v[0], v[1], v[2], {2, 2, 1, 1, 1, 1})));
      },
      {test::uniform({2, 3, 12, 12}, 7), test::uniform({4, 3, 3, 3}, 8), test::uniform({4}, 9)});
  // Asymmetric stride, padding and dilation, no bias: cuDNN's backward data / filter vs col2im.
  gradient_parity("conv stride pad dil",
                  [](auto& v) {
                    return tanh(conv2d(v[0], v[1], Variable(), {2, 1, 2, 1, 2, 1}));
                  },
                  {test::uniform({3, 5, 11, 9}, 10), test::uniform({6, 5, 3, 3}, 11)});
  gradient_parity("gather index_select layer_norm",
                  [&](auto& v) {
                    const Tensor idx = ops::cast(test::uniform({16, 2}, 10, 0, 24), DType::i64);
                    return layer_norm(gather(v[0], 1, idx.to(v[0].device())), Variable(),
                                      Variable());
                  },
                  {a});
}

TEST(GpuParity, OptimizerKernels) {
  REDLINE_REQUIRE_GPU();
  // 41 tensors (two launches of the multi-tensor kernel), one spanning many 4096-element chunks.
  std::vector<Tensor> start;
  for (int i = 0; i < 40; ++i) start.push_back(test::uniform({(i * 977) % 5000 + 1}, 100 + i));
  start.push_back(test::uniform({100003}, 7));
  for (int kind = 0; kind < 4; ++kind) {
    std::vector<std::vector<float>> result[2];
    for (int side = 0; side < 2; ++side) {
      const Device device = side == 0 ? Device::cpu() : kGpu;
      std::vector<Variable> params;
      for (const Tensor& t : start) params.emplace_back(t.to(device).clone(), true);
      std::unique_ptr<optim::Optimizer> opt;
      if (kind == 0)
        opt = std::make_unique<optim::SGD>(params, optim::SgdOptions{0.1, 0.9, 0, 0.01, true});
      if (kind == 1)
        opt =
            std::make_unique<optim::Adam>(params, optim::AdamOptions{0.01, 0.9, 0.999, 1e-8, 0.1});
      if (kind == 2) opt = std::make_unique<optim::AdamW>(params, optim::AdamOptions{0.01});
      if (kind == 3)
        opt = std::make_unique<optim::RMSprop>(
            params, optim::RmspropOptions{2.5e-4, 0.95, 0.01, 0, 0.5, true});
      for (int t = 0; t < 5; ++t) {
        for (size_t i = 0; i < params.size(); ++i) {
          params[i].set_grad(test::uniform(params[i].shape(), 1000 * t + i).to(device));
        }
        opt->step();
      }
      EXPECT_EQ(opt->step_count(), 5);
      for (const Variable& p : params) result[side].push_back(p.data().to_vector<float>());
    }
    for (size_t i = 0; i < start.size(); i += 8) {
      const int64_t n = static_cast<int64_t>(result[0][i].size());
      expect_parity(format("optimizer {} tensor {}", kind, i), DType::f32,
                    Tensor::from_host<float>(result[1][i], {n}).to(kGpu),
                    Tensor::from_host<float>(result[0][i], {n}), 1e-6);
    }
    const size_t last = start.size() - 1;
    const int64_t n = static_cast<int64_t>(result[0][last].size());
    expect_parity(format("optimizer {} large tensor", kind), DType::f32,
                  Tensor::from_host<float>(result[1][last], {n}).to(kGpu),
                  Tensor::from_host<float>(result[0][last], {n}), 1e-6);
  }
  Variable g(test::uniform({500}, 3).to(kGpu), true);
  g.set_grad(test::uniform({500}, 4, -10, 10).to(kGpu));
  Variable c(test::uniform({500}, 3), true);
  c.set_grad(test::uniform({500}, 4, -10, 10));
  expect_parity("clip_grad_norm", DType::f32, optim::clip_grad_norm({g}, 1.0),
                optim::clip_grad_norm({c}, 1.0), 1e-5);
  expect_parity("clipped grad", DType::f32, g.grad(), c.grad(), 1e-5);
}

// A whole training step captured once and replayed gives the same parameters as the same step
// run eagerly (the same kernels in the same order: equal to f32 rounding, atomics aside).
void captured_step_matches_eager(const std::string& name,
                                 const std::function<std::shared_ptr<nn::Module>()>& make,
                                 const Tensor& x, const Tensor& target, bool classify) {
  // cuDNN's fastest algorithms may accumulate with atomics (run to run differences of about 1e-5
  // after 200 steps): both loops use deterministic ones, so that they must agree.
  struct DeterministicScope {
    bool before = ops::deterministic();
    DeterministicScope() { ops::set_deterministic(true); }
    ~DeterministicScope() { ops::set_deterministic(before); }
  } deterministic_scope;
  const auto eager = make(), captured = make();
  eager->to(kGpu);
  captured->to(kGpu);
  optim::Adam opt_eager(eager->parameters(), optim::AdamOptions{1e-3});
  optim::Adam opt_captured(captured->parameters(), optim::AdamOptions{1e-3});
  const Tensor xg = x.to(kGpu), tg = target.to(kGpu);
  auto step = [&](nn::Module& net, optim::Optimizer& opt) {
    opt.zero_grad();
    const Variable out = net(Variable(xg));
    const Variable loss = classify ? cross_entropy(out, tg) : mse_loss(out, tg);
    loss.backward();
    opt.step();
  };
  constexpr int kSteps = 200;
  for (int i = 0; i < kSteps; ++i) step(*eager, opt_eager);
  step(*captured, opt_captured);  // warm-up: gradients, GEMM plans, workspace
  StepGraph graph(kGpu);
  graph.capture([&] { step(*captured, opt_captured); });
  for (int i = 1; i < kSteps; ++i) graph.replay();
  Stream::current(kGpu).synchronize();
  EXPECT_EQ(opt_captured.step_count(), kSteps);
  const auto pe = eager->parameters(), pc = captured->parameters();
  for (size_t i = 0; i < pe.size(); ++i) {
    expect_parity(format("{} param {}", name, i), DType::f32, pc[i].data(), pe[i].data(), 1e-5);
  }
}

TEST(GpuCapturedStep, MlpAndCnnMatchTheEagerLoop) {
  REDLINE_REQUIRE_GPU();
  captured_step_matches_eager(
      "captured mlp",
      [] {
        Generator gen(1, 0);
        return std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
            std::make_shared<nn::Linear>(8, 64, gen), nn::ReLU(),
            std::make_shared<nn::Linear>(64, 4, gen)});
      },
      test::uniform({32, 8}, 1), test::uniform({32, 4}, 2), false);
  captured_step_matches_eager(
      "captured cnn",
      [] {
        Generator gen(2, 0);
        return std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
            std::make_shared<nn::Conv2d>(4, 16, 3, gen), nn::ReLU(), nn::Flatten(),
            std::make_shared<nn::Linear>(16 * 8 * 8, 6, gen)});
      },
      test::uniform({32, 4, 10, 10}, 3), ops::cast(test::uniform({32}, 4, 0, 6), DType::i64), true);
}

}  // namespace
}  // namespace redline
