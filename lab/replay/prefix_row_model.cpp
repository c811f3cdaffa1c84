// A lane-by-lane model of v12's store_prefix_share (lab/replay/v12-prefix-rows.patch): 4 lanes,
// each holding 4 consecutive children of a node, build the row's stored prefixes with shuffles up
// by 1 or 2 lanes (a shuffle from below lane 0 returns the lane's own value, as __shfl_up_sync
// does). The model follows the kernel's statements in order and is compared bit for bit with
// tree_prefix_sums and stored_prefix (src/rl/replay/replay_math.h with the patch applied) on random
// rows: positive masses of mixed magnitudes, zeros and runs of zeros.
// Build and run from a tree with the patch applied:
//   g++ -std=c++20 -O2 -ffp-contract=off -Isrc -Iinclude lab/replay/prefix_row_model.cpp -o /tmp/m
//   /tmp/m          # prints the rows compared and how many differ; exit 1 if any
//   /tmp/m mutate   # the same with a mutated step: should report most rows differing
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "rl/replay/replay_math.h"

namespace {

using redline::rl::replay::kFanout;
constexpr int kLanes = 4, kShare = 4;
static_assert(kLanes * kShare == kFanout, "the model is the kernel's 4 lanes of 4");

// __shfl_up_sync(mask, x[lane], delta, 4) for every lane of one group.
void shfl_up(const double (&x)[kLanes], int delta, double (&out)[kLanes]) {
  for (int l = 0; l < kLanes; ++l) out[l] = l >= delta ? x[l - delta] : x[l];
}

// The kernel's statements, run for all 4 lanes at once (p[lane][i] is the lane's p[i]).
void model_row(const double* c, double* stored, bool mutate) {
  double p[kLanes][kShare];
  for (int l = 0; l < kLanes; ++l)
    for (int i = 0; i < kShare; ++i) p[l][i] = c[kShare * l + i];
  double lane_vals[kLanes], below[kLanes], b2[kLanes], b3[kLanes];
  // Distance 1.
  for (int l = 0; l < kLanes; ++l) lane_vals[l] = p[l][3];
  shfl_up(lane_vals, 1, below);
  for (int l = 0; l < kLanes; ++l) {
    const double n0 = l >= 1 ? below[l] + p[l][0] : p[l][0];
    p[l][3] = p[l][2] + p[l][3];
    p[l][2] = p[l][1] + p[l][2];
    p[l][1] = p[l][0] + p[l][1];
    p[l][0] = n0;
  }
  // Distance 2.
  for (int l = 0; l < kLanes; ++l) lane_vals[l] = p[l][2];
  shfl_up(lane_vals, 1, b2);
  for (int l = 0; l < kLanes; ++l) lane_vals[l] = p[l][3];
  shfl_up(lane_vals, 1, b3);
  for (int l = 0; l < kLanes; ++l) {
    const double n0 = l >= 1 ? b2[l] + p[l][0] : p[l][0];
    const double n1 = l >= 1 ? b3[l] + p[l][1] : p[l][1];
    p[l][3] = p[l][1] + p[l][3];
    p[l][2] = p[l][0] + p[l][2];
    p[l][1] = n1;
    p[l][0] = mutate ? n1 : n0;
  }
  // Distances 4 and 8.
  for (int step = 1; step <= 2; ++step) {
    for (int i = 0; i < kShare; ++i) {
      for (int l = 0; l < kLanes; ++l) lane_vals[l] = p[l][i];
      shfl_up(lane_vals, step, below);
      for (int l = 0; l < kLanes; ++l) p[l][i] = l >= step ? below[l] + p[l][i] : p[l][i];
    }
  }
  for (int l = 0; l < kLanes; ++l)
    for (int i = 0; i < kShare; ++i) {
      const int j = kShare * l + i;
      stored[j] = redline::rl::replay::stored_prefix(c[j] > 0.0, p[l][i]);
    }
}

}  // namespace

int main(int argc, char** argv) {
  const bool mutate = argc > 1 && std::strcmp(argv[1], "mutate") == 0;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const long rows = 2'000'000;
  long differ = 0;
  for (long r = 0; r < rows; ++r) {
    double c[kFanout];
    const int kind = static_cast<int>(r % 4);
    for (int j = 0; j < kFanout; ++j) {
      const double u = unit(rng);
      if (kind == 1 && u < 0.4) {
        c[j] = 0.0;  // scattered empty children
      } else if (kind == 2 && j < static_cast<int>(r / 4 % kFanout)) {
        c[j] = 0.0;  // a run of empty children first
      } else if (kind == 3) {
        c[j] = std::ldexp(unit(rng) + 0.5, static_cast<int>(unit(rng) * 120) - 60);  // magnitudes
      } else {
        c[j] = unit(rng) * 100.0 + 1e-3;
      }
    }
    double want[kFanout], p[kFanout], got[kFanout];
    redline::rl::replay::tree_prefix_sums(c, p);
    for (int j = 0; j < kFanout; ++j)
      want[j] = redline::rl::replay::stored_prefix(c[j] > 0.0, p[j]);
    model_row(c, got, mutate);
    if (std::memcmp(want, got, sizeof(want)) != 0) ++differ;
  }
  std::printf("%ld rows, %ld differ%s\n", rows, differ, mutate ? " (mutated model)" : "");
  return differ == 0 ? 0 : 1;
}
