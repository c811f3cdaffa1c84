// Pure rules of the device probe: architecture lists, code compatibility, the known
// HSA_OVERRIDE_GFX_VERSION table, matrix-unit capabilities and PCIe link rates. No I/O here, so
// tests feed fabricated inputs (tests/tools/probe_compat_test.cpp).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "redline/core/error.h"
#include "redline/core/probe.h"

namespace redline {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool is_gfx(std::string_view s) { return s.substr(0, 3) == "gfx"; }

// Splits "gfx90a:sramecc+:xnack-" into the processor and its feature settings.
std::vector<std::string> split_features(std::string_view full, std::string* processor) {
  std::vector<std::string> features;
  size_t at = full.find(':');
  *processor = std::string(full.substr(0, at));
  while (at != std::string_view::npos) {
    const size_t next = full.find(':', at + 1);
    features.emplace_back(
        full.substr(at + 1, next == std::string_view::npos ? next : next - at - 1));
    at = next;
  }
  return features;
}

// A code object built with xnack+ (or sramecc+) runs only on a device in that mode; one built
// without the feature named runs in either mode.
bool features_compatible(const std::vector<std::string>& code,
                         const std::vector<std::string>& dev) {
  for (const std::string& f : code) {
    if (f.size() < 2) continue;
    const std::string name = f.substr(0, f.size() - 1);
    for (const std::string& d : dev) {
      if (d.size() == f.size() && d.substr(0, d.size() - 1) == name && d.back() != f.back()) {
        return false;
      }
    }
  }
  return true;
}

// The processors each generic target of LLVM covers (ROCm 6.2+).
bool generic_covers(std::string_view generic, std::string_view gfx) {
  static const struct {
    const char* generic;
    std::vector<std::string_view> members;
  } kGeneric[] = {
      {"gfx9-generic", {"gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"}},
      {"gfx9-4-generic", {"gfx940", "gfx941", "gfx942", "gfx950"}},
      {"gfx10-1-generic", {"gfx1010", "gfx1011", "gfx1012", "gfx1013"}},
      {"gfx10-3-generic",
       {"gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"}},
      {"gfx11-generic",
       {"gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153"}},
      {"gfx12-generic", {"gfx1200", "gfx1201"}},
  };
  for (const auto& g : kGeneric) {
    if (generic != g.generic) continue;
    return std::find(g.members.begin(), g.members.end(), gfx) != g.members.end();
  }
  return false;
}

// Oldest compute capability each CUDA toolkit can compile for.
int oldest_cc_of_toolkit(int toolkit_major) {
  if (toolkit_major >= 13) return 75;
  if (toolkit_major == 12) return 50;
  if (toolkit_major == 11) return 35;
  return 0;
}

std::string join(const std::vector<std::string>& items, std::string_view last_sep = " and ") {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += (i + 1 == items.size()) ? std::string(last_sep) : std::string(", ");
    out += items[i];
  }
  return out;
}

// How the binary's list reads in a sentence: "sm_80, sm_90 and PTX compute_90".
std::string describe_built(const std::vector<ArchTarget>& targets) {
  std::vector<std::string> parts;
  for (const ArchTarget& t : targets) {
    if (t.machine) parts.push_back(t.name);
  }
  for (const ArchTarget& t : targets) {
    if (t.ptx) parts.push_back("PTX compute_" + t.name.substr(3));
    if (!t.machine && !t.ptx) parts.push_back("'" + t.text + "'");
  }
  return parts.empty() ? std::string("no GPU architecture") : join(parts);
}

// The CMake list with one more entry: "80-real;90" + "75" -> "80-real;90;75".
std::string cmake_list_with(const std::vector<ArchTarget>& targets, const std::string& extra) {
  std::string out;
  for (const ArchTarget& t : targets) out += t.text + ";";
  return out + extra;
}

}  // namespace

// ---- PCIe ---------------------------------------------------------------------------------------

int pcie_gen_from_speed(std::string_view speed) {
  speed = trim(speed);
  double gts = 0;
  if (std::sscanf(std::string(speed).c_str(), "%lf", &gts) != 1 || gts <= 0) return -1;
  if (gts < 3) return 1;   // 2.5 GT/s
  if (gts < 6) return 2;   // 5 GT/s
  if (gts < 12) return 3;  // 8 GT/s
  if (gts < 24) return 4;  // 16 GT/s
  if (gts < 48) return 5;  // 32 GT/s
  if (gts < 96) return 6;  // 64 GT/s
  return 7;                // 128 GT/s
}

