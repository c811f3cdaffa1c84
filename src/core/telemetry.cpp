// GPU telemetry from NVML (libnvidia-ml.so.1, shipped with the NVIDIA driver) or rocm_smi
// (librocm_smi64.so), loaded with dlopen. The function types are declared here from the vendors'
// documented C APIs, so neither header is needed at build time and an absent library only means
// "not available".
#include "redline/core/telemetry.h"

#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "redline/core/error.h"
#include "redline/core/probe.h"

namespace redline {
namespace {

void* open_first(std::initializer_list<const char*> sonames) {
  for (const char* soname : sonames) {
    if (void* handle = dlopen(soname, RTLD_LAZY | RTLD_LOCAL)) return handle;
  }
  return nullptr;
}

template <typename Fn>
void bind(void* lib, Fn* fn, const char* name) {
  *fn = lib ? reinterpret_cast<Fn>(dlsym(lib, name)) : nullptr;
}

// ---- NVML ---------------------------------------------------------------------------------------

using NvmlDevice = void*;
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlTemperatureGpu = 0;
constexpr int kNvmlClockSm = 1;
constexpr int kNvmlClockMem = 2;

struct Nvml {
  void* lib = nullptr;
  std::string error;
  int (*init)() = nullptr;
  int (*handle_by_bus_id)(const char*, NvmlDevice*) = nullptr;
  int (*power_usage)(NvmlDevice, unsigned*) = nullptr;
  int (*power_limit)(NvmlDevice, unsigned*) = nullptr;
  int (*temperature)(NvmlDevice, int, unsigned*) = nullptr;
  int (*clock)(NvmlDevice, int, unsigned*) = nullptr;
  int (*max_clock)(NvmlDevice, int, unsigned*) = nullptr;
  int (*pcie_gen)(NvmlDevice, unsigned*) = nullptr;
  int (*pcie_width)(NvmlDevice, unsigned*) = nullptr;
  int (*pcie_max_gen)(NvmlDevice, unsigned*) = nullptr;
  int (*pcie_max_width)(NvmlDevice, unsigned*) = nullptr;
  int (*driver_version)(char*, unsigned) = nullptr;
  const char* (*error_string)(int) = nullptr;
};

const Nvml& nvml() {
  static const Nvml n = [] {
    Nvml n;
    n.lib = open_first({"libnvidia-ml.so.1", "libnvidia-ml.so"});
    if (n.lib == nullptr) {
      n.error = "NVML (libnvidia-ml.so.1) not found";
      return n;
    }
    bind(n.lib, &n.init, "nvmlInit_v2");
    bind(n.lib, &n.handle_by_bus_id, "nvmlDeviceGetHandleByPciBusId_v2");
    bind(n.lib, &n.power_usage, "nvmlDeviceGetPowerUsage");
    bind(n.lib, &n.power_limit, "nvmlDeviceGetEnforcedPowerLimit");
    bind(n.lib, &n.temperature, "nvmlDeviceGetTemperature");
    bind(n.lib, &n.clock, "nvmlDeviceGetClockInfo");
    bind(n.lib, &n.max_clock, "nvmlDeviceGetMaxClockInfo");
    bind(n.lib, &n.pcie_gen, "nvmlDeviceGetCurrPcieLinkGeneration");
    bind(n.lib, &n.pcie_width, "nvmlDeviceGetCurrPcieLinkWidth");
    bind(n.lib, &n.pcie_max_gen, "nvmlDeviceGetMaxPcieLinkGeneration");
    bind(n.lib, &n.pcie_max_width, "nvmlDeviceGetMaxPcieLinkWidth");
    bind(n.lib, &n.driver_version, "nvmlSystemGetDriverVersion");
    bind(n.lib, &n.error_string, "nvmlErrorString");
    if (n.init == nullptr || n.handle_by_bus_id == nullptr) {
      n.error = "NVML lacks nvmlInit_v2 / nvmlDeviceGetHandleByPciBusId_v2 (driver too old)";
      n.lib = nullptr;
      return n;
    }
    const int status = n.init();
    if (status != kNvmlSuccess) {
      n.error = format("nvmlInit failed: {}", n.error_string ? n.error_string(status) : "error");
      n.lib = nullptr;
    }
    return n;
  }();
  return n;
}

Telemetry read_nvml(std::string_view bus_id) {
  Telemetry t;
  const Nvml& n = nvml();
  if (n.lib == nullptr) {
    t.unavailable = n.error;
    return t;
  }
  NvmlDevice dev = nullptr;
  const std::string id(bus_id);
  const int status = n.handle_by_bus_id(id.c_str(), &dev);
  if (status != kNvmlSuccess) {
    t.unavailable = format("NVML does not know the GPU at {}: {}", bus_id,
                           n.error_string ? n.error_string(status) : "error");
    return t;
  }
  t.source = "nvml";
  unsigned v = 0;
  if (n.power_usage && n.power_usage(dev, &v) == kNvmlSuccess) t.power_w = v / 1000.0;
  if (n.power_limit && n.power_limit(dev, &v) == kNvmlSuccess) t.power_limit_w = v / 1000.0;
  if (n.temperature && n.temperature(dev, kNvmlTemperatureGpu, &v) == kNvmlSuccess) {
    t.temperature_c = v;
  }
  if (n.clock && n.clock(dev, kNvmlClockSm, &v) == kNvmlSuccess) t.sm_clock_mhz = v;
  if (n.clock && n.clock(dev, kNvmlClockMem, &v) == kNvmlSuccess) t.memory_clock_mhz = v;
  if (n.max_clock && n.max_clock(dev, kNvmlClockSm, &v) == kNvmlSuccess) t.sm_clock_max_mhz = v;
  if (n.max_clock && n.max_clock(dev, kNvmlClockMem, &v) == kNvmlSuccess) {
    t.memory_clock_max_mhz = v;
  }
  if (n.pcie_gen && n.pcie_gen(dev, &v) == kNvmlSuccess) t.pcie.current_gen = v;
  if (n.pcie_width && n.pcie_width(dev, &v) == kNvmlSuccess) t.pcie.current_width = v;
  if (n.pcie_max_gen && n.pcie_max_gen(dev, &v) == kNvmlSuccess) t.pcie.max_gen = v;
  if (n.pcie_max_width && n.pcie_max_width(dev, &v) == kNvmlSuccess) t.pcie.max_width = v;
  if (t.pcie.known()) t.pcie.source = "nvml";
  char text[96] = {};
  if (n.driver_version && n.driver_version(text, sizeof text) == kNvmlSuccess) {
    t.driver_version = text;
  }
  return t;
}

// ---- rocm_smi -----------------------------------------------------------------------------------

constexpr int kRsmiSuccess = 0;
constexpr int kRsmiClockSys = 0;
constexpr int kRsmiClockMem = 4;
constexpr int kRsmiTempEdge = 0;
constexpr int kRsmiTempJunction = 1;
constexpr int kRsmiTempCurrent = 0;

// rsmi_frequencies_t changed at ROCm 6 (librocm_smi64 major 6): a leading has_deep_sleep flag and
// 33 entries instead of 32. Both layouts, chosen by the library's own version.
struct RsmiFrequenciesV5 {
  uint32_t num_supported, current;
  uint64_t frequency[32];
};
struct RsmiFrequenciesV6 {
  bool has_deep_sleep;
  uint32_t num_supported, current;
  uint64_t frequency[33];
};
struct RsmiPcieV5 {
  RsmiFrequenciesV5 rate;
  uint32_t lanes[32];
};
struct RsmiPcieV6 {
  RsmiFrequenciesV6 rate;
  uint32_t lanes[33];
};
struct RsmiVersion {
  uint32_t major, minor, patch;
  const char* build;
};

// Current and maximum of a frequency table (Hz or T/s); false when the table is malformed.
template <typename F>
bool current_and_max(const F& f, uint64_t* current, uint64_t* max, uint32_t* current_index) {
  const uint32_t capacity = sizeof(f.frequency) / sizeof(f.frequency[0]);
  if (f.num_supported == 0 || f.num_supported > capacity || f.current >= f.num_supported) {
    return false;
  }
  *current = f.frequency[f.current];
  *current_index = f.current;
  *max = 0;
  for (uint32_t i = 0; i < f.num_supported; ++i) *max = std::max<uint64_t>(*max, f.frequency[i]);
  return true;
}

struct Rsmi {
  void* lib = nullptr;
  std::string error;
  bool v6 = true;
  int (*init)(uint64_t) = nullptr;
  int (*num_devices)(uint32_t*) = nullptr;
  int (*pci_id)(uint32_t, uint64_t*) = nullptr;
  int (*power_ave)(uint32_t, uint32_t, uint64_t*) = nullptr;
  int (*socket_power)(uint32_t, uint64_t*) = nullptr;
  int (*power_cap)(uint32_t, uint32_t, uint64_t*) = nullptr;
  int (*temperature)(uint32_t, uint32_t, int, int64_t*) = nullptr;
  int (*clock)(uint32_t, int, void*) = nullptr;
  int (*pcie)(uint32_t, void*) = nullptr;
  int (*version)(RsmiVersion*) = nullptr;
};

const Rsmi& rsmi() {
  static const Rsmi r = [] {
    Rsmi r;
    r.lib = open_first({"librocm_smi64.so.7", "librocm_smi64.so.6", "librocm_smi64.so.5",
                        "librocm_smi64.so.1", "librocm_smi64.so"});
    if (r.lib == nullptr) {
      r.error = "rocm_smi (librocm_smi64.so) not found";
      return r;
    }
    bind(r.lib, &r.init, "rsmi_init");
    bind(r.lib, &r.num_devices, "rsmi_num_monitor_devices");
    bind(r.lib, &r.pci_id, "rsmi_dev_pci_id_get");
    bind(r.lib, &r.power_ave, "rsmi_dev_power_ave_get");
    bind(r.lib, &r.socket_power, "rsmi_dev_current_socket_power_get");
    bind(r.lib, &r.power_cap, "rsmi_dev_power_cap_get");
    bind(r.lib, &r.temperature, "rsmi_dev_temp_metric_get");
    bind(r.lib, &r.clock, "rsmi_dev_gpu_clk_freq_get");
    bind(r.lib, &r.pcie, "rsmi_dev_pci_bandwidth_get");
    bind(r.lib, &r.version, "rsmi_version_get");
    RsmiVersion v{};
    if (r.version && r.version(&v) == kRsmiSuccess) r.v6 = v.major >= 6;
    if (r.init == nullptr || r.num_devices == nullptr || r.pci_id == nullptr ||
        r.init(0) != kRsmiSuccess) {
      r.error = "rocm_smi could not be initialized (is the amdgpu driver loaded?)";
      r.lib = nullptr;
    }
    return r;
  }();
  return r;
}

template <typename Freq, typename Pcie>
void read_rsmi_tables(const Rsmi& r, uint32_t dev, Telemetry* t) {
  Freq f{};
  uint64_t current = 0, max = 0;
  uint32_t index = 0;
  if (r.clock && r.clock(dev, kRsmiClockSys, &f) == kRsmiSuccess &&
      current_and_max(f, &current, &max, &index)) {
    t->sm_clock_mhz = static_cast<int>(current / 1000000);
    t->sm_clock_max_mhz = static_cast<int>(max / 1000000);
  }
  f = Freq{};
  if (r.clock && r.clock(dev, kRsmiClockMem, &f) == kRsmiSuccess &&
      current_and_max(f, &current, &max, &index)) {
    t->memory_clock_mhz = static_cast<int>(current / 1000000);
    t->memory_clock_max_mhz = static_cast<int>(max / 1000000);
  }
  Pcie p{};
  if (r.pcie && r.pcie(dev, &p) == kRsmiSuccess &&
      current_and_max(p.rate, &current, &max, &index)) {
    // Transfer rates in T/s: 2.5e9 (gen1) ... 32e9 (gen5).
    t->pcie.current_gen = pcie_gen_from_speed(std::to_string(current / 1e9));
    t->pcie.current_width = static_cast<int>(p.lanes[index]);
    t->pcie.max_gen = pcie_gen_from_speed(std::to_string(max / 1e9));
    uint32_t widest = 0;
    for (uint32_t i = 0; i < p.rate.num_supported; ++i) widest = std::max(widest, p.lanes[i]);
    t->pcie.max_width = static_cast<int>(widest);
    if (t->pcie.known()) t->pcie.source = "rocm_smi";
  }
}

Telemetry read_rsmi(std::string_view bus_id) {
  Telemetry t;
  const Rsmi& r = rsmi();
  if (r.lib == nullptr) {
    t.unavailable = r.error;
    return t;
  }
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  if (std::sscanf(std::string(bus_id).c_str(), "%x:%x:%x.%x", &domain, &bus, &device, &function) !=
      4) {
    t.unavailable = format("unreadable PCI bus id '{}'", bus_id);
    return t;
  }
  const uint64_t want = (uint64_t{domain} << 32) | (bus << 8) | (device << 3) | function;
  uint32_t count = 0;
  r.num_devices(&count);
  for (uint32_t dev = 0; dev < count; ++dev) {
    uint64_t bdf = 0;
    // rocm_smi may put the partition id in bits 28-31; compare domain and BDF only.
    if (r.pci_id(dev, &bdf) != kRsmiSuccess || (bdf & 0xffffffff0000ffffull) != want) continue;
    t.source = "rocm_smi";
    uint64_t microwatts = 0;
    if (r.socket_power && r.socket_power(dev, &microwatts) == kRsmiSuccess && microwatts > 0) {
      t.power_w = microwatts / 1e6;
    } else if (r.power_ave && r.power_ave(dev, 0, &microwatts) == kRsmiSuccess) {
      t.power_w = microwatts / 1e6;
    }
    if (r.power_cap && r.power_cap(dev, 0, &microwatts) == kRsmiSuccess) {
      t.power_limit_w = microwatts / 1e6;
    }
    int64_t millidegrees = 0;
    // MI300 parts have no edge sensor; the junction (hot spot) sensor stands in.
    if (r.temperature &&
        (r.temperature(dev, kRsmiTempEdge, kRsmiTempCurrent, &millidegrees) == kRsmiSuccess ||
         r.temperature(dev, kRsmiTempJunction, kRsmiTempCurrent, &millidegrees) == kRsmiSuccess)) {
      t.temperature_c = millidegrees / 1000.0;
    }
    if (r.v6) {
      read_rsmi_tables<RsmiFrequenciesV6, RsmiPcieV6>(r, dev, &t);
    } else {
      read_rsmi_tables<RsmiFrequenciesV5, RsmiPcieV5>(r, dev, &t);
    }
    return t;
  }
  t.unavailable = format("rocm_smi does not list the GPU at {}", bus_id);
  return t;
}

}  // namespace

Telemetry read_telemetry(std::string_view vendor, std::string_view pci_bus_id) {
  static std::mutex mutex;  // NVML and rocm_smi are thread-safe, the lazy loading here is not
  std::lock_guard<std::mutex> lock(mutex);
  if (pci_bus_id.empty()) {
    Telemetry t;
    t.unavailable = "the GPU's PCI bus id is unknown";
    return t;
  }
  if (vendor == "nvidia") return read_nvml(pci_bus_id);
  if (vendor == "amd") return read_rsmi(pci_bus_id);
  Telemetry t;
  t.unavailable = format("no telemetry for vendor '{}'", vendor);
  return t;
}

}  // namespace redline
