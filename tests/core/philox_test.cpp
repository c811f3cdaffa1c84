// Philox-4x32-10: known-answer vectors, stream/offset semantics and statistical checks.
#include "redline/core/philox.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "redline/core/random.h"

namespace redline {
namespace {

// Known-answer vectors from the Philox paper's reference implementation (Random123 kat_vectors).
TEST(Philox, KnownAnswerVectors) {
  struct Case {
    PhiloxBlock ctr;
    uint32_t key0, key1;
    PhiloxBlock expected;
  };
  const Case cases[] = {
      {{{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}}},
      {{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}},
       0xffffffffu,
       0xffffffffu,
       {{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}}},
      {{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}},
       0xa4093822u,
       0x299f31d0u,
       {{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}}},
  };
  for (const Case& c : cases) {
    const PhiloxBlock got = philox4x32_10(c.ctr, c.key0, c.key1);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(got.v[i], c.expected.v[i]) << "word " << i;
  }
}

TEST(Philox, CounterLayoutIsOffsetThenStreamAndKeyIsSeed) {
  const uint64_t seed = 0x0123456789abcdefULL, stream = 0xfedcba9876543210ULL, offset = 77;
  Philox gen(seed, stream, offset);
  const PhiloxBlock expected =
      philox4x32_10({{77u, 0u, 0x76543210u, 0xfedcba98u}}, 0x89abcdefu, 0x01234567u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(gen.next_u32(), expected.v[i]);
  EXPECT_EQ(gen.offset(), offset + 1);
}

TEST(Philox, StreamsAndSeedsDiffer) {
  Philox a(1, 0), b(1, 1), c(2, 0);
  int same_ab = 0, same_ac = 0;
  for (int i = 0; i < 1000; ++i) {
    const uint32_t x = a.next_u32();
    same_ab += x == b.next_u32();
    same_ac += x == c.next_u32();
  }
  EXPECT_LT(same_ab, 3);
  EXPECT_LT(same_ac, 3);
}

TEST(Philox, UniformFloatMomentsAndRange) {
  Philox gen(42, 7);
  const int n = 1 << 20;
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < n; ++i) {
    const float u = gen.uniform();
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
    sum_sq += static_cast<double>(u) * u;
  }
  const double mean = sum / n, var = sum_sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.5, 4 * std::sqrt(1.0 / 12 / n));
  EXPECT_NEAR(var, 1.0 / 12, 2e-3 * (1.0 / 12) * 4);
}

TEST(Philox, UniformIntChiSquare) {
  // 10 bins, 1e6 draws: chi-square with 9 degrees of freedom; 27.88 is the 0.999 quantile.
  Philox gen(2024, 3);
  const int bins = 10, n = 1000000;
  std::vector<int> counts(bins, 0);
  for (int i = 0; i < n; ++i) {
    const uint32_t k = gen.uniform_int(bins);
    ASSERT_LT(k, static_cast<uint32_t>(bins));
    ++counts[k];
  }
  double chi2 = 0;
  for (int c : counts) chi2 += (c - n / double(bins)) * (c - n / double(bins)) / (n / double(bins));
  EXPECT_LT(chi2, 27.88);
}

TEST(Philox, UniformIntIsUnbiasedForAwkwardBound) {
  // With bound 3 * 2^30 a plain modulo would make the lowest third twice as likely.
  Philox gen(5, 5);
  const uint32_t bound = 3u << 30;
  int low = 0;
  const int n = 300000;
  for (int i = 0; i < n; ++i) low += gen.uniform_int(bound) < (1u << 30);
  EXPECT_NEAR(low / double(n), 1.0 / 3, 0.005);
}

TEST(Philox, NormalMoments) {
  Philox gen(11, 0);
  const int n = 1 << 20;
  double s1 = 0, s2 = 0, s3 = 0, s4 = 0;
  for (int i = 0; i < n; ++i) {
    const double x = gen.normal();
    ASSERT_TRUE(std::isfinite(x));
    s1 += x;
    s2 += x * x;
    s3 += x * x * x;
    s4 += x * x * x * x;
  }
  EXPECT_NEAR(s1 / n, 0.0, 0.005);
  EXPECT_NEAR(s2 / n, 1.0, 0.01);
  EXPECT_NEAR(s3 / n, 0.0, 0.02);
  EXPECT_NEAR(s4 / n, 3.0, 0.05);
}

TEST(Philox, NormalTailFrequencies) {
  // P(|x| > 2) = 0.0455, P(|x| > 3) = 0.0027.
  Philox gen(99, 1);
  const int n = 1 << 21;
  int beyond2 = 0, beyond3 = 0;
  for (int i = 0; i < n; ++i) {
    const float x = std::fabs(gen.normal());
    beyond2 += x > 2.0f;
    beyond3 += x > 3.0f;
  }
  EXPECT_NEAR(beyond2 / double(n), 0.0455, 0.0015);
  EXPECT_NEAR(beyond3 / double(n), 0.0027, 0.0003);
}

TEST(Philox, PortableMathMatchesLibm) {
  for (float x = 1e-7f; x <= 1.0f; x *= 1.37f) {
    EXPECT_NEAR(portable_log_unit(x), std::log(x), 4e-7 * std::fabs(std::log(x)) + 1e-7) << x;
  }
  for (int i = 0; i < 1000; ++i) {
    const float v = i / 1000.0f;
    float s, c;
    portable_sincos_turns(v, &s, &c);
    EXPECT_NEAR(s, std::sin(2 * M_PI * v), 3e-7);
    EXPECT_NEAR(c, std::cos(2 * M_PI * v), 3e-7);
  }
}

TEST(Philox, ElementLayoutMatchesSequentialStream) {
  // Uniform elements 0..7 are the words of blocks offset and offset+1, in order.
  Philox gen(3, 4, 10);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(random_uniform_element(3, 4, 10, i), u32_to_unit_float(gen.next_u32()));
  }
}

}  // namespace
}  // namespace redline