double pcie_lane_gbps(int gen) {
  switch (gen) {
    case 1:
      return 2.5 * 8 / 10 / 8;  // 8b/10b
    case 2:
      return 5.0 * 8 / 10 / 8;
    case 3:
      return 8.0 * 128 / 130 / 8;  // 128b/130b
    case 4:
      return 16.0 * 128 / 130 / 8;
    case 5:
      return 32.0 * 128 / 130 / 8;
    case 6:
      return 64.0 * 242 / 256 / 8;  // FLIT mode: 242 of 256 bytes carry data
    case 7:
      return 128.0 * 242 / 256 / 8;
    default:
      return -1;
  }
}

double PcieLink::current_gbps() const {
  return known() ? pcie_lane_gbps(current_gen) * current_width : -1;
}

double PcieLink::max_gbps() const {
  return (max_gen > 0 && max_width > 0) ? pcie_lane_gbps(max_gen) * max_width : -1;
}

bool PcieLink::below_max() const {
  if (!known() || max_gen <= 0 || max_width <= 0) return false;
  return current_gen < max_gen || current_width < max_width;
}

std::string normalize_pci_bus_id(std::string_view bus_id) {
  std::string id = lower(trim(bus_id));
  // NVML writes an 8-digit domain; sysfs uses 4.
  const size_t colon = id.find(':');
  if (colon == 8 && id.substr(0, 4) == "0000") id = id.substr(4);
  return id;
}

// ---- architecture lists -------------------------------------------------------------------------

std::vector<ArchTarget> parse_arch_list(std::string_view list) {
  std::vector<ArchTarget> targets;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find_first_of(",;", start);
    if (end == std::string_view::npos) end = list.size();
    const std::string_view item = trim(list.substr(start, end - start));
    start = end + 1;
    if (item.empty()) continue;

    ArchTarget t;
    t.text = std::string(item);
    t.name = t.text;
    if (is_gfx(item)) {
      t.machine = true;  // AMD code objects: one per processor (or generic family)
    } else {
      std::string_view body = item;
      bool real = false, virt = false;
      if (body.size() > 5 && body.substr(body.size() - 5) == "-real") {
        real = true;
        body.remove_suffix(5);
      } else if (body.size() > 8 && body.substr(body.size() - 8) == "-virtual") {
        virt = true;
        body.remove_suffix(8);
      } else if (body.substr(0, 3) == "sm_") {
        real = true;
        body.remove_prefix(3);
      } else if (body.substr(0, 8) == "compute_") {
        virt = true;
        body.remove_prefix(8);
      }
      char suffix = 0;
      if (!body.empty() && (body.back() == 'a' || body.back() == 'f')) {
        suffix = body.back();
        body.remove_suffix(1);
      }
      if (all_digits(body) && body.size() <= 3) {
        std::from_chars(body.data(), body.data() + body.size(), t.cc);
        t.arch_specific = suffix != 0;
        t.machine = !virt;
        t.ptx = !real;
        t.name = "sm_" + std::string(body) + (suffix ? std::string(1, suffix) : std::string());
      }
    }
    targets.push_back(std::move(t));
  }
  return targets;
}

// ---- AMD target names ---------------------------------------------------------------------------

std::string gfx_name_from_version(int major, int minor, int stepping) {
  if (major <= 0 || minor < 0 || stepping < 0 || minor > 15 || stepping > 15) return {};
  static const char kHex[] = "0123456789abcdef";
  return "gfx" + std::to_string(major) + kHex[minor] + kHex[stepping];
}

std::string gfx_name_from_target_version(int target_version) {
  if (target_version <= 0) return {};
  return gfx_name_from_version(target_version / 10000, (target_version / 100) % 100,
                               target_version % 100);
}

std::string gfx_name_from_override(std::string_view value) {
  int parts[3] = {-1, -1, -1};
  std::string_view rest = trim(value);
  for (int i = 0; i < 3; ++i) {
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), parts[i]);
    if (ec != std::errc()) return {};
    rest.remove_prefix(static_cast<size_t>(end - rest.data()));
    if (i < 2) {
      if (rest.empty() || rest.front() != '.') return {};
      rest.remove_prefix(1);
    }
  }
  if (!rest.empty()) return {};
  return gfx_name_from_version(parts[0], parts[1], parts[2]);
}

std::string strip_gfx_features(std::string_view gcn_arch_name) {
  return std::string(trim(gcn_arch_name.substr(0, gcn_arch_name.find(':'))));
}

std::optional<GfxOverride> hsa_override_for(std::string_view gfx) {
  // Community-known overrides, not supported by AMD: the device runs its sibling's code object.
  static const struct {
    std::string_view gfx;
    GfxOverride ov;
  } kOverrides[] = {
      {"gfx1031", {"10.3.0", "gfx1030"}}, {"gfx1032", {"10.3.0", "gfx1030"}},
      {"gfx1033", {"10.3.0", "gfx1030"}}, {"gfx1034", {"10.3.0", "gfx1030"}},
      {"gfx1035", {"10.3.0", "gfx1030"}}, {"gfx1036", {"10.3.0", "gfx1030"}},
      {"gfx1101", {"11.0.0", "gfx1100"}}, {"gfx1102", {"11.0.0", "gfx1100"}},
      {"gfx1103", {"11.0.0", "gfx1100"}},
  };
  const std::string name = strip_gfx_features(gfx);
  for (const auto& entry : kOverrides) {
    if (entry.gfx == name) return entry.ov;
  }
  return std::nullopt;
}

