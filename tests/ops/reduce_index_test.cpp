// Reductions, softmax, indexing, cat/stack and layout: values, gradients, bad input.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/op_test_util.h"
#include "redline/autograd/functions.h"

namespace redline {
namespace {

using test::uniform;
using test::values;
using Vars = std::vector<Variable>;

TEST(Reduce, SumMeanMaxArgmax) {
  const Tensor x = Tensor::from_host<float>({1, 7, 3, 4, 2, 9}, {2, 3});
  EXPECT_EQ(ops::sum(x).item(), 26);
  EXPECT_EQ(ops::sum(x).dim(), 0);
  EXPECT_EQ(values(ops::sum(x, {0})), (std::vector<float>{5, 9, 12}));
  EXPECT_EQ(values(ops::sum(x, {1}, true)), (std::vector<float>{11, 15}));
  EXPECT_EQ(ops::sum(x, {1}, true).shape(), (Shape{2, 1}));
  EXPECT_EQ(ops::sum(x, {0, 1}).item(), 26);
  EXPECT_NEAR(ops::mean(x).item(), 26.0 / 6.0, 1e-6);
  EXPECT_EQ(values(ops::mean(x, {-1})), (std::vector<float>{11.0f / 3, 5}));
  EXPECT_EQ(ops::max(x).item(), 9);
  EXPECT_EQ(values(ops::max(x, 1)), (std::vector<float>{7, 9}));
  EXPECT_EQ(ops::argmax(x).item(), 5);
  EXPECT_EQ(ops::argmax(x, 0).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(ops::argmax(Tensor::from_host<float>({2, 2, 1}, {3})).item(), 0);  // first wins
  const Tensor ints = Tensor::from_host<int32_t>({3, -1, 8}, {3});
  EXPECT_EQ(ops::sum(ints).item(), 10);
  EXPECT_EQ(ops::max(ints).item(), 8);
  // Strided input.
  EXPECT_EQ(values(ops::sum(x.transpose(0, 1), {1})), (std::vector<float>{5, 9, 12}));
  EXPECT_ERROR_WITH(ops::sum(x, {2}), "out of range");
  EXPECT_ERROR_WITH(ops::sum(x, {1, -1}), "listed twice");
  EXPECT_ERROR_WITH(ops::max(Tensor::zeros({0}, DType::f32)), "empty");
  EXPECT_ERROR_WITH(ops::mean(ints), "floating");
}

// Sums over several dimensions, adjacent or not, of contiguous and permuted inputs, against a
// direct sum (the front-end merges adjacent dimensions and reduces the last run first).
TEST(Reduce, SumOverSeveralDimsMatchesADirectSum) {
  const Tensor base = uniform({3, 4, 5, 6}, 31);
  for (const Tensor& x : {base, base.permute({2, 0, 3, 1})}) {
    const std::vector<float> v = values(x);  // row-major in x's own shape
    const Shape sh = x.shape();
    for (const std::vector<int>& dims :
         {std::vector<int>{0, 2, 3}, {1, 2}, {0, 3}, {0, 1, 2, 3}, {3}, {-1, 0}}) {
      const Tensor got = ops::sum(x, dims, true);
      Shape kept = sh;
      for (int d : dims) kept[(d + 4) % 4] = 1;
      ASSERT_EQ(got.shape(), kept);
      std::vector<double> want(static_cast<size_t>(shape_numel(kept)), 0.0);
      for (int64_t a = 0; a < sh[0]; ++a)
        for (int64_t b = 0; b < sh[1]; ++b)
          for (int64_t c = 0; c < sh[2]; ++c)
            for (int64_t d = 0; d < sh[3]; ++d) {
              const int64_t at = ((a * sh[1] + b) * sh[2] + c) * sh[3] + d;
              const int64_t i[4] = {a, b, c, d};
              int64_t out = 0;
              for (int k = 0; k < 4; ++k) out = out * kept[k] + (kept[k] == 1 ? 0 : i[k]);
              want[out] += v[at];
            }
      const std::vector<float> g = values(got);
      for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(g[k], want[k], 1e-5);
      EXPECT_EQ(ops::sum(x, dims).numel(), got.numel());
    }
  }
}

TEST(Reduce, Gradients) {
  const std::vector<Tensor> in = {uniform({3, 4, 2}, 11)};
  EXPECT_GRADCHECK([](const Vars& v) { return sum(v[0]); }, in);
  EXPECT_GRADCHECK([](const Vars& v) { return sum(v[0], {0, 2}); }, in);
  EXPECT_GRADCHECK([](const Vars& v) { return sum(v[0], {1}, true); }, in);
  EXPECT_GRADCHECK([](const Vars& v) { return mean(v[0]); }, in);
  EXPECT_GRADCHECK([](const Vars& v) { return mean(v[0], {-1}); }, in);
  // Values 0.1 apart in a shuffled order: the maximum never changes under the eps step.
  std::vector<float> shuffled(24);
  for (int i = 0; i < 24; ++i) shuffled[i] = 0.1f * static_cast<float>((i * 7) % 24);
  const std::vector<Tensor> distinct = {Tensor::from_host<float>(shuffled, {3, 4, 2})};
  EXPECT_GRADCHECK([](const Vars& v) { return max(v[0]); }, distinct);
  EXPECT_GRADCHECK([](const Vars& v) { return max(v[0], 1); }, distinct);
  EXPECT_GRADCHECK([](const Vars& v) { return max(v[0], 0, true); }, distinct);
}

TEST(Softmax, ValuesAndGradients) {
  const Tensor x = Tensor::from_host<float>({1, 2, 3, 1000, 1000, 1000}, {2, 3});
  const std::vector<float> p = values(ops::softmax(x, 1));
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_NEAR(p[2], std::exp(3.0) / z, 1e-6);
  EXPECT_NEAR(p[4], 1.0 / 3.0, 1e-6);  // large logits stay finite
  const std::vector<float> lp = values(ops::log_softmax(x, -1));
  EXPECT_NEAR(lp[0], 1.0 - std::log(z), 1e-5);
  const std::vector<Tensor> in = {uniform({3, 5}, 4, -2, 2)};
  EXPECT_GRADCHECK([](const Vars& v) { return softmax(v[0], 1); }, in);
  EXPECT_GRADCHECK([](const Vars& v) { return softmax(v[0], 0); }, in);
  EXPECT_GRADCHECK([](const Vars& v) { return log_softmax(v[0], 1); }, in);
  EXPECT_GRADCHECK([](const Vars& v) { return log_softmax(v[0], 0); }, in);
  EXPECT_ERROR_WITH(ops::softmax(x, 2), "out of range");
}

TEST(Index, GatherScatterIndexSelect) {
  const Tensor q = Tensor::from_host<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor actions = Tensor::from_host<int64_t>({2, 0}, {2, 1});
  EXPECT_EQ(values(ops::gather(q, 1, actions)), (std::vector<float>{3, 4}));
  const Tensor rows = Tensor::from_host<int64_t>({1, 1, 0}, {3});
  EXPECT_EQ(values(ops::index_select(q, 0, rows)), (std::vector<float>{4, 5, 6, 4, 5, 6, 1, 2, 3}));
  EXPECT_EQ(values(ops::index_select(q, 1, Tensor::from_host<int64_t>({2}, {1}))),
            (std::vector<float>{3, 6}));
  const Tensor counts =
      ops::scatter_add(Tensor::zeros({4}, DType::f32), 0,
                       Tensor::from_host<int64_t>({3, 1, 3}, {3}), Tensor::ones({3}, DType::f32));
  EXPECT_EQ(values(counts), (std::vector<float>{0, 1, 0, 2}));
  EXPECT_EQ(values(ops::index_add(Tensor::zeros({2, 2}, DType::f32), 0,
                                  Tensor::from_host<int64_t>({1, 1}, {2}),
                                  Tensor::ones({2, 2}, DType::f32))),
            (std::vector<float>{0, 0, 2, 2}));
  EXPECT_ERROR_WITH(ops::gather(q, 1, Tensor::from_host<int64_t>({3, 0}, {2, 1})),
                    "gather: index 3 at position 0 of the index tensor is out of range for a "
                    "dimension of size 3");
  EXPECT_ERROR_WITH(ops::gather(q, 1, Tensor::from_host<int32_t>({1, 0}, {2, 1})), "must be i64");
  EXPECT_ERROR_WITH(ops::gather(q, 1, Tensor::from_host<int64_t>({1}, {1, 1})),
                    "on every dimension but 1");
  EXPECT_ERROR_WITH(ops::index_select(q, 0, Tensor::from_host<int64_t>({-1}, {1})), "out of range");
}

TEST(Index, Gradients) {
  const Tensor index = Tensor::from_host<int64_t>({2, 0, 0, 1, 1, 1}, {3, 2});
  EXPECT_GRADCHECK([&](const Vars& v) { return gather(v[0], 1, index); },
                   std::vector<Tensor>{uniform({3, 4}, 1)});
  EXPECT_GRADCHECK([&](const Vars& v) { return gather(v[0], 0, index); },
                   std::vector<Tensor>{uniform({3, 2}, 1)});
  const Tensor rows = Tensor::from_host<int64_t>({2, 0, 2}, {3});
  EXPECT_GRADCHECK([&](const Vars& v) { return index_select(v[0], 0, rows); },
                   std::vector<Tensor>{uniform({4, 3}, 2)});
  EXPECT_GRADCHECK([&](const Vars& v) { return scatter_add(v[0], 1, index, v[1]); },
                   (std::vector<Tensor>{uniform({3, 4}, 3), uniform({3, 2}, 4)}));
}

TEST(Layout, CatStackReshapePermute) {
  const Tensor a = Tensor::arange(0, 4).view({2, 2});
  const Tensor b = Tensor::arange(4, 6).view({2, 1});
  EXPECT_EQ(values(ops::cat({a, b}, 1)), (std::vector<float>{0, 1, 4, 2, 3, 5}));
  EXPECT_EQ(ops::stack({a, a}, 0).shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(values(ops::stack({b.view({2}), b.view({2})}, 1)), (std::vector<float>{4, 4, 5, 5}));
  EXPECT_ERROR_WITH(ops::cat({a, b}, 0), "outside dimension 0");
  EXPECT_ERROR_WITH(ops::cat({a, ops::cast(a, DType::i32)}, 0), "dtypes and devices must match");
  EXPECT_ERROR_WITH(ops::stack({a, b}, 0), "shapes must match");
  const std::vector<Tensor> in = {uniform({2, 3}, 1), uniform({2, 2}, 2)};
  EXPECT_GRADCHECK([](const Vars& v) { return cat({v[0], v[1], v[0]}, 1); }, in);
  const std::vector<Tensor> same = {uniform({2, 3}, 1), uniform({2, 3}, 2)};
  EXPECT_GRADCHECK([](const Vars& v) { return stack({v[0], v[1]}, 1); }, same);
  EXPECT_GRADCHECK(
      [](const Vars& v) {
        return mul(permute(v[0], {1, 0}), reshape(v[1], {3, 2}));
      },
      same);
  EXPECT_GRADCHECK([](const Vars& v) { return flatten(unsqueeze(v[0], 1)); }, same);
}

}  // namespace
}  // namespace redline
