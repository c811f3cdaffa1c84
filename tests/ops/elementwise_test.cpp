// Elementwise ops: values against std:: maths, broadcasting, dtypes, gradients, bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "ops/op_test_util.h"
#include "redline/autograd/functions.h"

namespace redline {
namespace {

using test::uniform;
using test::values;
using Vars = std::vector<Variable>;

TEST(Elementwise, UnaryValuesMatchStdMaths) {
  const Tensor x = uniform({5, 7}, 3, 0.1, 2.0);
  const std::vector<float> xs = values(x);
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&)> op;
    std::function<double(double)> ref;
  };
  const std::vector<Case> cases = {
      {"relu", [](const Tensor& t) { return ops::relu(ops::add_scalar(t, -1.0)); },
       [](double v) { return std::max(v - 1.0, 0.0); }},
      {"leaky_relu", [](const Tensor& t) { return ops::leaky_relu(ops::add_scalar(t, -1.0), 0.1); },
       [](double v) { return v > 1.0 ? v - 1.0 : 0.1 * (v - 1.0); }},
      {"tanh", [](const Tensor& t) { return ops::tanh(t); }, [](double v) { return std::tanh(v); }},
      {"sigmoid", [](const Tensor& t) { return ops::sigmoid(t); },
       [](double v) { return 1.0 / (1.0 + std::exp(-v)); }},
      {"exp", [](const Tensor& t) { return ops::exp(t); }, [](double v) { return std::exp(v); }},
      {"log", [](const Tensor& t) { return ops::log(t); }, [](double v) { return std::log(v); }},
      {"sqrt", [](const Tensor& t) { return ops::sqrt(t); }, [](double v) { return std::sqrt(v); }},
      {"gelu", [](const Tensor& t) { return ops::gelu(t); },
       [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }},
      {"neg", [](const Tensor& t) { return ops::neg(t); }, [](double v) { return -v; }},
      {"square", [](const Tensor& t) { return ops::square(t); }, [](double v) { return v * v; }},
      {"pow", [](const Tensor& t) { return ops::pow_scalar(t, 1.5); },
       [](double v) { return std::pow(v, 1.5); }},
  };
  for (const Case& c : cases) {
    const std::vector<float> out = values(c.op(x));
    for (size_t i = 0; i < xs.size(); ++i) {
      EXPECT_NEAR(out[i], c.ref(xs[i]), 1e-6 * (1 + std::fabs(c.ref(xs[i])))) << c.name;
    }
  }
}

