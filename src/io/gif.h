// A small animated-GIF (GIF89a) encoder: palette images, LZW-compressed, looping. No giflib.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace redline::io {

using Rgb = std::array<uint8_t, 3>;

// Collects frames of palette indices (width * height each, row-major) and writes the file.
class GifWriter {
 public:
  // palette: 2..256 colours. delay_cs: time per frame in hundredths of a second.
  GifWriter(int width, int height, std::vector<Rgb> palette, int delay_cs = 10);

  void add_frame(const std::vector<uint8_t>& indices);
  size_t frames() const { return frames_.size(); }
  // The whole file as bytes.
  std::vector<uint8_t> encode() const;
  // Writes the file (throws redline::Error naming the path when it cannot).
  void save(const std::string& path) const;

 private:
  int width_, height_, delay_cs_;
  int color_bits_;  // log2 of the palette size as written (1..8)
  std::vector<Rgb> palette_;
  std::vector<std::vector<uint8_t>> frames_;
};

// GIF's LZW compression of palette indices with the given minimum code size (2..8); the
// output is the raw code stream, before it is cut into sub-blocks.
std::vector<uint8_t> gif_lzw_encode(const std::vector<uint8_t>& indices, int min_code_size);

}  // namespace redline::io
