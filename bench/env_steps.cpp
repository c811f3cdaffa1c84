// Environment steps per second of every built-in game: GPU at N = 1, 64, 4096, 65536, 1048576
// (CUDA/HIP events after warm-up, median of 5 repeats) and CPU at N = 1 and 4096 (all cores,
// wall clock). Observations are written to device memory on every step; random actions come from
// a pool of pre-drawn action tensors on the device. Prints a Markdown table.
//
// usage: bench_env_steps [GAME ...] [--quick]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "redline/core/device.h"
#include "redline/core/random.h"
#include "redline/core/stream.h"
#include "redline/rl/vec_env.h"

#if REDLINE_HAS_OPENMP
#include <omp.h>
#endif

using namespace redline;
using namespace redline::rl;

namespace {

constexpr int kRepeats = 5;
constexpr int kActionPool = 8;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Row {
  std::string game;
  std::string device;
  int64_t n;
  int steps;
  double steps_per_second;
};

// Steps per repeat: enough work to time (about 2e7 env steps, 20..2000 launches).
int steps_for(int64_t n, bool quick) {
  const int64_t s = std::clamp<int64_t>(20000000 / n, 20, 2000);
  return static_cast<int>(quick ? std::max<int64_t>(s / 10, 10) : s);
}

Row measure(Game game, Device device, int64_t n, bool quick) {
  VecEnvOptions options;
  options.game = game;
  options.num_envs = n;
  options.device = device;
  options.check_actions = false;
  VecEnv env(options);
  env.reset(1);
  Generator gen(7, 0, device);
  std::vector<Tensor> actions;
  for (int k = 0; k < kActionPool; ++k) {
    actions.push_back(Tensor::empty({n}, DType::i32, device));
    randint_(actions.back(), static_cast<uint32_t>(env.num_actions()), gen);
  }
  const int steps = steps_for(n, quick);
  for (int t = 0; t < std::min(steps, 50); ++t) env.step(actions[t % kActionPool]);  // warm-up
  std::vector<double> rates;
  for (int r = 0; r < kRepeats; ++r) {
    double seconds;
    if (device.is_gpu()) {
      Event start(device), stop(device);
      start.record();
      for (int t = 0; t < steps; ++t) env.step(actions[t % kActionPool]);
      stop.record();
      seconds = stop.elapsed_ms_since(start) / 1000.0;
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      for (int t = 0; t < steps; ++t) env.step(actions[t % kActionPool]);
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    rates.push_back(static_cast<double>(n) * steps / seconds);
  }
  return {std::string(game_name(game)), device.str(), n, steps, median(rates)};
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Game> games;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      quick = true;
    } else {
      try {
        games.push_back(parse_game(arg));
      } catch (const Error& e) {
        std::fprintf(stderr, "bench_env_steps: %s\n", e.what());
        return 2;
      }
    }
  }
  if (games.empty()) games.assign(std::begin(kAllGames), std::end(kAllGames));
  int threads = 1;
#if REDLINE_HAS_OPENMP
  threads = omp_get_max_threads();
#endif
  const bool gpu = gpu_count() > 0;
  std::printf("# environment steps per second (%s; CPU: %d threads%s)\n\n",
              gpu ? "GPU: gpu:0" : "no usable GPU: GPU rows skipped", threads,
              quick ? "; --quick" : "");
  std::printf("| game | device | N | steps timed | steps/s | steps/s per CPU thread |\n");
  std::printf("| --- | --- | ---: | ---: | ---: | ---: |\n");
  const std::vector<int64_t> gpu_sizes = {1, 64, 4096, 65536, 1048576};
  const std::vector<int64_t> cpu_sizes = {1, 4096};
  for (Game game : games) {
    std::vector<std::pair<Device, int64_t>> runs;
    if (gpu) {
      for (int64_t n : gpu_sizes) runs.push_back({Device::gpu(), n});
    }
    for (int64_t n : cpu_sizes) runs.push_back({Device::cpu(), n});
    for (const auto& [device, n] : runs) {
      try {
        const Row row = measure(game, device, n, quick);
        const int used = device.is_cpu() && n > 1 ? threads : 1;
        char per_thread[32] = "";
        if (device.is_cpu())
          std::snprintf(per_thread, sizeof per_thread, "%.3g", row.steps_per_second / used);
        std::printf("| %s | %s | %lld | %d x %lld | %.3g | %s |\n", row.game.c_str(),
                    row.device.c_str(), static_cast<long long>(row.n), row.steps,
                    static_cast<long long>(row.n), row.steps_per_second, per_thread);
      } catch (const Error& e) {
        std::printf("| %s | %s | %lld | - | failed: %s | |\n", std::string(game_name(game)).c_str(),
                    device.str().c_str(), static_cast<long long>(n), e.what());
      }
      std::fflush(stdout);
    }
  }
  return 0;
}