// ---- compatibility ------------------------------------------------------------------------------

namespace {

Compatibility check_cuda(std::string_view device_arch, const std::vector<ArchTarget>& targets,
                         Compatibility c, int toolkit_major) {
  // device_arch: sm_XY (plain: a device reports its compute capability, never an 'a' variant).
  std::string_view digits = device_arch.substr(0, 3) == "sm_" ? device_arch.substr(3) : device_arch;
  while (!digits.empty() && !std::isdigit(static_cast<unsigned char>(digits.back()))) {
    digits.remove_suffix(1);
  }
  int cc = -1;
  if (!all_digits(digits) ||
      std::from_chars(digits.data(), digits.data() + digits.size(), cc).ec != std::errc()) {
    c.fix = format("the device architecture '{}' could not be read", device_arch);
    return c;
  }

  // Machine code: same major, no newer minor ('a' exactly this arch; 'f' this family).
  const ArchTarget* sass = nullptr;
  const ArchTarget* ptx = nullptr;
  bool special = false;
  for (const ArchTarget& t : targets) {
    if (t.cc < 0) {
      special = special || t.text == "native" || t.text == "all" || t.text == "all-major";
      continue;
    }
    if (t.machine && t.cc / 10 == cc / 10 && t.cc <= cc) {
      const bool ok = !t.arch_specific || t.name.back() == 'f' || t.cc == cc;
      if (ok && (sass == nullptr || t.cc > sass->cc)) sass = &t;
    }
    // PTX is compiled by the driver for the device at load time: any newer device.
    if (t.ptx && !t.arch_specific && t.cc <= cc && (ptx == nullptr || t.cc > ptx->cc)) ptx = &t;
  }
  if (sass != nullptr) {
    c.has_code = true;
    c.matched = sass->name;
    return c;
  }
  if (ptx != nullptr) {
    c.has_code = true;
    c.via_ptx = true;
    c.matched = "compute_" + ptx->name.substr(3);
    c.fix = format(
        "this {} runs through PTX {} that the driver compiles at start-up (a slower first start, "
        "and the driver must be as new as the CUDA toolkit that built redline); rebuild with "
        "-DCMAKE_CUDA_ARCHITECTURES=\"{}\" for machine code",
        device_arch, c.matched, cmake_list_with(targets, std::to_string(cc) + "-real"));
    return c;
  }
  if (special) {
    // "native", "all", "all-major": the list was resolved by CMake at build time; the kernel-load
    // check of gpu_usable() decides.
    c.has_code = true;
    c.matched = c.built_archs;
    return c;
  }
  const int oldest = oldest_cc_of_toolkit(toolkit_major);
  if (oldest > 0 && cc < oldest) {
    c.fix = format(
        "the GPU is {} but this redline carries code only for {}, and CUDA {} cannot compile for "
        "it (it supports sm_{} and newer); build with an older CUDA toolkit (CUDA 12 supports "
        "sm_50 and newer) and -DCMAKE_CUDA_ARCHITECTURES={}",
        device_arch, describe_built(targets), toolkit_major, oldest, cc);
    return c;
  }
  c.fix = format(
      "the GPU is {} but this redline carries code only for {}; rebuild with "
      "-DCMAKE_CUDA_ARCHITECTURES=\"{}\" (or \"native\" for the GPUs of the build machine)",
      device_arch, describe_built(targets), cmake_list_with(targets, std::to_string(cc)));
  return c;
}

Compatibility check_hip(std::string_view device_arch, const std::vector<ArchTarget>& targets,
                        Compatibility c) {
  std::string gfx;
  const std::vector<std::string> dev_features = split_features(device_arch, &gfx);
  c.device_arch = gfx;
  for (const ArchTarget& t : targets) {
    std::string processor;
    const std::vector<std::string> features = split_features(t.text, &processor);
    if ((processor == gfx || generic_covers(processor, gfx)) &&
        features_compatible(features, dev_features)) {
      c.has_code = true;
      c.matched = t.text;
      return c;
    }
  }
  std::vector<std::string> built;
  bool has_override_target = false;
  const std::optional<GfxOverride> ov = hsa_override_for(gfx);
  for (const ArchTarget& t : targets) {
    built.push_back(t.text);
    std::string processor;
    split_features(t.text, &processor);
    if (ov && (processor == ov->runs_as || generic_covers(processor, ov->runs_as))) {
      has_override_target = true;
    }
  }
  const std::string built_text = built.empty() ? std::string("no GPU architecture") : join(built);
  const std::string rebuild =
      format("rebuild with -DCMAKE_HIP_ARCHITECTURES=\"{}\"", cmake_list_with(targets, gfx));
  if (ov && has_override_target) {
    c.override_value = ov->value;
    c.fix = format(
        "the GPU is {} but this redline carries code only for {}; run with "
        "HSA_OVERRIDE_GFX_VERSION={} (unofficial: the {} then runs the {} code) or {}",
        gfx, built_text, ov->value, gfx, ov->runs_as, rebuild);
  } else if (ov) {
    c.override_value = ov->value;
    c.override_needs_rebuild = true;
    c.fix = format(
        "the GPU is {} but this redline carries code only for {}; {} (or, unofficially, add {} to "
        "that list and run with HSA_OVERRIDE_GFX_VERSION={})",
        gfx, built_text, rebuild, ov->runs_as, ov->value);
  } else {
    c.fix = format("the GPU is {} but this redline carries code only for {}; {}", gfx, built_text,
                   rebuild);
  }
  return c;
}

}  // namespace

