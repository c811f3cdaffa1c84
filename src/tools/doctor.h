// `redline doctor`: the report it gathers and the two ways it prints it (a table for people, JSON
// for machines; the JSON schema is documented in docs/doctor.md).
#pragma once

#include <string>
#include <vector>

#include "backend/gpu_probe.h"
#include "redline/core/probe.h"

namespace redline::tools {

// JSON schema version: bump on any change that renames, removes or retypes a field.
inline constexpr int kDoctorSchemaVersion = 1;

struct DoctorVerdict {
  bool can_run = false;
  std::string default_device;               // "gpu:0" or "cpu"
  std::vector<std::string> usable_devices;  // "cpu", "gpu:0", ...
  std::vector<std::string> warnings;        // one sentence each
  std::string summary;                      // one sentence
};

struct DoctorReport {
  SystemProbe probe;
  bool cpu_check_passed = false;
  std::string cpu_check_detail;
  bool smoke_ran = false;
  std::string smoke_skipped;  // why the smoke tests did not run
  std::vector<gpu::SmokeReport> smoke;
  DoctorVerdict verdict;
};

// The PCIe link the copies are compared with: the one read under load, else the link's maximum (a
// reading at rest may show a power-saving generation).
PcieLink pcie_link_read(const DoctorReport& report, const gpu::SmokeReport& smoke);
// False when a host copy beat that link by more than 5%: the reading is not the physical link.
bool pcie_link_plausible(const PcieLink& link, const gpu::SmokeReport& smoke);
// pcie_link_read() when plausible, else an unknown link (no comparison is printed).
PcieLink link_for_smoke(const DoctorReport& report, const gpu::SmokeReport& smoke);

std::string doctor_json(const DoctorReport& report);
std::string doctor_table(const DoctorReport& report);

}  // namespace redline::tools
