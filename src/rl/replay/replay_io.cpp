// Save and load of a whole replay memory. File layout (little-endian):
//   "RLREPLAY" | u64 header bytes | JSON header (config, counters, section sizes)
//   | sections: frames, actions, rewards, flags, prev_done, sum tree, min tree, counters
//   | u64 checksum of every byte before it
// Writes are atomic (temporary file in the same folder, fsync, rename, fsync of the folder). Load
// checks the size and the checksum of the whole file, and that it was written with this memory's
// configuration, before it changes anything.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "redline/core/stream.h"
#include "redline/rl/replay/replay.h"
#include "rl/replay/replay_checksum.h"
#include "rl/replay/replay_state.h"

namespace redline::rl {
namespace {

constexpr char kMagic[8] = {'R', 'L', 'R', 'E', 'P', 'L', 'A', 'Y'};
// Version 2: the trees no longer store the two levels above their top (replay_math.h). Version 1
// files are refused: their tree sections do not match this layout.
constexpr int kVersion = 2;
constexpr size_t kChunk = size_t{64} << 20;

using replay::Checksum;

std::string errno_text() { return std::strerror(errno); }

void write_all(int fd, const void* data, size_t bytes, const std::string& path) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    REDLINE_CHECK(n > 0, "could not write replay file '{}': {}", path, errno_text());
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

bool read_all(int fd, void* data, size_t bytes) {
  auto* p = static_cast<uint8_t*>(data);
  while (bytes > 0) {
    const ssize_t n = ::read(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

struct Section {
  const char* name;
  Tensor* tensor;
};

std::vector<Section> sections_of(ReplayState& s) {
  return {{"frames", &s.frames}, {"actions", &s.actions},     {"rewards", &s.rewards},
          {"flags", &s.flags},   {"prev_done", &s.prev_done}, {"sum_tree", &s.sum},
          {"min_tree", &s.min},  {"counters", &s.counters}};
}

// Calls fn(host pointer, bytes) for consecutive chunks of a contiguous tensor.
template <typename Fn>
void for_each_chunk(const Tensor& t, Fn fn) {
  const Tensor flat = t.view({-1});
  const int64_t elem = static_cast<int64_t>(dtype_size(t.dtype()));
  const int64_t per_chunk = static_cast<int64_t>(kChunk) / elem;
  for (int64_t at = 0; at < flat.numel(); at += per_chunk) {
    const int64_t end = std::min(flat.numel(), at + per_chunk);
    const Tensor host = flat.slice(0, at, end).to(Device::cpu()).contiguous();
    fn(host.raw_data(), static_cast<size_t>((end - at) * elem));
  }
}

nlohmann::json config_json(const ReplayConfig& c) {
  return {{"capacity", c.capacity},
          {"num_envs", c.num_envs},
          {"obs_shape", c.obs_shape},
          {"obs_dtype", std::string(dtype_name(c.obs_dtype))},
          {"frame_stack", c.frame_stack},
          {"padding", c.padding == FramePadding::zeros ? "zeros" : "repeat_first"},
          {"action_dtype", std::string(dtype_name(c.action_dtype))},
          {"n_step", c.n_step},
          {"gamma", c.gamma},
          {"prioritized", c.prioritized},
          {"alpha", c.alpha},
          {"seed", c.seed},
          {"stream", c.stream}};
}

}  // namespace

void ReplayMemory::save(const std::string& path) const {
  const_cast<ReplayMemory*>(this)->raise_device_fault();
  Stream::current(config_.device).synchronize();
  ReplayState& s = *state_;
  nlohmann::json header = config_json(config_);
  header["version"] = kVersion;
  header["inserts"] = inserts_;
  header["rng_offset"] = rng_.offset();
  nlohmann::json sections = nlohmann::json::array();
  for (const Section& sec : sections_of(s)) {
    sections.push_back({{"name", sec.name}, {"bytes", sec.tensor->nbytes()}});
  }
  header["sections"] = sections;
  const std::string text = header.dump();
  const uint64_t header_bytes = text.size();

  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  REDLINE_CHECK(fd.get() >= 0, "could not create replay file '{}': {}", tmp, errno_text());
  try {
    Checksum sum;
    const auto put = [&](const void* data, size_t bytes) {
      sum.add(data, bytes);
      write_all(fd.get(), data, bytes, tmp);
    };
    put(kMagic, 8);
    put(&header_bytes, 8);
    put(text.data(), text.size());
    for (const Section& sec : sections_of(s)) for_each_chunk(*sec.tensor, put);
    const uint64_t digest = sum.value();
    write_all(fd.get(), &digest, 8, tmp);
    REDLINE_CHECK(::fsync(fd.get()) == 0, "could not flush replay file '{}': {}", tmp,
                  errno_text());
    REDLINE_CHECK(::close(fd.release()) == 0, "could not close replay file '{}': {}", tmp,
                  errno_text());
    REDLINE_CHECK(::rename(tmp.c_str(), path.c_str()) == 0,
                  "could not move replay file '{}' to '{}': {}", tmp, path, errno_text());
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  // Make the rename itself durable.
  const size_t slash = path.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  Fd dir(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() >= 0) ::fsync(dir.get());
}

void ReplayMemory::load(const std::string& path) {
  raise_device_fault();
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  REDLINE_CHECK(fd.get() >= 0, "could not open replay file '{}': {}", path, errno_text());
  struct stat st {};
  REDLINE_CHECK(::fstat(fd.get(), &st) == 0, "could not read replay file '{}': {}", path,
                errno_text());
  const uint64_t file_bytes = static_cast<uint64_t>(st.st_size);

  // Header.
  char magic[8];
  uint64_t header_bytes = 0;
  REDLINE_CHECK(file_bytes >= 24 && read_all(fd.get(), magic, 8) &&
                    std::memcmp(magic, kMagic, 8) == 0 && read_all(fd.get(), &header_bytes, 8),
                "'{}' is not a redline replay file (its first bytes are not the replay header)",
                path);
  REDLINE_CHECK(header_bytes <= file_bytes - 24,
                "replay file '{}' is truncated or corrupt: its header claims {} bytes but the file "
                "has {}",
                path, header_bytes, file_bytes);
  std::string text(header_bytes, '\0');
  REDLINE_CHECK(read_all(fd.get(), text.data(), header_bytes),
                "replay file '{}' is truncated: its header could not be read", path);
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const std::exception&) {
    REDLINE_FAIL("replay file '{}' is corrupt: its header is not valid JSON", path);
  }
  ReplayState& s = *state_;
  uint64_t payload = 0;
  int64_t inserts = 0;
  uint64_t rng_offset = 0;
  try {
    REDLINE_CHECK(header.at("version").get<int>() == kVersion,
                  "replay file '{}' has format version {}; this redline reads version {} (its "
                  "priority trees are laid out differently), so the memory must be filled again",
                  path, header.at("version").dump(), kVersion);
    const nlohmann::json mine = config_json(config_);
    for (const char* key : {"capacity", "num_envs", "obs_shape", "obs_dtype", "frame_stack",
                            "padding", "action_dtype", "n_step", "prioritized", "alpha"}) {
      REDLINE_CHECK(header.at(key) == mine.at(key),
                    "replay file '{}' was written with {} = {} but this memory has {}", path, key,
                    header.at(key).dump(), mine.at(key).dump());
    }
    const auto& secs = header.at("sections");
    const std::vector<Section> expected = sections_of(s);
    REDLINE_CHECK(secs.size() == expected.size(),
                  "replay file '{}' is corrupt: it has {} sections, expected {}", path, secs.size(),
                  expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      const uint64_t bytes = secs[i].at("bytes").get<uint64_t>();
      REDLINE_CHECK(secs[i].at("name").get<std::string>() == expected[i].name &&
                        bytes == expected[i].tensor->nbytes(),
                    "replay file '{}' is corrupt: section {} does not match this memory's layout",
                    path, i);
      payload += bytes;
    }
    inserts = header.at("inserts").get<int64_t>();
    rng_offset = header.at("rng_offset").get<uint64_t>();
  } catch (const nlohmann::json::exception& e) {
    REDLINE_FAIL("replay file '{}' is corrupt: its header lacks a field ({})", path, e.what());
  }
  const uint64_t expected_bytes = 16 + header_bytes + payload + 8;
  REDLINE_CHECK(file_bytes == expected_bytes,
                "replay file '{}' is truncated or corrupt: it has {} bytes but its header "
                "describes {}",
                path, file_bytes, expected_bytes);

  // Pass 1: the checksum of the whole file, before anything changes.
  {
    Checksum sum;
    sum.add(kMagic, 8);
    sum.add(&header_bytes, 8);
    sum.add(text.data(), text.size());
    std::vector<uint8_t> buf(std::min<uint64_t>(kChunk, payload > 0 ? payload : 1));
    for (uint64_t left = payload; left > 0;) {
      const size_t take = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
      REDLINE_CHECK(read_all(fd.get(), buf.data(), take), "replay file '{}' is truncated", path);
      sum.add(buf.data(), take);
      left -= take;
    }
    uint64_t digest = 0;
    REDLINE_CHECK(read_all(fd.get(), &digest, 8), "replay file '{}' is truncated", path);
    REDLINE_CHECK(digest == sum.value(),
                  "replay file '{}' is corrupt: its checksum does not match its contents", path);
  }
  // Pass 2: copy the sections into the memory.
  REDLINE_CHECK(::lseek(fd.get(), static_cast<off_t>(16 + header_bytes), SEEK_SET) >= 0,
                "could not read replay file '{}': {}", path, errno_text());
  Stream::current(config_.device).synchronize();
  for (const Section& sec : sections_of(s)) {
    Tensor flat = sec.tensor->view({-1});
    const int64_t elem = static_cast<int64_t>(dtype_size(flat.dtype()));
    const int64_t per_chunk = static_cast<int64_t>(kChunk) / elem;
    for (int64_t at = 0; at < flat.numel(); at += per_chunk) {
      const int64_t end = std::min(flat.numel(), at + per_chunk);
      Tensor host = Tensor::empty({end - at}, flat.dtype());
      REDLINE_CHECK(read_all(fd.get(), host.raw_data(), host.nbytes()),
                    "replay file '{}' is truncated", path);
      Tensor dst = flat.slice(0, at, end);
      dst.copy_from(host);
    }
  }
  Stream::current(config_.device).synchronize();
  inserts_ = inserts;
  rng_.set_offset(rng_offset);
}

}  // namespace redline::rl
