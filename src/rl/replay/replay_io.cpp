// Save and load of a whole replay memory. File layout (little-endian):
//   "RLREPLAY" | u64 header bytes | JSON header (config, counters, section sizes)
//   | sections: frames, actions, rewards, flags, prev_done, sum tree, min tree, counters
//   | u64 checksum of every byte before it
// Writes are atomic (temporary file in the same folder, fsync, rename, fsync of the folder). Load
// checks the size and the checksum of the whole file, and that it was written with this memory's
// configuration, before it changes anything.
//
// The sections move in chunks of kChunk bytes through two staging buffers (page-locked for a GPU
// memory), and a second thread does the disk side: while it writes or reads one chunk, the caller's
// thread copies and checksums the other (bench_replay --save measures both directions).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "backend/gpu_api.h"
#include "redline/core/stream.h"
#include "redline/rl/replay/replay.h"
#include "rl/replay/replay_checksum.h"
#include "rl/replay/replay_state.h"

namespace redline::rl {
namespace {

constexpr char kMagic[8] = {'R', 'L', 'R', 'E', 'P', 'L', 'A', 'Y'};
// Version 2: the trees no longer store the two levels above their top (replay_math.h). Version 1
// files are refused: their tree sections do not match this layout.
constexpr int kVersion = 5;  // 3: the min tree stores no leaves; 4: its nodes are floats; 5: masses
                             // on a grid (priority_limit), the min tree one level
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

// One piece of a section as the file holds it: at most kChunk bytes at `offset` of the tensor.
struct Piece {
  Tensor* tensor;
  size_t offset;
  size_t bytes;
};

std::vector<Piece> pieces_of(ReplayState& s) {
  std::vector<Piece> pieces;
  for (const Section& sec : sections_of(s)) {
    const size_t total = sec.tensor->nbytes();
    for (size_t at = 0; at < total; at += kChunk) {
      pieces.push_back({sec.tensor, at, std::min(kChunk, total - at)});
    }
  }
  return pieces;
}

uint8_t* bytes_of(const Piece& piece) {
  return static_cast<uint8_t*>(piece.tensor->raw_data()) + piece.offset;
}

// One background thread that runs jobs in the order they were queued: the disk side of a save or a
// load. After a job throws, the later ones are skipped and wait() rethrows its error. The
// destructor drops jobs that have not started and joins.
class Worker {
 public:
  Worker() : thread_([this] { run(); }) {}
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  ~Worker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  // Queues a job; returns the ticket that wait() takes.
  uint64_t submit(std::function<void()> job) {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back(std::move(job));
    wake_.notify_all();
    return ++queued_;
  }
  // Waits until the job of this ticket and every earlier one have run (0: none); rethrows the
  // first error of any job.
  void wait(uint64_t ticket) {
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [&] { return done_ >= ticket; });
    if (error_) std::rethrow_exception(error_);
  }
  void wait_all() { wait(queued_); }  // queued_ changes only on the caller's thread

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      const bool skip = error_ != nullptr;
      lock.unlock();
      std::exception_ptr error;
      if (!skip) {
        try {
          job();
        } catch (...) {
          error = std::current_exception();
        }
      }
      lock.lock();
      if (error && !error_) error_ = error;
      ++done_;
      finished_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  std::deque<std::function<void()>> jobs_;
  uint64_t queued_ = 0, done_ = 0;
  std::exception_ptr error_;
  bool stopping_ = false;
  std::thread thread_;  // last: it starts once everything above exists
};

// Two host buffers of `bytes` each, page-locked for copies to and from a GPU.
class Staging {
 public:
  Staging(size_t bytes, bool pinned) : bytes_(bytes), pinned_(pinned) {
    if (pinned_) {
      data_ = static_cast<uint8_t*>(gpu::host_alloc_pinned(2 * bytes));
    } else {
      plain_.resize(2 * bytes);
      data_ = plain_.data();
    }
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  ~Staging() {
    if (pinned_) gpu::host_free_pinned(data_);
  }
  uint8_t* slot(int k) const { return data_ + static_cast<size_t>(k % 2) * bytes_; }

 private:
  size_t bytes_;
  bool pinned_;
  uint8_t* data_ = nullptr;
  std::vector<uint8_t> plain_;
};

// Copies between a GPU memory's piece and a page-locked buffer, waiting for the copy.
void copy_piece(Device device, void* dst, const void* src, size_t bytes, gpu::CopyKind kind) {
  gpu::set_device(device.index);
  const Stream stream = Stream::current(device);
  gpu::memcpy_async(dst, src, bytes, kind, stream.handle());
  stream.synchronize();
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
          {"priority_limit", c.priority_limit},
          {"seed", c.seed},
          {"stream", c.stream}};
}

}  // namespace

