// Live GPU readings (power, temperature, clocks, PCIe link) from NVML or rocm_smi, both loaded
// with dlopen at run time: a machine without them reports "not available" and nothing fails.
#pragma once

#include <string>
#include <string_view>

namespace redline {

// A PCIe link: generation and lane count, now and at most.
struct PcieLink {
  int current_gen = -1;  // 1..6
  int current_width = -1;
  int max_gen = -1;
  int max_width = -1;
  std::string source;  // "sysfs", "nvml", "rocm_smi" or empty when unknown

  bool known() const { return current_gen > 0 && current_width > 0; }
  // Data rate of the link in one direction after line encoding, in GB/s (1e9 bytes); -1 unknown.
  double current_gbps() const;
  double max_gbps() const;
  // True when the link runs narrower or slower than it can.
  bool below_max() const;
};

struct Telemetry {
  std::string source;       // "nvml" or "rocm_smi"; empty: not available
  std::string unavailable;  // why not, when source is empty
  double power_w = -1;
  double power_limit_w = -1;
  double temperature_c = -1;
  int sm_clock_mhz = -1;  // current graphics (shader) clock
  int sm_clock_max_mhz = -1;
  int memory_clock_mhz = -1;
  int memory_clock_max_mhz = -1;
  PcieLink pcie;               // as NVML / rocm_smi see it (the fallback when sysfs lacks it)
  std::string driver_version;  // kernel driver version (NVML: 580.95.05), or empty
};

// Reads the GPU at pci_bus_id ("0000:1b:00.0") of vendor "nvidia" or "amd". Never throws; the
// library is loaded once per process and kept.
Telemetry read_telemetry(std::string_view vendor, std::string_view pci_bus_id);

}  // namespace redline
