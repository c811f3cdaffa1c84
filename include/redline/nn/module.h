// Modules: named parameters (Variables that require grad), buffers (Variables that do not) and
// child modules, with device moves, copies (target networks) and Polyak averaging.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "redline/autograd/variable.h"

namespace redline::nn {

using NamedVariables = std::vector<std::pair<std::string, Variable>>;

class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  virtual Variable forward(const Variable& x) = 0;
  Variable operator()(const Variable& x) { return forward(x); }
  // A short description for printing, e.g. "Linear(4, 2)".
  virtual std::string name() const = 0;

  // Parameters of this module and its children, depth first in registration order; children's
  // names are prefixed with the child's name ("0.weight", "head.bias").
  NamedVariables named_parameters() const;
  std::vector<Variable> parameters() const;
  NamedVariables named_buffers() const;
  // Parameters then buffers: what a checkpoint holds.
  NamedVariables named_state() const;
  int64_t parameter_count() const;

  // Moves every parameter and buffer to device (the Variables keep their identity).
  void to(Device device);
  Device device() const;
  // Copies every parameter and buffer value from other, which must have the same names, shapes
  // and dtypes (any device): the hard target-network update.
  void copy_from(const Module& other);
  // this = (1 - tau) * this + tau * source, parameter by parameter (buffers are copied): the
  // soft target-network update.
  void polyak_update(const Module& source, double tau);
  void zero_grad(bool set_to_none = false);

  std::string str() const;  // the module tree, one child per line

 protected:
  Variable register_parameter(std::string name, Tensor value);
  Variable register_buffer(std::string name, Tensor value);
  template <typename M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    add_child(std::move(name), module);
    return module;
  }

 private:
  void add_child(std::string name, std::shared_ptr<Module> module);
  void collect(const std::string& prefix, bool parameters, NamedVariables* out) const;

  NamedVariables parameters_;
  NamedVariables buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

}  // namespace redline::nn
