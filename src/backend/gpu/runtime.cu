// The GPU runtime behind src/backend/gpu_api.h, for CUDA and (through vendor/hip.h) HIP.
#include <atomic>
#include <mutex>
#include <new>
#include <string>

#include "backend/gpu_api.h"
#include "redline/core/probe.h"
#include "vendor/gpu.h"

namespace redline::gpu {
namespace {

cudaStream_t as_stream(StreamHandle s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t as_event(EventHandle e) { return static_cast<cudaEvent_t>(e); }

struct DeviceCountResult {
  int count = 0;
  std::string reason;
};

const DeviceCountResult& probe_count() {
  static const DeviceCountResult result = [] {
    DeviceCountResult r;
    // HIP aborts the process at its first call when a GPU has no code object in this binary
    // (hipErrorNoBinaryForGpu); the probe reads the KFD topology first and refuses in one sentence.
    if (const std::string& refused = gpu_runtime_precheck(); !refused.empty()) {
      r.reason = refused;
      return r;
    }
    const cudaError_t status = cudaGetDeviceCount(&r.count);
    if (status != cudaSuccess) {
      r.count = 0;
      r.reason = format("the {} runtime reports {} ({})", REDLINE_HIP ? "HIP" : "CUDA",
                        cudaGetErrorName(status), cudaGetErrorString(status));
      (void)cudaGetLastError();  // clear the sticky error
    } else if (r.count == 0) {
      r.reason = "the driver reports no GPU";
    }
    return r;
  }();
  return result;
}

constexpr int kMaxFaultDevices = 64;
std::mutex g_fault_mutex;
std::atomic<KernelFault*> g_fault_records[kMaxFaultDevices];

const char* fault_op_name(int32_t op) {
  switch (static_cast<KernelFaultOp>(op)) {
    case KernelFaultOp::gather:
      return "gather";
    case KernelFaultOp::index_select:
      return "index_select";
    case KernelFaultOp::scatter_add:
      return "scatter_add";
    case KernelFaultOp::index_add:
      return "index_add";
    case KernelFaultOp::none:
      break;
  }
  return "a GPU op";
}

}  // namespace

KernelFault* kernel_fault_record(int device) {
  REDLINE_CHECK(device >= 0 && device < kMaxFaultDevices,
                "kernel fault records cover devices 0 to {}; got device {}", kMaxFaultDevices - 1,
                device);
  KernelFault* record = g_fault_records[device].load(std::memory_order_acquire);
  if (record != nullptr) return record;
  std::lock_guard<std::mutex> lock(g_fault_mutex);
  record = g_fault_records[device].load(std::memory_order_acquire);
  if (record == nullptr) {
    record = new (host_alloc_pinned(sizeof(KernelFault))) KernelFault{};
    g_fault_records[device].store(record, std::memory_order_release);
  }
  return record;
}

void check_kernel_faults(int device) {
  if (device < 0 || device >= kMaxFaultDevices) return;
  KernelFault* record = g_fault_records[device].load(std::memory_order_acquire);
  if (record == nullptr) return;  // no kernel that reports faults has run on this device
  volatile KernelFault* f = record;
  const int32_t op = f->op;
  if (op == static_cast<int32_t>(KernelFaultOp::none)) return;
  const int64_t value = f->value, position = f->position, limit = f->limit;
  f->generation = f->generation + 1;  // the next fault may claim the record
  f->op = static_cast<int32_t>(KernelFaultOp::none);
  REDLINE_FAIL(
      "{}: index {} at position {} of the index tensor is out of range for a dimension of size "
      "{} (found on gpu:{} by the kernel of an earlier call, whose result is not valid)",
      fault_op_name(op), value, position, limit, device);
}

int device_count() { return probe_count().count; }
std::string unavailable_reason() { return probe_count().reason; }

void set_device(int index) { GPU_CHECK(cudaSetDevice(index)); }

int current_device() {
  int index = 0;
  GPU_CHECK(cudaGetDevice(&index));
  return index;
}

void* malloc(size_t bytes, int device) {
  GPU_CHECK(cudaSetDevice(device));
  void* ptr = nullptr;
  const cudaError_t status = cudaMalloc(&ptr, bytes);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    return nullptr;
  }
  GPU_CHECK(status);
  return ptr;
}

void free(void* ptr, int device) {
  GPU_CHECK(cudaSetDevice(device));
  GPU_CHECK(cudaFree(ptr));
}

void mem_info(int device, size_t* free_bytes, size_t* total_bytes) {
  GPU_CHECK(cudaSetDevice(device));
  GPU_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
}

void* host_alloc_pinned(size_t bytes) {
  void* ptr = nullptr;
  GPU_CHECK(cudaMallocHost(&ptr, bytes));
  return ptr;
}

void host_free_pinned(void* ptr) { GPU_CHECK(cudaFreeHost(ptr)); }

void memcpy_async(void* dst, const void* src, size_t bytes, CopyKind kind, StreamHandle stream) {
  cudaMemcpyKind k = cudaMemcpyDefault;
  switch (kind) {
    case CopyKind::host_to_device:
      k = cudaMemcpyHostToDevice;
      break;
    case CopyKind::device_to_host:
      k = cudaMemcpyDeviceToHost;
      break;
    case CopyKind::device_to_device:
      k = cudaMemcpyDeviceToDevice;
      break;
    case CopyKind::host_to_host:
      k = cudaMemcpyHostToHost;
      break;
  }
  GPU_CHECK(cudaMemcpyAsync(dst, src, bytes, k, as_stream(stream)));
}

StreamHandle stream_create(int device) {
  GPU_CHECK(cudaSetDevice(device));
  cudaStream_t stream = nullptr;
  GPU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return stream;
}

void stream_destroy(StreamHandle stream) { GPU_CHECK(cudaStreamDestroy(as_stream(stream))); }
void stream_synchronize(StreamHandle stream) {
  GPU_CHECK(cudaStreamSynchronize(as_stream(stream)));
}

bool stream_is_capturing(StreamHandle stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  GPU_CHECK(cudaStreamIsCapturing(as_stream(stream), &status));
  return status != cudaStreamCaptureStatusNone;
}

EventHandle event_create(int device, bool timing) {
  GPU_CHECK(cudaSetDevice(device));
  cudaEvent_t event = nullptr;
  GPU_CHECK(cudaEventCreateWithFlags(&event, timing ? cudaEventDefault : cudaEventDisableTiming));
  return event;
}

void event_destroy(EventHandle event) { (void)cudaEventDestroy(as_event(event)); }
void event_record(EventHandle event, StreamHandle stream) {
  GPU_CHECK(cudaEventRecord(as_event(event), as_stream(stream)));
}
void event_synchronize(EventHandle event) { GPU_CHECK(cudaEventSynchronize(as_event(event))); }
void stream_wait_event(StreamHandle stream, EventHandle event) {
  GPU_CHECK(cudaStreamWaitEvent(as_stream(stream), as_event(event), 0));
}
float event_elapsed_ms(EventHandle start, EventHandle end) {
  float ms = 0;
  GPU_CHECK(cudaEventElapsedTime(&ms, as_event(start), as_event(end)));
  return ms;
}

// Relaxed mode: the caching allocator may call cudaMalloc while a step is captured (the block
// then belongs to the graph's private pool), which the stricter modes forbid.
void begin_capture(StreamHandle stream) {
  GPU_CHECK(cudaStreamBeginCapture(as_stream(stream), cudaStreamCaptureModeRelaxed));
}

GraphHandle end_capture(StreamHandle stream) {
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(as_stream(stream), &graph);
  if (ended != cudaSuccess) {
    (void)cudaGetLastError();  // a failed capture leaves a sticky error; the stream is usable again
    GPU_CHECK(ended);
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t status = cudaGraphInstantiateWithFlags(&exec, graph, 0);
  (void)cudaGraphDestroy(graph);
  GPU_CHECK(status);
  return exec;
}

void graph_launch(GraphHandle graph, StreamHandle stream) {
  GPU_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph), as_stream(stream)));
}

void graph_destroy(GraphHandle graph) {
  if (graph != nullptr) (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph));
}

}  // namespace redline::gpu
