// Tensor: factories, views, copies, printing and the errors of misuse (CPU).
#include "redline/core/tensor.h"

#include <gtest/gtest.h>

#include "redline/core/random.h"

namespace redline {
namespace {

TEST(Tensor, FactoriesFillEveryDType) {
  for (DType t : kAllDTypes) {
    const Tensor z = Tensor::zeros({2, 3}, t);
    const Tensor o = Tensor::ones({2, 3}, t);
    const Tensor f = Tensor::full({4}, 5.0, t);
    EXPECT_EQ(z.dtype(), t);
    EXPECT_EQ(z.numel(), 6);
    EXPECT_EQ(z.nbytes(), 6 * dtype_size(t));
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t j = 0; j < 3; ++j) {
        EXPECT_EQ(z.at({i, j}), 0.0) << dtype_name(t);
        EXPECT_EQ(o.at({i, j}), 1.0) << dtype_name(t);
      }
    }
    EXPECT_EQ(f.at({3}), t == DType::boolean ? 1.0 : 5.0) << dtype_name(t);
  }
}

TEST(DType, F64IsAnEightByteFloatAppendedLast) {
  EXPECT_EQ(dtype_size(DType::f64), 8u);
  EXPECT_EQ(dtype_name(DType::f64), "f64");
  EXPECT_TRUE(dtype_is_floating(DType::f64));
  EXPECT_EQ(DTypeOf<double>::value, DType::f64);
  for (const char* name : {"f64", "float64", "double"}) EXPECT_EQ(parse_dtype(name), DType::f64);
  EXPECT_EQ(parse_dtype(dtype_name(DType::f64)), DType::f64);
  // Appended at the end: the numeric values of the older dtypes did not move.
  EXPECT_EQ(static_cast<int>(DType::f32), 0);
  EXPECT_EQ(static_cast<int>(DType::boolean), 6);
  EXPECT_EQ(static_cast<int>(DType::f64), 7);
  EXPECT_EQ(kAllDTypes[std::size(kAllDTypes) - 1], DType::f64);
}

TEST(Tensor, F64HoldsDoublesExactly) {
  const double third = 1.0 / 3.0, tiny = 1.0 + 1e-12;  // neither fits in f32
  const Tensor x = Tensor::from_host<double>({third, tiny, -2.5}, {3});
  EXPECT_EQ(x.nbytes(), 24u);
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{third, tiny, -2.5}));
  EXPECT_EQ(x.at({1}), tiny);
  EXPECT_EQ(Tensor::full({2}, third, DType::f64).at({1}), third);
  EXPECT_EQ(Tensor::arange(0, 1, 0.1, DType::f64).at({3}), 0.1 * 3);
  EXPECT_EQ(x.slice(0, 1, 2).item(), tiny);
  EXPECT_NE(x.str().find("dtype=f64"), std::string::npos) << x.str();
  EXPECT_THROW(x.data<float>(), Error);
}

TEST(Tensor, ArangeAndFromHost) {
  const Tensor a = Tensor::arange(0, 5, 1, DType::i64);
  EXPECT_EQ(a.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  const Tensor b = Tensor::arange(1, 0, -0.25, DType::f32);
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{1, 0.75f, 0.5f, 0.25f}));
  EXPECT_EQ(Tensor::arange(3, 3).numel(), 0);
  const Tensor h = Tensor::from_host<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(h.at({1, 0}), 4.0);
  EXPECT_THROW(Tensor::from_host<float>({1, 2, 3}, {2, 2}), Error);
  EXPECT_THROW(Tensor::arange(0, 1, 0), Error);
}

TEST(Tensor, HalfPrecisionRoundTrips) {
  const std::vector<float> values = {0.0f, 1.0f, -2.5f, 65504.0f, 1e-3f, 3.14159f};
  for (DType t : {DType::bf16, DType::f16}) {
    const Tensor x = Tensor::arange(0, 6, 1, t);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(x.at({i}), i);
  }
  for (float v : values) {
    EXPECT_NEAR(f16_bits_to_float(float_to_f16_bits(v)), v, std::fabs(v) * 1e-3);
    EXPECT_NEAR(bf16_bits_to_float(float_to_bf16_bits(v)), v, std::fabs(v) * 8e-3);
  }
  EXPECT_EQ(float_to_f16_bits(1e6f), 0x7C00u);   // overflow to +inf
  EXPECT_EQ(float_to_f16_bits(6e-8f), 0x0001u);  // smallest subnormal
  EXPECT_EQ(f16_bits_to_float(0x0001u), 5.9604644775390625e-08f);
  EXPECT_EQ(float_to_bf16_bits(1.00390625f), 0x3F80u);  // tie rounds to even
  EXPECT_EQ(float_to_bf16_bits(1.01171875f), 0x3F82u);  // tie rounds to even (up)
}

