#include "redline/core/stream.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "backend/gpu_api.h"
#include "redline/core/error.h"

namespace redline {
namespace {

// One redline-owned default stream per GPU (non-blocking, so it can be captured).
void* default_stream_handle(int index) {
  static std::mutex mutex;
  static auto* handles = new std::vector<void*>();
  std::lock_guard<std::mutex> lock(mutex);
  if (handles->size() <= static_cast<size_t>(index)) handles->resize(index + 1, nullptr);
  void*& handle = (*handles)[index];
  if (handle == nullptr) {
    gpu::set_device(index);
    handle = gpu::stream_create(index);
  }
  return handle;
}

thread_local std::unordered_map<int, Stream> t_current_streams;

double host_now_ms() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double, std::milli>(Clock::now().time_since_epoch()).count();
}

}  // namespace

Stream Stream::current(Device device) {
  if (device.is_cpu()) return Stream(device, nullptr);
  check_device(device);
  const auto it = t_current_streams.find(device.index);
  if (it != t_current_streams.end()) return it->second;
  return Stream(device, default_stream_handle(device.index));
}

Stream Stream::create(Device device) {
  if (device.is_cpu()) return Stream(device, nullptr);
  check_device(device);
  gpu::set_device(device.index);
  // The handle lives as long as the process: streams are few and cheap, and a destroyed stream
  // still referenced by a tensor's cached block would be a use-after-free.
  return Stream(device, gpu::stream_create(device.index));
}

void Stream::synchronize() const {
  if (device_.is_gpu()) {
    gpu::stream_synchronize(handle_);
    gpu::check_kernel_faults(device_.index);  // faults of the kernels that just finished
  }
}

StreamGuard::StreamGuard(Stream stream) : previous_(Stream::current(stream.device())) {
  if (stream.device().is_gpu()) t_current_streams[stream.device().index] = stream;
}

StreamGuard::~StreamGuard() {
  if (previous_.device().is_gpu()) t_current_streams[previous_.device().index] = previous_;
}

Event::Event(Device device, bool timing) : device_(device) {
  check_device(device);
  if (device.is_gpu()) handle_ = gpu::event_create(device.index, timing);
}

Event::~Event() {
  if (handle_ != nullptr) gpu::event_destroy(handle_);
}

void Event::record(const Stream& stream) {
  REDLINE_CHECK(stream.device() == device_, "an event on {} cannot be recorded on a stream of {}",
                device_, stream.device());
  if (device_.is_gpu()) {
    gpu::event_record(handle_, stream.handle());
  } else {
    cpu_time_ms_ = host_now_ms();
  }
}

void Event::synchronize() const {
  if (device_.is_gpu()) gpu::event_synchronize(handle_);
}

float Event::elapsed_ms_since(const Event& start) const {
  REDLINE_CHECK(start.device_ == device_, "events on {} and {} cannot be compared", start.device_,
                device_);
  if (device_.is_cpu()) return static_cast<float>(cpu_time_ms_ - start.cpu_time_ms_);
  gpu::event_synchronize(handle_);
  return gpu::event_elapsed_ms(start.handle_, handle_);
}

StepGraph::StepGraph(Device device) : device_(device) { check_device(device); }

StepGraph::~StepGraph() {
  if (graph_ != nullptr) gpu::graph_destroy(graph_);
  if (pool_ != kDefaultPool) allocator_for(device_).release_pool(pool_);
}

void StepGraph::capture(std::function<void()> fn) {
  REDLINE_CHECK(!captured_, "this StepGraph on {} has already captured a step", device_);
  REDLINE_CHECK(fn != nullptr, "StepGraph::capture needs a callable, got an empty one");
  if (device_.is_cpu()) {
    fn_ = std::move(fn);
    captured_ = true;
    return;
  }
  const Stream stream = Stream::current(device_);
  stream.synchronize();
  pool_ = allocator_for(device_).create_pool();
  {
    PoolScope scope(device_, pool_);
    gpu::begin_capture(stream.handle());
    try {
      fn();
    } catch (...) {
      // End the capture so the stream is usable again, then report the original error.
      try {
        gpu::graph_destroy(gpu::end_capture(stream.handle()));
      } catch (const Error&) {
      }
      throw;
    }
    graph_ = gpu::end_capture(stream.handle());
  }
  captured_ = true;
}

void StepGraph::replay() {
  REDLINE_CHECK(captured_, "StepGraph::replay on {} before capture()", device_);
  if (device_.is_cpu()) {
    fn_();
    return;
  }
  gpu::graph_launch(graph_, Stream::current(device_).handle());
}

}  // namespace redline
