// redline play GAME: runs a uniform-random policy on an environment and reports episode returns
// and lengths (mean, standard deviation, minimum, maximum); optionally an animated GIF.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "io/gif.h"
#include "redline/core/error.h"
#include "redline/core/random.h"
#include "redline/rl/reference_env.h"
#include "redline/rl/vec_env.h"
#include "tools/commands.h"

namespace redline::tools {
namespace {

constexpr const char* kPlayUsage =
    "usage: redline play GAME [options]\n"
    "\n"
    "Runs a uniform-random policy and prints mean, standard deviation, minimum and maximum of\n"
    "the episode return and length.\n"
    "\n"
    "GAME: cartpole, breakout, space_invaders, freeway, asterix, seaquest\n"
    "\n"
    "options:\n"
    "  --episodes N            episodes to play (default 10)\n"
    "  --seed S                environment seed (default 0)\n"
    "  --device cpu|gpu        where the environments run (default cpu)\n"
    "  --max-episode-steps N   end episodes after N steps as truncated (default: the game's)\n"
    "  --sticky P              MinAtar sticky-action probability (default 0.1)\n"
    "  --no-ramping            MinAtar: turn difficulty ramping off\n"
    "  --minimal-actions       MinAtar: the random policy picks from the minimal action set\n"
    "  --rng reference         the original MinAtar's generator (CPU, one environment, episodes\n"
    "                          one after another on one MT19937 stream seeded with --seed)\n"
    "  --policy-seed S         seed of the random policy (default 0)\n"
    "  --gif FILE              write an animated GIF of the first episode\n"
    "  --json                  print one JSON object instead of the table\n"
    "  --help                  this text\n";

struct Stats {
  double mean = 0, std = 0, min = 0, max = 0;
};

Stats summarize(const std::vector<double>& v) {
  Stats s;
  if (v.empty()) return s;
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  double sq = 0;
  for (double x : v) sq += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(sq / static_cast<double>(v.size()));  // population std, as numpy's default
  return s;
}

int64_t parse_int(std::string_view flag, const char* text, int64_t lo, int64_t hi) {
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  REDLINE_CHECK(end && *end == '\0' && v >= lo && v <= hi,
                "{} is '{}' but must be an integer in [{}, {}]", flag, text, lo, hi);
  return v;
}

// Colours of the channels (Seaquest has the most: 10), cells of kCellPx pixels on black.
constexpr int kCellPx = 12;
const std::vector<io::Rgb> kPalette = {
    {0, 0, 0},      {255, 214, 0},   {230, 57, 70},  {120, 120, 120}, {69, 123, 157}, {241, 143, 1},
    {46, 196, 182}, {168, 218, 220}, {131, 56, 236}, {255, 255, 255}, {6, 214, 160},  {40, 40, 40}};

// One MinAtar observation (C, 10, 10) as palette indices; the highest active channel colours a
// cell, and a dim grid separates cells.
std::vector<uint8_t> render_minatar(const uint8_t* obs, int channels) {
  const int size = 10 * kCellPx;
  std::vector<uint8_t> px(static_cast<size_t>(size) * size, 0);
  for (int y = 0; y < 10; ++y) {
    for (int x = 0; x < 10; ++x) {
      uint8_t colour = 0;
      for (int c = 0; c < channels; ++c) {
        if (obs[c * 100 + y * 10 + x]) colour = static_cast<uint8_t>(1 + c);
      }
      for (int py = 0; py < kCellPx; ++py) {
        for (int qx = 0; qx < kCellPx; ++qx) {
          const bool border = py == 0 || qx == 0;
          px[static_cast<size_t>(y * kCellPx + py) * size + x * kCellPx + qx] =
              border && colour == 0 ? 11 : colour;
        }
      }
    }
  }
  return px;
}

// CartPole (x, x_dot, theta, theta_dot) as a cart and a pole.
std::vector<uint8_t> render_cartpole(const float* obs) {
  const int w = 240, h = 120;
  std::vector<uint8_t> px(static_cast<size_t>(w) * h, 0);
  const int cart_x = static_cast<int>(w / 2 + obs[0] / 2.4f * (w / 2 - 20));
  for (int y = 90; y < 100; ++y) {
    for (int x = cart_x - 15; x <= cart_x + 15; ++x) {
      if (x >= 0 && x < w) px[static_cast<size_t>(y) * w + x] = 4;
    }
  }
  for (int x = 0; x < w; ++x) px[static_cast<size_t>(100) * w + x] = 3;
  for (int k = 0; k < 70; ++k) {
    const int x = cart_x + static_cast<int>(std::sin(obs[2]) * k);
    const int y = 90 - static_cast<int>(std::cos(obs[2]) * k);
    if (x >= 0 && x < w && y >= 0 && y < h) px[static_cast<size_t>(y) * w + x] = 1;
  }
  return px;
}

struct Recorder {
  bool on = false;
  rl::Game game;
  int channels = 0;
  std::vector<std::vector<uint8_t>> frames;

