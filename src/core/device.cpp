#include "redline/core/device.h"

#include <charconv>
#include <cstdio>
#include <mutex>

#include "backend/gpu_api.h"
#include "redline/core/error.h"
#include "redline/core/probe.h"

namespace redline {

std::string Device::str() const {
  return is_cpu() ? std::string("cpu") : "gpu:" + std::to_string(index);
}

std::ostream& operator<<(std::ostream& out, const Device& device) { return out << device.str(); }

Device Device::parse(std::string_view text) {
  if (text == "cpu") return Device::cpu();
  for (std::string_view prefix : {"gpu", "cuda", "hip"}) {
    if (text.substr(0, prefix.size()) != prefix) continue;
    std::string_view rest = text.substr(prefix.size());
    if (rest.empty()) return Device::gpu(0);
    int index = -1;
    if (rest[0] == ':') {
      const auto [end, ec] = std::from_chars(rest.data() + 1, rest.data() + rest.size(), index);
      if (ec == std::errc() && end == rest.data() + rest.size() && index >= 0) {
        return Device::gpu(index);
      }
    }
  }
  REDLINE_FAIL("unknown device '{}' (expected cpu, gpu or gpu:N)", text);
}

bool gpu_built() { return REDLINE_HAS_GPU != 0; }

std::string_view gpu_backend_name() { return REDLINE_GPU_VENDOR; }

int gpu_count() {
  static const int count = gpu::device_count();
  return count;
}

void check_device(Device device) {
  if (device.is_cpu()) return;
  REDLINE_CHECK(gpu_built(),
                "device {} was requested but this redline was built without a GPU backend "
                "(REDLINE_GPU=off); rebuild with 'cmake --preset cuda' or 'cmake --preset hip'",
                device);
  const int count = gpu_count();
  REDLINE_CHECK(count > 0, "device {} was requested but no GPU is usable here: {}", device,
                gpu::unavailable_reason());
  REDLINE_CHECK(device.index >= 0 && device.index < count,
                "device {} was requested but this machine has {} GPU(s) (gpu:0 to gpu:{})", device,
                count, count - 1);
  std::string why;
  REDLINE_CHECK(gpu_usable(device.index, &why), "device {} was requested but {}", device, why);
}

// The first GPU this binary can run on, else the CPU. Silent when there is no GPU; one warning when
// a GPU is present but unusable (no code for its arch, runtime refused), naming the fix.
Device default_device() {
  static const Device chosen = [] {
    if (!gpu_built()) return Device::cpu();
    std::string why;
    const bool refused = !gpu_runtime_precheck().empty();  // HIP: never start the runtime then
    const int count = refused ? 0 : gpu_count();
    for (int i = 0; i < count; ++i) {
      std::string reason;
      if (gpu_usable(i, &reason)) return Device::gpu(i);
      if (why.empty()) why = reason;
    }
    if (refused) why = gpu_runtime_precheck();
    if (!why.empty()) {
      std::fprintf(stderr, "redline: warning: %s; running on the CPU (details: redline doctor)\n",
                   why.c_str());
    }
    return Device::cpu();
  }();
  return chosen;
}

}  // namespace redline
