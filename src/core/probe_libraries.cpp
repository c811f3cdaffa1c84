// Which vendor libraries this machine has, found with dlopen at run time and asked for their
// versions through their own get-version functions (so a library that is absent, or newer than the
// build, is reported rather than failing the link).
#include <dlfcn.h>
#include <link.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backend/gpu_api.h"
#include "redline/core/error.h"
#include "redline/core/probe.h"

namespace redline {
namespace {

struct Loaded {
  void* handle = nullptr;
  std::string soname;
  std::string path;
};

// Tries each soname in order; the handle stays open for the life of the process (the libraries
// are either already mapped by the link or cheap to keep).
Loaded open_first(const std::vector<const char*>& sonames) {
  Loaded loaded;
  for (const char* soname : sonames) {
    void* handle = dlopen(soname, RTLD_LAZY | RTLD_LOCAL);
    if (handle == nullptr) continue;
    loaded.handle = handle;
    loaded.soname = soname;
    link_map* map = nullptr;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr) {
      loaded.path = map->l_name;
    }
    return loaded;
  }
  return loaded;
}

template <typename Fn>
Fn symbol(const Loaded& lib, const char* name) {
  return lib.handle ? reinterpret_cast<Fn>(dlsym(lib.handle, name)) : nullptr;
}

std::string dotted(long long major, long long minor, long long patch) {
  return format("{}.{}.{}", major, minor, patch);
}

LibraryInfo start(const char* name, const char* purpose, const Loaded& lib) {
  LibraryInfo info;
  info.name = name;
  info.purpose = purpose;
  info.found = lib.handle != nullptr;
  info.file = lib.path.empty() ? lib.soname : lib.path;
  return info;
}

// ---- NVIDIA -------------------------------------------------------------------------------------

LibraryInfo probe_cuda_driver() {
  const Loaded lib = open_first({"libcuda.so.1", "libcuda.so"});
  LibraryInfo info =
      start("CUDA driver", "runs every kernel (libcuda, part of the NVIDIA driver)", lib);
  if (auto get = symbol<int (*)(int*)>(lib, "cuDriverGetVersion")) {
    int v = 0;
    if (get(&v) == 0)
      info.version = format("{}.{} (highest CUDA version it runs)", v / 1000, (v % 1000) / 10);
  }
  if (!info.found) info.note = "no NVIDIA driver is installed, so no NVIDIA GPU can be used";
  return info;
}

LibraryInfo probe_cublaslt() {
  const Loaded lib = open_first({"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"});
  LibraryInfo info = start("cuBLASLt", "GEMM with fused epilogues", lib);
  if (auto get = symbol<size_t (*)()>(lib, "cublasLtGetVersion")) {
    const size_t v = get();  // major * 10000 + minor * 100 + patch
    info.version = dotted(v / 10000, (v / 100) % 100, v % 100);
  }
  if (!info.found) info.note = "GEMMs fall back to redline's own kernels";
  return info;
}

LibraryInfo probe_cudnn() {
  const Loaded lib = open_first({"libcudnn.so.9", "libcudnn.so.8", "libcudnn.so"});
  LibraryInfo info = start("cuDNN", "convolutions", lib);
  if (auto get = symbol<size_t (*)()>(lib, "cudnnGetVersion")) {
    const size_t v = get();  // 9.x: major * 10000 + minor * 100 + patch; 8.x: major * 1000 + ...
    info.version = v >= 90000 ? dotted(v / 10000, (v / 100) % 100, v % 100)
                              : dotted(v / 1000, (v / 100) % 10, v % 100);
  }
  if (!info.found) info.note = "convolutions use redline's slower own kernel";
  return info;
}

LibraryInfo probe_nccl_like(const char* name, const std::vector<const char*>& sonames) {
  const Loaded lib = open_first(sonames);
  LibraryInfo info = start(name, "multi-GPU all-reduce", lib);
  if (auto get = symbol<int (*)(int*)>(lib, "ncclGetVersion")) {
    int v = 0;
    if (get(&v) == 0) {
      // Since 2.9: major * 10000 + minor * 100 + patch; before: major * 1000 + minor * 100 + patch.
      info.version = v >= 20900 ? dotted(v / 10000, (v / 100) % 100, v % 100)
                                : dotted(v / 1000, (v / 100) % 10, v % 100);
    }
  }
  if (!info.found) info.note = "one GPU per process only (no data-parallel training)";
  return info;
}

LibraryInfo probe_nvml() {
  const Loaded lib = open_first({"libnvidia-ml.so.1", "libnvidia-ml.so"});
  LibraryInfo info = start("NVML", "telemetry: power, temperature, clocks, PCIe", lib);
  auto init = symbol<int (*)()>(lib, "nvmlInit_v2");
  auto version = symbol<int (*)(char*, unsigned)>(lib, "nvmlSystemGetNVMLVersion");
  if (init && version && init() == 0) {
    char text[96] = {};
    if (version(text, sizeof text) == 0) info.version = text;
  }
  if (!info.found) info.note = "no telemetry; NVML ships with the NVIDIA driver";
  return info;
}

// ---- AMD ----------------------------------------------------------------------------------------

LibraryInfo probe_hipblaslt() {
  const Loaded lib = open_first({"libhipblaslt.so.1", "libhipblaslt.so.0", "libhipblaslt.so"});
  LibraryInfo info = start("hipBLASLt", "GEMM with fused epilogues", lib);
  auto create = symbol<int (*)(void**)>(lib, "hipblasLtCreate");
  auto get = symbol<int (*)(void*, int*)>(lib, "hipblasLtGetVersion");
  auto destroy = symbol<int (*)(void*)>(lib, "hipblasLtDestroy");
  // Its version needs a handle, and a handle needs a usable GPU.
  if (create && get && destroy && gpu_usable(0)) {
    void* handle = nullptr;
    int v = 0;
    if (create(&handle) == 0) {
      if (get(handle, &v) == 0) info.version = dotted(v / 100000, (v / 100) % 1000, v % 100);
      destroy(handle);
    }
  } else if (info.found) {
    info.note = "version needs a usable GPU";
  }
  if (!info.found) info.note = "GEMMs use rocBLAS or redline's own kernels";
  return info;
}

LibraryInfo probe_rocblas() {
  const Loaded lib =
      open_first({"librocblas.so.5", "librocblas.so.4", "librocblas.so.0", "librocblas.so"});
  LibraryInfo info = start("rocBLAS", "GEMM where hipBLASLt has no kernel", lib);
  auto size = symbol<int (*)(size_t*)>(lib, "rocblas_get_version_string_size");
  auto get = symbol<int (*)(char*, size_t)>(lib, "rocblas_get_version_string");
  size_t n = 0;
  if (size && get && size(&n) == 0 && n > 0 && n < 256) {
    std::string text(n, '\0');
    if (get(text.data(), n) == 0) info.version = text.c_str();
  }
  if (!info.found) info.note = "GEMMs use hipBLASLt or redline's own kernels";
  return info;
}

LibraryInfo probe_miopen() {
  const Loaded lib = open_first({"libMIOpen.so.1", "libMIOpen.so"});
  LibraryInfo info = start("MIOpen", "convolutions", lib);
  if (auto get = symbol<int (*)(size_t*, size_t*, size_t*)>(lib, "miopenGetVersion")) {
    size_t major = 0, minor = 0, patch = 0;
    if (get(&major, &minor, &patch) == 0) info.version = dotted(major, minor, patch);
  }
  if (!info.found) info.note = "convolutions use redline's slower own kernel";
  return info;
}

LibraryInfo probe_rocm_smi() {
  const Loaded lib = open_first({"librocm_smi64.so.7", "librocm_smi64.so.6", "librocm_smi64.so.5",
                                 "librocm_smi64.so.1", "librocm_smi64.so"});
  LibraryInfo info = start("rocm_smi", "telemetry: power, temperature, clocks, PCIe", lib);
  struct Version {
    uint32_t major, minor, patch;
    const char* build;
  };
  if (auto get = symbol<int (*)(Version*)>(lib, "rsmi_version_get")) {
    Version v{};
    if (get(&v) == 0) info.version = dotted(v.major, v.minor, v.patch);
  }
  if (!info.found) info.note = "no telemetry; install rocm-smi-lib";
  return info;
}

std::vector<LibraryInfo> nvidia_libraries() {
  return {probe_cuda_driver(), probe_cublaslt(), probe_cudnn(),
          probe_nccl_like("NCCL", {"libnccl.so.2", "libnccl.so"}), probe_nvml()};
}

std::vector<LibraryInfo> amd_libraries() {
  return {probe_hipblaslt(), probe_rocblas(), probe_miopen(),
          probe_nccl_like("RCCL", {"librccl.so.1", "librccl.so"}), probe_rocm_smi()};
}

}  // namespace

std::vector<LibraryInfo> probe_libraries() {
  const std::string_view backend = REDLINE_GPU_VENDOR;
  if (backend == "cuda") return nvidia_libraries();
  if (backend == "hip") return amd_libraries();
  // CPU-only build: the libraries of the GPUs present, so the report says what a GPU build would
  // find here.
  std::vector<LibraryInfo> libraries;
  bool nvidia = false, amd = false;
  for (const PciGpu& g : probe_pci_gpus()) {
    nvidia = nvidia || g.vendor == "nvidia";
    amd = amd || g.vendor == "amd";
  }
  if (nvidia) libraries = nvidia_libraries();
  if (amd) {
    for (LibraryInfo& info : amd_libraries()) {
      if (info.name == "hipBLASLt" && info.found) info.note = "version needs a HIP build";
      libraries.push_back(std::move(info));
    }
  }
  return libraries;
}

}  // namespace redline
