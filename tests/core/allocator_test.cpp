// The caching allocator's logic, exercised through a counting host backend.
#include "redline/core/allocator.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "redline/core/stream.h"
#include "redline/core/tensor.h"

namespace redline {
namespace {

int g_raw_allocs = 0;
int g_raw_frees = 0;
size_t g_raw_limit = SIZE_MAX;  // raw allocations larger than this fail (out of memory)
void* counting_alloc(size_t bytes, int) {
  if (bytes > g_raw_limit) return nullptr;
  ++g_raw_allocs;
  return std::aligned_alloc(256, bytes);
}
void counting_free(void* p, int) {
  ++g_raw_frees;
  std::free(p);
}

class AllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override { g_raw_allocs = g_raw_frees = 0, g_raw_limit = SIZE_MAX; }
  CachingAllocator alloc{Device::cpu(), {counting_alloc, counting_free}};
  void* stream_a = reinterpret_cast<void*>(0x1);
  void* stream_b = reinterpret_cast<void*>(0x2);
};

TEST_F(AllocatorTest, SizeClasses) {
  EXPECT_EQ(CachingAllocator::round_size(0), 512u);
  EXPECT_EQ(CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingAllocator::round_size(513), 1024u);
  EXPECT_EQ(CachingAllocator::round_size(1 << 20), size_t{1} << 20);
  EXPECT_EQ(CachingAllocator::round_size((1 << 20) + 1), size_t{2} << 20);
  EXPECT_EQ(CachingAllocator::round_size((5 << 20) + 7), size_t{6} << 20);
}

TEST_F(AllocatorTest, ReusesFreedBlocksOnTheSameStreamOnly) {
  void* p = alloc.allocate(1000, stream_a);
  alloc.deallocate(p);
  EXPECT_EQ(alloc.allocate(900, stream_a), p);  // same size class, same stream: reused
  void* q = alloc.allocate(900, stream_b);      // another stream: a new block
  EXPECT_NE(q, p);
  EXPECT_EQ(g_raw_allocs, 2);
  const AllocatorStats s = alloc.stats();
  EXPECT_EQ(s.allocations, 3u);
  EXPECT_EQ(s.cache_hits, 1u);
  EXPECT_EQ(s.current_bytes, 2048u);
}

TEST_F(AllocatorTest, CountersTrackCurrentAndPeak) {
  void* a = alloc.allocate(4096, stream_a);
  void* b = alloc.allocate(8192, stream_a);
  EXPECT_EQ(alloc.stats().current_bytes, 12288u);
  alloc.deallocate(a);
  EXPECT_EQ(alloc.stats().current_bytes, 8192u);
  EXPECT_EQ(alloc.stats().peak_bytes, 12288u);
  EXPECT_EQ(alloc.stats().reserved_bytes, 12288u);
  alloc.reset_peak();
  EXPECT_EQ(alloc.stats().peak_bytes, 8192u);
  alloc.empty_cache();  // frees the cached 4096-byte block
  EXPECT_EQ(alloc.stats().reserved_bytes, 8192u);
  EXPECT_EQ(g_raw_frees, 1);
  alloc.deallocate(b);
}

TEST_F(AllocatorTest, SmallRequestDoesNotTakeAHugeBlock) {
  void* big = alloc.allocate(64 << 20, stream_a);
  alloc.deallocate(big);
  void* small = alloc.allocate(4 << 20, stream_a);
  EXPECT_NE(small, big);
}

TEST_F(AllocatorTest, PrivatePoolKeepsItsBlocks) {
  const PoolId pool = alloc.create_pool();
  alloc.set_thread_pool(pool);
  void* captured = alloc.allocate(2048, stream_a);
  alloc.deallocate(captured);                           // back into the private pool
  EXPECT_EQ(alloc.allocate(2048, stream_a), captured);  // reused inside the pool
  alloc.deallocate(captured);
  alloc.set_thread_pool(kDefaultPool);
  void* outside = alloc.allocate(2048, stream_a);
  EXPECT_NE(outside, captured);  // the default pool never sees the pool's block
  alloc.deallocate(outside);
  alloc.release_pool(pool);  // the graph is gone: its blocks join the default pool
  void* x = alloc.allocate(2048, stream_a);
  void* y = alloc.allocate(2048, stream_a);
  EXPECT_TRUE(x == captured || y == captured);
  EXPECT_THROW(alloc.set_thread_pool(pool), Error);
}

TEST_F(AllocatorTest, OutOfMemoryFreesTheCacheThenReports) {
  void* a = alloc.allocate(8 << 20, stream_a);
  alloc.deallocate(a);
  g_raw_limit = 4 << 20;
  try {
    alloc.allocate(16 << 20, stream_a);
    FAIL() << "expected an out-of-memory error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory on cpu"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("16777216 bytes"), std::string::npos) << e.what();
  }
  EXPECT_EQ(g_raw_frees, 1);  // the cached block was returned before giving up
}

TEST(CpuTensorAllocator, TensorsReturnMemory) {
  CachingAllocator& cpu = allocator_for(Device::cpu());
  const size_t before = cpu.stats().current_bytes;
  {
    Tensor t = Tensor::zeros({1000, 1000}, DType::f32);
    EXPECT_GE(cpu.stats().current_bytes, before + 4000000);
  }
  EXPECT_EQ(cpu.stats().current_bytes, before);
}

TEST(StepGraph, CpuReplayCallsTheStep) {
  int calls = 0;
  StepGraph graph(Device::cpu());
  EXPECT_THROW(graph.replay(), Error);
  graph.capture([&] { ++calls; });
  EXPECT_EQ(calls, 0);
  graph.replay();
  graph.replay();
  EXPECT_EQ(calls, 2);
  EXPECT_THROW(graph.capture([] {}), Error);
}

TEST(Event, CpuEventsMeasureHostTime) {
  Event start(Device::cpu()), end(Device::cpu());
  start.record();
  volatile double x = 0;
  for (int i = 0; i < 100000; ++i) x = x + i;
  end.record();
  EXPECT_GE(end.elapsed_ms_since(start), 0.0f);
}

}  // namespace
}  // namespace redline
