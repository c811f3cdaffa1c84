// Variable, Node, grad mode and the backward engine.
#include "redline/autograd/variable.h"

#include <unordered_map>
#include <unordered_set>

#include "redline/ops/ops.h"

namespace redline {
namespace {

thread_local bool tl_grad_enabled = true;

const VariableImpl& checked(const std::shared_ptr<VariableImpl>& impl, const char* what) {
  REDLINE_CHECK(impl != nullptr, "{} on an undefined Variable", what);
  return *impl;
}

// Adds g into the leaf's gradient (stealing g when nothing else holds its storage).
void accumulate_into_leaf(VariableImpl& leaf, Tensor g) {
  if (!leaf.grad.defined()) {
    const bool exclusive =
        g.storage().use_count() == 1 && g.is_contiguous() && g.shape() == leaf.data.shape();
    leaf.grad = exclusive ? std::move(g) : g.contiguous().clone();
    if (leaf.grad.shape() != leaf.data.shape()) leaf.grad = leaf.grad.reshape(leaf.data.shape());
    return;
  }
  ops::add_(leaf.grad, g);
}

}  // namespace

// ---- Variable ---------------------------------------------------------------------------------

Variable::Variable(Tensor data, bool requires_grad) : impl_(std::make_shared<VariableImpl>()) {
  REDLINE_CHECK(data.defined(), "a Variable needs a defined tensor");
  impl_->data = std::move(data);
  set_requires_grad(requires_grad);
}

const Tensor& Variable::data() const { return checked(impl_, "data()").data; }
bool Variable::requires_grad() const { return checked(impl_, "requires_grad()").requires_grad; }
bool Variable::is_leaf() const { return checked(impl_, "is_leaf()").grad_fn == nullptr; }
const Tensor& Variable::grad() const { return checked(impl_, "grad()").grad; }
const std::shared_ptr<Node>& Variable::grad_fn() const {
  return checked(impl_, "grad_fn()").grad_fn;
}

void Variable::set_requires_grad(bool requires_grad) {
  checked(impl_, "set_requires_grad()");
  REDLINE_CHECK(impl_->grad_fn == nullptr,
                "set_requires_grad() on a Variable computed by '{}'; only leaves can change it "
                "(use detach() first)",
                impl_->grad_fn->name());
  REDLINE_CHECK(!requires_grad || dtype_is_floating(impl_->data.dtype()),
                "only floating tensors can require grad, not {}", impl_->data.describe());
  impl_->requires_grad = requires_grad;
}

void Variable::set_grad(Tensor grad) {
  checked(impl_, "set_grad()");
  REDLINE_CHECK(!grad.defined() ||
                    (grad.shape() == impl_->data.shape() && grad.dtype() == impl_->data.dtype() &&
                     grad.device() == impl_->data.device()),
                "set_grad: gradient {} does not match the value {}", grad.describe(),
                impl_->data.describe());
  impl_->grad = std::move(grad);
}

void Variable::zero_grad(bool set_to_none) {
  checked(impl_, "zero_grad()");
  if (set_to_none) {
    impl_->grad = Tensor();
  } else if (impl_->grad.defined()) {
    impl_->grad.fill_(0.0);
  }
}

Variable Variable::detach() const { return Variable(data(), false); }

void Variable::backward(const Tensor& grad) const {
  const VariableImpl& self = checked(impl_, "backward()");
  REDLINE_CHECK(self.requires_grad,
                "backward() on {} which does not require grad: no input of the computation "
                "requires grad, or it ran under NoGradGuard",
                self.data.describe());
  Tensor seed = grad;
  if (!seed.defined()) {
    REDLINE_CHECK(self.data.numel() == 1,
                  "backward() without a gradient needs a one-element output but got {}; pass a "
                  "gradient of that shape or reduce the output first (sum or mean)",
                  self.data.describe());
    seed = Tensor::ones(self.data.shape(), self.data.dtype(), self.data.device());
  }
  REDLINE_CHECK(seed.shape() == self.data.shape() && seed.dtype() == self.data.dtype() &&
                    seed.device() == self.data.device(),
                "backward(): gradient {} does not match the output {}", seed.describe(),
                self.data.describe());

  NoGradGuard no_grad;
  if (self.grad_fn == nullptr) {
    accumulate_into_leaf(*impl_, seed);
    return;
  }
  // Count, for every node reachable from the root, how many edges point at it.
  std::unordered_map<const Node*, int> pending;
  std::vector<const Node*> stack = {self.grad_fn.get()};
  std::unordered_set<const Node*> seen = {self.grad_fn.get()};
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    for (const Edge& e : node->inputs()) {
      if (!e.node) continue;
      ++pending[e.node.get()];
      if (seen.insert(e.node.get()).second) stack.push_back(e.node.get());
    }
  }
  // Kahn's algorithm: a node runs once every consumer has delivered its gradient.
  std::unordered_map<const Node*, Tensor> grads;
  grads[self.grad_fn.get()] = seed;
  std::vector<const Node*> ready = {self.grad_fn.get()};
  while (!ready.empty()) {
    const Node* node = ready.back();
    ready.pop_back();
    std::vector<Tensor> input_grads(node->inputs().size());
    if (auto it = grads.find(node); it != grads.end()) {  // else no consumer sent a gradient
      const Tensor g = std::move(it->second);
      grads.erase(it);
      input_grads = node->apply(g);
    }
    for (size_t i = 0; i < node->inputs().size(); ++i) {
      const Edge& e = node->inputs()[i];
      Tensor& gi = input_grads[i];
      if (e.node) {
        if (gi.defined()) {
          auto it = grads.find(e.node.get());
          if (it == grads.end()) {
            grads.emplace(e.node.get(), std::move(gi));
          } else {
            it->second = ops::add(it->second, gi);
          }
        }
        if (--pending[e.node.get()] == 0) ready.push_back(e.node.get());
      } else if (e.leaf && gi.defined()) {
        accumulate_into_leaf(*e.leaf, std::move(gi));
      }
    }
  }
}