TEST(Tensor, ViewsShareStorage) {
  Tensor x = Tensor::arange(0, 24, 1, DType::i32).view({2, 3, 4});
  EXPECT_TRUE(x.is_contiguous());
  Tensor p = x.permute({2, 0, 1});
  EXPECT_EQ(p.shape(), (Shape{4, 2, 3}));
  EXPECT_FALSE(p.is_contiguous());
  EXPECT_EQ(p.at({3, 1, 2}), x.at({1, 2, 3}));
  Tensor c = p.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.at({3, 1, 2}), 23);
  EXPECT_NE(c.storage(), x.storage());

  Tensor s = x.slice(2, 1, 4, 2);  // columns 1 and 3
  EXPECT_EQ(s.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(s.at({1, 2, 1}), 23);
  EXPECT_EQ(s.storage(), x.storage());
  Tensor row = x.select(0, 1).select(0, -1);
  EXPECT_EQ(row.to_vector<int32_t>(), (std::vector<int32_t>{20, 21, 22, 23}));

  Tensor r = p.reshape({-1});
  EXPECT_EQ(r.shape(), (Shape{24}));
  EXPECT_EQ(r.at({1}), x.at({0, 1, 0}));  // permuted order
  EXPECT_EQ(x.view({6, -1}).shape(), (Shape{6, 4}));
  EXPECT_EQ(x.transpose(0, 2).shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(x.unsqueeze(0).shape(), (Shape{1, 2, 3, 4}));
  EXPECT_EQ(x.unsqueeze(-1).shape(), (Shape{2, 3, 4, 1}));
  EXPECT_EQ(x.unsqueeze(1).squeeze(1).shape(), x.shape());

  // Writing through a view changes the base.
  Tensor col = x.select(2, 0);
  col.fill_(-1);
  EXPECT_EQ(x.at({1, 2, 0}), -1);
  EXPECT_EQ(x.at({1, 2, 1}), 21);
}

TEST(Tensor, CopyFromStridedAndClone) {
  Tensor a = Tensor::arange(0, 6, 1, DType::f32).view({2, 3});
  Tensor b = Tensor::zeros({3, 2}, DType::f32);
  b.copy_from(a.transpose(0, 1));
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  Tensor c = a.clone();
  c.fill_(7);
  EXPECT_EQ(a.at({0, 0}), 0);
  EXPECT_THROW(b.copy_from(a), Error);
  EXPECT_THROW(b.copy_from(Tensor::zeros({3, 2}, DType::i32)), Error);
}

// Large copies take the chunked paths (several odometer chunks, parallel memcpy), including a
// chunk boundary inside a row and an overlapping copy within one storage.
TEST(Tensor, LargeStridedAndContiguousCopies) {
  const int64_t a = 37, b = 1000, c = 3;  // 111000 elements: 7 chunks of 2^14
  const Tensor x = Tensor::arange(0, a * b * c, 1, DType::i64).view({a, b, c});
  const Tensor y = x.permute({2, 0, 1}).contiguous();  // (c, a, b)
  const std::vector<int64_t> got = y.to_vector<int64_t>();
  int64_t bad = 0;
  for (int64_t k = 0; k < c; ++k) {
    for (int64_t i = 0; i < a; ++i) {
      for (int64_t j = 0; j < b; ++j) bad += got[(k * a + i) * b + j] != (i * b + j) * c + k;
    }
  }
  EXPECT_EQ(bad, 0);
  const Tensor big = Tensor::arange(0, 1 << 20, 1, DType::i64);  // 8 MiB: parallel memcpy
  EXPECT_EQ(big.clone().to_vector<int64_t>(), big.to_vector<int64_t>());
  Tensor shifted = Tensor::arange(0, 1 << 20, 1, DType::i64);  // overlapping: memmove
  shifted.slice(0, 0, (1 << 20) - 1).copy_from(shifted.slice(0, 1, 1 << 20).clone());
  Tensor overlap = Tensor::arange(0, 1 << 20, 1, DType::i64);
  overlap.slice(0, 0, (1 << 20) - 1).copy_from(overlap.slice(0, 1, 1 << 20));
  EXPECT_EQ(overlap.to_vector<int64_t>(), shifted.to_vector<int64_t>());
}

TEST(Tensor, PrintingIsReadable) {
  const Tensor x = Tensor::arange(0, 6, 1, DType::i64).view({2, 3});
  const std::string s = x.str();
  EXPECT_NE(s.find("[[0, 1, 2],"), std::string::npos) << s;
  EXPECT_NE(s.find("dtype=i64"), std::string::npos) << s;
  EXPECT_NE(s.find("shape=(2, 3)"), std::string::npos) << s;
  EXPECT_NE(s.find("device=cpu"), std::string::npos) << s;
  const std::string big = Tensor::arange(0, 100, 1, DType::i32).str();
  EXPECT_NE(big.find("0, 1, 2, ..., 97, 98, 99"), std::string::npos) << big;
  EXPECT_NE(Tensor::full({2}, 1, DType::boolean).str().find("true, true"), std::string::npos);
}

TEST(Tensor, MisuseThrowsOneClearSentence) {
  const Tensor x = Tensor::zeros({2, 3}, DType::f32);
  auto message_of = [](auto fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message_of([&] { x.view({4, 2}); }).find("holds 8 elements"), std::string::npos);
  EXPECT_NE(message_of([&] { x.select(1, 3); }).find("index 3 is out of range"), std::string::npos);
  EXPECT_NE(message_of([&] { x.permute({0, 0}); }).find("twice"), std::string::npos);
  EXPECT_NE(message_of([&] { x.data<int32_t>(); }).find("asked for i32"), std::string::npos);
  EXPECT_NE(message_of([&] { x.transpose(0, 1).view({6}); }).find("non-contiguous"),
            std::string::npos);
  EXPECT_NE(message_of([&] { x.shape(2); }).find("dimension 2 is out of range"), std::string::npos);
  EXPECT_NE(message_of([&] { Tensor::zeros({-1}, DType::f32); }).find("negative"),
            std::string::npos);
  EXPECT_NE(message_of([&] { Tensor().item(); }).find("one element"), std::string::npos);
  EXPECT_NE(message_of([&] { parse_dtype("f128"); }).find("unknown dtype 'f128'"),
            std::string::npos);
}

TEST(Tensor, GpuRequestedWithoutOneIsRefused) {
  if (gpu_count() > 0) GTEST_SKIP() << "a GPU is present; the refusal path needs none";
  try {
    Tensor::zeros({2}, DType::f32, Device::gpu(0));
    FAIL() << "expected redline::Error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("gpu:0"), std::string::npos) << m;
    EXPECT_TRUE(m.find("without a GPU backend") != std::string::npos ||
                m.find("no GPU is usable") != std::string::npos)
        << m;
  }
}

TEST(Device, ParseAndPrint) {
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
  EXPECT_EQ(Device::parse("gpu"), Device::gpu(0));
  EXPECT_EQ(Device::parse("cuda:2"), Device::gpu(2));
  EXPECT_EQ(Device::parse("hip:1").str(), "gpu:1");
  EXPECT_THROW(Device::parse("tpu"), Error);
  EXPECT_THROW(Device::parse("gpu:-1"), Error);
  EXPECT_THROW(Device::parse("gpu:x"), Error);
}

TEST(Generator, CpuFillsAreReproducibleAndAdvance) {
  Generator g1(7, 0), g2(7, 0);
  Tensor a = Tensor::empty({1000}, DType::f32), b = Tensor::empty({1000}, DType::f32);
  uniform_(a, g1);
  EXPECT_EQ(g1.offset(), 250u);
  uniform_(b, g2);
  EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
  uniform_(b, g2);  // the offset moved: new numbers
  EXPECT_NE(a.to_vector<float>(), b.to_vector<float>());

  Tensor ints = Tensor::empty({5000}, DType::i64);
  randint_(ints, 6, g1);
  for (int64_t v : ints.to_vector<int64_t>()) {
    ASSERT_GE(v, 0);
    ASSERT_LT(v, 6);
  }
  Tensor normals = Tensor::empty({4001}, DType::f32);
  normal_(normals, g1);
  double mean = 0;
  for (float v : normals.to_vector<float>()) mean += v;
  EXPECT_NEAR(mean / 4001, 0.0, 0.1);
  EXPECT_THROW(normal_(ints, g1), Error);
  EXPECT_THROW(randint_(ints, 0, g1), Error);
}

}  // namespace
}  // namespace redline
