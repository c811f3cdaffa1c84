// Define-by-run autograd: a Variable is a Tensor plus what is needed to differentiate through it.
// Every differentiable function (redline/autograd/functions.h) records a Node on the tape when
// grad mode is on and an input requires grad; Variable::backward() walks the tape in reverse
// topological order and accumulates gradients into the leaves (parameters) that require them.
//
// Gradients accumulate across backward() calls until zero_grad(). Gradient computations are
// themselves not recorded (no double backward).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "redline/core/tensor.h"

namespace redline {

class Node;
struct VariableImpl;

class Variable {
 public:
  Variable() = default;
  // A leaf. requires_grad needs a floating dtype.
  explicit Variable(Tensor data, bool requires_grad = false);

  bool defined() const { return impl_ != nullptr; }
  // The value. Its storage may be updated in place (optimizers do) but not resized.
  const Tensor& data() const;
  const Shape& shape() const { return data().shape(); }
  int64_t shape(int dim) const { return data().shape(dim); }
  int dim() const { return data().dim(); }
  int64_t numel() const { return data().numel(); }
  DType dtype() const { return data().dtype(); }
  Device device() const { return data().device(); }
  std::string describe() const { return data().describe(); }

  bool requires_grad() const;
  // Only on leaves; throws on a Variable computed by a recorded function.
  void set_requires_grad(bool requires_grad);
  bool is_leaf() const;
  // The accumulated gradient (undefined until a backward pass reaches this leaf).
  const Tensor& grad() const;
  void set_grad(Tensor grad);
  // Sets the gradient to zero in place (keeps its storage, so captured graphs stay valid), or
  // drops it with set_to_none.
  void zero_grad(bool set_to_none = false);

  // Gradient of this Variable with respect to every leaf that requires grad. grad may be omitted
  // only for a one-element Variable (then it is 1); else it must match shape, dtype and device.
  void backward(const Tensor& grad = Tensor()) const;

  // The same value, cut from the tape (a leaf that does not require grad).
  Variable detach() const;

  const std::shared_ptr<Node>& grad_fn() const;
  const std::shared_ptr<VariableImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<VariableImpl> impl_;
};

// Where a Node sends the gradient of one of its inputs: the input's own Node (an interior
// Variable), the input's leaf (accumulate into its grad), or nowhere.
struct Edge {
  std::shared_ptr<Node> node;
  std::shared_ptr<VariableImpl> leaf;
  bool active() const { return node != nullptr || leaf != nullptr; }
};

// One recorded function application: given the gradient of its output, returns one gradient per
// input (undefined where needs[i] is false or the input is not differentiable).
class Node {
 public:
  using Backward =
      std::function<std::vector<Tensor>(const Tensor& grad_output, const std::vector<bool>& needs)>;
  Node(const char* name, std::vector<Edge> inputs, Backward backward, Shape output_shape,
       DType output_dtype, Device output_device);

  const char* name() const { return name_; }
  const std::vector<Edge>& inputs() const { return inputs_; }
  std::vector<Tensor> apply(const Tensor& grad_output) const;
  const Shape& output_shape() const { return output_shape_; }
  DType output_dtype() const { return output_dtype_; }
  Device output_device() const { return output_device_; }

 private:
  const char* name_;
  std::vector<Edge> inputs_;
  Backward backward_;
  Shape output_shape_;
  DType output_dtype_;
  Device output_device_;
};

struct VariableImpl {
  Tensor data;
  Tensor grad;
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;
};

// Grad mode: on by default, per thread.
bool grad_enabled();
// Turns recording off within its scope (inference, target networks, optimizer steps).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Records `output` as produced by a function of `inputs` when grad mode is on and any input
// requires grad; otherwise returns output as a plain leaf. Used by every differentiable function.
Variable record(const char* name, Tensor output, const std::vector<Variable>& inputs,
                Node::Backward backward);

}  // namespace redline
