#include "redline/nn/layers.h"

#include "redline/nn/init.h"

namespace redline::nn {

Linear::Linear(int64_t in_features, int64_t out_features, Generator& gen, bool bias)
    : in_(in_features), out_(out_features) {
  REDLINE_CHECK(in_features > 0 && out_features > 0,
                "Linear({}, {}): feature counts must be positive", in_features, out_features);
  Tensor w = Tensor::empty({out_features, in_features}, DType::f32);
  init::uniform_fan_in_(w, in_features, gen);
  weight_ = register_parameter("weight", w);
  if (bias) {
    Tensor b = Tensor::empty({out_features}, DType::f32);
    init::uniform_fan_in_(b, in_features, gen);
    bias_ = register_parameter("bias", b);
  }
}

Variable Linear::forward(const Variable& x) {
  REDLINE_CHECK(x.defined() && x.dim() >= 1 && x.shape(-1) == in_,
                "{}: input {} must end in {} features", name(),
                x.defined() ? x.describe() : "undefined", in_);
  return linear(x, weight_, bias_);
}

std::string Linear::name() const {
  return format("Linear({}, {}{})", in_, out_, bias_.defined() ? "" : ", bias=false");
}

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, int kernel_size, Generator& gen,
               const ops::Conv2dOptions& options, bool bias)
    : in_(in_channels), out_(out_channels), kernel_(kernel_size), options_(options) {
  REDLINE_CHECK(in_channels > 0 && out_channels > 0 && kernel_size > 0,
                "Conv2d({}, {}, {}): channels and kernel size must be positive", in_channels,
                out_channels, kernel_size);
  Tensor w = Tensor::empty({out_channels, in_channels, kernel_size, kernel_size}, DType::f32);
  const int64_t fan = in_channels * kernel_size * kernel_size;
  init::uniform_fan_in_(w, fan, gen);
  weight_ = register_parameter("weight", w);
  if (bias) {
    Tensor b = Tensor::empty({out_channels}, DType::f32);
    init::uniform_fan_in_(b, fan, gen);
    bias_ = register_parameter("bias", b);
  }
}

Variable Conv2d::forward(const Variable& x) {
  REDLINE_CHECK(x.defined() && x.dim() == 4 && x.shape(1) == in_,
                "{}: input {} must be (N, {}, H, W)", name(),
                x.defined() ? x.describe() : "undefined", in_);
  return conv2d(x, weight_, bias_, options_);
}

std::string Conv2d::name() const {
  return format("Conv2d({}, {}, kernel={}, stride=({}, {}), padding=({}, {}))", in_, out_, kernel_,
                options_.stride_h, options_.stride_w, options_.pad_h, options_.pad_w);
}

LayerNorm::LayerNorm(int64_t features, double eps) : features_(features), eps_(eps) {
  REDLINE_CHECK(features > 0, "LayerNorm({}): features must be positive", features);
  weight_ = register_parameter("weight", Tensor::ones({features}, DType::f32));
  bias_ = register_parameter("bias", Tensor::zeros({features}, DType::f32));
}

Variable LayerNorm::forward(const Variable& x) { return layer_norm(x, weight_, bias_, eps_); }

std::string LayerNorm::name() const { return format("LayerNorm({})", features_); }

std::shared_ptr<Module> ReLU() {
  return std::make_shared<Lambda>("ReLU", [](const Variable& x) { return relu(x); });
}
std::shared_ptr<Module> LeakyReLU(double slope) {
  return std::make_shared<Lambda>(format("LeakyReLU({})", slope),
                                  [slope](const Variable& x) { return leaky_relu(x, slope); });
}
std::shared_ptr<Module> Tanh() {
  return std::make_shared<Lambda>("Tanh", [](const Variable& x) { return tanh(x); });
}
std::shared_ptr<Module> Sigmoid() {
  return std::make_shared<Lambda>("Sigmoid", [](const Variable& x) { return sigmoid(x); });
}
std::shared_ptr<Module> GELU() {
  return std::make_shared<Lambda>("GELU", [](const Variable& x) { return gelu(x); });
}
std::shared_ptr<Module> Flatten(int start_dim) {
  return std::make_shared<Lambda>(format("Flatten({})", start_dim),
                                  [start_dim](const Variable& x) { return flatten(x, start_dim); });
}

Sequential::Sequential(std::vector<std::shared_ptr<Module>> modules) {
  for (auto& m : modules) push_back(std::move(m));
}

void Sequential::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

Variable Sequential::forward(const Variable& x) {
  Variable y = x;
  for (const auto& m : modules_) y = m->forward(y);
  return y;
}

}  // namespace redline::nn
