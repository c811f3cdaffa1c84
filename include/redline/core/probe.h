// The device probe: what this machine has (CPU, GPUs, vendor libraries) and whether this binary
// can run on it. `redline doctor` prints it; default_device() asks gpu_usable() so that a GPU the
// binary has no code for falls back to the CPU with one warning instead of a runtime abort.
//
// Unknown numbers are -1 (or 0 for byte counts that were not read); unknown text is empty.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redline/core/telemetry.h"

namespace redline {

// ---- PCIe (PcieLink itself is in telemetry.h) ---------------------------------------------------

// PCIe generation from a sysfs link speed ("16.0 GT/s PCIe", "8 GT/s", "2.5 GT/s"); -1 if unknown.
int pcie_gen_from_speed(std::string_view speed);
// Per-lane, one-direction data rate of a generation after encoding, GB/s (gen3: 0.985).
double pcie_lane_gbps(int gen);
// Reads /sys/bus/pci/devices/<bus_id>/{current,max}_link_{speed,width}; bus_id like 0000:1b:00.0
// in any case. sysfs_root is for tests. Returns an unknown link when the files are absent.
PcieLink read_pcie_sysfs(std::string_view bus_id, std::string_view sysfs_root = "/sys");
// "0000:1B:00.0" or "00000000:1b:00.0" -> "0000:1b:00.0" (the sysfs spelling).
std::string normalize_pci_bus_id(std::string_view bus_id);

// ---- compatibility: does this binary carry code for the device? ---------------------------------

// One entry of a CMake architecture list: "80-real", "90", "90-virtual", "90a", "gfx90a",
// "gfx90a:xnack-", "gfx11-generic".
struct ArchTarget {
  std::string text;            // as written
  std::string name;            // sm_80, sm_90a, gfx90a, gfx11-generic
  bool machine = false;        // carries machine code (SASS / a code object)
  bool ptx = false;            // CUDA: carries PTX that the driver can compile for newer GPUs
  int cc = -1;                 // CUDA: 10 * major + minor (80, 90, 100, 120)
  bool arch_specific = false;  // CUDA "a"/"f" suffix: runs only on that exact arch (family)
};

// Parses a comma- or semicolon-separated list (REDLINE_GPU_ARCHS). Unknown entries are kept with
// name = text and no code, so they show in the report.
std::vector<ArchTarget> parse_arch_list(std::string_view list);

// "gfx" name of an AMD target version as KFD and HSA_OVERRIDE_GFX_VERSION write it:
// 90010 or "9.0.10" -> gfx90a, 100302 / "10.3.2" -> gfx1032, 110000 -> gfx1100.
std::string gfx_name_from_version(int major, int minor, int stepping);
std::string gfx_name_from_target_version(int target_version);
// Parses an HSA_OVERRIDE_GFX_VERSION value ("10.3.0"); empty when it is malformed.
std::string gfx_name_from_override(std::string_view value);
// gfx90a:sramecc+:xnack- -> gfx90a.
std::string strip_gfx_features(std::string_view gcn_arch_name);

// Known working (unofficial) HSA_OVERRIDE_GFX_VERSION for AMD families whose sibling has official
// ROCm support: {"10.3.0", "gfx1030"} for gfx1031..gfx1036, {"11.0.0", "gfx1100"} for gfx1101..3.
struct GfxOverride {
  std::string value;    // HSA_OVERRIDE_GFX_VERSION value
  std::string runs_as;  // the gfx target the device then loads code for
};
std::optional<GfxOverride> hsa_override_for(std::string_view gfx);

struct Compatibility {
  std::string device_arch;     // sm_90, gfx90a
  std::string built_archs;     // as the binary was built (REDLINE_GPU_ARCHS), e.g. 80-real,90
  bool has_code = false;       // the binary can run kernels on the device
  bool via_ptx = false;        // CUDA: only through PTX compiled by the driver at load time
  std::string matched;         // the entry that serves the device: sm_90, compute_90, gfx90a
  std::string fix;             // one sentence when !has_code (or via_ptx), else empty
  std::string override_value;  // HSA_OVERRIDE_GFX_VERSION that works (unofficial), or empty
  bool override_needs_rebuild = false;  // the override's target is not in the build either
};

// vendor: "cuda" or "hip". device_arch: sm_XY[a] or gfxNNNN. built: REDLINE_GPU_ARCHS.
// cuda_toolkit_major: the toolkit that built the binary (0 when unknown), to name what it supports.
Compatibility check_compatibility(std::string_view vendor, std::string_view device_arch,
                                  std::string_view built, int cuda_toolkit_major = 0);

// Empty when the kernels were compiled for the lanes per warp or wavefront the device runs them
// with; otherwise one sentence with the fix. The kernels' shuffles and ballots assume their
// compiled width, so a mismatch would give wrong results with no error.
std::string wave_size_mismatch(int compiled_lanes, int device_lanes);

// ---- capabilities -------------------------------------------------------------------------------

struct Capabilities {
  bool fp16 = false;  // matrix units (tensor cores, MFMA, WMMA) for these input types
  bool bf16 = false;
  bool tf32 = false;  // NVIDIA tf32; AMD xf32 on gfx940-942
  bool fp8 = false;
  std::string matrix_unit;  // "tensor cores (4th gen)", "MFMA (CDNA3)", "WMMA (RDNA3)", "none"
};
Capabilities capabilities_for_arch(std::string_view arch);

// ---- devices ------------------------------------------------------------------------------------

struct GpuInfo {
  int index = -1;
  std::string vendor;  // "nvidia" or "amd"
  std::string name;
  std::string arch;          // sm_90 / gfx90a
  std::string arch_full;     // gfx90a:sramecc+:xnack- ; compute capability "9.0" on NVIDIA
  std::string pci_bus_id;    // 0000:1b:00.0
  int multiprocessors = -1;  // SMs or CUs
  int warp_size = -1;
  int clock_mhz = -1;         // peak
  int memory_clock_mhz = -1;  // peak
  int memory_bus_width_bits = -1;
  uint64_t memory_total_bytes = 0;
  uint64_t memory_free_bytes = 0;
  int64_t l2_bytes = -1;
  std::string driver_version;   // "13.0" (CUDA driver API) / HIP driver version
  std::string runtime_version;  // runtime this binary is linked with
  PcieLink pcie;
  Compatibility compat;
  Capabilities caps;
  Telemetry telemetry;
  bool from_runtime = false;  // false: seen only through sysfs/KFD (runtime not initialized)
  bool usable = false;
  std::string unusable_reason;  // one sentence when !usable