TEST(Elementwise, BinaryBroadcastsLikeNumPy) {
  const Tensor a = Tensor::arange(0, 6, 1).view({2, 3});
  const Tensor b = Tensor::from_host<float>({10, 20, 30}, {3});
  const Tensor col = Tensor::from_host<float>({100, 200}, {2, 1});
  EXPECT_EQ(values(ops::add(a, b)), (std::vector<float>{10, 21, 32, 13, 24, 35}));
  EXPECT_EQ(values(ops::sub(a, col)), (std::vector<float>{-100, -99, -98, -197, -196, -195}));
  EXPECT_EQ(ops::mul(col, b).shape(), (Shape{2, 3}));
  EXPECT_EQ(values(ops::div(b, Tensor::full({}, 10.0, DType::f32))), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(values(ops::maximum(a, Tensor::full({}, 2.5, DType::f32))),
            (std::vector<float>{2.5, 2.5, 2.5, 3, 4, 5}));
  // Non-contiguous operands are read through their strides.
  EXPECT_EQ(values(ops::add(a.transpose(0, 1), Tensor::zeros({3, 2}, DType::f32))),
            (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(ops::broadcast_shapes({4, 1, 3}, {5, 1}, "t"), (Shape{4, 5, 3}));
}

TEST(Elementwise, ComparisonsGiveBoolAndIntegersWork) {
  const Tensor a = Tensor::from_host<int64_t>({1, 5, 3}, {3});
  const Tensor b = Tensor::from_host<int64_t>({2, 5, 1}, {3});
  EXPECT_EQ(ops::lt(a, b).to_vector<bool>(), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(ops::eq(a, b).to_vector<bool>(), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(ops::add(a, b).to_vector<int64_t>(), (std::vector<int64_t>{3, 10, 4}));
  EXPECT_EQ(ops::mul(a, b).dtype(), DType::i64);
  EXPECT_ERROR_WITH(ops::div(a, b), "not supported");
}

TEST(Elementwise, HalfPrecisionComputesInF32AndRoundsOnce) {
  for (DType t : {DType::bf16, DType::f16}) {
    const Tensor x = ops::cast(Tensor::from_host<float>({0.5f, 1.0f, 2.0f}, {3}), t);
    const Tensor y = ops::mul(x, x);
    EXPECT_EQ(y.dtype(), t);
    EXPECT_EQ(values(ops::cast(y, DType::f32)), (std::vector<float>{0.25f, 1, 4}));
    EXPECT_NEAR(ops::tanh(x).at({1}), std::tanh(1.0), 1e-2);
  }
}

TEST(Elementwise, ClampWhereCastPixels) {
  const Tensor x = Tensor::from_host<float>({-2, -0.5f, 0.5f, 2}, {4});
  EXPECT_EQ(values(ops::clamp(x, -1.0, 1.0)), (std::vector<float>{-1, -0.5f, 0.5f, 1}));
  EXPECT_EQ(values(ops::clamp(x, 0.0, std::nullopt)), (std::vector<float>{0, 0, 0.5f, 2}));
  EXPECT_ERROR_WITH(ops::clamp(x, 1.0, -1.0), "above upper bound");
  const Tensor cond = ops::gt(x, Tensor::zeros({}, DType::f32));
  EXPECT_EQ(values(ops::where(cond, x, ops::neg(x))), (std::vector<float>{2, 0.5f, 0.5f, 2}));
  EXPECT_ERROR_WITH(ops::where(x, x, x), "condition must be bool");
  EXPECT_EQ(ops::cast(x, DType::i32).to_vector<int32_t>(), (std::vector<int32_t>{-2, 0, 0, 2}));
  EXPECT_EQ(ops::cast(x, DType::boolean).to_vector<bool>(), (std::vector<bool>{1, 1, 1, 1}));
  const Tensor px = Tensor::from_host<uint8_t>({0, 51, 255}, {3});
  const std::vector<float> f = values(ops::pixels_to_float(px));
  EXPECT_FLOAT_EQ(f[0], 0.0f);
  EXPECT_FLOAT_EQ(f[1], 0.2f);
  EXPECT_FLOAT_EQ(f[2], 1.0f);
  EXPECT_ERROR_WITH(ops::pixels_to_float(x), "expects u8 pixels");
  // Every dtype casts to every dtype and back where the value fits.
  const Tensor small = Tensor::from_host<float>({0, 1, 7}, {3});
  for (DType t : kAllDTypes) {
    const Tensor back = ops::cast(ops::cast(small, t), DType::f32);
    const std::vector<float> want =
        t == DType::boolean ? std::vector<float>{0, 1, 1} : std::vector<float>{0, 1, 7};
    EXPECT_EQ(values(back), want) << dtype_name(t);
  }
}

TEST(Elementwise, BadInputIsRefusedWithOneSentence) {
  const Tensor f = Tensor::ones({2, 3}, DType::f32);
  EXPECT_ERROR_WITH(ops::add(f, Tensor::ones({2, 3}, DType::i64)), "dtypes differ");
  EXPECT_ERROR_WITH(ops::add(f, Tensor::ones({4}, DType::f32)), "do not broadcast");
  EXPECT_ERROR_WITH(ops::relu(Tensor::ones({2}, DType::i32)), "expected a floating tensor");
  EXPECT_ERROR_WITH(ops::add(f, Tensor()), "undefined");
  Tensor small = Tensor::ones({3}, DType::f32);
  EXPECT_ERROR_WITH(ops::add_(small, f), "does not broadcast into");
}

// ---- gradients ----------------------------------------------------------------------------------

TEST(ElementwiseGrad, UnaryOps) {
  const std::vector<Tensor> signed_in = {test::away_from_zero({3, 4}, 5)};
  const std::vector<Tensor> positive = {uniform({3, 4}, 6, 0.3, 2.0)};
  const std::vector<std::pair<const char*, std::function<Variable(const Variable&)>>> fns = {
      {"relu", [](const Variable& x) { return relu(x); }},
      {"leaky_relu", [](const Variable& x) { return leaky_relu(x, 0.2); }},
      {"tanh", [](const Variable& x) { return tanh(x); }},
      {"sigmoid", [](const Variable& x) { return sigmoid(x); }},
      {"exp", [](const Variable& x) { return exp(x); }},
      {"gelu", [](const Variable& x) { return gelu(x); }},
      {"abs", [](const Variable& x) { return abs(x); }},
      {"neg", [](const Variable& x) { return neg(x); }},
      {"square", [](const Variable& x) { return square(x); }},
      {"scalars", [](const Variable& x) { return add_scalar(mul_scalar(x, 3.0), 1.0); }},
  };
  for (const auto& [name, f] : fns) {
    SCOPED_TRACE(name);
    EXPECT_GRADCHECK([&](const Vars& v) { return f(v[0]); }, signed_in);
  }
  EXPECT_GRADCHECK([](const Vars& v) { return log(v[0]); }, positive);
  EXPECT_GRADCHECK([](const Vars& v) { return sqrt(v[0]); }, positive);
  EXPECT_GRADCHECK([](const Vars& v) { return pow_scalar(v[0], 2.5); }, positive);
}

TEST(ElementwiseGrad, BinaryOpsWithBroadcasting) {
  const std::vector<Tensor> in = {uniform({2, 3, 4}, 1), uniform({3, 1}, 2, 0.5, 1.5)};
  EXPECT_GRADCHECK([](const Vars& v) { return add(v[0], v[1]); }, in);
  EXPECT_GRADCHECK([](const Vars& v) { return sub(v[0], v[1]); }, in);
  EXPECT_GRADCHECK([](const Vars& v) { return mul(v[0], v[1]); }, in);
  EXPECT_GRADCHECK([](const Vars& v) { return div(v[0], v[1]); }, in);
  const std::vector<Tensor> distinct = {uniform({4, 5}, 3), uniform({5}, 4)};
  EXPECT_GRADCHECK([](const Vars& v) { return maximum(v[0], v[1]); }, distinct);
  EXPECT_GRADCHECK([](const Vars& v) { return minimum(v[0], v[1]); }, distinct);
}

TEST(ElementwiseGrad, ClampAndWhere) {
  // Values away from the bounds -0.5 and 0.5 (the kinks).
  const Tensor x = Tensor::from_host<float>({-1.0f, -0.2f, 0.1f, 0.9f, 0.3f, -0.8f}, {2, 3});
  EXPECT_GRADCHECK([](const Vars& v) { return clamp(v[0], -0.5, 0.5); }, std::vector<Tensor>{x});
  EXPECT_GRADCHECK([](const Vars& v) { return clamp(v[0], std::nullopt, 0.5); },
                   std::vector<Tensor>{x});
  const Tensor cond = ops::cast(Tensor::from_host<uint8_t>({1, 0, 1}, {3}), DType::boolean);
  EXPECT_GRADCHECK([&](const Vars& v) { return where(cond, v[0], v[1]); },
                   (std::vector<Tensor>{uniform({2, 3}, 1), uniform({3}, 2)}));
}

TEST(ElementwiseGrad, CastBetweenFloatingDtypes) {
  // Through bf16 the values round, so check the gradient path with a linear function.
  const Variable x(uniform({4}, 8), true);
  sum(mul_scalar(cast(cast(x, DType::bf16), DType::f32), 2.0)).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{2, 2, 2, 2}));
  EXPECT_EQ(x.grad().dtype(), DType::f32);
  EXPECT_FALSE(cast(x, DType::i32).requires_grad());
}

}  // namespace
}  // namespace redline
