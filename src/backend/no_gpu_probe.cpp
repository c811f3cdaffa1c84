// CPU-only builds: the GPU side of the probe and the smoke tests answer that no GPU backend was
// built (the probe then reports the CPU and any GPU seen on the PCI bus). GPU versions:
// src/backend/gpu/probe.cu and src/backend/gpu/smoke.cu.
#include "backend/gpu_probe.h"
#include "redline/core/error.h"

namespace redline::gpu {
namespace {

constexpr const char* kNoBackend =
    "this redline was built without a GPU backend (REDLINE_GPU=off); rebuild with "
    "'cmake --preset cuda' or 'cmake --preset hip'";

}  // namespace

void query_device(int index, GpuInfo*) {
  REDLINE_FAIL("gpu:{} cannot be queried: {}", index, kNoBackend);
}

void runtime_versions(std::string* driver, std::string* runtime) {
  driver->clear();
  runtime->clear();
}

int cuda_toolkit_major() { return 0; }

bool kernel_image_loads(int, std::string* error) {
  if (error != nullptr) *error = kNoBackend;
  return false;
}

void wave_sizes(int index, int*, int*) {
  REDLINE_FAIL("gpu:{} cannot be queried: {}", index, kNoBackend);
}

SmokeReport run_smoke(int index, const SmokeOptions&) {
  SmokeReport report;
  report.device = index;
  report.error = kNoBackend;
  return report;
}

}  // namespace redline::gpu
