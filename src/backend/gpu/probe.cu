// The GPU runtime's view of a device for the probe (src/core/probe.cpp): properties, versions, and
// whether this binary's kernels load on it. CPU-only twin: src/backend/no_gpu_probe.cpp.
#include <cctype>
#include <cstdio>
#include <string>

#include "backend/gpu_probe.h"
#include "vendor/gpu.h"

namespace redline::gpu {
namespace {

// The smallest kernel there is: loading it proves the binary carries code for the device.
__global__ void probe_kernel(int* flag) { *flag = 1; }

// The lanes this binary's kernels were compiled for (the device pass's kWarpSize; the host pass
// has its own) and the lanes they run with on the device (32 or 64 on RDNA, as compiled).
__global__ void wave_size_kernel(int* lanes) {  // lanes: (2,)
  lanes[0] = kWarpSize;
  lanes[1] = warpSize;
}

int attribute(cudaDeviceAttr attr, int index) {
  int value = -1;
  if (cudaDeviceGetAttribute(&value, attr, index) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return value;
}

// CUDA: 12040 -> "12.4". HIP: major * 10^7 + minor * 10^5 + patch -> "6.2.41133".
std::string version_text(int v) {
  if (v <= 0) return {};
#if REDLINE_HIP
  return format("{}.{}.{}", v / 10000000, (v / 100000) % 100, v % 100000);
#else
  return format("{}.{}", v / 1000, (v % 1000) / 10);
#endif
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

void runtime_versions(std::string* driver, std::string* runtime) {
  int v = 0;
  if (cudaDriverGetVersion(&v) == cudaSuccess) *driver = version_text(v);
  (void)cudaGetLastError();
  v = 0;
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) *runtime = version_text(v);
  (void)cudaGetLastError();
}

int cuda_toolkit_major() {
#if REDLINE_HIP
  return 0;
#else
  return CUDART_VERSION / 1000;
#endif
}

void query_device(int index, GpuInfo* info) {
  cudaDeviceProp prop{};
  GPU_CHECK(cudaGetDeviceProperties(&prop, index));
  info->index = index;
  info->name = prop.name;
#if REDLINE_HIP
  info->vendor = "amd";
  info->arch_full = prop.gcnArchName;  // gfx90a:sramecc+:xnack-
  info->arch = strip_gfx_features(info->arch_full);
#else
  info->vendor = "nvidia";
  info->arch = format("sm_{}{}", prop.major, prop.minor);
  info->arch_full = format("{}.{}", prop.major, prop.minor);  // compute capability
#endif
  info->multiprocessors = prop.multiProcessorCount;
  info->warp_size = prop.warpSize;
  // Clock attributes are in kHz (the cudaDeviceProp fields were removed in CUDA 13).
  const int clock_khz = attribute(cudaDevAttrClockRate, index);
  const int memory_khz = attribute(cudaDevAttrMemoryClockRate, index);
  info->clock_mhz = clock_khz > 0 ? clock_khz / 1000 : -1;
  info->memory_clock_mhz = memory_khz > 0 ? memory_khz / 1000 : -1;
  info->memory_bus_width_bits = attribute(cudaDevAttrGlobalMemoryBusWidth, index);
  info->l2_bytes = attribute(cudaDevAttrL2CacheSize, index);
  char bus_id[32] = {};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, index) == cudaSuccess) {
    info->pci_bus_id = normalize_pci_bus_id(bus_id);
  }
  (void)cudaGetLastError();
  size_t free_bytes = 0, total_bytes = 0;
  int previous = 0;
  GPU_CHECK(cudaGetDevice(&previous));
  GPU_CHECK(cudaSetDevice(index));
  const cudaError_t mem = cudaMemGetInfo(&free_bytes, &total_bytes);
  GPU_CHECK(cudaSetDevice(previous));
  if (mem == cudaSuccess) {
    info->memory_total_bytes = total_bytes;
    info->memory_free_bytes = free_bytes;
  } else {
    (void)cudaGetLastError();
    info->memory_total_bytes = prop.totalGlobalMem;
  }
  runtime_versions(&info->driver_version, &info->runtime_version);
}

bool kernel_image_loads(int index, std::string* error) {
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess) previous = 0;
  cudaError_t status = cudaSetDevice(index);
  if (status == cudaSuccess) {
    cudaFuncAttributes attributes{};
    status = cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(&probe_kernel));
  }
  (void)cudaSetDevice(previous);
  if (status == cudaSuccess) return true;
  if (error != nullptr) {
    *error = format("{}: {}", cudaGetErrorName(status), lower(cudaGetErrorString(status)));
  }
  (void)cudaGetLastError();  // not sticky: clear it so later calls do not see it
  return false;
}

void wave_sizes(int index, int* compiled_lanes, int* device_lanes) {
  int previous = 0;
  GPU_CHECK(cudaGetDevice(&previous));
  GPU_CHECK(cudaSetDevice(index));
  int* lanes = nullptr;
  int values[2] = {0, 0};
  cudaError_t status = cudaMalloc(reinterpret_cast<void**>(&lanes), sizeof values);
  if (status == cudaSuccess) {
    wave_size_kernel<<<1, 1>>>(lanes);
    status = cudaGetLastError();
    if (status == cudaSuccess) {
      status = cudaMemcpy(values, lanes, sizeof values, cudaMemcpyDeviceToHost);
    }
    (void)cudaFree(lanes);
  }
  (void)cudaSetDevice(previous);
  GPU_CHECK(status);
  *compiled_lanes = values[0];
  *device_lanes = values[1];
}

}  // namespace redline::gpu
