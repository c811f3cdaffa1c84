#include "redline/io/checkpoint.h"

namespace redline::io {

void save_checkpoint(const std::string& path, const nn::Module& module,
                     const optim::Optimizer* optimizer, const Metadata& metadata) {
  NamedTensors tensors;
  for (const auto& [name, v] : module.named_state())
    tensors.emplace_back("model." + name, v.data());
  if (optimizer != nullptr) {
    for (const auto& [name, t] : optimizer->state()) tensors.emplace_back("optim." + name, t);
  }
  save_safetensors(path, tensors, metadata);
}

// Tensors under "optim." are ignored when no optimizer is given (loading weights for evaluation).
Metadata load_checkpoint(const std::string& path, nn::Module& module, optim::Optimizer* optimizer) {
  const SafetensorsContent content = load_safetensors(path);
  // Check everything before changing anything.
  std::vector<std::pair<Tensor, const Tensor*>> copies;
  auto plan = [&](const std::string& key, const Tensor& dst) {
    const Tensor* src = nullptr;
    for (const auto& [name, t] : content.tensors) {
      if (name == key) src = &t;
    }
    REDLINE_CHECK(src != nullptr, "checkpoint {} has no tensor '{}'", path, key);
    REDLINE_CHECK(src->shape() == dst.shape() && src->dtype() == dst.dtype(),
                  "checkpoint {} holds '{}' as {} but the model expects {}", path, key,
                  src->describe(), dst.describe());
    copies.emplace_back(dst, src);
  };
  for (const auto& [name, v] : module.named_state()) {
    plan("model." + name, v.data());
  }
  if (optimizer != nullptr) {
    for (const auto& [name, t] : optimizer->state()) {
      plan("optim." + name, t);
    }
  }
  size_t model_tensors = 0;
  for (const auto& [name, t] : content.tensors) model_tensors += name.rfind("model.", 0) == 0;
  REDLINE_CHECK(model_tensors == module.named_state().size(),
                "checkpoint {} holds {} model tensors but the model has {}", path, model_tensors,
                module.named_state().size());
  for (auto& [dst, src] : copies) dst.copy_from(*src);
  return content.metadata;
}

}  // namespace redline::io
