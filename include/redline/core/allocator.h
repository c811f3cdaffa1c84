// A caching allocator per device: stream-ordered reuse, size classes, current/peak counters, and
// private pools that keep a captured graph's blocks away from everybody else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "redline/core/device.h"

namespace redline {

struct AllocatorStats {
  size_t current_bytes = 0;      // bytes handed out and not yet returned (rounded sizes)
  size_t peak_bytes = 0;         // maximum of current_bytes since the last reset_peak()
  size_t reserved_bytes = 0;     // bytes obtained from the device, cached ones included
  uint64_t allocations = 0;      // allocate() calls
  uint64_t cache_hits = 0;       // allocate() calls served from the cache
  uint64_t raw_allocations = 0;  // calls to the device's own allocator
};

using PoolId = uint64_t;
inline constexpr PoolId kDefaultPool = 0;

class CachingAllocator {
 public:
  // The device's own allocator. alloc returns nullptr when memory is exhausted.
  struct RawBackend {
    void* (*alloc)(size_t bytes, int device);
    void (*free)(void* ptr, int device);
  };

  CachingAllocator(Device device, RawBackend raw);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Returns at least `bytes` bytes (aligned to 256) usable in order on `stream`. A block freed on
  // a stream is reused only by later work on the same stream, so no synchronization is needed.
  void* allocate(size_t bytes, void* stream);
  void deallocate(void* ptr);

  // Size class: multiples of 512 bytes up to 1 MiB, multiples of 2 MiB above.
  static size_t round_size(size_t bytes);

  // Private pools: while a pool is active on this thread, allocations come from it and blocks
  // freed into it are reused only by it. A graph's captured addresses therefore stay its own.
  PoolId create_pool();
  void set_thread_pool(PoolId pool);  // kDefaultPool to return to normal allocation
  PoolId thread_pool() const;
  // Gives a pool's cached blocks back to the default pool; blocks still in use join it when freed.
  void release_pool(PoolId pool);

  // Returns every cached (unused) block of the default pool to the device.
  void empty_cache();
  void reset_peak();
  AllocatorStats stats() const;
  Device device() const { return device_; }

 private:
  struct Block {
    size_t size;
    void* stream;
    PoolId pool;
  };
  using FreeList = std::multimap<size_t, void*>;  // size -> ptr
  struct PoolState {
    std::map<void*, FreeList> free_by_stream;
    bool released = false;
  };

  void* take_cached(PoolState& pool, size_t size, void* stream);
  void release_cached_locked(PoolState& pool);

  Device device_;
  RawBackend raw_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, Block> blocks_;  // every block we own, used or cached
  std::unordered_map<PoolId, PoolState> pools_;
  PoolId next_pool_ = 1;
  AllocatorStats stats_;
};

// The allocator of a device (created on first use).
CachingAllocator& allocator_for(Device device);

// Makes `pool` the calling thread's pool of `device`'s allocator for the lifetime of the scope.
class PoolScope {
 public:
  PoolScope(Device device, PoolId pool);
  ~PoolScope();
  PoolScope(const PoolScope&) = delete;
  PoolScope& operator=(const PoolScope&) = delete;

 private:
  CachingAllocator& allocator_;
  PoolId previous_;
};

}  // namespace redline
