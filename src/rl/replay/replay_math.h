// The replay memory's arithmetic, written once for the CPU loops (src/rl/replay/replay_cpu.cpp)
// and the GPU kernels (src/backend/gpu/replay_*.cu): the sum/min tree layout, its descent and
// recomputation, logarithm/exponential/power built from IEEE +, -, *, / and explicit fused
// multiply-adds only (so both devices give the same bits under the build's no-contraction flags),
// n-step windows and frame-stack sources.
#pragma once

#include <cmath>
#include <cstdint>

#include "redline/core/hd.h"
#include "redline/core/philox.h"

namespace redline::rl::replay {

// Bit casts through a union (what philox.h does too): valid in g++, nvcc and hipcc device code,
// where memcpy may not be declared for the device before the vendor header.
template <typename To, typename From>
REDLINE_HD inline To union_cast(From x) {
  static_assert(sizeof(To) == sizeof(From), "a bit cast keeps the size");
  union {
    From from;
    To to;
  } pun{x};
  return pun.to;
}
REDLINE_HD inline double bits_to_double(uint64_t b) { return union_cast<double>(b); }
REDLINE_HD inline uint64_t double_to_bits(double d) { return union_cast<uint64_t>(d); }

REDLINE_HD inline float bits_to_float(uint32_t b) { return union_cast<float>(b); }
inline constexpr uint32_t kFloatInfBits = 0x7F800000u;

// A leaf's value in the min tree: its mass rounded to the nearest float where positive, else +inf
// (never the minimum). A mass is never below the smallest positive float (a priority is a positive
// float and alpha is at most 1, so p^alpha >= min(p, 1)), so a positive mass stays positive.
//
// The min tree holds floats: a level's minimum is then one instruction per step and one shuffle
// on a GPU, and the pair of sample and update gained 0.11-0.21 µs at 1e6 and 1e7 (bench/RESULTS.md,
// 2026-12-07, fifth session). Rounding is monotone, so the smallest float is the smallest mass
// rounded, within 2^-24 relative. A weight's ratio to it can therefore fall below 1 by that much,
// which weight_power's float result absorbs: weights stay at most 1, and the smallest mass's
// weight is exactly 1 (tests/replay/sum_tree_test.cpp). Masses below about 1e-38, where floats
// lose precision, are the exception. The GPU's update derives the leaves' mins from the sum
// leaves by it.
REDLINE_HD inline float tree_leaf_min(double mass) {
  return mass > 0.0 ? static_cast<float>(mass) : bits_to_float(kFloatInfBits);
}

// ---- tree layout ------------------------------------------------------------------------------
// A 16-ary tree stored level by level, its top level first. Node j of level d has the children
// j*16 .. j*16+15 of level d+1; each level is padded to a multiple of 16 with neutral values (0 in
// the sum tree, +inf in the min tree). 16 doubles are one 128-byte line, so a descent reads one
// line per level. The top level holds at most kTopNodes = 16 * 16 nodes, and the two levels that a
// complete tree would have above it (at most 16 nodes, then the root) are not stored: tree_top
// derives them, in tree_combine's order, wherever the total mass or the smallest leaf is needed. A
// GPU draw loads the whole top level in its first step anyway, and an update then recomputes two
// levels fewer (each one a store, a barrier and a reload in a single block: about 0.6 µs on the
// H200). 32 children per node (one level fewer) works too, bit for bit on every device, but the
// GPU's update measured 1.3 to 1.4x slower with it on the H200: each level reads twice the bytes.
inline constexpr int kFanoutBits = 4;
inline constexpr int kFanout = 1 << kFanoutBits;
static_assert(kFanout == 16 || kFanout == 32, "a node's children are 16 or 32 lanes of a group");
inline constexpr int64_t kTopNodes = int64_t{kFanout} * kFanout;
inline constexpr int kMaxLevels = 10;  // 16^11 leaves: far above any memory
inline constexpr int kMaxStack = 16;   // largest frame_stack

struct TreeLayout {
  int levels = 0;                   // level 0 is the top (at most kTopNodes), levels-1 the leaves
  int64_t offset[kMaxLevels] = {};  // first node of each level in the node array
  int64_t count[kMaxLevels] = {};   // nodes of each level, padding included
  int64_t nodes = 0;                // total nodes
  int64_t leaves = 0;               // real leaves (the capacity)
};

inline TreeLayout make_tree_layout(int64_t leaves) {
  int64_t sizes[kMaxLevels];
  int m = 0;
  int64_t n = leaves;
  sizes[m++] = n;
  while (n > kTopNodes && m < kMaxLevels) {
    n = (n + kFanout - 1) / kFanout;
    sizes[m++] = n;
  }
  TreeLayout t;
  t.levels = m;
  t.leaves = leaves;
  for (int d = 0; d < m; ++d) {
    const int64_t real = sizes[m - 1 - d];
    t.count[d] = (real + kFanout - 1) / kFanout * kFanout;
    t.offset[d] = t.nodes;
    t.nodes += t.count[d];
  }
  return t;
}

REDLINE_HD inline double tree_min(double a, double b) { return b < a ? b : a; }
// Mins hold no NaN, so fminf is the same choice, and one instruction on a GPU.
REDLINE_HD inline float tree_min(float a, float b) { return fminf(a, b); }

// A parent's sum and min from its 16 children's values. The sum is pairwise in a fixed order,
// ((c0 + c1) + (c2 + c3)) for each quarter, then (q0 + q1) + (q2 + q3), which every device follows
// bit for bit: a GPU group of 4 lanes adds its quarter, then two butterfly steps across the lanes
// give every lane the same value (IEEE addition commutes exactly).
REDLINE_HD inline double tree_quarter_sum(const double* c) { return (c[0] + c[1]) + (c[2] + c[3]); }
REDLINE_HD inline float tree_quarter_min(const float* c) {
  return tree_min(tree_min(c[0], c[1]), tree_min(c[2], c[3]));
}
REDLINE_HD inline void tree_combine(const double* child_sum, const float* child_min,
                                    double* sum_out, float* min_out) {
  constexpr int kQuarters = kFanout / 4;
  double q[kQuarters];
  float m[kQuarters];
  for (int k = 0; k < kQuarters; ++k) {
    q[k] = tree_quarter_sum(child_sum + 4 * k);
    m[k] = tree_quarter_min(child_min + 4 * k);
  }
  for (int w = 1; w < kQuarters; w *= 2) {  // pairwise: (q0 + q1) + (q2 + q3), and so on
    for (int k = 0; k < kQuarters; k += 2 * w) {
      q[k] = q[k] + q[k + w];
      m[k] = tree_min(m[k], m[k + w]);
    }
  }
  *sum_out = q[0];
  *min_out = m[0];
}

// Writes a leaf's mass: the sum leaf, and its min where the min tree stores the leaves (a one-level
// tree, tree_min_nodes). Every device writes leaves through it.
REDLINE_HD inline void tree_set_leaf(const TreeLayout& t, double* sum, float* mn, int64_t slot,
                                     double mass) {
  const int64_t at = t.offset[t.levels - 1] + slot;
  sum[at] = mass;
  if (t.levels == 1) mn[at] = tree_leaf_min(mass);
}

// Recomputes node j of level d (< leaves level) of the sum tree from its children. Masses lie on
// the memory's grid (leaf_mass), so the sum is exact and equals any other order's.
REDLINE_HD inline void tree_recompute(const TreeLayout& t, double* sum, int d, int64_t j) {
  const double* c = sum + t.offset[d + 1] + j * kFanout;
  constexpr int kQuarters = kFanout / 4;
  double q[kQuarters];
  for (int k = 0; k < kQuarters; ++k) q[k] = tree_quarter_sum(c + 4 * k);
  for (int w = 1; w < kQuarters; w *= 2) {
    for (int k = 0; k < kQuarters; k += 2 * w) q[k] = q[k] + q[k + w];
  }
  sum[t.offset[d] + j] = q[0];
}

// ---- the min tree: the top level's minimums ----------------------------------------------------
// The min tree stores one level: for each node of the sum tree's top level, the smallest
// tree_leaf_min of the sampleable leaves below it (+inf where there is none), and how many of those
// leaves hold it (in a one-level tree, the leaves' own mins and no counts). Both are exact, so
// every way of keeping them gives the same bits, and both devices keep them the same way: a leaf's
// new min lowers or ties its node's, an old one that held it lowers the count, and a node whose
// count falls to 0 (its last holder grew or left) is rescanned from its leaves. A node's minimum is
// then rescanned only when its last holder changes: rarely sampled (its priority is the smallest),
// but overwritten as the write cursor sweeps its node (3 to 52 rescans per 1,000 inserts in the
// model that docs/replay.md cites). Ties are counted, so many leaves at one priority (the same
// clipped or default value) cost no rescans.
REDLINE_HD inline int64_t tree_min_nodes(const TreeLayout& t) { return t.count[0]; }

// The top-level node above a leaf (the leaf itself in a one-level tree).
REDLINE_HD inline int64_t tree_top_of(const TreeLayout& t, int64_t slot) {
  return slot >> (kFanoutBits * (t.levels - 1));
}

// The leaves below top-level node j: [first, end).
REDLINE_HD inline void tree_top_leaves(const TreeLayout& t, int64_t j, int64_t* first,
                                       int64_t* end) {
  const int shift = kFanoutBits * (t.levels - 1);
  *first = j << shift;
  const int64_t e = (j + 1) << shift;
  *end = e < t.leaves ? e : t.leaves;
}

// A top node's min and count after one leaf's change from old_mass to new_mass, applied in turn
// (the CPU's order; a count left at 0 under a finite min means a rescan).
REDLINE_HD inline void tree_top_change(float* min, uint32_t* count, double old_mass,
                                       double new_mass) {
  if (old_mass > 0.0 && tree_leaf_min(old_mass) == *min) *count -= 1;
  if (new_mass > 0.0) {
    const float m = tree_leaf_min(new_mass);
    if (m < *min) {
      *min = m;
      *count = 1;
    } else if (m == *min) {
      *count += 1;
    }
  }
}

// Whether a leaf's change can move its top node's min or count, given the node's min read before
// the change: its new min reaches the node's, or its old one held it.
REDLINE_HD inline bool tree_top_touched(double old_mass, double new_mass, float top_min) {
  return (new_mass > 0.0 && tree_leaf_min(new_mass) <= top_min) ||
         (old_mass > 0.0 && tree_leaf_min(old_mass) == top_min);
}

// Inclusive prefix sums of a node's 16 children in a fixed order (Hillis-Steele: at distance 1, 2,
// 4, 8, p[j] = p[j - d] + p[j]), the order a GPU group of 16 lanes follows with four shuffles.
REDLINE_HD inline void tree_prefix_sums(const double* c, double* p) {
  for (int j = 0; j < kFanout; ++j) p[j] = c[j];
  for (int d = 1; d < kFanout; d *= 2) {
    for (int j = kFanout - 1; j >= d; --j) p[j] = p[j - d] + p[j];
  }
}

// One step of a descent: the first child j with positive mass whose prefix sum exceeds u (u made
// relative to it by subtracting the prefix before it). Children with zero mass are never chosen;
// if rounding leaves u at or past the end, the last positive child is taken and u becomes its mass,
// so a descent from a positive root always ends on a positive leaf.
REDLINE_HD inline int tree_choose_child(const double* c, double* u_io) {
  double p[kFanout];
  tree_prefix_sums(c, p);
  const double u = *u_io;
  int last_positive = 0;
  for (int j = 0; j < kFanout; ++j) {
    if (!(c[j] > 0.0)) continue;
    if (u < p[j]) {
      *u_io = u - (j > 0 ? p[j - 1] : 0.0);
      return j;
    }
    last_positive = j;
  }
  *u_io = c[last_positive];
  return last_positive;
}

// The sums and mins of the top level's rows (row r: nodes r*16 .. r*16+15, the level above the top,
// not stored), each by tree_combine; rows past the top level's end are 0 and +inf. Without mins
// (mn null), only the sums.
REDLINE_HD inline void tree_top_rows(const TreeLayout& t, const double* sum, const float* mn,
                                     double* row_sum, float* row_min) {
  float no_min[kFanout];
  for (int j = 0; j < kFanout; ++j) no_min[j] = bits_to_float(kFloatInfBits);
  for (int r = 0; r < kFanout; ++r) {
    const int64_t first = t.offset[0] + int64_t{r} * kFanout;
    if (int64_t{r} * kFanout < t.count[0]) {
      tree_combine(sum + first, mn != nullptr ? mn + first : no_min, &row_sum[r], &row_min[r]);
    } else {
      row_sum[r] = 0.0;
      row_min[r] = bits_to_float(kFloatInfBits);
    }
  }
}

// The total mass and the smallest leaf: the root that the stored levels would have, computed by
// tree_combine from the top level's rows.
REDLINE_HD inline void tree_top(const TreeLayout& t, const double* sum, const float* mn,
                                double* total, float* min_leaf) {
  double row_sum[kFanout];
  float row_min[kFanout];
  tree_top_rows(t, sum, mn, row_sum, row_min);
  tree_combine(row_sum, row_min, total, min_leaf);
}

// The leaf whose prefix-sum interval holds u (0 <= u, ideally u < the total): a row of the top
// level by its sum, a node in that row, then one node per stored level below.
REDLINE_HD inline int64_t tree_descend(const TreeLayout& t, const double* sum, double u) {
  double row_sum[kFanout];
  float row_min[kFanout];
  tree_top_rows(t, sum, nullptr, row_sum, row_min);  // the mins are not used here
  const int row = tree_choose_child(row_sum, &u);
  double c[kFanout];
  for (int j = 0; j < kFanout; ++j) {
    const int64_t n = int64_t{row} * kFanout + j;
    c[j] = n < t.count[0] ? sum[t.offset[0] + n] : 0.0;
  }
  int64_t node = int64_t{row} * kFanout + tree_choose_child(c, &u);
  for (int d = 0; d + 1 < t.levels; ++d) {
    const double* src = sum + t.offset[d + 1] + node * kFanout;
    for (int j = 0; j < kFanout; ++j) c[j] = src[j];  // one 128-byte line, loaded before the scan
    node = node * kFanout + tree_choose_child(c, &u);
  }
  return node;
}

// ---- powers: importance weights and leaf masses ----------------------------------------------

inline constexpr double kLn2Hi = 6.93147180369123816490e-01;  // ln 2 high part (exact * small int)
inline constexpr double kLn2Lo = 1.90821492927058770002e-10;  // ln 2 - kLn2Hi
inline constexpr double kInvLn2 = 1.44269504088896338700e+00;

// p * 2^k for k in [-2045, 2046], in at most two exact power-of-two steps (a result outside the
// double range rounds as one multiplication would). Selects, not branches (see weight_power).
REDLINE_HD inline double times_power_of_two(double p, int64_t k) {
  const bool high = k > 1023, low = k < -1022;
  const double two_to_1023 = bits_to_double(uint64_t{2046} << 52);
  const double two_to_minus_1022 = bits_to_double(uint64_t{1} << 52);
  p = p * (high ? two_to_1023 : (low ? two_to_minus_1022 : 1.0));
  k = high ? k - 1023 : (low ? k + 1022 : k);
  return p * bits_to_double(static_cast<uint64_t>(k + 1023) << 52);
}

// 1 / x for a normal, finite x > 0, without a division or a branch (see weight_power): a seed
// from the bits (2^-e (1 - f/2) for x = 2^e (1 + f): too large by at most 1/8), then five Newton
// steps in fused multiply-adds, each squaring the relative error (1/8, 2^-6, 2^-12, 2^-24, 2^-48,
// then the last step's rounding). The same bits on the CPU and every GPU.
REDLINE_HD inline double reciprocal(double x) {
  double r = bits_to_double((uint64_t{2046} << 52) - double_to_bits(x));
  for (int step = 0; step < 5; ++step) r = fma_d(r, fma_d(-x, r, 1.0), r);
  return r;
}

// e^r for |r| <= ln(2)/2 in float: the Taylor polynomial to r^7/7! (relative error about 1e-7).
REDLINE_HD inline float exp_reduced_float(float r) {
  float q = 1.0f / 5040.0f;
  q = fma_f(q, r, 1.0f / 720.0f);
  q = fma_f(q, r, 1.0f / 120.0f);
  q = fma_f(q, r, 1.0f / 24.0f);
  q = fma_f(q, r, 1.0f / 6.0f);
  q = fma_f(q, r, 0.5f);
  q = fma_f(q, r, 1.0f);
  return fma_f(q, r, 1.0f);
}

// ln x for a finite x > 0 at float precision, without a division or a branch (see weight_power):
// the exponent exact, and the mantissa m, rounded to float and kept in [sqrt(1/2), sqrt(2)),
// through the atanh series of s = (m - 1) / (m + 1) to s^9, with 1 / (m + 1) from three Newton
// steps on a linear seed (relative error 1.5e-2, 2.2e-4, 5e-8, then float rounding). Absolute
// error about 1e-7 (ReplayMath.LogFloatPrecisionIsAccurate).
REDLINE_HD inline double log_float_precision(double x) {
  using philox_detail::add_rn;
  using philox_detail::mul_rn;
  const uint64_t raw = double_to_bits(x);
  const uint64_t lifted = double_to_bits(x * 18014398509481984.0);  // 2^54: subnormals made normal
  const bool subnormal = ((raw >> 52) & 0x7FF) == 0;
  const uint64_t bits = subnormal ? lifted : raw;
  int e = static_cast<int>((bits >> 52) & 0x7FF) - (subnormal ? 54 : 0) - 1023;
  float m = static_cast<float>(
      bits_to_double((bits & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull));  // [1, 2]
  const bool high = m > 1.41421356f;
  m = mul_rn(m, high ? 0.5f : 1.0f);  // exact either way
  e += high ? 1 : 0;
  const float d = add_rn(m, 1.0f);          // in [1.707, 2.415]
  float r = fma_f(-0.23902f, d, 0.98508f);  // the linear seed of least relative error there
  for (int step = 0; step < 3; ++step) r = fma_f(r, fma_f(-d, r, 1.0f), r);
  const float log_m = log_from_atanh_ratio(mul_rn(add_rn(m, -1.0f), r));
  return static_cast<double>(e) * (kLn2Hi + kLn2Lo) + static_cast<double>(log_m);
}

// e^t for |t| <= 745.2 at float precision: the split t = k ln 2 + r in double, e^r in float, and
// the exact scaling by 2^k (relative error about 2e-7).
REDLINE_HD inline double exp_float_precision(double t) {
  const double scaled = t * kInvLn2;
  const auto k = static_cast<int64_t>(scaled >= 0.0 ? scaled + 0.5 : scaled - 0.5);  // round
  const double dk = static_cast<double>(k);
  const float r = static_cast<float>((t - dk * kLn2Hi) - dk * kLn2Lo);  // |r| <= 0.35
  return times_power_of_two(static_cast<double>(exp_reduced_float(r)), k);
}

// ratio^y for ratio >= 1 - 2^-24 and -1 <= y <= 0, rounded to float: an importance weight, from
// the float precision log and exp, which is all a float result needs (relative error about 3e-7,
// against about thirty dependent double operations for a double-precision power). Selects, not
// early returns: a GPU draw computes it for each candidate of its last choice in straight-line
// code, overlapped with that choice.
REDLINE_HD inline float weight_power(double ratio, double y) {
  const double t = y * log_float_precision(ratio);  // in [-745.2, 0] for ratios up to 2^1024
  const auto w = static_cast<float>(exp_float_precision(t));
  return y == 0.0 || ratio == 1.0 ? 1.0f : (t < -745.2 ? 0.0f : w);
}

// p^alpha for a finite priority p > 0 and alpha in [0, 1]: a leaf's mass, from the float
// precision log and exp. The result has a float's precision (relative error below 5e-7), which is
// all a priority has: priorities are floats. It is exact where alpha is 1 or 0 or p is 1. It sits
// on the GPU update's critical path: a double-precision power (double log and exp polynomials)
// measured 0.18 to 0.41 µs slower there.
REDLINE_HD inline double priority_power(double p, double alpha) {
  if (alpha == 1.0) return p;
  if (alpha == 0.0 || p == 1.0) return 1.0;
  return exp_float_precision(alpha * log_float_precision(p));
}

// ---- transitions
// ----------------------------------------------------------------------------------

inline constexpr uint8_t kTerminated = 1;
inline constexpr uint8_t kTruncated = 2;
inline constexpr uint8_t kEpisodeStart = 4;

// A fault a kernel found, written to pinned host memory (GPU) for the host to raise.
enum FaultCode : int32_t {
  kFaultNone = 0,
  kFaultPriority = 1,  // a priority that is not finite and > 0 (value, position)
  kFaultEmpty = 2,     // sample from a memory with nothing sampleable
  kFaultBeta = 3,      // beta outside [0, 1] (value)
  kFaultIndex = 4,     // an index outside [0, capacity) (value, position)
};
struct DeviceFault {
  int32_t code;
  int32_t position;
  double value;
};

// Everything a replay kernel needs, as plain values and pointers on the memory's device.
struct ReplayView {
  int64_t rows = 0;         // R
  int64_t envs = 0;         // N
  int64_t frame_numel = 0;  // elements of one stored frame
  int64_t stack = 1;        // k
  int64_t n_step = 1;
  double gamma = 0.99;
  double alpha = 1.0;
  // Masses are multiples of 2^-unit_shift (leaf_mass); priorities above priority_limit count as
  // priority_limit. See mass_unit_shift; set_mass_grid sets these three.
  int64_t unit_shift = 0;
  double mass_scale = 1.0;  // 2^unit_shift
  double mass_unit = 1.0;   // 2^-unit_shift
  double priority_limit = 1.0;
  bool prioritized = false;
  bool pad_zeros = false;
  int obs_elem = 1;     // bytes per observation element: 1 (u8) or 4 (f32)
  int action_elem = 8;  // bytes per stored action: 4 (i32) or 8 (i64)
  uint64_t seed = 0;
  uint64_t stream = 0;
  TreeLayout tree;
  void* frames = nullptr;           // (R*N, frame_numel) obs dtype
  void* actions = nullptr;          // (R*N,) i32 or i64
  float* rewards = nullptr;         // (R*N,)
  uint8_t* flags = nullptr;         // (R*N,) kTerminated | kTruncated | kEpisodeStart
  uint8_t* prev_done = nullptr;     // (N,) 1 when the env's last step ended its episode
  double* sum = nullptr;            // (tree.nodes,)
  float* min = nullptr;             // (tree_min_nodes(tree),) see tree_min_nodes
  uint32_t* min_count = nullptr;    // (tree_min_nodes(tree),) leaves holding each top node's min
  int64_t* rows_written = nullptr;  // (1,) rows inserted so far (the cursor is this mod R)
  double* max_priority = nullptr;   // (1,) running maximum priority (starts at 1)
  int64_t* rng_offset = nullptr;    // (1,) Philox block offset
  DeviceFault* fault = nullptr;     // pinned host memory on a GPU, nullptr on the CPU
  uint32_t* blocks_done = nullptr;  // (1,) the GPU sample's finished blocks, 0 between launches
};

REDLINE_HD inline int64_t wrap_row(int64_t row, int64_t rows) {
  row %= rows;
  return row < 0 ? row + rows : row;
}

// A leaf's mass for priority p > 0: p^alpha (priority_power, with p taken at most
// priority_limit), rounded to the nearest multiple of the memory's unit 2^-unit_shift, and at
// least one unit. On that grid every sum of masses is exact (mass_unit_shift), so the sum tree's
// nodes do not depend on the order of the additions: the GPU's update adds each leaf's change to
// its ancestors with atomic adds and still gives the CPU's bits. Scaling by powers of two is exact.
REDLINE_HD inline double leaf_mass(const ReplayView& v, double p) {
  const double m = priority_power(p < v.priority_limit ? p : v.priority_limit, v.alpha);
  const double units = rint(m * v.mass_scale);  // exact, as times_power_of_two would be
  return (units > 1.0 ? units : 1.0) * v.mass_unit;
}

// The unit of a memory's masses: the largest 2^-s for which capacity leaves of the largest mass
// (priority_limit^alpha) sum to at most 2^53 units, so that every sum of masses is an exact double
// (as is every partial sum, and each leaf's change). With alpha 0.6 and the default limit 1e3
// (largest mass 63.1) the unit is 2^-30 at 1e5 transitions, 2^-23 at 1e7 and 2^-20 at 1e8.
inline int64_t mass_unit_shift(int64_t capacity, double alpha, double priority_limit) {
  const double largest = static_cast<double>(capacity) * priority_power(priority_limit, alpha);
  int bits = 0;
  const double fraction = std::frexp(largest, &bits);  // largest = fraction * 2^bits
  if (fraction == 0.5) bits -= 1;                      // an exact power of two needs no more
  return 53 - bits;
}

// Sets a view's grid: unit_shift and the two scales leaf_mass multiplies by.
inline void set_mass_grid(ReplayView& v, int64_t capacity) {
  v.unit_shift = mass_unit_shift(capacity, v.alpha, v.priority_limit);
  v.mass_scale = std::ldexp(1.0, static_cast<int>(v.unit_shift));
  v.mass_unit = std::ldexp(1.0, -static_cast<int>(v.unit_shift));
}

// The leaf value of a transition that becomes sampleable.
REDLINE_HD inline double entry_leaf_value(const ReplayView& v, double max_priority) {
  return v.prioritized ? leaf_mass(v, max_priority) : 1.0;
}

// Rows whose leaves change when global row g is inserted (before the counter advances): the row
// being overwritten (0), the k-1 oldest rows whose stacks lost their history (0, once the memory
// has wrapped), and row g - n, which becomes complete (entry value, or 0 if it was truncated).
// Returns the number of rows written to `rows_out` (at most kMaxStack + 1); `completed` is the
// completed row or -1.
REDLINE_HD inline int insert_changed_rows(const ReplayView& v, int64_t g, int64_t* rows_out,
                                          int64_t* completed) {
  int m = 0;
  const int64_t r = wrap_row(g, v.rows);
  rows_out[m++] = r;
  if (g >= v.rows) {
    for (int64_t j = 1; j < v.stack; ++j) rows_out[m++] = wrap_row(r + j, v.rows);
  }
  *completed = -1;
  if (g >= v.n_step) {
    *completed = wrap_row(g - v.n_step, v.rows);
    rows_out[m++] = *completed;
  }
  return m;
}

// n-step window from row t of column e: the discounted reward sum, the bootstrap discount and the
// row of the next observation. The window stops after a terminated step (discount 0) and before
// a truncated step (whose observation is the last real one of its episode).
struct NStepResult {
  double ret;
  double discount;
  int64_t next_row;
};

// What the n-step and stack walks read of one column e: its flags and rewards by row. ColumnRows
// reads them from the memory; the GPU's gather hands the walks a window of them that its threads
// loaded into shared memory together (replay_data.cu), so both devices run the same walks.
struct ColumnRows {
  const ReplayView* v;
  int64_t e;
  REDLINE_HD uint8_t flag(int64_t row) const { return v->flags[row * v->envs + e]; }
  REDLINE_HD float reward(int64_t row) const { return v->rewards[row * v->envs + e]; }
};

template <typename Rows>
REDLINE_HD inline NStepResult n_step_window(const ReplayView& v, int64_t t, const Rows& column) {
  NStepResult out{0.0, 0.0, wrap_row(t + 1, v.rows)};
  double g = 1.0;
  for (int64_t j = 0; j < v.n_step; ++j) {
    const int64_t row = wrap_row(t + j, v.rows);
    const uint8_t fl = column.flag(row);
    if (j > 0 && (fl & kTruncated)) {
      out.discount = g;
      out.next_row = row;
      return out;
    }
    out.ret = out.ret + g * static_cast<double>(column.reward(row));
    g = g * v.gamma;
    out.next_row = wrap_row(row + 1, v.rows);
    if (fl & kTerminated) {
      out.discount = 0.0;
      return out;
    }
  }
  out.discount = g;
  return out;
}

REDLINE_HD inline NStepResult n_step_window(const ReplayView& v, int64_t t, int64_t e) {
  return n_step_window(v, t, ColumnRows{&v, e});
}

// Source rows of the k frames (oldest first) of the stack that ends at row t of a column; frames
// before the episode's start are -1 (zeros) or the start row (repeat_first). Reads the flags of
// rows t - (k - 1) .. t at most.
template <typename Rows>
REDLINE_HD inline void stack_source_rows(const ReplayView& v, int64_t t, const Rows& column,
                                         int64_t* rows_out) {
  int64_t cur = t;
  bool stopped = (column.flag(t) & kEpisodeStart) != 0;
  rows_out[v.stack - 1] = t;
  for (int64_t f = v.stack - 2; f >= 0; --f) {
    if (!stopped) {
      cur = wrap_row(cur - 1, v.rows);
      rows_out[f] = cur;
      stopped = (column.flag(cur) & kEpisodeStart) != 0;
    } else {
      rows_out[f] = v.pad_zeros ? -1 : cur;
    }
  }
}

REDLINE_HD inline void stack_source_rows(const ReplayView& v, int64_t t, int64_t e,
                                         int64_t* rows_out) {
  stack_source_rows(v, t, ColumnRows{&v, e}, rows_out);
}

// The stratified draw of sample i of `batch`: a point in slice i of the total mass, in two parts.
// The position, i plus a uniform number from Philox, needs neither the tree nor the batch, so the
// GPU makes it before the kernel ahead of it has finished; the point scales it by the slice's mass.
REDLINE_HD inline double stratified_position(const ReplayView& v, uint64_t base_offset, int64_t i) {
  Philox gen(v.seed, v.stream, base_offset + static_cast<uint64_t>(i));
  return static_cast<double>(i) + gen.uniform_double();
}
REDLINE_HD inline double stratified_point(double position, int64_t batch, double total) {
  const double slice = total / static_cast<double>(batch);
  return position * slice;
}

// Importance weight of a leaf, normalized by the largest weight: (leaf / min_leaf)^-beta, given
// reciprocal(min_leaf), which a GPU draw makes early, off its path.
REDLINE_HD inline float importance_weight(const ReplayView& v, double leaf, double min_leaf_inverse,
                                          double beta) {
  const float w = weight_power(leaf * min_leaf_inverse, -beta);
  return v.prioritized ? w : 1.0f;
}

}  // namespace redline::rl::replay
