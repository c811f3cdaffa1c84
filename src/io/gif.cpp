// GIF89a writer: header, global colour table, NETSCAPE looping extension, and per frame a
// graphic control extension plus an LZW-compressed image (variable code width up to 12 bits,
// clear code when the table is full).
#include "io/gif.h"

#include <cstdio>
#include <unordered_map>

#include "redline/core/error.h"

namespace redline::io {

namespace {

void put16(std::vector<uint8_t>& out, int v) {
  out.push_back(static_cast<uint8_t>(v & 0xFF));
  out.push_back(static_cast<uint8_t>((v >> 8) & 0xFF));
}

class BitWriter {
 public:
  explicit BitWriter(std::vector<uint8_t>& out) : out_(out) {}
  void write(uint32_t code, int bits) {
    buffer_ |= code << count_;
    count_ += bits;
    while (count_ >= 8) {
      out_.push_back(static_cast<uint8_t>(buffer_ & 0xFF));
      buffer_ >>= 8;
      count_ -= 8;
    }
  }
  void flush() {
    if (count_ > 0) out_.push_back(static_cast<uint8_t>(buffer_ & 0xFF));
    buffer_ = 0;
    count_ = 0;
  }

 private:
  std::vector<uint8_t>& out_;
  uint32_t buffer_ = 0;
  int count_ = 0;
};

}  // namespace

std::vector<uint8_t> gif_lzw_encode(const std::vector<uint8_t>& indices, int min_code_size) {
  const uint32_t clear = 1u << min_code_size;
  const uint32_t end = clear + 1;
  std::vector<uint8_t> out;
  BitWriter bits(out);
  std::unordered_map<uint32_t, uint32_t> table;  // (prefix code << 8 | byte) -> code
  uint32_t next_code = end + 1;
  int code_bits = min_code_size + 1;
  bits.write(clear, code_bits);
  if (indices.empty()) {
    bits.write(end, code_bits);
    bits.flush();
    return out;
  }
  uint32_t prefix = indices[0];
  for (size_t i = 1; i < indices.size(); ++i) {
    const uint8_t c = indices[i];
    const uint32_t key = (prefix << 8) | c;
    const auto found = table.find(key);
    if (found != table.end()) {
      prefix = found->second;
      continue;
    }
    bits.write(prefix, code_bits);
    if (next_code < 4096) {
      table.emplace(key, next_code);
      // The decoder widens its codes once the code it will add next no longer fits.
      if (next_code == (1u << code_bits) && code_bits < 12) ++code_bits;
      ++next_code;
    } else {
      bits.write(clear, code_bits);
      table.clear();
      next_code = end + 1;
      code_bits = min_code_size + 1;
    }
    prefix = c;
  }
  bits.write(prefix, code_bits);
  bits.write(end, code_bits);
  bits.flush();
  return out;
}

GifWriter::GifWriter(int width, int height, std::vector<Rgb> palette, int delay_cs)
    : width_(width), height_(height), delay_cs_(delay_cs), palette_(std::move(palette)) {
  REDLINE_CHECK(width >= 1 && width <= 65535 && height >= 1 && height <= 65535,
                "GIF size {}x{} is invalid; width and height must be in 1..65535", width, height);
  REDLINE_CHECK(palette_.size() >= 2 && palette_.size() <= 256,
                "a GIF palette has {} colours but must have 2..256", palette_.size());
  REDLINE_CHECK(delay_cs >= 0 && delay_cs <= 65535, "GIF frame delay {} must be in 0..65535",
                delay_cs);
  color_bits_ = 1;
  while ((1u << color_bits_) < palette_.size()) ++color_bits_;
  palette_.resize(size_t{1} << color_bits_, Rgb{0, 0, 0});
}

void GifWriter::add_frame(const std::vector<uint8_t>& indices) {
  REDLINE_CHECK(indices.size() == static_cast<size_t>(width_) * height_,
                "a GIF frame has {} pixels but the image is {}x{}", indices.size(), width_,
                height_);
  for (uint8_t v : indices) {
    REDLINE_CHECK(v < palette_.size(), "GIF pixel index {} is outside the {}-colour palette", v,
                  palette_.size());
  }
  frames_.push_back(indices);
}

std::vector<uint8_t> GifWriter::encode() const {
  std::vector<uint8_t> out = {'G', 'I', 'F', '8', '9', 'a'};
  put16(out, width_);
  put16(out, height_);
  out.push_back(static_cast<uint8_t>(0x80 | ((color_bits_ - 1) << 4) | (color_bits_ - 1)));
  out.push_back(0);  // background colour index
  out.push_back(0);  // pixel aspect ratio
  for (const Rgb& c : palette_) out.insert(out.end(), c.begin(), c.end());
  // Loop forever.
  const uint8_t netscape[] = {0x21, 0xFF, 0x0B, 'N', 'E',  'T',  'S',  'C',  'A', 'P',
                              'E',  '2',  '.',  '0', 0x03, 0x01, 0x00, 0x00, 0x00};
  out.insert(out.end(), std::begin(netscape), std::end(netscape));
  const int min_code_size = color_bits_ < 2 ? 2 : color_bits_;
  for (const auto& frame : frames_) {
    out.insert(out.end(), {0x21, 0xF9, 0x04, 0x00});  // graphic control: no transparency
    put16(out, delay_cs_);
    out.insert(out.end(), {0x00, 0x00});
    out.push_back(0x2C);  // image descriptor
    put16(out, 0);
    put16(out, 0);
    put16(out, width_);
    put16(out, height_);
    out.push_back(0x00);  // no local colour table, not interlaced
    out.push_back(static_cast<uint8_t>(min_code_size));
    const std::vector<uint8_t> data = gif_lzw_encode(frame, min_code_size);
    for (size_t at = 0; at < data.size(); at += 255) {
      const size_t n = std::min<size_t>(255, data.size() - at);
      out.push_back(static_cast<uint8_t>(n));
      out.insert(out.end(), data.begin() + static_cast<std::ptrdiff_t>(at),
                 data.begin() + static_cast<std::ptrdiff_t>(at + n));
    }
    out.push_back(0x00);  // end of image data
  }
  out.push_back(0x3B);  // trailer
  return out;
}

void GifWriter::save(const std::string& path) const {
  const std::vector<uint8_t> bytes = encode();
  FILE* f = std::fopen(path.c_str(), "wb");
  REDLINE_CHECK(f != nullptr, "cannot open '{}' for writing the GIF", path);
  const size_t written = std::fwrite(bytes.data(), 1, bytes.size(), f);
  const bool closed = std::fclose(f) == 0;
  REDLINE_CHECK(written == bytes.size() && closed, "writing the GIF to '{}' failed", path);
}

}  // namespace redline::io