void ReplayMemory::save(const std::string& path, const IoProgress& progress) const {
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
    {
      // Chunk k is copied (from a GPU) and checksummed here while the worker writes chunk k - 1.
      const std::vector<Piece> pieces = pieces_of(s);
      const bool on_gpu = config_.device.is_gpu();
      const Staging staging(on_gpu ? kChunk : 0, on_gpu);
      Worker writer;
      uint64_t written[2] = {0, 0};  // the write that last used each staging slot
      uint64_t total = 0;
      for (const Piece& piece : pieces) total += piece.bytes;
      std::atomic<uint64_t> done{0};  // bytes the worker has written
      const int out = fd.get();
      for (size_t k = 0; k < pieces.size(); ++k) {
        const Piece& piece = pieces[k];
        const int slot = static_cast<int>(k % 2);
        writer.wait(written[slot]);
        if (progress && k > 0) progress(done.load(), total);
        const uint8_t* chunk = bytes_of(piece);
        if (on_gpu) {
          copy_piece(config_.device, staging.slot(slot), chunk, piece.bytes,
                     gpu::CopyKind::device_to_host);
          chunk = staging.slot(slot);
        }
        sum.add(chunk, piece.bytes);
        written[slot] = writer.submit([out, chunk, n = piece.bytes, &tmp, &done] {
          write_all(out, chunk, n, tmp);
          done += n;
        });
      }
      writer.wait_all();
      if (progress) progress(total, total);
    }
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

void ReplayMemory::load(const std::string& path, const IoProgress& progress) {
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
    for (const char* key :
         {"capacity", "num_envs", "obs_shape", "obs_dtype", "frame_stack", "padding",
          "action_dtype", "n_step", "prioritized", "alpha", "priority_limit"}) {
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

  // Pass 1: the checksum of the whole file, before anything changes. The worker reads chunk k + 1
  // while this thread checksums chunk k.
  const std::vector<Piece> pieces = pieces_of(s);
  const bool on_gpu = config_.device.is_gpu();
  const Staging staging(std::min<uint64_t>(kChunk, payload > 0 ? payload : 1), on_gpu);
  const int in = fd.get();
  const auto read_into = [in, &path](uint8_t* dst, size_t n) {
    REDLINE_CHECK(read_all(in, dst, n), "replay file '{}' is truncated", path);
  };
  {
    Checksum sum;
    sum.add(kMagic, 8);
    sum.add(&header_bytes, 8);
    sum.add(text.data(), text.size());
    Worker reader;
    uint64_t checked = 0;        // bytes checksummed so far
    uint64_t ready[2] = {0, 0};  // the read that last filled each staging slot
    for (size_t k = 0; k < pieces.size() && k < 2; ++k) {
      ready[k] =
          reader.submit([&, k] { read_into(staging.slot(static_cast<int>(k)), pieces[k].bytes); });
    }
    for (size_t k = 0; k < pieces.size(); ++k) {
      const int slot = static_cast<int>(k % 2);
      reader.wait(ready[slot]);
      sum.add(staging.slot(slot), pieces[k].bytes);
      checked += pieces[k].bytes;
      if (progress) progress(checked, 2 * payload);
      if (k + 2 < pieces.size()) {
        ready[slot] =
            reader.submit([&, slot, n = pieces[k + 2].bytes] { read_into(staging.slot(slot), n); });
      }
    }
    reader.wait_all();
    uint64_t digest = 0;
    REDLINE_CHECK(read_all(in, &digest, 8), "replay file '{}' is truncated", path);
    REDLINE_CHECK(digest == sum.value(),
                  "replay file '{}' is corrupt: its checksum does not match its contents", path);
  }
  // Pass 2: the sections into the memory. A CPU memory is read into directly; for a GPU memory the
  // worker reads chunk k + 1 while chunk k is copied to the device.
  REDLINE_CHECK(::lseek(in, static_cast<off_t>(16 + header_bytes), SEEK_SET) >= 0,
                "could not read replay file '{}': {}", path, errno_text());
  Stream::current(config_.device).synchronize();
  {
    Worker reader;
    uint64_t copied = 0;  // bytes in the memory so far
    uint64_t ready[2] = {0, 0};
    const auto target = [&](size_t k) {
      return on_gpu ? staging.slot(static_cast<int>(k % 2)) : bytes_of(pieces[k]);
    };
    for (size_t k = 0; k < pieces.size() && k < 2; ++k) {
      ready[k] = reader.submit([&, k] { read_into(target(k), pieces[k].bytes); });
    }
    for (size_t k = 0; k < pieces.size(); ++k) {
      const int slot = static_cast<int>(k % 2);
      reader.wait(ready[slot]);
      if (on_gpu) {
        copy_piece(config_.device, bytes_of(pieces[k]), staging.slot(slot), pieces[k].bytes,
                   gpu::CopyKind::host_to_device);
      }
      copied += pieces[k].bytes;
      if (progress) progress(payload + copied, 2 * payload);
      if (k + 2 < pieces.size()) {
        ready[slot] = reader.submit([&, k] { read_into(target(k + 2), pieces[k + 2].bytes); });
      }
    }
    reader.wait_all();
  }
  Stream::current(config_.device).synchronize();
  inserts_ = inserts;
  rng_.set_offset(rng_offset);
}

}  // namespace redline::rl
