// The device probe: the CPU (/proc, sysconf), GPUs on the PCI bus (sysfs), the AMD KFD topology
// (read before the HIP runtime starts, because ROCm aborts the process at its first call when a
// GPU has no code object), the GPU runtime's view, and gpu_usable() for default_device().
#include "redline/core/probe.h"

#include <dirent.h>
#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#if REDLINE_HAS_OPENMP
#include <omp.h>
#endif

#include "backend/gpu_api.h"
#include "backend/gpu_probe.h"
#include "redline/core/device.h"
#include "redline/core/error.h"

namespace redline {
namespace {

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  std::string text = out.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> names;
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return names;
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

int to_int(std::string_view text, int fallback = -1) {
  int value = fallback;
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() ? value : fallback;
}

long long to_ll(std::string_view text, int base = 10) {
  if (base == 16 && text.substr(0, 2) == "0x") text.remove_prefix(2);
  long long value = -1;
  std::from_chars(text.data(), text.data() + text.size(), value, base);
  return value;
}

// "key value" lines (KFD properties) into a map.
std::map<std::string, long long> parse_properties(const std::string& text) {
  std::map<std::string, long long> out;
  std::istringstream in(text);
  std::string key;
  long long value = 0;
  while (in >> key >> value) out[key] = value;
  return out;
}

// A comma-separated list of device indices (HIP_VISIBLE_DEVICES); nullopt when it holds anything
// else (UUIDs), so the caller keeps every device.
std::optional<std::vector<int>> visible_indices(const char* value) {
  if (value == nullptr) return std::nullopt;
  std::vector<int> indices;
  std::string_view rest = value;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const int index = to_int(item, -1);
    if (index < 0) return std::nullopt;
    indices.push_back(index);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return indices;
}

template <typename T>
std::vector<T> apply_visible(const std::vector<T>& all, const char* value) {
  const std::optional<std::vector<int>> indices = visible_indices(value);
  if (!indices) return all;
  std::vector<T> out;
  for (int i : *indices) {
    if (i < static_cast<int>(all.size())) out.push_back(all[i]);
  }
  return out;
}

std::string device_label(int index, const std::string& name) {
  return name.empty() ? format("gpu:{}", index) : format("gpu:{} ({})", index, name);
}

}  // namespace

// ---- PCIe ---------------------------------------------------------------------------------------

PcieLink read_pcie_sysfs(std::string_view bus_id, std::string_view sysfs_root) {
  PcieLink link;
  if (bus_id.empty()) return link;
  const std::string dir =
      std::string(sysfs_root) + "/bus/pci/devices/" + normalize_pci_bus_id(bus_id) + "/";
  const auto speed = read_text(dir + "current_link_speed");
  const auto width = read_text(dir + "current_link_width");
  const auto max_speed = read_text(dir + "max_link_speed");
  const auto max_width = read_text(dir + "max_link_width");
  if (speed) link.current_gen = pcie_gen_from_speed(*speed);
  if (width) link.current_width = to_int(*width);
  if (max_speed) link.max_gen = pcie_gen_from_speed(*max_speed);
  if (max_width) link.max_width = to_int(*max_width);
  if (link.current_width == 0) link.current_width = -1;  // "0": the kernel could not read it
  if (link.max_width == 0) link.max_width = -1;
  if (link.known()) link.source = "sysfs";
  return link;
}

// ---- CPU ----------------------------------------------------------------------------------------

CpuInfo parse_cpuinfo(std::string_view text) {
  static const std::set<std::string> kInteresting = {
      // x86
      "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
      "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8",
      // Arm (the "Features" line)
      "asimd", "asimdhp", "fphp", "sve", "sve2", "bf16", "i8mm"};
  CpuInfo cpu;
  std::set<std::pair<std::string, std::string>> cores;  // (physical id, core id)
  std::set<std::string> sockets;
  std::set<std::string> features;
  std::string physical_id;
  int processors = 0;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    std::string value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.erase(0, 1);
    if (key == "processor") {
      ++processors;
    } else if (key == "vendor_id" && cpu.vendor.empty()) {
      cpu.vendor = value;
    } else if (key == "CPU implementer" && cpu.vendor.empty()) {
      cpu.vendor = "arm implementer " + value;
    } else if ((key == "model name" || key == "Model") && cpu.model.empty()) {
      cpu.model = value;
    } else if (key == "cpu MHz" && cpu.mhz < 0) {
      cpu.mhz = std::atof(value.c_str());
    } else if (key == "physical id") {
      physical_id = value;
      sockets.insert(value);
    } else if (key == "core id") {
      cores.insert({physical_id, value});
    } else if (key == "flags" || key == "Features") {
      std::istringstream words(value);
      std::string word;
      while (words >> word) {
        if (kInteresting.count(word)) features.insert(word);
      }
    }
  }
  if (processors > 0) cpu.logical_cores = processors;
  if (!cores.empty()) cpu.physical_cores = static_cast<int>(cores.size());
  if (!sockets.empty()) cpu.sockets = static_cast<int>(sockets.size());
  // Keep the order of kInteresting's families readable: sorted names.
  cpu.features.assign(features.begin(), features.end());
  return cpu;
}

