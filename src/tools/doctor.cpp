// `redline doctor`: what this machine has and whether redline can use it. Parses the flags, runs
// the probe (src/core/probe.cpp) and the smoke tests (src/backend/gpu/smoke.cu), decides the
// verdict and prints it (doctor_output.cpp).
#include "tools/doctor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "redline/core/error.h"
#include "redline/core/random.h"
#include "redline/core/tensor.h"
#include "tools/commands.h"

namespace redline::tools {
namespace {

constexpr const char* kUsage =
    "usage: redline doctor [--json] [--quick] [--gpu N]\n"
    "\n"
    "Reports what this machine has (CPU, GPUs, PCIe links, vendor libraries, telemetry) and "
    "whether\n"
    "this redline can use it: for each GPU, whether the binary carries code for its architecture\n"
    "and, when not, the exact fix. Then runs smoke tests on each usable GPU: a 1024^3 matmul\n"
    "checked against the CPU, GEMM TFLOP/s (f32, tf32, bf16) and copy bandwidth in GB/s next to\n"
    "what the PCIe link allows.\n"
    "\n"
    "options:\n"
    "  --json     print one JSON document (schema: docs/doctor.md) instead of the table\n"
    "  --quick    skip the smoke tests (the probe alone takes about a second)\n"
    "  --gpu N    run the smoke tests on gpu:N only (default: every usable GPU)\n"
    "  --help     this text\n"
    "\n"
    "Exit status: 0 when redline can run on some device (the CPU counts), 1 when it cannot run at\n"
    "all, 2 for a usage error.\n";

struct Options {
  bool json = false;
  bool quick = false;
  int gpu = -1;  // -1: every usable GPU
};

// The CPU path redline always has: tensors on the CPU allocator and the Philox generator.
void check_cpu(DoctorReport* report) {
  try {
    constexpr int64_t kN = 4096;
    const std::vector<float> values = Tensor::arange(0, kN, 1, DType::f32).to_vector<float>();
    double sum = 0;
    for (float v : values) sum += v;
    REDLINE_CHECK(sum == double(kN) * (kN - 1) / 2, "arange({}) sums to {} instead of {}", kN, sum,
                  double(kN) * (kN - 1) / 2);
    Tensor u = Tensor::empty({kN}, DType::f32);
    Generator gen(1234, 0);
    uniform_(u, gen);
    double mean = 0;
    for (float v : u.to_vector<float>()) {
      REDLINE_CHECK(v >= 0.0f && v < 1.0f, "a uniform draw {} lies outside [0, 1)", v);
      mean += v / kN;
    }
    REDLINE_CHECK(std::fabs(mean - 0.5) < 0.02, "the mean of {} uniform draws is {}", kN, mean);
    report->cpu_check_passed = true;
    report->cpu_check_detail = "tensors and the Philox generator work on the CPU";
  } catch (const std::exception& e) {
    report->cpu_check_passed = false;
    report->cpu_check_detail = e.what();
  }
}

// The visibility variable that hides GPUs of this vendor from the runtime, as NAME='value'.
std::string hiding_variable(const std::string& vendor) {
  const std::vector<const char*> names =
      vendor == "nvidia" ? std::vector<const char*>{"CUDA_VISIBLE_DEVICES"}
                         : std::vector<const char*>{"ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                                                    "CUDA_VISIBLE_DEVICES"};
  for (const char* name : names) {
    if (const char* value = std::getenv(name)) return format("{}='{}'", name, value);
  }
  return {};
}

std::string gpu_name(const GpuInfo& g) { return format("gpu:{} ({})", g.index, g.name); }

void decide(const Options& options, DoctorReport* report) {
  DoctorVerdict& v = report->verdict;
  const SystemProbe& p = report->probe;
  if (report->cpu_check_passed) {
    v.usable_devices.push_back("cpu");
  } else {
    v.warnings.push_back("the CPU self-check failed: " + report->cpu_check_detail);
  }
  for (const GpuInfo& g : p.gpus) {
    bool usable = g.usable;
    for (const gpu::SmokeReport& s : report->smoke) {
      if (s.device != g.index) continue;
      for (const gpu::MatmulCheck& c : s.checks) {
        if (!c.passed && c.error.empty()) {
          usable = false;
          v.warnings.push_back(format(
              "{} computed a wrong {} matmul with the {} (error {} > {}); check the driver and "
              "the GPU's health (nvidia-smi -q / rocm-smi) before using it",
              gpu_name(g), c.dtype, c.engine, c.max_error, c.tolerance));
        }
      }
      if (!s.error.empty()) {
        v.warnings.push_back(format("the smoke test on {} stopped: {}", gpu_name(g), s.error));
      }
    }
    if (usable) {
      v.usable_devices.push_back(format("gpu:{}", g.index));
      if (v.default_device.empty()) v.default_device = format("gpu:{}", g.index);
    } else if (!g.unusable_reason.empty()) {
      v.warnings.push_back(g.unusable_reason);
    }
    if (g.compat.has_code && g.compat.via_ptx)
      v.warnings.push_back(gpu_name(g) + ": " + g.compat.fix);
    const gpu::SmokeReport* smoke = nullptr;
    for (const gpu::SmokeReport& s : report->smoke) {
      if (s.device == g.index) smoke = &s;
    }
    if (smoke != nullptr && !pcie_link_plausible(pcie_link_read(*report, *smoke), *smoke)) {
      const PcieLink l = pcie_link_read(*report, *smoke);
      double fastest = 0;
      for (const gpu::CopyResult& c : smoke->copies) {
        if (c.kind != "device_to_device") fastest = std::max(fastest, c.gbps);
      }
      v.warnings.push_back(format(
          "{}'s PCIe link reads as gen{} x{} ({} GB/s) but host<->device copies ran at {} GB/s, so "
          "the reading is not the physical link (typical of a virtual machine's emulated PCIe "
          "port); the copy figures are not compared with it",
          gpu_name(g), l.current_gen, l.current_width, static_cast<int>(l.current_gbps()),
          static_cast<int>(fastest)));
    } else if (smoke != nullptr && smoke->pcie_under_load.known()) {
      // Under load a lower generation or width is a real bottleneck.
      const PcieLink& l = smoke->pcie_under_load;
      if (l.below_max()) {
        v.warnings.push_back(format(
            "{} ran its PCIe link at gen{} x{} during host->device copies although it allows "
            "gen{} x{}: a slot, riser, cable or BIOS setting limits host<->device copies to {} "
            "of {} GB/s",
            gpu_name(g), l.current_gen, l.current_width, l.max_gen, l.max_width,
            static_cast<int>(l.current_gbps()), static_cast<int>(l.max_gbps())));
      }
    } else if (g.pcie.known() && g.pcie.current_width < g.pcie.max_width) {
      // At rest only the width is telling (the generation drops when idle to save power, and some
      // GPUs narrow the link too, so this asks for the reading under load).
      v.warnings.push_back(format(
          "{} shows its PCIe link at x{} at rest although it allows x{}; run 'redline doctor' "
          "without --quick to read it under load (a x8 or x4 link in an x16 slot halves or "
          "quarters host<->device bandwidth)",
          gpu_name(g), g.pcie.current_width, g.pcie.max_width));
    }
  }
  // GPUs on the PCI bus that no runtime sees.
  if (p.gpus.empty()) {
    for (const PciGpu& pci : p.pci_gpus) {
      const bool matches_build = (pci.vendor == "nvidia" && p.runtime.backend == "cuda") ||
                                 (pci.vendor == "amd" && p.runtime.backend == "hip");
      if (p.runtime.backend == "none") {
        v.warnings.push_back(format(
            "an {} GPU is at {} but this redline was built without a GPU backend; rebuild with "
            "'cmake --preset {}'",
            pci.vendor == "nvidia" ? "NVIDIA" : "AMD", pci.bus_id,
            pci.vendor == "nvidia" ? "cuda" : "hip"));
      } else if (!matches_build) {
        v.warnings.push_back(
            format("an {} GPU is at {} but this redline was built for {}; rebuild with 'cmake "
                   "--preset {}'",
                   pci.vendor == "nvidia" ? "NVIDIA" : "AMD", pci.bus_id, p.runtime.backend,
                   pci.vendor == "nvidia" ? "cuda" : "hip"));
      } else if (pci.driver.empty()) {
        v.warnings.push_back(
            format("the {} GPU at {} has no kernel driver bound; install and load the {} driver",
                   pci.vendor == "nvidia" ? "NVIDIA" : "AMD", pci.bus_id,
                   pci.vendor == "nvidia" ? "nvidia" : "amdgpu"));
      } else if (const std::string hidden = hiding_variable(pci.vendor); !hidden.empty()) {
        v.warnings.push_back(format("the {} GPU at {} is hidden from redline by {}",
                                    pci.vendor == "nvidia" ? "NVIDIA" : "AMD", pci.bus_id, hidden));
      } else {
        v.warnings.push_back(format(
            "the {} GPU at {} has the {} driver bound but the {} runtime cannot use it ({}); in a "
            "container, start it with {}",
            pci.vendor == "nvidia" ? "NVIDIA" : "AMD", pci.bus_id, pci.driver,
            p.runtime.backend == "cuda" ? "CUDA" : "HIP", p.runtime.unavailable_reason,
            pci.vendor == "nvidia" ? "--gpus all (NVIDIA Container Toolkit)"
                                   : "--device=/dev/kfd --device=/dev/dri"));
      }
    }
  }
  if (!p.runtime.hsa_override.empty()) {
    v.warnings.push_back(
        format("HSA_OVERRIDE_GFX_VERSION={} is set: the GPU runs code built for another target "
               "(unofficial; unset it if results look wrong)",
               p.runtime.hsa_override));
  }
  if (options.gpu >= 0 && options.gpu >= static_cast<int>(p.gpus.size())) {
    v.warnings.push_back(
        format("--gpu {} names no GPU; this machine has {}", options.gpu, p.gpus.size()));
  }

  v.can_run = !v.usable_devices.empty();
  if (v.default_device.empty() && report->cpu_check_passed) v.default_device = "cpu";
  if (!v.can_run) {
    v.summary = "redline cannot run on this machine: the CPU self-check failed (" +
                report->cpu_check_detail + ") and no GPU is usable";
  } else if (v.default_device == "cpu") {
    std::string why = "no GPU was found";
    if (!p.gpus.empty()) {
      why = "no GPU here is usable by this build";
    } else if (p.runtime.backend == "none") {
      why = "this build has no GPU backend";
    } else if (!p.pci_gpus.empty()) {
      why = "the GPU runtime cannot use the GPU(s) on the PCI bus: " + p.runtime.unavailable_reason;
    }
    v.summary = format("redline will run on the CPU ({}).", why);
  } else {
    const GpuInfo& g = p.gpus[std::stoi(v.default_device.substr(4))];
    v.summary =
        format("redline will run on {} by default; the CPU is always available.", gpu_name(g));
  }
}

Options parse(int argc, char** argv, bool* help) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--json") {
      o.json = true;
    } else if (arg == "--quick") {
      o.quick = true;
    } else if (arg == "--help" || arg == "-h") {
      *help = true;
    } else if (arg == "--gpu" || arg.substr(0, 6) == "--gpu=") {
      std::string value;
      if (arg == "--gpu") {
        REDLINE_CHECK(i + 1 < argc, "--gpu needs a GPU index (for example --gpu 0)");
        value = argv[++i];
      } else {
        value = std::string(arg.substr(6));
      }
      char* end = nullptr;
      const long index = std::strtol(value.c_str(), &end, 10);
      REDLINE_CHECK(!value.empty() && *end == '\0' && index >= 0 && index < 1024,
                    "--gpu takes a GPU index such as 0, not '{}'", value);
      o.gpu = static_cast<int>(index);
    } else {
      REDLINE_FAIL("unknown option '{}' (expected --json, --quick, --gpu N or --help)", arg);
    }
  }
  return o;
}

}  // namespace

