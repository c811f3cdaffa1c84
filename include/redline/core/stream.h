// Streams, events and captured step graphs. On the CPU they are trivial: work runs at once.
#pragma once

#include <functional>

#include "redline/core/allocator.h"
#include "redline/core/device.h"

namespace redline {

// A queue of device work. CPU streams are empty handles: CPU work is synchronous.
class Stream {
 public:
  Stream() = default;
  Stream(Device device, void* handle) : device_(device), handle_(handle) {}

  // The calling thread's current stream on `device` (a non-blocking stream redline owns).
  static Stream current(Device device);
  // A new stream owned by the caller's scope (destroyed with the last copy).
  static Stream create(Device device);

  Device device() const { return device_; }
  void* handle() const { return handle_; }
  void synchronize() const;

 private:
  Device device_ = Device::cpu();
  void* handle_ = nullptr;
};

// Makes `stream` current for its device on this thread within the scope.
class StreamGuard {
 public:
  explicit StreamGuard(Stream stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream previous_;
};

// A marker in a stream: wait on it, or time the work between two of them.
class Event {
 public:
  explicit Event(Device device, bool timing = true);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(const Stream& stream);
  void record() { record(Stream::current(device_)); }
  void synchronize() const;
  // Milliseconds between start's record and this one's (both completed; synchronizes on this).
  float elapsed_ms_since(const Event& start) const;

 private:
  Device device_;
  void* handle_ = nullptr;
  double cpu_time_ms_ = 0;  // host clock reading for CPU events
};

// Captures a callable once and replays it. On a GPU the callable's work on the current stream is
// recorded as a CUDA/HIP graph, with its allocations from a private pool so every replay sees the
// same addresses; replay() then launches the whole step with no per-kernel host work. On the CPU
// replay() calls the callable. The callable must not synchronize with the host while captured.
class StepGraph {
 public:
  explicit StepGraph(Device device);
  ~StepGraph();
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  // Records fn's device work without running it (on the CPU: stores fn). Run fn once eagerly
  // before capturing so that lazy initialisation (library handles, first allocations) is not
  // captured. Tensors fn allocates and keeps outside stay valid for replays.
  void capture(std::function<void()> fn);
  // Launches the captured work on the current stream (asynchronous on a GPU).
  void replay();
  bool captured() const { return captured_; }
  Device device() const { return device_; }

 private:
  Device device_;
  std::function<void()> fn_;
  void* graph_ = nullptr;
  PoolId pool_ = kDefaultPool;
  bool captured_ = false;
};

}  // namespace redline
