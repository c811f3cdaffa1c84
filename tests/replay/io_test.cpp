// Save and load: a round trip continues exactly (same samples, same batches, same trees), the
// write is atomic, and a truncated, corrupt or mismatched file is refused with one sentence and
// leaves the memory as it was.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <utility>

#include "replay_test_util.h"
#include "rl/replay/replay_checksum.h"

namespace redline::rl {
namespace {

using testing::expect_error;

ReplayConfig io_config() {
  ReplayConfig c;
  c.num_envs = 3;
  c.capacity = 60;
  c.obs_shape = {2, 4};
  c.obs_dtype = DType::u8;
  c.frame_stack = 2;
  c.n_step = 2;
  c.prioritized = true;
  c.alpha = 0.6;
  c.seed = 77;
  return c;
}

void fill(ReplayMemory& m, int steps, uint32_t seed) {
  const ReplayConfig& c = m.config();
  testing::ScriptedEnvs envs(c.num_envs, 2, 4, false, seed);
  for (int i = 0; i < steps; ++i) {
    const testing::Step s = envs.next();
    std::vector<uint8_t> obs(s.obs.size());
    for (size_t j = 0; j < obs.size(); ++j)
      obs[j] = static_cast<uint8_t>(static_cast<int64_t>(s.obs[j]) % 251);
    std::vector<uint8_t> te(s.terminated), tr(s.truncated);
    m.insert(Tensor::from_host(obs, {3, 2, 4}), Tensor::from_host(s.action, {3}),
             Tensor::from_host(s.reward, {3}), Tensor::from_host(te, {3}),
             Tensor::from_host(tr, {3}));
  }
  const ReplaySample smp = m.sample(8);
  std::vector<float> p(8);
  for (int i = 0; i < 8; ++i) p[i] = 0.5f + static_cast<float>(i);
  m.update_priorities(smp.indices, Tensor::from_host(p, {8}));
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("redline_replay_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// The checksum is part of the file format: these values are those of the builds that wrote
// version 2 files before, so those files keep loading. Any split of the bytes between add() calls
// gives the same value.
TEST(ReplayIo, ChecksumKeepsTheFormatsValuesWhateverTheSplit) {
  std::vector<uint8_t> bytes(1003);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 31 + 7);
  const auto whole = [&](size_t n) {
    replay::Checksum c;
    c.add(bytes.data(), n);
    return c.value();
  };
  EXPECT_EQ(whole(0), 0x4f400203402a59cfull);
  EXPECT_EQ(whole(5), 0xf746e99e37ecade7ull);
  EXPECT_EQ(whole(1003), 0x89e0855496b6b4b1ull);
  std::mt19937 rng(5);
  for (int trial = 0; trial < 500; ++trial) {
    const size_t n = rng() % bytes.size();
    replay::Checksum c;
    for (size_t at = 0; at < n;) {
      const size_t take = std::min<size_t>(n - at, rng() % 21);  // 0 to 20 bytes per call
      c.add(bytes.data() + at, take);
      at += take;
    }
    ASSERT_EQ(c.value(), whole(n)) << n << " bytes in random pieces";
  }
  // A flipped bit or two swapped words change it.
  std::vector<uint8_t> flipped = bytes;
  flipped[500] ^= 0x10;
  replay::Checksum f;
  f.add(flipped.data(), flipped.size());
  EXPECT_NE(f.value(), whole(1003));
  std::vector<uint8_t> swapped = bytes;
  std::swap_ranges(swapped.begin(), swapped.begin() + 8, swapped.begin() + 8);
  replay::Checksum w;
  w.add(swapped.data(), swapped.size());
  EXPECT_NE(w.value(), whole(1003));
}

TEST(ReplayIo, RoundTripContinuesExactly) {
  ReplayMemory a(io_config());
  fill(a, 37, 1);
  const std::string path = temp_path("roundtrip.bin");
  a.save(path);
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(path).parent_path())) {
    EXPECT_EQ(entry.path().string().find(path + ".tmp"), std::string::npos)
        << "temporary file left";
  }
  ReplayMemory b(io_config());
  b.load(path);
  EXPECT_EQ(b.size(), a.size());
  EXPECT_EQ(b.sum_tree_host(), a.sum_tree_host());
  EXPECT_EQ(b.min_tree_host(), a.min_tree_host());
  EXPECT_EQ(b.min_tree_counts_host(), a.min_tree_counts_host());
  EXPECT_EQ(b.max_priority(), a.max_priority());
  for (int r = 0; r < 3; ++r) {
    const ReplayBatch x = a.sample_batch(16, 0.5), y = b.sample_batch(16, 0.5);
    EXPECT_EQ(x.indices.to_vector<int64_t>(), y.indices.to_vector<int64_t>());
    EXPECT_EQ(x.weights.to_vector<float>(), y.weights.to_vector<float>());
    EXPECT_EQ(x.obs.to_vector<uint8_t>(), y.obs.to_vector<uint8_t>());
    EXPECT_EQ(x.next_obs.to_vector<uint8_t>(), y.next_obs.to_vector<uint8_t>());
    EXPECT_EQ(x.reward.to_vector<float>(), y.reward.to_vector<float>());
  }
  std::remove(path.c_str());
}

// A section larger than one chunk of the file's pipeline (64 MiB): 10,000 frames of 84x84 bytes
// travel in two chunks. Frames from both chunks come back; a flipped byte in the second chunk is
// found and leaves the loading memory as it was.
TEST(ReplayIo, SectionsLargerThanOneChunkRoundTrip) {
  ReplayConfig c;
  c.num_envs = 100;
  c.capacity = 10000;
  c.obs_shape = {84, 84};
  c.obs_dtype = DType::u8;
  c.n_step = 1;
  c.prioritized = true;
  c.seed = 12;
  ASSERT_GT(ReplayMemory::bytes_needed(c), size_t{66} << 20);
  ReplayMemory a(c);
  std::mt19937 rng(9);
  std::vector<uint8_t> obs(100 * 84 * 84);
  std::vector<int64_t> act(100);
  std::vector<float> rew(100);
  const std::vector<uint8_t> no(100, 0);
  for (int step = 0; step < 101; ++step) {
    for (uint8_t& v : obs) v = static_cast<uint8_t>(rng());
    for (int64_t& v : act) v = static_cast<int64_t>(rng() % 6);
    for (float& v : rew) v = static_cast<float>(rng() % 100) / 10.0f;
    a.insert(Tensor::from_host(obs, {100, 84, 84}), Tensor::from_host(act, {100}),
             Tensor::from_host(rew, {100}), Tensor::from_host(no, {100}),
             Tensor::from_host(no, {100}));
  }
  const std::string path = temp_path("chunks.bin");
  std::vector<std::pair<uint64_t, uint64_t>> saved, loaded;
  a.save(path, [&](uint64_t done, uint64_t total) { saved.emplace_back(done, total); });
  ReplayMemory b(c);
  b.load(path, [&](uint64_t done, uint64_t total) { loaded.emplace_back(done, total); });
  // Progress: the same total throughout, never backwards, ending at the total. Save covers the
  // sections once; load twice (the checksum pass ends at half).
  const auto check_progress = [](const std::vector<std::pair<uint64_t, uint64_t>>& calls,
                                 const char* what) {
    ASSERT_GE(calls.size(), 3u) << what;
    for (size_t j = 0; j < calls.size(); ++j) {
      EXPECT_EQ(calls[j].second, calls[0].second) << what;
      EXPECT_LE(calls[j].first, calls[j].second) << what;
      if (j > 0) EXPECT_GE(calls[j].first, calls[j - 1].first) << what;
    }
    EXPECT_EQ(calls.back().first, calls.back().second) << what;
  };
  check_progress(saved, "save");
  check_progress(loaded, "load");
  const uint64_t payload = saved.back().second;
  EXPECT_GT(payload, uint64_t{66} << 20);
  EXPECT_LT(payload, std::filesystem::file_size(path));
  EXPECT_EQ(loaded.back().second, 2 * payload);
  EXPECT_NE(std::find(loaded.begin(), loaded.end(), std::make_pair(payload, 2 * payload)),
            loaded.end())
      << "the checksum pass reports its end";
  EXPECT_EQ(b.sum_tree_host(), a.sum_tree_host());
  // Slots from both ends of the frames: the first chunk and the second.
  std::vector<int64_t> slots;
  for (int64_t i = 0; i < 50; ++i) slots.push_back(i * 7);
  for (int64_t i = 9950; i < 10000; ++i) slots.push_back(i);
  const ReplaySample pick{Tensor::from_host(slots, {100}),
                          Tensor::full({100}, 1.0, DType::f32, Device::cpu())};
  ReplayBatch x, y;
  a.gather_into(pick, x);
  b.gather_into(pick, y);
  EXPECT_EQ(x.obs.to_vector<uint8_t>(), y.obs.to_vector<uint8_t>());
  EXPECT_EQ(x.next_obs.to_vector<uint8_t>(), y.next_obs.to_vector<uint8_t>());
  EXPECT_EQ(x.reward.to_vector<float>(), y.reward.to_vector<float>());
  const ReplayBatch p = a.sample_batch(32, 0.5), q = b.sample_batch(32, 0.5);
  EXPECT_EQ(p.indices.to_vector<int64_t>(), q.indices.to_vector<int64_t>());
  EXPECT_EQ(p.obs.to_vector<uint8_t>(), q.obs.to_vector<uint8_t>());

  // One flipped byte 64 MiB + 4 KiB into the file: inside the frames' second chunk.
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    const auto at = static_cast<std::streamoff>((size_t{64} << 20) + 4096);
    f.seekg(at);
    char ch;
    f.get(ch);
    f.seekp(at);
    f.put(static_cast<char>(ch ^ 0x01));
  }
  ReplayMemory fresh(c);
  expect_error([&] { fresh.load(path); }, "is corrupt: its checksum does not match its contents");
  EXPECT_EQ(fresh.size(), 0);
  std::remove(path.c_str());
}

