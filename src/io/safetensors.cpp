// safetensors reader and writer, and atomic file writes.
#include "redline/io/safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace redline::io {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; this writer assumes a little-endian host");

namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's limit

bool parse_dtype_name(const std::string& name, DType* out) {
  for (DType t : kAllDTypes) {
    if (safetensors_dtype_name(t) == name) {
      *out = t;
      return true;
    }
  }
  return false;
}

[[noreturn]] void corrupt(const std::string& source, const std::string& why) {
  REDLINE_FAIL("{} is not a valid safetensors file: {}", source, why);
}

}  // namespace

std::string_view safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return "F32";
    case DType::bf16:
      return "BF16";
    case DType::f16:
      return "F16";
    case DType::u8:
      return "U8";
    case DType::i32:
      return "I32";
    case DType::i64:
      return "I64";
    case DType::boolean:
      return "BOOL";
    case DType::f64:
      return "F64";
  }
  return "?";
}

const Tensor& SafetensorsContent::at(const std::string& name) const {
  for (const auto& [n, t] : tensors) {
    if (n == name) return t;
  }
  std::string names;
  for (const auto& [n, t] : tensors) names += (names.empty() ? "" : ", ") + n;
  REDLINE_FAIL("no tensor named '{}' in the file (it holds: {})", name, names);
}

std::string serialize_safetensors(const NamedTensors& tensors, const Metadata& metadata) {
  nlohmann::json header = nlohmann::json::object();
  std::vector<Tensor> host;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    REDLINE_CHECK(!name.empty() && name != "__metadata__",
                  "safetensors: tensor name '{}' is reserved or empty", name);
    REDLINE_CHECK(!header.contains(name), "safetensors: tensor name '{}' appears twice", name);
    REDLINE_CHECK(t.defined(), "safetensors: tensor '{}' is undefined", name);
    host.push_back(t.contiguous().to(Device::cpu()));
    const uint64_t bytes = host.back().nbytes();
    header[name] = {{"dtype", std::string(safetensors_dtype_name(t.dtype()))},
                    {"shape", t.shape()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');  // align the data to 8 bytes
  std::string out(8, '\0');
  const uint64_t n = json.size();
  std::memcpy(out.data(), &n, 8);
  out += json;
  out.reserve(out.size() + offset);
  for (const Tensor& t : host) {
    if (t.nbytes() > 0) out.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  }
  return out;
}

SafetensorsContent parse_safetensors(std::string_view bytes, const std::string& source,
                                     Device device) {
  if (bytes.size() < 8) {
    corrupt(source, format("it has {} bytes, fewer than the 8-byte header length", bytes.size()));
  }
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  if (n > kMaxHeaderBytes || n > bytes.size() - 8) {
    corrupt(source, format("the header claims {} bytes but the file has {} after the length "
                           "(truncated?)",
                           n, bytes.size() - 8));
  }
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.substr(8, n));
  } catch (const nlohmann::json::exception& e) {
    corrupt(source, format("its JSON header does not parse ({})", e.what()));
  }
  if (!header.is_object()) corrupt(source, "its JSON header is not an object");
  const std::string_view data = bytes.substr(8 + n);

  SafetensorsContent content;
  struct Entry {
    std::string name;
    DType dtype;
    Shape shape;
    uint64_t begin, end;
  };
  std::vector<Entry> entries;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") {
      if (!info.is_object()) corrupt(source, "__metadata__ is not an object");
      for (const auto& [k, v] : info.items()) {
        if (!v.is_string()) corrupt(source, format("metadata '{}' is not a string", k));
        content.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    Entry e{name, DType::f32, {}, 0, 0};
    try {
      const std::string dtype = info.at("dtype").get<std::string>();
      if (!parse_dtype_name(dtype, &e.dtype)) {
        corrupt(source, format("tensor '{}' has dtype {}, which redline does not support "
                               "(F32, F64, BF16, F16, U8, I32, I64, BOOL)",
                               name, dtype));
      }
      for (const auto& d : info.at("shape")) {
        const int64_t s = d.get<int64_t>();
        if (s < 0) corrupt(source, format("tensor '{}' has a negative dimension", name));
        e.shape.push_back(s);
      }
      const auto& offsets = info.at("data_offsets");
      if (!offsets.is_array() || offsets.size() != 2) {
        corrupt(source, format("tensor '{}' needs data_offsets [begin, end]", name));
      }
      e.begin = offsets[0].get<uint64_t>();
      e.end = offsets[1].get<uint64_t>();
    } catch (const nlohmann::json::exception& ex) {
      corrupt(source, format("tensor '{}' has a malformed entry ({})", name, ex.what()));
    }
    const uint64_t want = static_cast<uint64_t>(shape_numel(e.shape)) * dtype_size(e.dtype);
    if (e.end < e.begin || e.end - e.begin != want) {
      corrupt(source, format("tensor '{}' {} {} needs {} bytes but its offsets [{}, {}] span {}",
                             name, safetensors_dtype_name(e.dtype), shape_str(e.shape), want,
                             e.begin, e.end, e.end - e.begin));
    }
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  uint64_t expected = 0;  // the data must be covered exactly, without holes or overlaps
  for (const Entry& e : entries) {
    if (e.begin != expected) {
      corrupt(source, format("tensor '{}' starts at byte {} but the previous data ends at {}",
                             e.name, e.begin, expected));
    }
    expected = e.end;
  }
  if (expected != data.size()) {
    corrupt(source, format("the header describes {} data bytes but the file holds {} "
                           "(truncated or padded)",
                           expected, data.size()));
  }
  for (const Entry& e : entries) {
    content.tensors.emplace_back(
        e.name, Tensor::from_host_bytes(data.data() + e.begin, shape_numel(e.shape), e.dtype,
                                        e.shape, device));
  }
  return content;
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  const std::string tmp = format("{}.tmp-{}", path, ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REDLINE_CHECK(fd >= 0, "cannot create {}: {}", tmp, std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      REDLINE_FAIL("writing {} failed after {} of {} bytes: {}", tmp, done, bytes.size(),
                   std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    REDLINE_FAIL("flushing {} to disk failed: {}", tmp, std::strerror(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    REDLINE_FAIL("renaming {} to {} failed: {}", tmp, path, std::strerror(err));
  }
  const size_t slash = path.rfind('/');
  const std::string dir =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {  // make the rename itself durable
    ::fsync(dfd);
    ::close(dfd);
  }
}

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const Metadata& metadata) {
  write_file_atomic(path, serialize_safetensors(tensors, metadata));
}

SafetensorsContent load_safetensors(const std::string& path, Device device) {
  std::ifstream in(path, std::ios::binary);
  REDLINE_CHECK(in.good(), "cannot open safetensors file {}: {}", path, std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  REDLINE_CHECK(!in.bad(), "reading {} failed", path);
  const std::string bytes = buffer.str();
  return parse_safetensors(bytes, path, device);
}

}  // namespace redline::io
