// `redline doctor`'s two outputs: the JSON document (every field documented in docs/doctor.md;
// unknown values are null, never omitted) and the table people read.
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "redline/core/error.h"
#include "tools/doctor.h"

namespace redline::tools {
namespace {

using Json = nlohmann::ordered_json;

// ---- JSON ---------------------------------------------------------------------------------------

Json number_or_null(double v) { return v < 0 ? Json(nullptr) : Json(v); }
Json number_or_null(int v) { return v < 0 ? Json(nullptr) : Json(v); }
Json number_or_null(int64_t v) { return v < 0 ? Json(nullptr) : Json(v); }
Json bytes_or_null(uint64_t v) { return v == 0 ? Json(nullptr) : Json(v); }
Json text_or_null(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

Json rounded(double v, double scale = 1000) {
  return v < 0 ? Json(nullptr) : Json(std::round(v * scale) / scale);
}

Json pcie_json(const PcieLink& l) {
  return Json{{"current_gen", number_or_null(l.current_gen)},
              {"current_width", number_or_null(l.current_width)},
              {"max_gen", number_or_null(l.max_gen)},
              {"max_width", number_or_null(l.max_width)},
              {"current_gbps", rounded(l.current_gbps())},
              {"max_gbps", rounded(l.max_gbps())},
              {"below_max", l.below_max()},
              {"source", text_or_null(l.source)}};
}

Json gpu_json(const GpuInfo& g) {
  const Telemetry& t = g.telemetry;
  return Json{{"index", g.index},
              {"vendor", text_or_null(g.vendor)},
              {"name", text_or_null(g.name)},
              {"arch", text_or_null(g.arch)},
              {"arch_full", text_or_null(g.arch_full)},
              {"pci_bus_id", text_or_null(g.pci_bus_id)},
              {"seen_by", g.from_runtime ? "runtime" : "kfd"},
              {"multiprocessors", number_or_null(g.multiprocessors)},
              {"warp_size", number_or_null(g.warp_size)},
              {"clock_mhz", number_or_null(g.clock_mhz)},
              {"memory_clock_mhz", number_or_null(g.memory_clock_mhz)},
              {"memory_bus_width_bits", number_or_null(g.memory_bus_width_bits)},
              {"memory_total_bytes", bytes_or_null(g.memory_total_bytes)},
              {"memory_free_bytes", g.from_runtime ? Json(g.memory_free_bytes) : Json(nullptr)},
              {"l2_bytes", number_or_null(g.l2_bytes)},
              {"peak_memory_gbps", rounded(g.peak_memory_gbps(), 10)},
              {"driver_version", text_or_null(g.driver_version)},
              {"runtime_version", text_or_null(g.runtime_version)},
              {"pcie", pcie_json(g.pcie)},
              {"compatibility",
               {{"device_arch", text_or_null(g.compat.device_arch)},
                {"built_archs", text_or_null(g.compat.built_archs)},
                {"has_code", g.compat.has_code},
                {"via_ptx", g.compat.via_ptx},
                {"matched", text_or_null(g.compat.matched)},
                {"fix", text_or_null(g.compat.fix)},
                {"hsa_override", text_or_null(g.compat.override_value)},
                {"override_needs_rebuild", g.compat.override_needs_rebuild}}},
              {"capabilities",
               {{"matrix_unit", g.caps.matrix_unit},
                {"fp16", g.caps.fp16},
                {"bf16", g.caps.bf16},
                {"tf32", g.caps.tf32},
                {"fp8", g.caps.fp8}}},
              {"telemetry",
               {{"available", !t.source.empty()},
                {"source", text_or_null(t.source)},
                {"unavailable_reason", text_or_null(t.unavailable)},
                {"power_w", rounded(t.power_w, 10)},
                {"power_limit_w", rounded(t.power_limit_w, 10)},
                {"temperature_c", rounded(t.temperature_c, 10)},
                {"sm_clock_mhz", number_or_null(t.sm_clock_mhz)},
                {"sm_clock_max_mhz", number_or_null(t.sm_clock_max_mhz)},
                {"memory_clock_mhz", number_or_null(t.memory_clock_mhz)},
                {"memory_clock_max_mhz", number_or_null(t.memory_clock_max_mhz)},
                {"driver_version", text_or_null(t.driver_version)}}},
              {"usable", g.usable},
              {"unusable_reason", text_or_null(g.unusable_reason)}};
}

Json smoke_json(const DoctorReport& report, const gpu::SmokeReport& s) {
  Json checks = Json::array(), gemms = Json::array(), copies = Json::array();
  for (const gpu::MatmulCheck& c : s.checks) {
    checks.push_back({{"engine", c.engine},
                      {"dtype", c.dtype},
                      {"size", c.size},
                      {"max_error", c.error.empty() ? Json(c.max_error) : Json(nullptr)},
                      {"tolerance", c.tolerance},
                      {"passed", c.passed},
                      {"error", text_or_null(c.error)}});
  }
  for (const gpu::GemmResult& r : s.gemms) {
    gemms.push_back({{"dtype", r.dtype},
                     {"engine", r.engine},
                     {"size", r.size},
                     {"median_ms", rounded(r.median_ms)},
                     {"tflops", rounded(r.tflops, 100)},
                     {"skipped", text_or_null(r.skipped)}});
  }
  const PcieLink link = link_for_smoke(report, s);
  for (const gpu::CopyResult& r : s.copies) {
    const bool over_pcie = r.kind != "device_to_device";
    const double fraction =
        (over_pcie && r.gbps > 0 && link.current_gbps() > 0) ? r.gbps / link.current_gbps() : -1;
    copies.push_back({{"kind", r.kind},
                      {"bytes", r.bytes},
                      {"median_ms", rounded(r.median_ms)},
                      {"gbps", rounded(r.gbps, 100)},
                      {"fraction_of_pcie", rounded(fraction)},
                      {"skipped", text_or_null(r.skipped)}});
  }
  return Json{
      {"device", format("gpu:{}", s.device)},
      {"seconds", rounded(s.seconds, 100)},
      {"error", text_or_null(s.error)},
      {"pcie_under_load", s.pcie_under_load.known() ? pcie_json(s.pcie_under_load) : Json(nullptr)},
      {"matmul_checks", checks},
      {"gemm", gemms},
      {"copy", copies}};
}

// ---- table helpers ------------------------------------------------------------------------------

std::string bytes_text(uint64_t bytes) {
  if (bytes == 0) return "?";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char text[32];
  std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return text;
}

std::string fixed(double v, int digits) {
  if (v < 0) return "?";
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", digits, v);
  return text;
}

std::string or_unknown(int v) { return v < 0 ? std::string("?") : std::to_string(v); }
std::string or_unknown(const std::string& s) { return s.empty() ? std::string("?") : s; }

std::string padded(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string yes_no(bool b) { return b ? "yes" : "no"; }

std::string link_text(const PcieLink& l) {
  if (!l.known()) return "unknown (no sysfs link files and no NVML/rocm_smi reading)";
  std::string text = format("gen{} x{} now, gen{} x{} max", l.current_gen, l.current_width,
                            or_unknown(l.max_gen), or_unknown(l.max_width));
  text += format(" = {} GB/s per direction now, {} GB/s max", fixed(l.current_gbps(), 1),
                 fixed(l.max_gbps(), 1));
  return text + " (" + l.source + ")";
}

// "  key            value": keys padded to `width` and always followed by a space.
void row(std::ostringstream& out, const std::string& key, const std::string& value,
         size_t width = 15) {
  out << "  " << padded(key, width) << (key.size() >= width ? " " : "") << value << "\n";
}

constexpr size_t kSmokeKey = 22;  // the smoke section's key column

const char* copy_label(const std::string& kind) {
  if (kind == "host_to_device_pinned") return "host->device pinned";
  if (kind == "host_to_device_pageable") return "host->device pageable";
  if (kind == "device_to_host_pinned") return "device->host pinned";
  if (kind == "device_to_host_pageable") return "device->host pageable";
  if (kind == "device_to_device") return "device->device";
  return kind.c_str();
}

}  // namespace

std::string doctor_json(const DoctorReport& report) {
  const SystemProbe& p = report.probe;
  Json archs = Json::array();
  for (const ArchTarget& t : parse_arch_list(REDLINE_GPU_ARCHS)) archs.push_back(t.text);
  Json gpus = Json::array(), pci = Json::array(), libraries = Json::array(), smoke = Json::array();
  for (const GpuInfo& g : p.gpus) gpus.push_back(gpu_json(g));
  for (const PciGpu& g : p.pci_gpus) {
    pci.push_back({{"bus_id", g.bus_id}, {"vendor", g.vendor}, {"driver", text_or_null(g.driver)}});
  }
  for (const LibraryInfo& l : p.libraries) {
    libraries.push_back({{"name", l.name},
                         {"purpose", l.purpose},
                         {"found", l.found},
                         {"file", text_or_null(l.file)},
                         {"version", text_or_null(l.version)},
                         {"note", text_or_null(l.note)}});
  }
  for (const gpu::SmokeReport& s : report.smoke) smoke.push_back(smoke_json(report, s));
  const CpuInfo& c = p.cpu;
  const int toolkit = gpu::cuda_toolkit_major();
  Json doc = {
      {"schema_version", kDoctorSchemaVersion},
      {"redline",
       {{"version",
#ifdef REDLINE_VERSION
         REDLINE_VERSION
#else
         nullptr
#endif
        },
        {"gpu_backend", REDLINE_GPU_VENDOR},
        {"gpu_archs_built", archs},
        {"cuda_toolkit_major", toolkit > 0 ? Json(toolkit) : Json(nullptr)},
#if defined(REDLINE_HAS_CUBLASLT)
        {"cublaslt_linked", true},
#else
        {"cublaslt_linked", false},
#endif
        {"openmp", c.openmp_threads >= 0},
        {"blas", c.blas}}},
      {"cpu",
       {{"vendor", text_or_null(c.vendor)},
        {"model", text_or_null(c.model)},
        {"machine", text_or_null(c.machine)},
        {"logical_cores", number_or_null(c.logical_cores)},
        {"affinity_cores", number_or_null(c.affinity_cores)},
        {"physical_cores", number_or_null(c.physical_cores)},
        {"sockets", number_or_null(c.sockets)},
        {"mhz", rounded(c.mhz, 1)},
        {"memory_total_bytes", bytes_or_null(c.memory_total_bytes)},
        {"memory_available_bytes", bytes_or_null(c.memory_available_bytes)},
        {"features", c.features},
        {"openmp_threads", number_or_null(c.openmp_threads)},
        {"check", {{"passed", report.cpu_check_passed}, {"detail", report.cpu_check_detail}}}}},
      {"gpu_runtime",
       {{"backend", p.runtime.backend},
        {"available", p.runtime.device_count > 0},
        {"device_count", p.runtime.device_count},
        {"unavailable_reason", text_or_null(p.runtime.unavailable_reason)},
        {"driver_version", text_or_null(p.runtime.driver_version)},
        {"runtime_version", text_or_null(p.runtime.runtime_version)},
        {"hsa_override_gfx_version", text_or_null(p.runtime.hsa_override)}}},
      {"pci_gpus", pci},
      {"gpus", gpus},
      {"libraries", libraries},
      {"smoke",
       {{"ran", report.smoke_ran},
        {"skipped_reason", text_or_null(report.smoke_skipped)},
        {"devices", smoke}}},
      {"verdict",
       {{"can_run", report.verdict.can_run},
        {"default_device", text_or_null(report.verdict.default_device)},
        {"usable_devices", report.verdict.usable_devices},
        {"warnings", report.verdict.warnings},
        {"summary", report.verdict.summary}}}};
  return doc.dump(2) + "\n";
}

std::string doctor_table(const DoctorReport& report) {
  const SystemProbe& p = report.probe;
  std::ostringstream out;
  std::string archs;
  for (const ArchTarget& t : parse_arch_list(REDLINE_GPU_ARCHS)) {
    archs += (archs.empty() ? "" : " ") + t.name + (t.ptx ? "+PTX" : "");
  }
  out << "redline doctor\n\n";
  out << "build\n";
  row(out, "GPU backend",
      p.runtime.backend == "none"
          ? std::string("none (CPU-only build)")
          : format("{}, code for {}", p.runtime.backend, archs.empty() ? "?" : archs));
#if defined(REDLINE_HAS_CUBLASLT)
  row(out, "linked", "cuBLASLt, cuBLAS");
#endif

  const CpuInfo& c = p.cpu;
  out << "\ncpu\n";
  row(out, "model", or_unknown(c.model) + (c.machine.empty() ? "" : " (" + c.machine + ")"));
  row(out, "cores",
      format("{} logical ({} usable by this process), {} physical, {} socket(s)",
             or_unknown(c.logical_cores), or_unknown(c.affinity_cores),
             or_unknown(c.physical_cores), or_unknown(c.sockets)));
  row(out, "memory",
      format("{} total, {} available", bytes_text(c.memory_total_bytes),
             bytes_text(c.memory_available_bytes)));
  std::string features;
  for (const std::string& f : c.features) features += (features.empty() ? "" : " ") + f;
  row(out, "features", features.empty() ? "-" : features);
  row(out, "backend",
      format("OpenMP {}, BLAS {}",
             c.openmp_threads >= 0 ? format("yes ({} threads)", c.openmp_threads) : "no",
             yes_no(c.blas)));
  row(out, "self-check", (report.cpu_check_passed ? "ok: " : "FAILED: ") + report.cpu_check_detail);

  out << "\ngpu runtime\n";
  if (p.runtime.backend == "none") {
    row(out, "status", "no GPU backend in this build");
  } else {
    row(out, "status",
        p.runtime.device_count > 0 ? format("{} GPU(s) visible", p.runtime.device_count)
                                   : "not available: " + or_unknown(p.runtime.unavailable_reason));
    const std::string api = p.runtime.backend == "cuda" ? "CUDA" : "HIP";
    if (!p.runtime.driver_version.empty()) {
      row(out, "driver",
          format("{} {} (the newest {} version the driver runs)", api, p.runtime.driver_version,
                 api));
    }
    if (!p.runtime.runtime_version.empty()) {
      row(out, "runtime",
          format("{} {} (linked into this redline)", api, p.runtime.runtime_version));
    }
  }
  if (!p.runtime.hsa_override.empty())
    row(out, "override", "HSA_OVERRIDE_GFX_VERSION=" + p.runtime.hsa_override);
  for (const PciGpu& g : p.pci_gpus) {
    row(out, "pci " + g.bus_id,
        format("{} GPU, kernel driver: {}", g.vendor, g.driver.empty() ? "none" : g.driver));
  }

  for (const GpuInfo& g : p.gpus) {
    out << "\ngpu:" << g.index << "  " << or_unknown(g.name) << "\n";
    row(out, "arch",
        format("{}{}, {} {}, {}-wide {}", or_unknown(g.arch),
               g.vendor == "nvidia" && !g.arch_full.empty()
                   ? " (compute capability " + g.arch_full + ")"
                   : (g.arch_full != g.arch && !g.arch_full.empty() ? " (" + g.arch_full + ")"
                                                                    : std::string()),
               or_unknown(g.multiprocessors), g.multiprocessor_label(), or_unknown(g.warp_size),
               g.vendor == "amd" ? "wavefronts" : "warps"));
    row(out, "clocks",
        format("{} MHz peak, memory {} MHz x {} bits", or_unknown(g.clock_mhz),
               or_unknown(g.memory_clock_mhz), or_unknown(g.memory_bus_width_bits)));
    row(out, "memory",
        format("{} total, {} free, L2 {}, {} GB/s peak", bytes_text(g.memory_total_bytes),
               g.from_runtime ? bytes_text(g.memory_free_bytes) : std::string("?"),
               g.l2_bytes > 0 ? bytes_text(static_cast<uint64_t>(g.l2_bytes)) : std::string("?"),
               fixed(g.peak_memory_gbps(), 0)));
    if (g.from_runtime) {
      row(out, "versions",
          format("driver {}{}, runtime {}", or_unknown(g.driver_version),
                 g.telemetry.driver_version.empty() ? "" : " (" + g.telemetry.driver_version + ")",
                 or_unknown(g.runtime_version)));
    }
    row(out, "pcie", or_unknown(g.pci_bus_id) + "  " + link_text(g.pcie));
    if (g.pcie.known() && g.pcie.current_gen < g.pcie.max_gen) {
      row(out, "",
          "(a lower generation at rest is normal power saving; the copy test reads it "
          "again under load)");
    }
    std::string code;
    if (g.compat.has_code && !g.compat.via_ptx) {
      code = "ok: this binary has " + g.compat.matched + " code for it";
    } else if (g.compat.has_code) {
      code = "ok through PTX: " + g.compat.fix;
    } else {
      code = "MISSING: " + g.compat.fix;
    }
    row(out, "code", code);
    row(out, "matrix units",
        format("{}: fp16 {}, bf16 {}, tf32 {}, fp8 {}", g.caps.matrix_unit, yes_no(g.caps.fp16),
               yes_no(g.caps.bf16), yes_no(g.caps.tf32), yes_no(g.caps.fp8)));
    const Telemetry& t = g.telemetry;
    if (t.source.empty()) {
      row(out, "telemetry", "not available: " + or_unknown(t.unavailable));
    } else {
      row(out, "telemetry",
          format("{} W of {} W, {} C, SM clock {} MHz (max {}), memory clock {} MHz ({})",
                 fixed(t.power_w, 0), fixed(t.power_limit_w, 0), fixed(t.temperature_c, 0),
                 or_unknown(t.sm_clock_mhz), or_unknown(t.sm_clock_max_mhz),
                 or_unknown(t.memory_clock_mhz), t.source));
    }
    row(out, "usable", g.usable ? std::string("yes") : "no: " + g.unusable_reason);
  }

  if (!p.libraries.empty()) {
    out << "\nlibraries\n";
    for (const LibraryInfo& l : p.libraries) {
      std::string text = l.found ? format("{}  {}", or_unknown(l.version), l.file) : "not found";
      if (!l.note.empty()) text += "  (" + l.note + ")";
      row(out, l.name, text + "  - " + l.purpose);
    }
  }

  if (!report.smoke_ran) {
    out << "\nsmoke tests: skipped (" << report.smoke_skipped << ")\n";
  }
  for (const gpu::SmokeReport& s : report.smoke) {
    out << "\nsmoke tests on gpu:" << s.device << " (" << fixed(s.seconds, 1) << " s)\n";
    for (const gpu::MatmulCheck& ch : s.checks) {
      row(out, format("check {}^3", ch.size),
          ch.error.empty()
              ? format("{} {} vs CPU: max error {} (tolerance {}) {}", ch.dtype, ch.engine,
                       ch.max_error, ch.tolerance, ch.passed ? "ok" : "WRONG")
              : format("{} {}: could not run: {}", ch.dtype, ch.engine, ch.error),
          kSmokeKey);
    }
    for (const gpu::GemmResult& r : s.gemms) {
      row(out, format("gemm {} {}^3", r.dtype, r.size),
          r.skipped.empty() ? format("{} {} TFLOP/s ({} ms median)", padded(r.engine, 16),
                                     fixed(r.tflops, 1), fixed(r.median_ms, 2))
                            : format("{}: skipped: {}", r.engine, r.skipped),
          kSmokeKey);
    }
    const PcieLink link = link_for_smoke(report, s);
    for (const gpu::CopyResult& r : s.copies) {
      std::string text = format("{} GB/s ({} MiB, {} ms median)", fixed(r.gbps, 1), r.bytes >> 20,
                                fixed(r.median_ms, 2));
      if (r.kind != "device_to_device" && link.current_gbps() > 0) {
        text += format(", {}% of the gen{} x{} link ({} GB/s)",
                       fixed(100 * r.gbps / link.current_gbps(), 0), link.current_gen,
                       link.current_width, fixed(link.current_gbps(), 1));
      } else if (r.kind == "device_to_device") {
        double peak = -1;
        for (const GpuInfo& g : p.gpus) {
          if (g.index == s.device) peak = g.peak_memory_gbps();
        }
        text += format(", {} GB/s of memory traffic (read + write; peak {} GB/s)",
                       fixed(2 * r.gbps, 0), fixed(peak, 0));
      }
      row(out, copy_label(r.kind), text, kSmokeKey);
    }
    if (s.pcie_under_load.known()) {
      row(out, "pcie under load", link_text(s.pcie_under_load), kSmokeKey);
    }
    if (!s.error.empty()) row(out, "stopped", s.error, kSmokeKey);
  }

  out << "\nverdict\n";
  for (const std::string& w : report.verdict.warnings) row(out, "warning", w);
  row(out, "devices", [&] {
    std::string d;
    for (const std::string& name : report.verdict.usable_devices)
      d += (d.empty() ? "" : ", ") + name;
    return d.empty() ? std::string("none") : d;
  }());
  out << "  " << report.verdict.summary << "\n";
  return out.str();
}

}  // namespace redline::tools
