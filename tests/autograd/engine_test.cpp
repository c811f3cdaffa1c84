// The tape: recording, backward order, accumulation, no-grad, detach, errors of misuse.
#include <gtest/gtest.h>

#include "ops/op_test_util.h"
#include "redline/autograd/functions.h"

namespace redline {
namespace {

Variable leaf(std::vector<float> v, const Shape& shape) {
  return Variable(Tensor::from_host<float>(v, shape), true);
}

TEST(Autograd, ChainRuleThroughADiamond) {
  // y = sum((x * x) + (x * 3)) -> dy/dx = 2x + 3; x is used by two branches.
  const Variable x = leaf({1, -2, 0.5f}, {3});
  const Variable y = sum(add(mul(x, x), mul_scalar(x, 3.0)));
  y.backward();
  EXPECT_EQ(test::values(x.grad()), (std::vector<float>{5, -1, 4}));
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(y.is_leaf());
  EXPECT_STREQ(y.grad_fn()->name(), "sum");
}

TEST(Autograd, GradientsAccumulateUntilZeroed) {
  const Variable x = leaf({1, 2}, {2});
  sum(mul_scalar(x, 2.0)).backward();
  sum(mul_scalar(x, 3.0)).backward();
  EXPECT_EQ(test::values(x.grad()), (std::vector<float>{5, 5}));
  const void* storage = x.grad().raw_data();
  x.impl()->grad.fill_(1.0);
  Variable(x).zero_grad();
  EXPECT_EQ(test::values(x.grad()), (std::vector<float>{0, 0}));
  EXPECT_EQ(x.grad().raw_data(), storage);  // zeroed in place
  Variable(x).zero_grad(true);
  EXPECT_FALSE(x.grad().defined());
}

TEST(Autograd, LeafGradientIsNotAliasedWithOtherGradients) {
  // add passes the same gradient to both inputs; accumulating into one must not change the other.
  const Variable a = leaf({1, 1}, {2});
  const Variable b = leaf({1, 1}, {2});
  sum(add(a, b)).backward();
  sum(mul_scalar(a, 10.0)).backward();
  EXPECT_EQ(test::values(a.grad()), (std::vector<float>{11, 11}));
  EXPECT_EQ(test::values(b.grad()), (std::vector<float>{1, 1}));
}

TEST(Autograd, NoGradGuardRecordsNothing) {
  const Variable x = leaf({1, 2}, {2});
  {
    NoGradGuard guard;
    EXPECT_FALSE(grad_enabled());
    const Variable y = mul(x, x);
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.grad_fn(), nullptr);
  }
  EXPECT_TRUE(grad_enabled());
  EXPECT_TRUE(mul(x, x).requires_grad());
}

TEST(Autograd, DetachCutsTheTape) {
  const Variable x = leaf({3}, {1});
  const Variable y = mul(x, x);
  const Variable z = mul(y.detach(), x);  // dz/dx = y (constant) = 9
  z.backward();
  EXPECT_EQ(test::values(x.grad()), (std::vector<float>{9}));
}

TEST(Autograd, BranchWithoutGradientIsSkipped) {
  // Only the argmax element of max() gets a gradient; a constant branch contributes nothing.
  const Variable x = leaf({1, 5, 2}, {3});
  const Variable c(Tensor::from_host<float>({1, 1, 1}, {3}));
  const Variable y = add(max(x), sum(mul(c, c)));
  y.backward();
  EXPECT_EQ(test::values(x.grad()), (std::vector<float>{0, 1, 0}));
}

TEST(Autograd, ExplicitGradientForNonScalarOutput) {
  const Variable x = leaf({1, 2, 3}, {3});
  const Variable y = mul_scalar(x, 2.0);
  y.backward(Tensor::from_host<float>({1, 0, -1}, {3}));
  EXPECT_EQ(test::values(x.grad()), (std::vector<float>{2, 0, -2}));
}

TEST(Autograd, MisuseRaisesClearErrors) {
  const Variable x = leaf({1, 2, 3}, {3});
  const Variable y = mul_scalar(x, 2.0);
  EXPECT_ERROR_WITH(y.backward(), "needs a one-element output but got f32 (3,) on cpu");
  EXPECT_ERROR_WITH(y.backward(Tensor::ones({2}, DType::f32)), "does not match the output");
  const Variable constant(Tensor::ones({1}, DType::f32));
  EXPECT_ERROR_WITH(constant.backward(), "does not require grad");
  EXPECT_ERROR_WITH(Variable(Tensor::ones({1}, DType::i64), true), "only floating tensors");
  Variable interior = y;
  EXPECT_ERROR_WITH(interior.set_requires_grad(false), "only leaves");
  EXPECT_ERROR_WITH(Variable().data(), "undefined Variable");
  EXPECT_ERROR_WITH(add(x, Variable(Tensor::ones({2}, DType::f32))), "do not broadcast");
}

TEST(Autograd, GradcheckCatchesAWrongGradient) {
  // A function with a deliberately wrong backward must fail the check.
  const GradcheckFunction wrong = [](const std::vector<Variable>& in) {
    const Tensor xv = in[0].data();
    return record("wrong_square", ops::square(xv), {in[0]},
                  [=](const Tensor& g, const std::vector<bool>&) -> std::vector<Tensor> {
                    return {ops::mul(g, xv)};  // should be 2 x g
                  });
  };
  const GradcheckResult r = gradcheck(wrong, {test::uniform({4}, 1)});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("analytic gradient"), std::string::npos) << r.message;
  const GradcheckFunction right = [](const std::vector<Variable>& in) { return square(in[0]); };
  EXPECT_GRADCHECK(right, std::vector<Tensor>{test::uniform({4}, 1)});
}

TEST(Autograd, GradcheckRunsInF64AndCatchesSmallErrors) {
  // The function sees f64 inputs, and a right gradient agrees to far better than f32 rounding.
  DType seen = DType::f32;
  const GradcheckFunction right = [&](const std::vector<Variable>& in) {
    seen = in[0].dtype();
    return tanh(in[0]);
  };
  const GradcheckResult ok = gradcheck(right, {test::uniform({6}, 2)});
  EXPECT_TRUE(ok.ok) << ok.message;
  EXPECT_EQ(seen, DType::f64);
  EXPECT_LT(ok.max_abs_error, 1e-8);
  // A gradient wrong by one part in a thousand: the f32-era tolerances let it through, the
  // default f64 ones do not.
  const GradcheckFunction off_by_1e3 = [](const std::vector<Variable>& in) {
    const Tensor xv = in[0].data();
    return record("square_off_by_1e-3", ops::square(xv), {in[0]},
                  [=](const Tensor& g, const std::vector<bool>&) -> std::vector<Tensor> {
                    return {ops::mul_scalar(ops::mul(g, xv), 2.002)};
                  });
  };
  const std::vector<Tensor> x = {test::uniform({5}, 3, 0.5, 2.0)};
  const GradcheckResult caught = gradcheck(off_by_1e3, x);
  EXPECT_FALSE(caught.ok);
  EXPECT_NE(caught.message.find("analytic gradient"), std::string::npos) << caught.message;
  GradcheckOptions loose;
  loose.eps = 1e-2;
  loose.atol = 2e-3;
  loose.rtol = 1e-2;
  EXPECT_TRUE(gradcheck(off_by_1e3, x, loose).ok);
}

}  // namespace
}  // namespace redline