PcieLink pcie_link_read(const DoctorReport& report, const gpu::SmokeReport& smoke) {
  if (smoke.pcie_under_load.known()) return smoke.pcie_under_load;
  // Not read under load: compare with what the link allows (at rest it may be power-saving).
  PcieLink link;
  for (const GpuInfo& g : report.probe.gpus) {
    if (g.index == smoke.device && g.pcie.max_gen > 0 && g.pcie.max_width > 0) {
      link = g.pcie;
      link.current_gen = link.max_gen;
      link.current_width = link.max_width;
    }
  }
  return link;
}

bool pcie_link_plausible(const PcieLink& link, const gpu::SmokeReport& smoke) {
  for (const gpu::CopyResult& c : smoke.copies) {
    if (c.kind != "device_to_device" && link.known() && c.gbps > 1.05 * link.current_gbps()) {
      return false;
    }
  }
  return true;
}

PcieLink link_for_smoke(const DoctorReport& report, const gpu::SmokeReport& smoke) {
  const PcieLink link = pcie_link_read(report, smoke);
  return pcie_link_plausible(link, smoke) ? link : PcieLink{};
}

int run_doctor(int argc, char** argv) {
  bool help = false;
  Options options;
  try {
    options = parse(argc, argv, &help);
  } catch (const Error& e) {
    std::fprintf(stderr, "redline doctor: %s; see 'redline doctor --help'\n", e.what());
    return 2;
  }
  if (help) {
    std::fputs(kUsage, stdout);
    return 0;
  }

  DoctorReport report;
  report.probe = probe_system(/*with_telemetry=*/true);
  check_cpu(&report);

  if (options.quick) {
    report.smoke_skipped = "--quick";
  } else {
    std::vector<const GpuInfo*> targets;
    for (const GpuInfo& g : report.probe.gpus) {
      if (g.usable && (options.gpu < 0 || options.gpu == g.index)) targets.push_back(&g);
    }
    if (targets.empty()) {
      report.smoke_skipped = report.probe.gpus.empty() ? "no GPU" : "no usable GPU selected";
    }
    for (const GpuInfo* g : targets) {
      if (!options.json) {
        std::fprintf(stderr, "redline doctor: smoke tests on gpu:%d (%s), a few seconds...\n",
                     g->index, g->name.c_str());
      }
      gpu::SmokeOptions smoke;
      smoke.pci_bus_id = g->pci_bus_id;
      smoke.vendor = g->vendor;
      report.smoke.push_back(gpu::run_smoke(g->index, smoke));
      report.smoke_ran = true;
    }
  }
  decide(options, &report);

  const std::string out = options.json ? doctor_json(report) : doctor_table(report);
  std::fputs(out.c_str(), stdout);
  if (!report.verdict.can_run) {
    std::fprintf(stderr, "redline doctor: %s\n", report.verdict.summary.c_str());
    return 1;
  }
  return 0;
}

}  // namespace redline::tools