CpuInfo probe_cpu() {
  CpuInfo cpu = parse_cpuinfo(read_text("/proc/cpuinfo").value_or(""));
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (online > 0) cpu.logical_cores = static_cast<int>(online);
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) cpu.affinity_cores = CPU_COUNT(&set);
  utsname name{};
  if (uname(&name) == 0) cpu.machine = name.machine;
  if (cpu.model.empty()) cpu.model = cpu.machine;
  std::istringstream meminfo(read_text("/proc/meminfo").value_or(""));
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib) {
    std::getline(meminfo, unit);
    if (key == "MemTotal:") cpu.memory_total_bytes = kib * 1024;
    if (key == "MemAvailable:") cpu.memory_available_bytes = kib * 1024;
  }
#if REDLINE_HAS_OPENMP
  cpu.openmp_threads = omp_get_max_threads();
#endif
#if REDLINE_HAS_BLAS
  cpu.blas = true;
#endif
  return cpu;
}

// ---- GPUs on the PCI bus ------------------------------------------------------------------------

std::vector<PciGpu> probe_pci_gpus(std::string_view sysfs_root) {
  std::vector<PciGpu> gpus;
  const std::string root = std::string(sysfs_root) + "/bus/pci/devices";
  for (const std::string& id : list_dir(root)) {
    const std::string dir = root + "/" + id;
    const long long cls = to_ll(read_text(dir + "/class").value_or(""), 16);
    if (cls < 0 || (cls >> 16) != 0x03) continue;  // display controllers: VGA, 3D, other
    const std::string vendor_id = read_text(dir + "/vendor").value_or("");
    PciGpu g;
    g.bus_id = id;
    if (vendor_id == "0x10de") {
      g.vendor = "nvidia";
    } else if (vendor_id == "0x1002") {
      g.vendor = "amd";
    } else {
      continue;
    }
    char target[512];
    const ssize_t n = readlink((dir + "/driver").c_str(), target, sizeof target - 1);
    if (n > 0) {
      target[n] = '\0';
      const std::string path = target;
      g.driver = path.substr(path.rfind('/') + 1);
    }
    gpus.push_back(std::move(g));
  }
  return gpus;
}

// ---- AMD GPUs from the KFD topology -------------------------------------------------------------

