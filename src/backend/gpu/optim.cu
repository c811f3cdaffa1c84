// Fused multi-tensor optimizer steps: one launch updates up to kSlotsPerLaunch parameter tensors
// (update and state in one pass), each block taking one chunk of one tensor, as PyTorch's
// multi_tensor_apply. lr and the step count are read from device memory, so captured graphs
// replay them. CPU twins: src/backend/cpu/ops_optim.cpp; the maths: src/nn/optim/optim_math.h.
#include <algorithm>

#include "backend/gpu/ops_kernels.h"
#include "backend/gpu/ops_launch.h"

namespace redline::gpu {
namespace {

using optim::OptimSlot;

constexpr int kSlotsPerLaunch = 32;
constexpr int64_t kChunk = 4096;  // elements per block
// Elements per thread per pass of the Adam kernel: its four loads for all of them are issued before
// the first store, so more bytes are in flight (one element at a time reached 67% of copy
// bandwidth on the H200).
constexpr int kUnroll = 4;

// Passed by value (under the 4 KiB kernel-argument limit): slots and each slot's first block.
struct SlotTable {
  OptimSlot slots[kSlotsPerLaunch];
  int64_t first_block[kSlotsPerLaunch + 1];
  int count;
};

// The slot and element range of this block.
__device__ inline const OptimSlot& block_slot(const SlotTable& t, int64_t* begin, int64_t* end) {
  int s = 0;
  while (s + 1 < t.count && t.first_block[s + 1] <= blockIdx.x) ++s;
  const OptimSlot& slot = t.slots[s];
  *begin = (blockIdx.x - t.first_block[s]) * kChunk;
  *end = *begin + kChunk < slot.n ? *begin + kChunk : slot.n;
  return slot;
}

__global__ void sgd_kernel(SlotTable t, const float* lr, const int64_t* step, optim::SgdConfig c) {
  int64_t begin, end;
  const OptimSlot& slot = block_slot(t, &begin, &end);
  const float rate = *lr;
  const int64_t n = *step;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    float unused = 0.0f;
    optim::sgd_update(slot.param[i], slot.grad[i], slot.state0 != nullptr ? slot.state0[i] : unused,
                      rate, n, c);
  }
}

__global__ void adam_kernel(SlotTable t, const float* lr, const int64_t* step,
                            optim::AdamConfig c) {
  int64_t begin, end;
  const OptimSlot& slot = block_slot(t, &begin, &end);
  const float rate = *lr;
  const float n = static_cast<float>(*step);
  const float bias1 = 1.0f - powf(c.beta1, n);
  const float bias2_sqrt = sqrtf(1.0f - powf(c.beta2, n));
  // kUnroll elements per thread per pass, every load before the first store (see kUnroll).
  for (int64_t first = begin + threadIdx.x; first < end; first += kUnroll * blockDim.x) {
    float p[kUnroll], g[kUnroll], m[kUnroll], v[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const int64_t i = first + k * blockDim.x;
      const bool in = i < end;
      p[k] = in ? slot.param[i] : 0.0f;
      g[k] = in ? slot.grad[i] : 0.0f;
      m[k] = in ? slot.state0[i] : 0.0f;
      v[k] = in ? slot.state1[i] : 0.0f;
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const int64_t i = first + k * blockDim.x;
      if (i >= end) continue;
      optim::adam_update(p[k], g[k], m[k], v[k], rate, bias1, bias2_sqrt, c);
      slot.param[i] = p[k];
      slot.state0[i] = m[k];
      slot.state1[i] = v[k];
    }
  }
}

__global__ void rmsprop_kernel(SlotTable t, const float* lr, optim::RmspropConfig c) {
  int64_t begin, end;
  const OptimSlot& slot = block_slot(t, &begin, &end);
  const float rate = *lr;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    float unused_avg = 0.0f, unused_buf = 0.0f;
    optim::rmsprop_update(slot.param[i], slot.grad[i], slot.state0[i],
                          slot.state1 != nullptr ? slot.state1[i] : unused_avg,
                          slot.state2 != nullptr ? slot.state2[i] : unused_buf, rate, c);
  }
}

// Calls launch(table, blocks) for each group of up to kSlotsPerLaunch non-empty slots.
template <typename Launch>
void for_each_group(const OptimSlot* slots, int count, Launch launch) {
  SlotTable table{};
  int64_t blocks = 0;
  auto flush = [&] {
    if (table.count == 0) return;
    table.first_block[table.count] = blocks;
    launch(table, blocks);
    GPU_CHECK_LAUNCH();
    table = SlotTable{};
    blocks = 0;
  };
  for (int s = 0; s < count; ++s) {
    if (slots[s].n == 0) continue;
    table.slots[table.count] = slots[s];
    table.first_block[table.count] = blocks;
    blocks += (slots[s].n + kChunk - 1) / kChunk;
    if (++table.count == kSlotsPerLaunch) flush();
  }
  flush();
}

}  // namespace

void sgd_step(const OptimSlot* slots, int count, const float* lr, const int64_t* step,
              const optim::SgdConfig& c, StreamHandle stream) {
  for_each_group(slots, count, [&](const SlotTable& t, int64_t blocks) {
    sgd_kernel<<<static_cast<unsigned>(blocks), kOpThreads, 0, as_stream(stream)>>>(t, lr, step, c);
  });
}

void adam_step(const OptimSlot* slots, int count, const float* lr, const int64_t* step,
               const optim::AdamConfig& c, StreamHandle stream) {
  for_each_group(slots, count, [&](const SlotTable& t, int64_t blocks) {
    adam_kernel<<<static_cast<unsigned>(blocks), kOpThreads, 0, as_stream(stream)>>>(t, lr, step,
                                                                                     c);
  });
}

void rmsprop_step(const OptimSlot* slots, int count, const float* lr, const optim::RmspropConfig& c,
                  StreamHandle stream) {
  for_each_group(slots, count, [&](const SlotTable& t, int64_t blocks) {
    rmsprop_kernel<<<static_cast<unsigned>(blocks), kOpThreads, 0, as_stream(stream)>>>(t, lr, c);
  });
}

}  // namespace redline::gpu
