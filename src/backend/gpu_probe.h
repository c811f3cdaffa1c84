// The GPU side of the device probe and of `redline doctor`'s smoke tests, as plain C++:
// implemented in src/backend/gpu/probe.cu and smoke.cu (CUDA or HIP), or in
// src/backend/no_gpu_probe.cpp for CPU-only builds (which report that no GPU backend was built).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "redline/core/probe.h"

namespace redline::gpu {

// The runtime's view of device `index`: name, arch, SMs/CUs, clocks, memory, L2, warp width, PCI
// bus id, driver and runtime versions. Throws redline::Error when the runtime fails.
void query_device(int index, GpuInfo* info);
// Driver and runtime versions ("13.0", "6.2.41133"); empty when the runtime cannot say.
void runtime_versions(std::string* driver, std::string* runtime);
// Major version of the CUDA toolkit that built this binary; 0 on HIP and CPU-only builds.
int cuda_toolkit_major();
// Loads a tiny kernel of this binary on device `index`. False, with the runtime's error in *error,
// when the binary has no code the device can run (cudaErrorNoKernelImageForDevice,
// hipErrorNoBinaryForGpu) or the driver cannot compile its PTX.
bool kernel_image_loads(int index, std::string* error);
// The lanes per warp or wavefront redline's kernels were compiled for (kWarpSize), and the lanes
// a kernel of this binary runs with on device `index` (its warpSize, read by a launch).
void wave_sizes(int index, int* compiled_lanes, int* device_lanes);

// ---- smoke tests --------------------------------------------------------------------------------

struct SmokeOptions {
  int64_t check_size = 1024;  // the square matmul checked against the CPU
  int64_t gemm_size = 8192;   // the square GEMM timed (reduced to fit in free memory)
  uint64_t copy_bytes = 256ull << 20;
  int warmup = 3;
  int repeats = 10;        // timed repeats; the median is reported
  std::string pci_bus_id;  // to read the PCIe link while a host->device copy is in flight
  std::string vendor;      // "nvidia" / "amd": NVML or rocm_smi when sysfs has no link files
};

// A matmul checked against the CPU: max |gpu - cpu| / (|A| |B| row-column magnitude).
struct MatmulCheck {
  std::string engine;  // "own tiled kernel", "cuBLASLt"
  std::string dtype;   // "f32"
  int64_t size = 0;
  double max_error = -1;  // normalized
  double tolerance = 0;
  bool passed = false;
  std::string error;  // when it could not run
};

struct GemmResult {
  std::string dtype;   // f32, tf32, bf16
  std::string engine;  // cuBLASLt, own tiled kernel
  int64_t size = 0;    // m = n = k
  double median_ms = -1;
  double tflops = -1;
  std::string skipped;  // why it did not run (then the figures are -1)
};

struct CopyResult {
  std::string kind;  // host_to_device_pinned, host_to_device_pageable, device_to_host_pinned,
                     // device_to_host_pageable, device_to_device
  uint64_t bytes = 0;
  double median_ms = -1;
  double gbps = -1;  // bytes copied per second / 1e9 (a device copy moves twice that in memory)
  std::string skipped;
};

struct SmokeReport {
  int device = -1;
  std::vector<MatmulCheck> checks;
  std::vector<GemmResult> gemms;
  std::vector<CopyResult> copies;
  PcieLink pcie_under_load;  // read while host->device copies ran; unknown if unreadable
  std::string error;         // the smoke test stopped early (the results so far are kept)
  double seconds = 0;        // wall time of the whole smoke test
};

// Runs the smoke tests on device `index`. Never throws: failures land in the report.
SmokeReport run_smoke(int index, const SmokeOptions& options);

}  // namespace redline::gpu
