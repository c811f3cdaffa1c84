// Layers: Linear, Conv2d, activations, Flatten, LayerNorm, Sequential.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "redline/autograd/functions.h"
#include "redline/core/random.h"
#include "redline/nn/module.h"

namespace redline::nn {

// y = x W^T + b; weight (out, in), bias (out,). Initialized as PyTorch does (uniform fan-in).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, Generator& gen, bool bias = true);
  Variable forward(const Variable& x) override;
  std::string name() const override;
  const Variable& weight() const { return weight_; }
  const Variable& bias() const { return bias_; }

 private:
  int64_t in_, out_;
  Variable weight_, bias_;
};

// NCHW convolution; weight (out, in, kh, kw), bias (out,).
class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, int kernel_size, Generator& gen,
         const ops::Conv2dOptions& options = {}, bool bias = true);
  Variable forward(const Variable& x) override;
  std::string name() const override;
  const Variable& weight() const { return weight_; }
  const Variable& bias() const { return bias_; }

 private:
  int64_t in_, out_;
  int kernel_;
  ops::Conv2dOptions options_;
  Variable weight_, bias_;
};

// Normalizes over the last dimension, with learned scale (ones) and shift (zeros).
class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t features, double eps = 1e-5);
  Variable forward(const Variable& x) override;
  std::string name() const override;

 private:
  int64_t features_;
  double eps_;
  Variable weight_, bias_;
};

// A parameter-free function as a module (activations, Flatten).
class Lambda : public Module {
 public:
  Lambda(std::string name, std::function<Variable(const Variable&)> fn)
      : name_(std::move(name)), fn_(std::move(fn)) {}
  Variable forward(const Variable& x) override { return fn_(x); }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  std::function<Variable(const Variable&)> fn_;
};

std::shared_ptr<Module> ReLU();
std::shared_ptr<Module> LeakyReLU(double negative_slope = 0.01);
std::shared_ptr<Module> Tanh();
std::shared_ptr<Module> Sigmoid();
std::shared_ptr<Module> GELU();
std::shared_ptr<Module> Flatten(int start_dim = 1);

// Children run in order; they are named "0", "1", ... as in torch.nn.Sequential.
class Sequential : public Module {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::shared_ptr<Module>> modules);
  void push_back(std::shared_ptr<Module> module);
  Variable forward(const Variable& x) override;
  std::string name() const override { return "Sequential"; }
  size_t size() const { return modules_.size(); }
  Module& operator[](size_t i) { return *modules_.at(i); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

}  // namespace redline::nn
