// The GIF encoder used by `redline play --gif`: LZW round trip through an independent decoder
// (written from the GIF89a specification), and the file structure.
#include "io/gif.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "redline/core/error.h"

namespace redline::io {
namespace {

// GIF LZW decoder of a code stream (the decoder widens codes when its next entry reaches
// 2^width, up to 12 bits, and restarts on the clear code).
std::vector<uint8_t> lzw_decode(const std::vector<uint8_t>& data, int min_code_size) {
  const int clear = 1 << min_code_size, end = clear + 1;
  std::vector<std::vector<uint8_t>> table;
  const auto init = [&] {
    table.assign(static_cast<size_t>(end + 1), {});
    for (int i = 0; i < clear; ++i) table[i] = {static_cast<uint8_t>(i)};
  };
  init();
  int width = min_code_size + 1;
  size_t bitpos = 0;
  const auto read = [&]() -> int {
    int code = 0;
    for (int b = 0; b < width; ++b, ++bitpos) {
      if (bitpos / 8 >= data.size()) return -1;
      code |= ((data[bitpos / 8] >> (bitpos % 8)) & 1) << b;
    }
    return code;
  };
  std::vector<uint8_t> out;
  int prev = -1;
  while (true) {
    const int code = read();
    if (code < 0) ADD_FAILURE() << "code stream ended without an end code";
    if (code < 0 || code == end) break;
    if (code == clear) {
      init();
      width = min_code_size + 1;
      prev = -1;
      continue;
    }
    std::vector<uint8_t> entry;
    if (code < static_cast<int>(table.size())) {
      entry = table[code];
    } else {
      EXPECT_EQ(code, static_cast<int>(table.size())) << "code out of sequence";
      EXPECT_GE(prev, 0);
      if (prev < 0) break;
      entry = table[prev];
      entry.push_back(table[prev][0]);
    }
    out.insert(out.end(), entry.begin(), entry.end());
    if (prev >= 0 && table.size() < 4096) {
      std::vector<uint8_t> added = table[prev];
      added.push_back(entry[0]);
      table.push_back(added);
      if (static_cast<int>(table.size()) == (1 << width) && width < 12) ++width;
    }
    prev = code;
  }
  return out;
}

TEST(Gif, LzwRoundTripOnPlainAndNoisyImages) {
  std::mt19937 gen(1);
  for (int bits : {2, 4, 8}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{14400}, size_t{200000}}) {
      std::vector<uint8_t> px(n);
      for (size_t i = 0; i < n; ++i) {
        px[i] = (i / 97) % 3 == 0 ? static_cast<uint8_t>(gen() % (1u << bits))
                                  : static_cast<uint8_t>((i / 13) % (1u << bits));
      }
      ASSERT_EQ(lzw_decode(gif_lzw_encode(px, bits), bits), px) << bits << " bits, " << n;
    }
  }
}

TEST(Gif, FileStructure) {
  GifWriter gif(3, 2, {{0, 0, 0}, {255, 0, 0}, {0, 255, 0}}, 7);
  gif.add_frame({0, 1, 2, 2, 1, 0});
  gif.add_frame({1, 1, 1, 1, 1, 1});
  const std::vector<uint8_t> bytes = gif.encode();
  ASSERT_GT(bytes.size(), 13u);
  EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 6), "GIF89a");
  EXPECT_EQ(bytes[6], 3);
  EXPECT_EQ(bytes[8], 2);
  EXPECT_EQ(bytes[10], 0x80 | (1 << 4) | 1);  // global table of 4 colours
  EXPECT_EQ(bytes[13 + 3], 255);              // palette entry 1 is red
  EXPECT_EQ(bytes.back(), 0x3B);
  EXPECT_THROW(gif.add_frame({0, 1}), Error);
  EXPECT_THROW(gif.add_frame({0, 1, 2, 4, 3, 3}), Error);  // index outside the (padded) palette
  EXPECT_THROW(GifWriter(0, 4, {{0, 0, 0}, {1, 1, 1}}), Error);
}

}  // namespace
}  // namespace redline::io
