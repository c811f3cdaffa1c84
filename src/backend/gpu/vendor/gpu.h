// The one vendor switch: GPU sources include this and write CUDA names. Under hipcc the names
// are mapped to HIP by vendor/hip.h (the ggml approach: one source tree, no hipify step).
#pragma once

#include <cstdint>

#if defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)
#include "vendor/hip.h"
#define REDLINE_HIP 1
#else
#include <cuda_runtime.h>
#define REDLINE_HIP 0
#endif

#include "redline/core/error.h"

namespace redline::gpu {

// Lanes of a warp (NVIDIA) or wavefront (AMD). Never write 32: CDNA runs 64 lanes, RDNA 32.
#if REDLINE_HIP
#if defined(__AMDGCN_WAVEFRONT_SIZE)
inline constexpr int kWarpSize = __AMDGCN_WAVEFRONT_SIZE;
#elif defined(__HIP_DEVICE_COMPILE__) && defined(__GFX9__)
inline constexpr int kWarpSize = 64;  // GFX9 (CDNA, Vega) has 64-lane wavefronts only
#elif defined(__HIP_DEVICE_COMPILE__) && \
    (defined(__GFX10__) || defined(__GFX11__) || defined(__GFX12__))
// ROCm 7.2's clang no longer defines the wave-size macro. RDNA compiles 32-lane wavefronts unless
// -mwavefrontsize64 is given, which cmake/gpu.cmake turns into REDLINE_WAVE64. The device probe
// (gpu::wave_sizes, src/backend/gpu/probe.cu) refuses a device where a kernel's warpSize differs.
#if defined(REDLINE_WAVE64)
inline constexpr int kWarpSize = 64;
#else
inline constexpr int kWarpSize = 32;
#endif
#elif defined(__HIP_DEVICE_COMPILE__)
#error "redline knows the wavefront size of GFX9, GFX10, GFX11 and GFX12 targets only"
#else
inline constexpr int kWarpSize = 64;  // host pass: the widest; query the device for the truth
#endif
using LaneMask = uint64_t;  // HIP shuffle masks are 64-bit
#else
inline constexpr int kWarpSize = 32;
using LaneMask = unsigned int;
#endif
inline constexpr LaneMask kFullLaneMask = ~LaneMask{0};

// Sum across a warp with shuffles (all lanes active).
template <typename T>
__device__ inline T warp_sum(T value) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    value += __shfl_xor_sync(kFullLaneMask, value, offset, kWarpSize);
  }
  return value;
}

}  // namespace redline::gpu

// Runtime calls: throws redline::Error naming the call, the error and where it happened.
#define GPU_CHECK(call)                                                                       \
  do {                                                                                        \
    const cudaError_t redline_status_ = (call);                                               \
    if (redline_status_ != cudaSuccess) {                                                     \
      throw ::redline::Error(::redline::format("GPU call {} failed: {} ({}:{})", #call,       \
                                               cudaGetErrorString(redline_status_), __FILE__, \
                                               __LINE__));                                    \
    }                                                                                         \
  } while (0)

// After every kernel launch.
#define GPU_CHECK_LAUNCH() GPU_CHECK(cudaGetLastError())
