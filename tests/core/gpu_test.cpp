// GPU parity: copies, views, random streams bit-identical to the CPU, allocator reuse under
// capture, and graph replay drawing new random numbers. Skipped where no GPU is usable.
#include <gtest/gtest.h>

#include <cstring>

#include "redline/core/allocator.h"
#include "redline/core/random.h"
#include "redline/core/stream.h"
#include "redline/core/tensor.h"
#include "test_util.h"

namespace redline {
namespace {

const Device kGpu = Device::gpu(0);

template <typename T>
bool bit_equal(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

TEST(GpuTensor, RoundTripEveryDType) {
  REDLINE_REQUIRE_GPU();
  for (DType t : kAllDTypes) {
    const Tensor host = Tensor::arange(0, 1000, 1, t);
    const Tensor dev = host.to(kGpu);
    EXPECT_EQ(dev.device(), kGpu);
    const Tensor back = dev.to(Device::cpu());
    EXPECT_EQ(std::memcmp(back.raw_data(), host.raw_data(), host.nbytes()), 0) << dtype_name(t);
  }
}

TEST(GpuTensor, FillsAndStridedCopiesMatchCpu) {
  REDLINE_REQUIRE_GPU();
  for (DType t : kAllDTypes) {
    EXPECT_EQ(Tensor::full({3, 5}, 3.0, t, kGpu).at({2, 4}), t == DType::boolean ? 1 : 3);
  }
  const Tensor cpu = Tensor::arange(0, 2 * 3 * 4 * 5, 1, DType::f32).view({2, 3, 4, 5});
  const Tensor gpu = cpu.to(kGpu);
  const Tensor pc = cpu.permute({3, 1, 0, 2}).slice(0, 1, 5, 2).contiguous();
  const Tensor pg = gpu.permute({3, 1, 0, 2}).slice(0, 1, 5, 2).contiguous();
  EXPECT_EQ(pg.device(), kGpu);
  EXPECT_EQ(pc.to_vector<float>(), pg.to_vector<float>());
  // Host -> non-contiguous device view and back.
  Tensor target = Tensor::zeros({5, 4}, DType::f32, kGpu);
  target.transpose(0, 1).copy_from(Tensor::arange(0, 20, 1, DType::f32).view({4, 5}));
  EXPECT_EQ(target.at({4, 3}), 19);
  EXPECT_EQ(target.at({1, 0}), 1);
  // Device -> device between tensors, and printing from the device.
  Tensor copy = Tensor::empty({5, 4}, DType::f32, kGpu);
  copy.copy_from(target);
  EXPECT_EQ(copy.to_vector<float>(), target.to_vector<float>());
  EXPECT_NE(copy.str().find("device=gpu:0"), std::string::npos);
}

TEST(GpuRandom, StreamsAreBitIdenticalToCpu) {
  REDLINE_REQUIRE_GPU();
  for (int64_t n : {1, 3, 4, 1000, 1 << 20, 3000001}) {
    Generator cg(0xC0FFEE, 5), gg(0xC0FFEE, 5, kGpu);
    cg.set_offset(123);
    gg.set_offset(123);
    Tensor cu = Tensor::empty({n}, DType::f32), gu = Tensor::empty({n}, DType::f32, kGpu);
    uniform_(cu, cg);
    uniform_(gu, gg);
    EXPECT_TRUE(bit_equal(cu.to_vector<float>(), gu.to_vector<float>())) << "uniform n=" << n;
    Tensor cn = Tensor::empty({n}, DType::f32), gn = Tensor::empty({n}, DType::f32, kGpu);
    normal_(cn, cg);
    normal_(gn, gg);
    EXPECT_TRUE(bit_equal(cn.to_vector<float>(), gn.to_vector<float>())) << "normal n=" << n;
    for (DType t : {DType::i32, DType::i64}) {
      Tensor ci = Tensor::empty({n}, t), gi = Tensor::empty({n}, t, kGpu);
      randint_(ci, 1000003, cg);
      randint_(gi, 1000003, gg);
      if (t == DType::i32) {
        EXPECT_TRUE(bit_equal(ci.to_vector<int32_t>(), gi.to_vector<int32_t>())) << "int n=" << n;
      } else {
        EXPECT_TRUE(bit_equal(ci.to_vector<int64_t>(), gi.to_vector<int64_t>())) << "int n=" << n;
      }
    }
    EXPECT_EQ(cg.offset(), gg.offset());
  }
}

TEST(GpuGraph, ReplayDrawsNewNumbersAndMatchesCpu) {
  REDLINE_REQUIRE_GPU();
  Generator gg(17, 2, kGpu), cg(17, 2);
  Tensor out = Tensor::empty({4096}, DType::f32, kGpu);
  uniform_(out, gg);  // warm-up outside the capture
  Tensor cpu_warm = Tensor::empty({4096}, DType::f32);
  uniform_(cpu_warm, cg);
  StepGraph graph(kGpu);
  graph.capture([&] { uniform_(out, gg); });
  std::vector<float> previous;
  Tensor expected = Tensor::empty({4096}, DType::f32);
  for (int replay = 0; replay < 5; ++replay) {
    graph.replay();
    const std::vector<float> got = out.to_vector<float>();
    uniform_(expected, cg);
    EXPECT_TRUE(bit_equal(got, expected.to_vector<float>())) << "replay " << replay;
    EXPECT_NE(got, previous);
    previous = got;
  }
  EXPECT_EQ(gg.offset(), cg.offset());
}

TEST(GpuGraph, CapturedAllocationsKeepTheirAddresses) {
  REDLINE_REQUIRE_GPU();
  CachingAllocator& alloc = allocator_for(kGpu);
  Generator gen(1, 1, kGpu);
  Tensor kept;
  void* temporary_address = nullptr;
  StepGraph graph(kGpu);
  graph.capture([&] {
    Tensor temporary = Tensor::empty({1 << 16}, DType::f32, kGpu);  // freed inside the capture
    uniform_(temporary, gen);
    temporary_address = temporary.raw_data();
    kept = Tensor::empty({1 << 16}, DType::f32, kGpu);
    kept.copy_from(temporary);
  });
  // Outside the graph, new allocations of the same size never get the captured blocks.
  for (int i = 0; i < 4; ++i) {
    Tensor other = Tensor::empty({1 << 16}, DType::f32, kGpu);
    EXPECT_NE(other.raw_data(), temporary_address);
    EXPECT_NE(other.raw_data(), kept.raw_data());
    other.fill_(-1);
  }
  const size_t hits_before = alloc.stats().cache_hits;
  graph.replay();
  graph.replay();
  const std::vector<float> a = kept.to_vector<float>();
  for (float v : a) ASSERT_TRUE(v >= 0 && v < 1) << "a captured address was overwritten";
  EXPECT_EQ(alloc.stats().cache_hits, hits_before);  // replays allocate nothing
}

TEST(GpuEvents, TimeDeviceWork) {
  REDLINE_REQUIRE_GPU();
  Tensor big = Tensor::empty({1 << 24}, DType::f32, kGpu);
  Event start(kGpu), end(kGpu);
  start.record();
  big.fill_(1.0);
  end.record();
  const float ms = end.elapsed_ms_since(start);
  EXPECT_GT(ms, 0.0f);
  EXPECT_LT(ms, 1000.0f);
}

TEST(GpuDevice, OutOfRangeIndexIsRefused) {
  REDLINE_REQUIRE_GPU();
  try {
    Tensor::zeros({1}, DType::f32, Device::gpu(gpu_count()));
    FAIL() << "expected redline::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GPU(s)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace redline