// ---- Node -------------------------------------------------------------------------------------

Node::Node(const char* name, std::vector<Edge> inputs, Backward backward, Shape output_shape,
           DType output_dtype, Device output_device)
    : name_(name),
      inputs_(std::move(inputs)),
      backward_(std::move(backward)),
      output_shape_(std::move(output_shape)),
      output_dtype_(output_dtype),
      output_device_(output_device) {}

std::vector<Tensor> Node::apply(const Tensor& grad_output) const {
  std::vector<bool> needs(inputs_.size());
  for (size_t i = 0; i < inputs_.size(); ++i) needs[i] = inputs_[i].active();
  std::vector<Tensor> grads = backward_(grad_output, needs);
  REDLINE_CHECK(grads.size() == inputs_.size(),
                "internal: backward of '{}' returned {} gradients for {} inputs", name_,
                grads.size(), inputs_.size());
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!needs[i] || !grads[i].defined()) {
      grads[i] = Tensor();
      continue;
    }
    const Edge& e = inputs_[i];
    const Shape& want = e.node ? e.node->output_shape() : e.leaf->data.shape();
    REDLINE_CHECK(grads[i].shape() == want,
                  "internal: backward of '{}' gave input {} a gradient {} for shape {}", name_, i,
                  grads[i].describe(), shape_str(want));
  }
  return grads;
}

// ---- grad mode and recording ------------------------------------------------------------------

bool grad_enabled() { return tl_grad_enabled; }

NoGradGuard::NoGradGuard() : previous_(tl_grad_enabled) { tl_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { tl_grad_enabled = previous_; }

Variable record(const char* name, Tensor output, const std::vector<Variable>& inputs,
                Node::Backward backward) {
  Variable result(std::move(output), false);
  if (!tl_grad_enabled || !dtype_is_floating(result.dtype())) return result;
  std::vector<Edge> edges(inputs.size());
  bool any = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Variable& in = inputs[i];
    if (!in.defined() || !in.requires_grad()) continue;
    any = true;
    if (in.grad_fn()) {
      edges[i].node = in.grad_fn();
    } else {
      edges[i].leaf = in.impl();
    }
  }
  if (!any) return result;
  const Tensor& out = result.data();
  result.impl()->grad_fn = std::make_shared<Node>(name, std::move(edges), std::move(backward),
                                                  out.shape(), out.dtype(), out.device());
  result.impl()->requires_grad = true;
  return result;
}

}  // namespace redline