TEST(ReplayIo, CorruptTruncatedAndMismatchedFilesAreRefused) {
  ReplayMemory a(io_config());
  fill(a, 30, 2);
  const std::string path = temp_path("corrupt.bin");
  a.save(path);
  const auto size = std::filesystem::file_size(path);

  ReplayMemory b(io_config());
  fill(b, 25, 3);
  const auto before = b.sum_tree_host();
  const int64_t size_before = b.size();

  // One flipped byte in the middle of the frames.
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(size / 2));
    char ch;
    f.get(ch);
    f.seekp(static_cast<std::streamoff>(size / 2));
    f.put(static_cast<char>(ch ^ 0x10));
  }
  expect_error([&] { b.load(path); }, "is corrupt: its checksum does not match its contents");
  // Truncated.
  a.save(path);
  std::filesystem::resize_file(path, size - 100);
  expect_error([&] { b.load(path); }, "is truncated or corrupt: it has");
  // Not a replay file at all.
  { std::ofstream(path, std::ios::binary | std::ios::trunc) << "hello, world, this is text"; }
  expect_error([&] { b.load(path); }, "is not a redline replay file");
  // An older format (version 4 kept the min tree's inner levels and masses off the grid): the
  // header's version, same length.
  a.save(path);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    std::string head(4096, '\0');  // the header lies in the first few hundred bytes
    f.read(head.data(), static_cast<std::streamsize>(head.size()));
    const size_t at = head.find("\"version\":5");
    ASSERT_NE(at, std::string::npos);
    f.clear();
    f.seekp(static_cast<std::streamoff>(at + 10));
    f.put('4');
  }
  expect_error([&] { b.load(path); }, "has format version 4; this redline reads version 5");
  // Another configuration.
  ReplayConfig other = io_config();
  other.n_step = 3;
  ReplayMemory c(other);
  fill(c, 20, 4);
  c.save(path);
  expect_error([&] { b.load(path); }, "was written with n_step = 3 but this memory has 2");
  other = io_config();
  other.priority_limit = 50.0;
  ReplayMemory d(other);
  fill(d, 20, 4);
  d.save(path);
  expect_error([&] { b.load(path); },
               "was written with priority_limit = 50.0 but this memory has 1000.0");
  expect_error([&] { b.load(path + ".missing"); }, "could not open replay file");
  // Nothing changed.
  EXPECT_EQ(b.sum_tree_host(), before);
  EXPECT_EQ(b.size(), size_before);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace redline::rl