std::vector<GpuInfo> probe_kfd_gpus(std::string_view sysfs_root) {
  const std::string root = std::string(sysfs_root) + "/class/kfd/kfd/topology/nodes";
  std::vector<std::pair<int, GpuInfo>> nodes;
  for (const std::string& node : list_dir(root)) {
    const std::optional<std::string> text = read_text(root + "/" + node + "/properties");
    if (!text) continue;
    std::map<std::string, long long> p = parse_properties(*text);
    if (p["gfx_target_version"] <= 0 || p["simd_count"] <= 0) continue;  // a CPU node
    GpuInfo g;
    g.vendor = "amd";
    const std::string hardware =
        gfx_name_from_target_version(static_cast<int>(p["gfx_target_version"]));
    g.name = "AMD GPU (" + hardware + ")";
    g.arch = g.arch_full = hardware;
    if (p["simd_per_cu"] > 0) {
      g.multiprocessors = static_cast<int>(p["simd_count"] / p["simd_per_cu"]);
    }
    if (p.count("wave_front_size")) g.warp_size = static_cast<int>(p["wave_front_size"]);
    if (p.count("max_engine_clk_fcompute")) {
      g.clock_mhz = static_cast<int>(p["max_engine_clk_fcompute"]);
    }
    const long long location = p["location_id"];  // bus << 8 | device << 3 | function
    char bus[32];
    std::snprintf(bus, sizeof bus, "%04llx:%02llx:%02llx.%llx", p["domain"], (location >> 8) & 0xff,
                  (location >> 3) & 0x1f, location & 0x7);
    g.pci_bus_id = bus;
    for (const std::string& bank : list_dir(root + "/" + node + "/mem_banks")) {
      const std::optional<std::string> mem =
          read_text(root + "/" + node + "/mem_banks/" + bank + "/properties");
      if (mem)
        g.memory_total_bytes += static_cast<uint64_t>(parse_properties(*mem)["size_in_bytes"]);
    }
    nodes.emplace_back(to_int(node), std::move(g));
  }
  std::sort(nodes.begin(), nodes.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<GpuInfo> gpus;
  for (auto& [id, g] : nodes) gpus.push_back(std::move(g));
  // The runtime applies ROCR_VISIBLE_DEVICES, then HIP_VISIBLE_DEVICES (or CUDA_VISIBLE_DEVICES).
  gpus = apply_visible(gpus, std::getenv("ROCR_VISIBLE_DEVICES"));
  const char* hip_visible = std::getenv("HIP_VISIBLE_DEVICES");
  gpus = apply_visible(gpus, hip_visible ? hip_visible : std::getenv("CUDA_VISIBLE_DEVICES"));
  const char* ov = std::getenv("HSA_OVERRIDE_GFX_VERSION");
  const std::string as = ov ? gfx_name_from_override(ov) : std::string();
  for (size_t i = 0; i < gpus.size(); ++i) {
    gpus[i].index = static_cast<int>(i);
    if (!as.empty()) gpus[i].arch = gpus[i].arch_full = as;  // the runtime then loads `as` code
  }
  return gpus;
}

std::string hip_runtime_precheck(const std::vector<GpuInfo>& kfd_gpus,
                                 std::string_view built_archs) {
  std::vector<std::string> lacking;
  std::string first_fix;
  for (const GpuInfo& g : kfd_gpus) {
    const Compatibility c = check_compatibility("hip", g.arch, built_archs);
    if (c.has_code) continue;
    lacking.push_back(g.arch + " at " + g.pci_bus_id);
    if (first_fix.empty()) first_fix = c.fix;
  }
  if (lacking.empty()) return {};
  return format(
      "the HIP runtime was not started because it aborts the process when a GPU has no code "
      "object (hipErrorNoBinaryForGpu), and {} GPU(s) lack one ({}): {}; or hide such GPUs with "
      "HIP_VISIBLE_DEVICES",
      lacking.size(), lacking.front() + (lacking.size() > 1 ? ", ..." : ""), first_fix);
}

// ---- the runtime pre-check and gpu_usable() -----------------------------------------------------

const std::string& gpu_runtime_precheck() {
  static const std::string reason = []() -> std::string {
    if (std::string_view(REDLINE_GPU_VENDOR) != "hip") return {};
    return hip_runtime_precheck(probe_kfd_gpus(), REDLINE_GPU_ARCHS);
  }();
  return reason;
}

bool gpu_usable(int index, std::string* why) {
  static std::mutex mutex;
  static std::map<int, std::pair<bool, std::string>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(index);
  if (it == cache.end()) {
    std::string reason;
    try {
      if (!gpu_built()) {
        reason =
            "this redline was built without a GPU backend (REDLINE_GPU=off); rebuild with "
            "'cmake --preset cuda' or 'cmake --preset hip'";
      } else if (!gpu_runtime_precheck().empty()) {
        reason = gpu_runtime_precheck();
      } else if (gpu::device_count() == 0) {
        reason = format("no GPU is usable: {}", gpu::unavailable_reason());
      } else if (index < 0 || index >= gpu::device_count()) {
        reason =
            format("gpu:{} does not exist; this machine has {} GPU(s)", index, gpu::device_count());
      } else {
        GpuInfo info;
        gpu::query_device(index, &info);
        const Compatibility c = check_compatibility(
            REDLINE_GPU_VENDOR, info.vendor == "amd" ? info.arch_full : info.arch,
            REDLINE_GPU_ARCHS, gpu::cuda_toolkit_major());
        std::string load_error;
        if (!c.has_code) {
          reason = device_label(index, info.name) + ": " + c.fix;
        } else if (!gpu::kernel_image_loads(index, &load_error)) {
          reason = format(
              "{} cannot load redline's kernels ({}); {}", device_label(index, info.name),
              load_error,
              c.fix.empty() ? format("this binary was built for {}", REDLINE_GPU_ARCHS) : c.fix);
        } else {
          int compiled = 0, lanes = 0;
          gpu::wave_sizes(index, &compiled, &lanes);
          const std::string mismatch = wave_size_mismatch(compiled, lanes);
          if (!mismatch.empty()) reason = device_label(index, info.name) + ": " + mismatch;
        }
      }
    } catch (const std::exception& e) {
      reason = format("gpu:{} could not be probed: {}", index, e.what());
    }
    it = cache.emplace(index, std::make_pair(reason.empty(), reason)).first;
  }
  if (why != nullptr) *why = it->second.second;
  return it->second.first;
}

// ---- the whole probe ----------------------------------------------------------------------------

std::vector<GpuInfo> probe_gpus(GpuRuntimeInfo* runtime, bool with_telemetry) {
  runtime->backend = REDLINE_GPU_VENDOR;
  if (const char* ov = std::getenv("HSA_OVERRIDE_GFX_VERSION")) runtime->hsa_override = ov;
  std::vector<GpuInfo> gpus;
  if (!gpu_built()) {
    runtime->unavailable_reason = "this redline was built without a GPU backend (REDLINE_GPU=off)";
    return gpus;
  }
  const std::string& precheck = gpu_runtime_precheck();
  if (!precheck.empty()) {
    // Report what KFD sees, without starting the runtime.
    runtime->unavailable_reason = precheck;
    for (GpuInfo& g : probe_kfd_gpus()) {
      g.compat = check_compatibility("hip", g.arch, REDLINE_GPU_ARCHS);
      g.caps = capabilities_for_arch(g.arch);
      g.pcie = read_pcie_sysfs(g.pci_bus_id);
      if (with_telemetry) g.telemetry = read_telemetry("amd", g.pci_bus_id);
      if (!g.pcie.known() && g.telemetry.pcie.known()) g.pcie = g.telemetry.pcie;
      g.usable = false;
      g.unusable_reason = g.compat.has_code
                              ? "the HIP runtime was not started (another GPU lacks a code object)"
                              : device_label(g.index, g.name) + ": " + g.compat.fix;
      gpus.push_back(std::move(g));
    }
    return gpus;
  }
  try {
    gpu::runtime_versions(&runtime->driver_version, &runtime->runtime_version);
  } catch (const std::exception&) {
    // Versions stay empty; device_count() below says why the runtime is unusable.
  }
  runtime->device_count = gpu::device_count();
  runtime->unavailable_reason = gpu::unavailable_reason();
  for (int i = 0; i < runtime->device_count; ++i) {
    GpuInfo g;
    g.index = i;
    try {
      gpu::query_device(i, &g);
      g.from_runtime = true;
    } catch (const std::exception& e) {
      g.unusable_reason = format("gpu:{} could not be queried: {}", i, e.what());
      gpus.push_back(std::move(g));
      continue;
    }
    g.compat = check_compatibility(REDLINE_GPU_VENDOR, g.vendor == "amd" ? g.arch_full : g.arch,
                                   REDLINE_GPU_ARCHS, gpu::cuda_toolkit_major());
    g.caps = capabilities_for_arch(g.arch);
    g.pcie = read_pcie_sysfs(g.pci_bus_id);
    if (with_telemetry) g.telemetry = read_telemetry(g.vendor, g.pci_bus_id);
    if (!g.pcie.known() && g.telemetry.pcie.known()) g.pcie = g.telemetry.pcie;
    if (g.pcie.max_gen < 0 && g.telemetry.pcie.max_gen > 0)
      g.pcie.max_gen = g.telemetry.pcie.max_gen;
    if (g.pcie.max_width < 0 && g.telemetry.pcie.max_width > 0) {
      g.pcie.max_width = g.telemetry.pcie.max_width;
    }
    g.usable = gpu_usable(i, &g.unusable_reason);
    gpus.push_back(std::move(g));
  }
  return gpus;
}

SystemProbe probe_system(bool with_telemetry) {
  SystemProbe probe;
  probe.cpu = probe_cpu();
  probe.pci_gpus = probe_pci_gpus();
  probe.gpus = probe_gpus(&probe.runtime, with_telemetry);
  probe.libraries = probe_libraries();
  return probe;
}

}  // namespace redline
