// Replay memory throughput: prioritized sample + priority update pairs per second at batch 128 for
// capacities 1e5, 1e6 and 1e7 (one operation = one sample of 128 indices with importance weights
// plus one update of their 128 priorities), the metric; the PyTorch peer is
// bench/peer_replay.py, counted the same way.
//
// Method: the memory is filled (MinAtar-sized (4, 10, 10) u8 observations, 1000 envs per insert),
// then for each mode: warm-up, then 7 repeats of kOps operations between two events on the
// memory's stream; the table shows the median GPU time per operation and ops/s from it.
//   eager: the host launches each sample and update (two kernels per operation).
//   graph: kOps operations captured once in a StepGraph and replayed (what a captured training
//          step does); "+gather" adds the (128, 4, 10, 10) batch with n-step returns; "sample"
//          and "update" are each kernel alone, captured the same way; update alone writes the
//          same indices each time, with the 16 priority sets in turn, so that every update changes
//          its leaves (rewriting the values already there would let a kernel that skips unchanged
//          leaves do no tree work).
// Without a GPU it runs the CPU memory at the same sizes, so the program always prints a table.
//
// With `--atari`, observations are the seed's Atari stacks instead: (4, 84, 84) u8 with frame_stack
// 4, each frame stored once and the stacks rebuilt by gather (the "+gather" column).
//
// With `--save DIR`, each memory is then saved to DIR (ReplayMemory::save: the whole memory,
// atomic) and loaded into a second memory of the same configuration, both timed on the host clock;
// the two memories must then give the same samples (indices and weights) through three rounds of
// sample and update. The file is removed afterwards. DIR needs the memory's bytes free, and a
// second memory of the same size must fit on the device.
#include "redline/rl/replay/replay.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "redline/core/random.h"
#include "redline/core/stream.h"

using namespace redline;
using namespace redline::rl;

namespace {

// The batch: 128, the figure, unless `--batch N` sets another (a scan of update's cost
// against the batch tells how much of it grows with the work).
int64_t bench_batch = 128;
constexpr int kOps = 200;
constexpr int kRepeats = 7;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median milliseconds per call of fn (which runs kOps operations), timed with events.
template <typename Fn>
double time_ms(Device dev, Fn fn) {
  fn();  // warm-up
  Stream::current(dev).synchronize();
  std::vector<double> ms;
  for (int r = 0; r < kRepeats; ++r) {
    Event start(dev), stop(dev);
    start.record();
    fn();
    stop.record();
    ms.push_back(stop.elapsed_ms_since(start));
  }
  return median(ms);
}

struct Row {
  int64_t capacity;
  size_t bytes;
  double fill_s;
  double eager_us, graph_us, gather_us, sample_us, update_us;
  // --save: seconds, file bytes, and whether the loaded memory sampled as the saved one did.
  double save_s = 0, load_s = 0;
  uintmax_t file_bytes = 0;
  bool same = false;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Saves m to dir, loads the file into a second memory of config c, and checks that both give the
// same samples through three rounds of sample and update.
void save_and_load(ReplayMemory& m, const ReplayConfig& c, const std::string& dir,
                   const std::vector<Tensor>& pris, const Tensor& beta, Row* row) {
  const std::string path =
      dir + "/bench_replay_" + std::to_string(static_cast<long long>(c.capacity)) + ".rlr";
  // Progress on stderr, every tenth of the way: at 1e8 a save takes tens of seconds.
  const auto report = [](const char* what) {
    return [what, shown = -1](uint64_t done, uint64_t total) mutable {
      const int tenth = total > 0 ? static_cast<int>(done * 10 / total) : 10;
      if (tenth == shown) return;
      shown = tenth;
      std::fprintf(stderr, "  %s: %.1f of %.1f GB\n", what, static_cast<double>(done) / 1e9,
                   static_cast<double>(total) / 1e9);
    };
  };
  auto t0 = std::chrono::steady_clock::now();
  m.save(path, report("save"));
  row->save_s = seconds_since(t0);
  row->file_bytes = std::filesystem::file_size(path);
  {
    ReplayMemory loaded(c);
    t0 = std::chrono::steady_clock::now();
    loaded.load(path, report("load (checksum, then copy)"));
    Stream::current(c.device).synchronize();
    row->load_s = seconds_since(t0);
    std::filesystem::remove(path);
    row->same = true;
    ReplaySample a, b;
    for (int round = 0; round < 3; ++round) {
      m.sample_into(bench_batch, beta, a);
      loaded.sample_into(bench_batch, beta, b);
      row->same = row->same && a.indices.to_vector<int64_t>() == b.indices.to_vector<int64_t>() &&
                  a.weights.to_vector<float>() == b.weights.to_vector<float>();
      m.update_priorities(a.indices, pris[(round + 5) % pris.size()]);
      loaded.update_priorities(b.indices, pris[(round + 5) % pris.size()]);
    }
    loaded.check_errors();
  }
}

Row run(Device dev, int64_t capacity, bool atari, const std::string& save_dir) {
  ReplayConfig c;
  c.capacity = capacity;
  c.num_envs = 1000;
  c.obs_shape = atari ? Shape{4, 84, 84} : Shape{4, 10, 10};
  c.frame_stack = atari ? 4 : 1;
  c.obs_dtype = DType::u8;
  c.n_step = 3;
  c.prioritized = true;
  c.alpha = 0.6;
  c.seed = 1;
  c.device = dev;
  ReplayMemory m(c);
  Row row{capacity, m.bytes(), 0, 0, 0, 0, 0, 0};

  // Fill: capacity / num_envs + n inserts.
  Generator gen(7, 0, dev);
  Shape obs_shape{1000};
  obs_shape.insert(obs_shape.end(), c.obs_shape.begin(), c.obs_shape.end());
  const Tensor obs = Tensor::zeros(obs_shape, DType::u8, dev);
  Tensor act = Tensor::empty({1000}, DType::i64, dev);
  randint_(act, 6, gen);
  Tensor rew = Tensor::empty({1000}, DType::f32, dev);
  uniform_(rew, gen);
  const Tensor term = Tensor::zeros({1000}, DType::boolean, dev);
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < capacity / 1000 + c.n_step; ++i) m.insert(obs, act, rew, term, term);
  Stream::current(dev).synchronize();
  row.fill_s = seconds_since(t0);

