#include "redline/core/allocator.h"

#include <cstdlib>
#include <memory>

#include "backend/gpu_api.h"
#include "redline/core/error.h"

namespace redline {
namespace {

constexpr size_t kSmallLimit = size_t{1} << 20;  // 1 MiB
constexpr size_t kSmallRound = 512;
constexpr size_t kLargeRound = size_t{2} << 20;  // 2 MiB

thread_local std::unordered_map<const CachingAllocator*, PoolId> t_thread_pool;

void* cpu_raw_alloc(size_t bytes, int) { return std::aligned_alloc(256, bytes); }
void cpu_raw_free(void* ptr, int) { std::free(ptr); }
void* gpu_raw_alloc(size_t bytes, int device) { return gpu::malloc(bytes, device); }
void gpu_raw_free(void* ptr, int device) { gpu::free(ptr, device); }

std::string mib(size_t bytes) {
  return format("{} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

}  // namespace

CachingAllocator::CachingAllocator(Device device, RawBackend raw) : device_(device), raw_(raw) {
  pools_[kDefaultPool];
}

CachingAllocator::~CachingAllocator() {
  // Return everything we own to the device; blocks still referenced at process exit are leaked
  // deliberately by the registry (see allocator_for), never freed twice.
  for (auto& [ptr, block] : blocks_) raw_.free(ptr, device_.index);
}

size_t CachingAllocator::round_size(size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes <= kSmallLimit) return (bytes + kSmallRound - 1) / kSmallRound * kSmallRound;
  return (bytes + kLargeRound - 1) / kLargeRound * kLargeRound;
}

void* CachingAllocator::take_cached(PoolState& pool, size_t size, void* stream) {
  auto lists = pool.free_by_stream.find(stream);
  if (lists == pool.free_by_stream.end()) return nullptr;
  FreeList& free_list = lists->second;
  auto it = free_list.lower_bound(size);
  // Never hand a block more than twice the request: a small tensor must not pin a huge block.
  if (it == free_list.end() || it->first > 2 * size) return nullptr;
  void* ptr = it->second;
  free_list.erase(it);
  return ptr;
}

void* CachingAllocator::allocate(size_t bytes, void* stream) {
  const size_t size = round_size(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.allocations;
  const auto pool_it = t_thread_pool.find(this);
  const PoolId pool_id = pool_it == t_thread_pool.end() ? kDefaultPool : pool_it->second;
  PoolState& pool = pools_[pool_id];

  void* ptr = take_cached(pool, size, stream);
  if (ptr != nullptr) {
    ++stats_.cache_hits;
  } else {
    ptr = raw_.alloc(size, device_.index);
    if (ptr == nullptr) {  // free what the default pool caches and try once more
      release_cached_locked(pools_[kDefaultPool]);
      ptr = raw_.alloc(size, device_.index);
    }
    if (ptr == nullptr) {
      size_t free_bytes = 0, total_bytes = 0;
      if (device_.is_gpu()) gpu::mem_info(device_.index, &free_bytes, &total_bytes);
      REDLINE_FAIL("out of memory on {}: asked for {} ({} bytes), {} in use by redline{}", device_,
                   mib(size), size, mib(stats_.current_bytes),
                   device_.is_gpu()
                       ? format(", {} free of {} on the device", mib(free_bytes), mib(total_bytes))
                       : std::string());
    }
    ++stats_.raw_allocations;
    stats_.reserved_bytes += size;
  }
  blocks_[ptr] = Block{size, stream, pool_id};
  stats_.current_bytes += size;
  if (stats_.current_bytes > stats_.peak_bytes) stats_.peak_bytes = stats_.current_bytes;
  return ptr;
}

void CachingAllocator::deallocate(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.find(ptr);
  REDLINE_CHECK(it != blocks_.end(), "deallocate on {} of a pointer this allocator never gave out",
                device_);
  Block& block = it->second;
  stats_.current_bytes -= block.size;
  PoolState* pool = &pools_[block.pool];
  if (pool->released) {  // its graph is gone: the block joins the default pool
    block.pool = kDefaultPool;
    pool = &pools_[kDefaultPool];
  }
  pool->free_by_stream[block.stream].emplace(block.size, ptr);
}

PoolId CachingAllocator::create_pool() {
  std::lock_guard<std::mutex> lock(mutex_);
  const PoolId id = next_pool_++;
  pools_[id];
  return id;
}

void CachingAllocator::set_thread_pool(PoolId pool) {
  std::lock_guard<std::mutex> lock(mutex_);
  REDLINE_CHECK(pools_.count(pool) && !pools_[pool].released,
                "allocator pool {} on {} does not exist or was released", pool, device_);
  t_thread_pool[this] = pool;
}

PoolId CachingAllocator::thread_pool() const {
  const auto it = t_thread_pool.find(this);
  return it == t_thread_pool.end() ? kDefaultPool : it->second;
}

void CachingAllocator::release_pool(PoolId pool_id) {
  if (pool_id == kDefaultPool) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = pools_.find(pool_id);
  if (it == pools_.end()) return;
  PoolState& pool = it->second;
  PoolState& fallback = pools_[kDefaultPool];
  for (auto& [stream, free_list] : pool.free_by_stream) {
    for (auto& [size, ptr] : free_list) {
      blocks_[ptr].pool = kDefaultPool;
      fallback.free_by_stream[stream].emplace(size, ptr);
    }
  }
  pool.free_by_stream.clear();
  pool.released = true;
}

void CachingAllocator::release_cached_locked(PoolState& pool) {
  for (auto& [stream, free_list] : pool.free_by_stream) {
    for (auto& [size, ptr] : free_list) {
      raw_.free(ptr, device_.index);
      blocks_.erase(ptr);
      stats_.reserved_bytes -= size;
    }
    free_list.clear();
  }
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_cached_locked(pools_[kDefaultPool]);
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_bytes = stats_.current_bytes;
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

CachingAllocator& allocator_for(Device device) {
  // Allocators live for the whole process (never destroyed: tensors in static objects may still
  // return memory during exit, after which the device runtime may already be gone).
  static std::mutex mutex;
  static auto* cpu = new CachingAllocator(Device::cpu(), {cpu_raw_alloc, cpu_raw_free});
  static auto* gpus = new std::vector<std::unique_ptr<CachingAllocator>>();
  if (device.is_cpu()) return *cpu;
  check_device(device);
  std::lock_guard<std::mutex> lock(mutex);
  if (gpus->size() <= static_cast<size_t>(device.index)) gpus->resize(device.index + 1);
  auto& slot = (*gpus)[device.index];
  if (!slot)
    slot = std::make_unique<CachingAllocator>(
        device, CachingAllocator::RawBackend{gpu_raw_alloc, gpu_raw_free});
  return *slot;
}

PoolScope::PoolScope(Device device, PoolId pool)
    : allocator_(allocator_for(device)), previous_(allocator_.thread_pool()) {
  allocator_.set_thread_pool(pool);
}

PoolScope::~PoolScope() {
  try {
    allocator_.set_thread_pool(previous_);
  } catch (const Error&) {
    allocator_.set_thread_pool(kDefaultPool);
  }
}

}  // namespace redline
