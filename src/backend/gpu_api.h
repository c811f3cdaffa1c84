// The GPU runtime as the rest of redline sees it: plain C++ with opaque handles, implemented in
// src/backend/gpu/runtime.cu (CUDA or HIP) or src/backend/no_gpu.cpp (CPU-only builds, where each
// call throws redline::Error saying how to rebuild). Nothing here includes a vendor header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace redline::gpu {

using StreamHandle = void*;  // cudaStream_t / hipStream_t
using EventHandle = void*;   // cudaEvent_t / hipEvent_t
using GraphHandle = void*;   // cudaGraphExec_t / hipGraphExec_t

// Number of usable devices; 0 when there is no driver or no device (never throws).
int device_count();
// Why device_count() is 0, in one sentence (empty when it is not).
std::string unavailable_reason();

void set_device(int index);
int current_device();

// Raw device memory. malloc returns nullptr when the device is out of memory.
void* malloc(size_t bytes, int device);
void free(void* ptr, int device);
void mem_info(int device, size_t* free_bytes, size_t* total_bytes);

// Page-locked host memory, for fast and asynchronous copies.
void* host_alloc_pinned(size_t bytes);
void host_free_pinned(void* ptr);

enum class CopyKind { host_to_device, device_to_host, device_to_device, host_to_host };
void memcpy_async(void* dst, const void* src, size_t bytes, CopyKind kind, StreamHandle stream);

StreamHandle stream_create(int device);
void stream_destroy(StreamHandle stream);
void stream_synchronize(StreamHandle stream);
bool stream_is_capturing(StreamHandle stream);

EventHandle event_create(int device, bool timing);
void event_destroy(EventHandle event);
void event_record(EventHandle event, StreamHandle stream);
void event_synchronize(EventHandle event);
void stream_wait_event(StreamHandle stream, EventHandle event);
float event_elapsed_ms(EventHandle start, EventHandle end);

// Graph capture on one stream (thread-local capture mode); end_capture instantiates the graph.
void begin_capture(StreamHandle stream);
GraphHandle end_capture(StreamHandle stream);
void graph_launch(GraphHandle graph, StreamHandle stream);
void graph_destroy(GraphHandle graph);

// Faults found inside op kernels, which cannot throw (today: an index out of range in gather,
// index_select, scatter_add or index_add). The first fault since the last check is kept per device
// in pinned host memory, which the kernels write directly, and check_kernel_faults raises it as a
// redline::Error: every op entry and every stream synchronization on that device checks.
enum class KernelFaultOp : int32_t { none = 0, gather, index_select, scatter_add, index_add };
struct KernelFault {
  int32_t op;           // KernelFaultOp; written last, none while the record is free
  uint32_t generation;  // advanced by the host each time it raises a fault
  int64_t value;        // the offending index
  int64_t position;     // its flat position in the index tensor
  int64_t limit;        // the size of the indexed dimension
};
// The device's record, allocated on first use and kept for the life of the process. A kernel
// claims it for the current generation (an atomicMax on a device word of its own translation unit
// from generation to generation + 1), so one fault's fields are never mixed with another's.
KernelFault* kernel_fault_record(int device);
// Throws redline::Error describing the device's pending kernel fault, if any, and clears it.
void check_kernel_faults(int device);

// dst[i] = pattern for n elements of elem_size bytes (1, 2, 4 or 8).
void fill(void* dst, int64_t n, int elem_size, uint64_t pattern, StreamHandle stream);

// Element-wise strided copy of an ndim <= kMaxDims view into another (strides in elements).
constexpr int kMaxDims = 8;
struct StridedLayout {
  int ndim;
  int64_t sizes[kMaxDims];
  int64_t src_strides[kMaxDims];
  int64_t dst_strides[kMaxDims];
};
void strided_copy(void* dst, const void* src, int elem_size, const StridedLayout& layout,
                  int64_t numel, StreamHandle stream);

// Random fills from Philox(seed, stream_id); *offset (device memory, i64) is the first block and
// is advanced past the blocks used, so a captured graph draws new numbers at every replay.
enum class RandomKind { uniform_f32, normal_f32, uniform_int_i32, uniform_int_i64 };
void random_fill(void* dst, int64_t n, RandomKind kind, uint32_t int_bound, uint64_t seed,
                 uint64_t stream_id, int64_t* offset, StreamHandle stream);

}  // namespace redline::gpu