  // Priorities the updates write: 16 random sets in [0.01, 10), cycled.
  std::mt19937 rng(3);
  std::vector<Tensor> pris;
  for (int i = 0; i < 16; ++i) {
    std::vector<float> p(bench_batch);
    for (float& v : p) v = std::uniform_real_distribution<float>(0.01f, 10.0f)(rng);
    pris.push_back(Tensor::from_host(p, {bench_batch}, dev));
  }
  const Tensor& pri = pris[0];
  Tensor beta = Tensor::full({1}, 0.4, DType::f32, dev);
  ReplaySample smp;
  ReplayBatch batch;
  m.sample_into(bench_batch, beta, smp);
  m.gather_into(smp, batch);
  // Spread the priorities first, so the tree is not flat.
  for (int i = 0; i < 2000; ++i) {
    m.sample_into(bench_batch, beta, smp);
    m.update_priorities(smp.indices, pris[i % 16]);
  }
  const auto ops = [&] {
    for (int i = 0; i < kOps; ++i) {
      m.sample_into(bench_batch, beta, smp);
      m.update_priorities(smp.indices, pri);
    }
  };
  const auto ops_gather = [&] {
    for (int i = 0; i < kOps; ++i) {
      m.sample_into(bench_batch, beta, smp);
      m.gather_into(smp, batch);
      m.update_priorities(smp.indices, pri);
    }
  };
  const auto samples = [&] {
    for (int i = 0; i < kOps; ++i) m.sample_into(bench_batch, beta, smp);
  };
  const auto updates = [&] {
    for (int i = 0; i < kOps; ++i) m.update_priorities(smp.indices, pris[i % pris.size()]);
  };
  row.eager_us = time_ms(dev, ops) * 1000.0 / kOps;
  StepGraph g1(dev), g2(dev), g3(dev), g4(dev);
  g1.capture(ops);
  g2.capture(ops_gather);
  g3.capture(samples);
  g4.capture(updates);
  row.sample_us = time_ms(dev, [&] { g3.replay(); }) * 1000.0 / kOps;
  row.update_us = time_ms(dev, [&] { g4.replay(); }) * 1000.0 / kOps;
  row.graph_us = time_ms(dev, [&] { g1.replay(); }) * 1000.0 / kOps;
  row.gather_us = time_ms(dev, [&] { g2.replay(); }) * 1000.0 / kOps;
  m.check_errors();
  if (!save_dir.empty()) save_and_load(m, c, save_dir, pris, beta, &row);
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  // Optional arguments: capacities to run instead of 1e5, 1e6, 1e7, `--batch N` and `--save DIR`.
  std::vector<int64_t> capacities;
  std::string save_dir;
  bool atari = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--atari") == 0) {
      atari = true;
    } else if (std::strcmp(argv[i], "--batch") == 0) {
      const long long b = i + 1 < argc ? std::atoll(argv[i + 1]) : 0;
      if (b <= 0) {
        std::fprintf(stderr, "bench_replay: --batch needs a positive count\n");
        return 2;
      }
      bench_batch = b;
      ++i;
    } else if (std::strcmp(argv[i], "--save") == 0) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_replay: --save needs a folder\n");
        return 2;
      }
      save_dir = argv[++i];
    } else {
      const long long capacity = std::atoll(argv[i]);
      if (capacity <= 0) {
        std::fprintf(
            stderr, "bench_replay: '%s' is neither a capacity, --atari, --batch N nor --save DIR\n",
            argv[i]);
        return 2;
      }
      capacities.push_back(capacity);
    }
  }
  if (capacities.empty()) capacities = {100000, 1000000, 10000000};
  const Device dev = default_device();
  std::printf(
      "redline replay bench: device %s, prioritized (alpha 0.6, beta 0.4 on the device), "
      "batch %lld, obs %s, n_step 3\n",
      dev.str().c_str(), static_cast<long long>(bench_batch),
      atari ? "(4, 84, 84) u8, frame_stack 4 (each frame stored once)" : "(4, 10, 10) u8");
  std::printf(
      "one op = sample %lld indices + importance weights, then update their %lld "
      "priorities; device time per op from events, median of %d x %d ops\n\n",
      static_cast<long long>(bench_batch), static_cast<long long>(bench_batch), kRepeats, kOps);
  std::printf(
      "| capacity | memory MiB | fill s | eager us/op | eager ops/s | graph us/op | graph "
      "ops/s | graph +gather us/op | sample us | update us |\n");
  std::printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  std::vector<Row> saved;
  for (int64_t capacity : capacities) {
    try {
      const Row r = run(dev, capacity, atari, save_dir);
      if (!save_dir.empty()) saved.push_back(r);
      std::printf("| %lld | %.0f | %.2f | %.2f | %.0f | %.2f | %.0f | %.2f | %.2f | %.2f |\n",
                  static_cast<long long>(r.capacity), static_cast<double>(r.bytes) / (1 << 20),
                  r.fill_s, r.eager_us, 1e6 / r.eager_us, r.graph_us, 1e6 / r.graph_us, r.gather_us,
                  r.sample_us, r.update_us);
      std::printf(
          "RESULT replay device=%s capacity=%lld batch=%lld eager_ops_per_s=%.0f "
          "graph_ops_per_s=%.0f\n",
          dev.str().c_str(), static_cast<long long>(capacity), static_cast<long long>(bench_batch),
          1e6 / r.eager_us, 1e6 / r.graph_us);
    } catch (const redline::Error& e) {
      std::printf("| %lld | failed: %s |\n", static_cast<long long>(capacity), e.what());
    }
    std::fflush(stdout);
  }
  if (!saved.empty()) {
    std::printf(
        "\nsave and load (host clock; the file in %s, removed afterwards)\n\n"
        "| capacity | file MiB | save s | save GB/s | load s | load GB/s | loaded memory samples "
        "alike |\n| ---: | ---: | ---: | ---: | ---: | ---: | --- |\n",
        save_dir.c_str());
    for (const Row& r : saved) {
      const double gb = static_cast<double>(r.file_bytes) / 1e9;
      std::printf("| %lld | %.0f | %.2f | %.2f | %.2f | %.2f | %s |\n",
                  static_cast<long long>(r.capacity), static_cast<double>(r.file_bytes) / (1 << 20),
                  r.save_s, gb / r.save_s, r.load_s, gb / r.load_s, r.same ? "yes" : "NO");
      std::printf("RESULT replay_io capacity=%lld save_s=%.2f load_s=%.2f same=%d\n",
                  static_cast<long long>(r.capacity), r.save_s, r.load_s, r.same ? 1 : 0);
    }
  }
  for (const Row& r : saved) {
    if (!r.same) return 1;
  }
  return 0;
}
