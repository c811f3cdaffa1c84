// Where a tensor lives: the CPU or one GPU (CUDA or HIP, whichever this build targets).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace redline {

enum class DeviceType : uint8_t { cpu, gpu };

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  static constexpr Device cpu() { return Device{DeviceType::cpu, 0}; }
  static constexpr Device gpu(int index = 0) { return Device{DeviceType::gpu, index}; }

  constexpr bool is_cpu() const { return type == DeviceType::cpu; }
  constexpr bool is_gpu() const { return type == DeviceType::gpu; }
  constexpr bool operator==(const Device&) const = default;

  // "cpu" or "gpu:N".
  std::string str() const;

  // Parses "cpu", "gpu", "gpu:N", "cuda", "cuda:N", "hip", "hip:N"; throws redline::Error.
  static Device parse(std::string_view text);
};

std::ostream& operator<<(std::ostream& out, const Device& device);

// True when this binary was built with a GPU backend.
bool gpu_built();
// "cuda", "hip" or "none".
std::string_view gpu_backend_name();
// Number of GPUs this process can use (0 without a backend, a driver or a device).
int gpu_count();
// Throws redline::Error with one sentence when device cannot be used in this process.
void check_device(Device device);
// The best device present: gpu:0 when one is usable, else the CPU.
Device default_device();

}  // namespace redline
