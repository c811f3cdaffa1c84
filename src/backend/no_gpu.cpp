// CPU-only builds: the GPU runtime entry points exist and say, in one sentence, how to get a GPU.
#include "backend/gpu_api.h"
#include "redline/core/error.h"

namespace redline::gpu {
namespace {

[[noreturn]] void no_backend(const char* what) {
  REDLINE_FAIL(
      "{} needs a GPU but this redline was built without a GPU backend (REDLINE_GPU=off); "
      "rebuild with 'cmake --preset cuda' or 'cmake --preset hip'",
      what);
}

}  // namespace

int device_count() { return 0; }
std::string unavailable_reason() {
  return "this redline was built without a GPU backend (REDLINE_GPU=off)";
}
void set_device(int) { no_backend("set_device"); }
int current_device() { return 0; }
void* malloc(size_t, int) { no_backend("GPU memory allocation"); }
void free(void*, int) {}
void mem_info(int, size_t* free_bytes, size_t* total_bytes) { *free_bytes = *total_bytes = 0; }
void* host_alloc_pinned(size_t) { no_backend("pinned host memory"); }
void host_free_pinned(void*) {}
KernelFault* kernel_fault_record(int) { no_backend("a GPU kernel fault record"); }
void check_kernel_faults(int) {}
void memcpy_async(void*, const void*, size_t, CopyKind, StreamHandle) { no_backend("a GPU copy"); }
StreamHandle stream_create(int) { no_backend("a GPU stream"); }
void stream_destroy(StreamHandle) {}
void stream_synchronize(StreamHandle) {}
bool stream_is_capturing(StreamHandle) { return false; }
EventHandle event_create(int, bool) { no_backend("a GPU event"); }
void event_destroy(EventHandle) {}
void event_record(EventHandle, StreamHandle) { no_backend("a GPU event"); }
void event_synchronize(EventHandle) {}
void stream_wait_event(StreamHandle, EventHandle) {}
float event_elapsed_ms(EventHandle, EventHandle) { no_backend("a GPU event"); }
void begin_capture(StreamHandle) { no_backend("graph capture"); }
GraphHandle end_capture(StreamHandle) { no_backend("graph capture"); }
void graph_launch(GraphHandle, StreamHandle) { no_backend("graph replay"); }
void graph_destroy(GraphHandle) {}
void fill(void*, int64_t, int, uint64_t, StreamHandle) { no_backend("a GPU fill"); }
void strided_copy(void*, const void*, int, const StridedLayout&, int64_t, StreamHandle) {
  no_backend("a GPU copy");
}
void random_fill(void*, int64_t, RandomKind, uint32_t, uint64_t, uint64_t, int64_t*, StreamHandle) {
  no_backend("GPU random numbers");
}

}  // namespace redline::gpu
