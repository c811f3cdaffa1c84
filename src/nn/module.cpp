#include "redline/nn/module.h"

#include <sstream>

#include "redline/ops/ops.h"

namespace redline::nn {

Variable Module::register_parameter(std::string name, Tensor value) {
  REDLINE_CHECK(dtype_is_floating(value.dtype()), "parameter '{}' must be floating but is {}", name,
                value.describe());
  for (const auto& [existing, v] : parameters_) {
    REDLINE_CHECK(existing != name, "parameter '{}' is registered twice", name);
  }
  Variable v(std::move(value), true);
  parameters_.emplace_back(std::move(name), v);
  return v;
}

Variable Module::register_buffer(std::string name, Tensor value) {
  Variable v(std::move(value), false);
  buffers_.emplace_back(std::move(name), v);
  return v;
}

void Module::add_child(std::string name, std::shared_ptr<Module> module) {
  REDLINE_CHECK(module != nullptr, "child module '{}' is null", name);
  children_.emplace_back(std::move(name), std::move(module));
}

void Module::collect(const std::string& prefix, bool parameters, NamedVariables* out) const {
  for (const auto& [name, v] : parameters ? parameters_ : buffers_) {
    out->emplace_back(prefix + name, v);
  }
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", parameters, out);
}

NamedVariables Module::named_parameters() const {
  NamedVariables out;
  collect("", true, &out);
  return out;
}

std::vector<Variable> Module::parameters() const {
  std::vector<Variable> out;
  for (auto& [name, v] : named_parameters()) out.push_back(v);
  return out;
}

NamedVariables Module::named_buffers() const {
  NamedVariables out;
  collect("", false, &out);
  return out;
}

NamedVariables Module::named_state() const {
  NamedVariables out = named_parameters();
  collect("", false, &out);
  return out;
}

int64_t Module::parameter_count() const {
  int64_t n = 0;
  for (const auto& [name, v] : named_parameters()) n += v.numel();
  return n;
}

void Module::to(Device device) {
  for (auto& [name, v] : named_state()) {
    VariableImpl& impl = *v.impl();
    impl.data = impl.data.to(device);
    if (impl.grad.defined()) impl.grad = impl.grad.to(device);
  }
}

Device Module::device() const {
  const NamedVariables state = named_state();
  return state.empty() ? Device::cpu() : state.front().second.device();
}

namespace {

void check_same_layout(const NamedVariables& mine, const NamedVariables& theirs, const char* op) {
  REDLINE_CHECK(mine.size() == theirs.size(), "{}: the modules hold {} and {} tensors", op,
                mine.size(), theirs.size());
  for (size_t i = 0; i < mine.size(); ++i) {
    REDLINE_CHECK(mine[i].first == theirs[i].first &&
                      mine[i].second.shape() == theirs[i].second.shape() &&
                      mine[i].second.dtype() == theirs[i].second.dtype(),
                  "{}: tensor {} is '{}' {} here but '{}' {} in the source", op, i, mine[i].first,
                  mine[i].second.describe(), theirs[i].first, theirs[i].second.describe());
  }
}

}  // namespace

void Module::copy_from(const Module& other) {
  const NamedVariables mine = named_state(), theirs = other.named_state();
  check_same_layout(mine, theirs, "copy_from");
  for (size_t i = 0; i < mine.size(); ++i) {
    Tensor dst = mine[i].second.data();
    dst.copy_from(theirs[i].second.data());
  }
}

void Module::polyak_update(const Module& source, double tau) {
  REDLINE_CHECK(tau >= 0.0 && tau <= 1.0, "polyak_update: tau is {}; it must be in [0, 1]", tau);
  const NamedVariables mine = named_state(), theirs = source.named_state();
  check_same_layout(mine, theirs, "polyak_update");
  const size_t params = named_parameters().size();
  for (size_t i = 0; i < mine.size(); ++i) {
    Tensor dst = mine[i].second.data();
    const Tensor src = theirs[i].second.data().to(dst.device());
    if (i >= params) {
      dst.copy_from(src);
      continue;
    }
    dst.copy_from(ops::add(ops::mul_scalar(dst, 1.0 - tau), ops::mul_scalar(src, tau)));
  }
}

void Module::zero_grad(bool set_to_none) {
  for (auto& [name, v] : named_parameters()) v.zero_grad(set_to_none);
}

std::string Module::str() const {
  std::ostringstream out;
  out << name();
  if (!children_.empty()) {
    out << "(\n";
    for (const auto& [child_name, child] : children_) {
      std::string text = child->str();
      for (size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 1)) {
        text.insert(at + 1, "  ");
      }
      out << "  (" << child_name << "): " << text << "\n";
    }
    out << ")";
  }
  return out.str();
}

}  // namespace redline::nn