Compatibility check_compatibility(std::string_view vendor, std::string_view device_arch,
                                  std::string_view built, int cuda_toolkit_major) {
  Compatibility c;
  c.device_arch = std::string(device_arch);
  c.built_archs = std::string(built);
  const std::vector<ArchTarget> targets = parse_arch_list(built);
  if (vendor == "cuda") return check_cuda(device_arch, targets, c, cuda_toolkit_major);
  if (vendor == "hip") return check_hip(device_arch, targets, c);
  c.fix =
      "this redline was built without a GPU backend; rebuild with 'cmake --preset cuda' or "
      "'cmake --preset hip'";
  return c;
}

// ---- capabilities -------------------------------------------------------------------------------

Capabilities capabilities_for_arch(std::string_view arch) {
  Capabilities caps;
  caps.matrix_unit = "none";
  if (arch.substr(0, 3) == "sm_") {
    std::string_view digits = arch.substr(3);
    while (!digits.empty() && !std::isdigit(static_cast<unsigned char>(digits.back()))) {
      digits.remove_suffix(1);
    }
    int cc = 0;
    std::from_chars(digits.data(), digits.data() + digits.size(), cc);
    if (cc < 70) return caps;
    caps.fp16 = true;
    caps.bf16 = caps.tf32 = cc >= 80;
    caps.fp8 = cc >= 89;
    const char* generation = cc < 75    ? "Volta"
                             : cc < 80  ? "Turing"
                             : cc < 89  ? "Ampere"
                             : cc < 90  ? "Ada"
                             : cc < 100 ? "Hopper"
                                        : "Blackwell";
    caps.matrix_unit = format("tensor cores ({})", generation);
    return caps;
  }
  const std::string gfx = strip_gfx_features(arch);
  if (gfx == "gfx908" || gfx == "gfx90a") {
    caps.fp16 = caps.bf16 = true;
    caps.matrix_unit = gfx == "gfx908" ? "MFMA (CDNA1)" : "MFMA (CDNA2)";
  } else if (gfx == "gfx940" || gfx == "gfx941" || gfx == "gfx942") {
    caps.fp16 = caps.bf16 = caps.fp8 = true;
    caps.tf32 = true;  // xf32 MFMA
    caps.matrix_unit = "MFMA (CDNA3)";
  } else if (gfx == "gfx950") {
    caps.fp16 = caps.bf16 = caps.fp8 = true;
    caps.matrix_unit = "MFMA (CDNA4)";
  } else if (gfx.substr(0, 5) == "gfx11") {
    caps.fp16 = caps.bf16 = true;
    caps.matrix_unit = "WMMA (RDNA3)";
  } else if (gfx.substr(0, 5) == "gfx12") {
    caps.fp16 = caps.bf16 = caps.fp8 = true;
    caps.matrix_unit = "WMMA (RDNA4)";
  }
  return caps;
}

double GpuInfo::peak_memory_gbps() const {
  if (memory_clock_mhz <= 0 || memory_bus_width_bits <= 0) return -1;
  // Double data rate: two transfers per clock of the reported memory clock.
  return 2.0 * memory_clock_mhz * 1e6 * (memory_bus_width_bits / 8.0) / 1e9;
}

std::string wave_size_mismatch(int compiled_lanes, int device_lanes) {
  if (compiled_lanes == device_lanes) return {};
  return format(
      "redline's kernels were compiled for {}-lane wavefronts but run with {} lanes on this "
      "device; rebuild {} -mwavefrontsize64 in CMAKE_HIP_FLAGS (cmake/gpu.cmake reads it there)",
      compiled_lanes, device_lanes, device_lanes == 64 ? "with" : "without");
}

}  // namespace redline