  // Theoretical memory bandwidth from the memory clock and bus width (DDR), GB/s; -1 unknown.
  double peak_memory_gbps() const;
  const char* multiprocessor_label() const { return vendor == "amd" ? "CUs" : "SMs"; }
};

struct CpuInfo {
  std::string vendor;  // GenuineIntel, AuthenticAMD, ...
  std::string model;
  std::string machine;      // x86_64, aarch64
  int logical_cores = -1;   // online CPUs
  int affinity_cores = -1;  // CPUs this process may run on (sched_getaffinity, cgroups, taskset)
  int physical_cores = -1;
  int sockets = -1;
  double mhz = -1;
  uint64_t memory_total_bytes = 0;
  uint64_t memory_available_bytes = 0;
  std::vector<std::string> features;  // the SIMD features that matter: avx2, fma, avx512f, ...
  int openmp_threads = -1;            // -1: built without OpenMP
  bool blas = false;                  // built with a BLAS
};

// Parses /proc/cpuinfo text (exposed for tests).
CpuInfo parse_cpuinfo(std::string_view text);
CpuInfo probe_cpu();

// A GPU seen on the PCI bus (sysfs), whether or not a driver or this build can use it.
struct PciGpu {
  std::string bus_id;
  std::string vendor;  // "nvidia", "amd"
  std::string driver;  // bound kernel driver (nvidia, amdgpu) or empty: none
};
std::vector<PciGpu> probe_pci_gpus(std::string_view sysfs_root = "/sys");

struct LibraryInfo {
  std::string name;     // cuBLASLt, cuDNN, NCCL, hipBLASLt, rocBLAS, MIOpen, RCCL, NVML, rocm_smi
  std::string purpose;  // what redline uses it for
  bool found = false;
  std::string file;     // the soname that loaded
  std::string version;  // from the library's get-version function, or empty
  std::string note;     // why the version is missing, or what its absence means
};
// Looks for the vendor libraries of this build's backend with dlopen (never fails).
std::vector<LibraryInfo> probe_libraries();

struct GpuRuntimeInfo {
  std::string backend;  // cuda, hip, none
  int device_count = 0;
  std::string unavailable_reason;  // why device_count is 0 (or why the runtime was not started)
  std::string driver_version;
  std::string runtime_version;
  std::string hsa_override;  // HSA_OVERRIDE_GFX_VERSION when set
};

struct SystemProbe {
  CpuInfo cpu;
  GpuRuntimeInfo runtime;
  std::vector<GpuInfo> gpus;
  std::vector<PciGpu> pci_gpus;
  std::vector<LibraryInfo> libraries;
};

// The whole probe. On HIP it reads the KFD topology first and does not start the HIP runtime when
// a GPU lacks a code object (ROCm aborts the process in that case: hipErrorNoBinaryForGpu).
SystemProbe probe_system(bool with_telemetry = true);
std::vector<GpuInfo> probe_gpus(GpuRuntimeInfo* runtime, bool with_telemetry = true);

// AMD GPUs as the KFD topology lists them (what rocminfo reads; no ROCm library needed), indexed as
// the HIP runtime would after ROCR_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES (or
// CUDA_VISIBLE_DEVICES) when they hold indices; with HSA_OVERRIDE_GFX_VERSION set, arch is the
// target the runtime then loads code for. sysfs_root is for tests.
std::vector<GpuInfo> probe_kfd_gpus(std::string_view sysfs_root = "/sys");
// One sentence when any of kfd_gpus has no code object in built_archs (the HIP runtime would abort
// the process), else empty.
std::string hip_runtime_precheck(const std::vector<GpuInfo>& kfd_gpus,
                                 std::string_view built_archs);

// Whether starting the GPU runtime is safe: on HIP builds, every GPU in the KFD topology (with
// HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES / HSA_OVERRIDE_GFX_VERSION applied) must have a code
// object in this binary. Empty when safe, else one sentence with the fix. Cached; never throws.
const std::string& gpu_runtime_precheck();

// Whether GPU `index` can run redline's kernels: a backend is built, the runtime starts, the index
// exists and the binary has code for its arch (checked by loading a kernel). *why gets one sentence
// when not. Cached per index; never throws.
bool gpu_usable(int index, std::string* why = nullptr);

}  // namespace redline