  void add(const uint8_t* bytes) {
    if (!on) return;
    if (rl::is_minatar(game)) {
      frames.push_back(render_minatar(bytes, channels));
    } else {
      frames.push_back(render_cartpole(reinterpret_cast<const float*>(bytes)));
    }
  }
  void save(const std::string& path) const {
    const int w = rl::is_minatar(game) ? 10 * kCellPx : 240;
    const int h = rl::is_minatar(game) ? 10 * kCellPx : 120;
    io::GifWriter gif(w, h, kPalette, rl::is_minatar(game) ? 10 : 4);
    for (const auto& f : frames) gif.add_frame(f);
    gif.save(path);
  }
};

// Host bytes of row i of an (N, ...) tensor.
std::vector<uint8_t> row_bytes(const Tensor& t, int64_t i) {
  const Tensor row = t.slice(0, i, i + 1).to(Device::cpu()).contiguous();
  const uint8_t* p = static_cast<const uint8_t*>(row.raw_data());
  return std::vector<uint8_t>(p, p + row.nbytes());
}

}  // namespace

int run_play(int argc, char** argv) {
  std::string game_text, device_text = "cpu", rng_text = "philox", gif_path;
  int64_t episodes = 10, max_steps = -1;
  uint64_t seed = 0, policy_seed = 0;
  double sticky = 0.1;
  bool json = false, ramping = true, minimal = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const auto value = [&]() -> const char* {
      REDLINE_CHECK(i + 1 < argc, "{} needs a value (see redline play --help)", arg);
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kPlayUsage, stdout);
      return 0;
    } else if (arg == "--episodes") {
      episodes = parse_int(arg, value(), 1, 100000000);
    } else if (arg == "--seed") {
      seed = static_cast<uint64_t>(parse_int(arg, value(), 0, INT64_MAX));
    } else if (arg == "--policy-seed") {
      policy_seed = static_cast<uint64_t>(parse_int(arg, value(), 0, INT64_MAX));
    } else if (arg == "--device") {
      device_text = value();
    } else if (arg == "--max-episode-steps") {
      max_steps = parse_int(arg, value(), 0, INT32_MAX);
    } else if (arg == "--sticky") {
      const char* text = value();
      char* end = nullptr;
      sticky = std::strtod(text, &end);
      REDLINE_CHECK(end && *end == '\0' && sticky >= 0.0 && sticky <= 1.0,
                    "--sticky is '{}' but must be a probability in [0, 1]", text);
    } else if (arg == "--no-ramping") {
      ramping = false;
    } else if (arg == "--minimal-actions") {
      minimal = true;
    } else if (arg == "--rng") {
      rng_text = value();
      REDLINE_CHECK(rng_text == "reference" || rng_text == "philox",
                    "--rng is '{}' but must be 'reference' (the original's MT19937) or 'philox'",
                    rng_text);
    } else if (arg == "--gif") {
      gif_path = value();
    } else if (arg == "--json") {
      json = true;
    } else if (!arg.empty() && arg[0] == '-') {
      REDLINE_FAIL("unknown option '{}' (see redline play --help)", arg);
    } else {
      REDLINE_CHECK(game_text.empty(), "only one GAME may be given, but got '{}' and '{}'",
                    game_text, arg);
      game_text = arg;
    }
  }
  REDLINE_CHECK(!game_text.empty(),
                "play needs a GAME (cartpole, breakout, space_invaders, freeway, asterix, "
                "seaquest); see redline play --help");
  const rl::Game game = rl::parse_game(game_text);
  const Device device = Device::parse(device_text);
  const bool reference = rng_text == "reference";

  std::vector<double> returns, lengths;
  Recorder recorder;
  recorder.on = !gif_path.empty();
  recorder.game = game;
  recorder.channels = rl::game_channels(game);
  int64_t total_steps = 0;
  const auto start = std::chrono::steady_clock::now();

  if (reference) {
    REDLINE_CHECK(rl::is_minatar(game),
                  "--rng reference reproduces the original MinAtar; {} has no reference mode",
                  rl::game_name(game));
    REDLINE_CHECK(device.is_cpu(), "--rng reference runs on the CPU only, but --device is {}",
                  device);
    REDLINE_CHECK(seed <= UINT32_MAX && policy_seed <= UINT32_MAX,
                  "--rng reference takes 32-bit seeds (MT19937), but got {} and {}", seed,
                  policy_seed);
    REDLINE_CHECK(!minimal,
                  "--rng reference plays the original's 6 actions; drop "
                  "--minimal-actions");
    rl::ReferenceMinAtar env(game, static_cast<uint32_t>(seed), sticky, ramping);
    rl::ReferencePolicy policy(static_cast<uint32_t>(policy_seed));
    for (int64_t e = 0; e < episodes; ++e) {
      if (e > 0) env.reset();
      if (e == 0) recorder.add(env.observation().data());
      double total = 0;
      int64_t length = 0;
      bool done = false;
      while (!done) {
        const auto r = env.act(policy.next(6));
        total += r.reward;
        ++length;
        done = r.terminal || (max_steps > 0 && length >= max_steps);
        if (e == 0) recorder.add(env.observation().data());
      }
      returns.push_back(total);
      lengths.push_back(static_cast<double>(length));
      total_steps += length;
    }
  } else {
    // One environment per episode, each contributing its first episode (collecting the first
    // episodes to finish would favour short ones). Large requests run in batches.
    const int64_t batch_cap = 65536;
    for (int64_t done_episodes = 0; done_episodes < episodes;) {
      const int64_t n = std::min(batch_cap, episodes - done_episodes);
      rl::VecEnvOptions options;
      options.game = game;
      options.num_envs = n;
      options.device = device;
      options.sticky_action_prob = sticky;
      options.difficulty_ramping = ramping;
      options.minimal_action_set = minimal;
      options.max_episode_steps = max_steps;
      options.keep_final_observation = recorder.on && done_episodes == 0;
      rl::VecEnv env(options);
      const uint64_t batch_seed = seed + static_cast<uint64_t>(done_episodes);
      const Tensor& first = env.reset(batch_seed);
      const bool record = recorder.on && done_episodes == 0;
      if (record) recorder.add(row_bytes(first, 0).data());
      Generator policy(policy_seed, static_cast<uint64_t>(done_episodes), device);
      Tensor actions = Tensor::empty({n}, DType::i32, device);
      std::vector<uint8_t> finished(static_cast<size_t>(n), 0);
      int64_t remaining = n;
      while (remaining > 0) {
        randint_(actions, static_cast<uint32_t>(env.num_actions()), policy);
        const rl::StepResult& r = env.step(actions);
        total_steps += n;
        const Tensor term = r.terminated.to(Device::cpu());
        const Tensor trunc = r.truncated.to(Device::cpu());
        const std::vector<float> ret = r.episode_return.to_vector<float>();
        const std::vector<int32_t> len = r.episode_length.to_vector<int32_t>();
        const bool* tp = term.data<bool>();
        const bool* up = trunc.data<bool>();
        if (record && !finished[0]) {
          recorder.add(row_bytes(tp[0] || up[0] ? r.final_observation : r.observation, 0).data());
        }
        for (int64_t i = 0; i < n; ++i) {
          if (finished[i] || !(tp[i] || up[i])) continue;
          finished[i] = 1;
          --remaining;
          returns.push_back(ret[i]);
          lengths.push_back(len[i]);
        }
      }
      done_episodes += n;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (recorder.on) recorder.save(gif_path);

  const Stats ret = summarize(returns), len = summarize(lengths);
  if (json) {
    nlohmann::json out = {
        {"game", std::string(rl::game_name(game))},
        {"device", device.str()},
        {"rng", reference ? "reference" : "philox"},
        {"episodes", episodes},
        {"seed", seed},
        {"policy_seed", policy_seed},
        {"return", {{"mean", ret.mean}, {"std", ret.std}, {"min", ret.min}, {"max", ret.max}}},
        {"length", {{"mean", len.mean}, {"std", len.std}, {"min", len.min}, {"max", len.max}}},
        {"env_steps", total_steps},
        {"seconds", seconds},
    };
    if (!gif_path.empty()) out["gif"] = gif_path;
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("%s on %s, %lld episodes, seed %llu, random policy (%s rng)\n",
                std::string(rl::game_name(game)).c_str(), device.str().c_str(),
                static_cast<long long>(episodes), static_cast<unsigned long long>(seed),
                reference ? "reference MT19937" : "Philox");
    std::printf("%-8s %12s %12s %12s %12s\n", "", "mean", "std", "min", "max");
    std::printf("%-8s %12.3f %12.3f %12.0f %12.0f\n", "return", ret.mean, ret.std, ret.min,
                ret.max);
    std::printf("%-8s %12.3f %12.3f %12.0f %12.0f\n", "length", len.mean, len.std, len.min,
                len.max);
    std::printf("%lld environment steps in %.3f s\n", static_cast<long long>(total_steps), seconds);
    if (!gif_path.empty()) {
      std::printf("wrote %s (%zu frames)\n", gif_path.c_str(), recorder.frames.size());
    }
  }
  return 0;
}

}  // namespace redline::tools
