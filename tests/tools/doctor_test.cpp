// `redline doctor` as a user runs it: the built program (REDLINE_BINARY_PATH) with --quick and
// --json, its exit codes, the JSON schema field by field (and that docs/doctor.md documents every
// field), and on a GPU machine the full smoke tests.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "redline/core/device.h"
#include "test_util.h"

namespace redline {
namespace {

using Json = nlohmann::ordered_json;

struct ProgramRun {
  int status = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs `redline doctor ARGS` with optional environment assignments in front ("A=1 B=2").
ProgramRun doctor(const std::string& args, const std::string& env = "") {
  // One file per call and process: ctest runs the tests of this program in parallel processes.
  static int calls = 0;
  const std::string err_path = ::testing::TempDir() + "doctor_stderr_" + std::to_string(getpid()) +
                               "_" + std::to_string(++calls) + ".txt";
  const std::string command = (env.empty() ? "" : "env " + env + " ") + "'" + REDLINE_BINARY_PATH +
                              "' doctor " + args + " 2>'" + err_path + "'";
  ProgramRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> buffer;
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) run.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_path);
  std::ostringstream text;
  text << err.rdbuf();
  run.err = text.str();
  std::remove(err_path.c_str());
  return run;
}

std::vector<std::string> keys(const Json& object) {
  std::vector<std::string> out;
  for (auto it = object.begin(); it != object.end(); ++it) out.push_back(it.key());
  return out;
}

using Keys = std::vector<std::string>;

// The schema (version 1). Changing it means bumping schema_version and docs/doctor.md.
const Keys kTop = {"schema_version", "redline",   "cpu",   "gpu_runtime", "pci_gpus",
                   "gpus",           "libraries", "smoke", "verdict"};
const Keys kRedline = {
    "version", "gpu_backend", "gpu_archs_built", "cuda_toolkit_major", "cublaslt_linked",
    "openmp",  "blas"};
const Keys kCpu = {
    "vendor",         "model",          "machine", "logical_cores",      "affinity_cores",
    "physical_cores", "sockets",        "mhz",     "memory_total_bytes", "memory_available_bytes",
    "features",       "openmp_threads", "check"};
const Keys kRuntime = {"backend",
                       "available",
                       "device_count",
                       "unavailable_reason",
                       "driver_version",
                       "runtime_version",
                       "hsa_override_gfx_version"};
const Keys kGpu = {"index",
                   "vendor",
                   "name",
                   "arch",
                   "arch_full",
                   "pci_bus_id",
                   "seen_by",
                   "multiprocessors",
                   "warp_size",
                   "clock_mhz",
                   "memory_clock_mhz",
                   "memory_bus_width_bits",
                   "memory_total_bytes",
                   "memory_free_bytes",
                   "l2_bytes",
                   "peak_memory_gbps",
                   "driver_version",
                   "runtime_version",
                   "pcie",
                   "compatibility",
                   "capabilities",
                   "telemetry",
                   "usable",
                   "unusable_reason"};
const Keys kPcie = {"current_gen",  "current_width", "max_gen",   "max_width",
                    "current_gbps", "max_gbps",      "below_max", "source"};
const Keys kCompat = {"device_arch", "built_archs", "has_code",     "via_ptx",
                      "matched",     "fix",         "hsa_override", "override_needs_rebuild"};
const Keys kCaps = {"matrix_unit", "fp16", "bf16", "tf32", "fp8"};
const Keys kTelemetry = {"available",          "source",
                         "unavailable_reason", "power_w",
                         "power_limit_w",      "temperature_c",
                         "sm_clock_mhz",       "sm_clock_max_mhz",
                         "memory_clock_mhz",   "memory_clock_max_mhz",
                         "driver_version"};
const Keys kLibrary = {"name", "purpose", "found", "file", "version", "note"};
const Keys kSmoke = {"ran", "skipped_reason", "devices"};
const Keys kSmokeDevice = {"device",        "seconds", "error", "pcie_under_load",
                           "matmul_checks", "gemm",    "copy"};
const Keys kCheck = {"engine", "dtype", "size", "max_error", "tolerance", "passed", "error"};
const Keys kGemm = {"dtype", "engine", "size", "median_ms", "tflops", "skipped"};
const Keys kCopy = {"kind", "bytes", "median_ms", "gbps", "fraction_of_pcie", "skipped"};
const Keys kVerdict = {"can_run", "default_device", "usable_devices", "warnings", "summary"};

bool string_or_null(const Json& v) { return v.is_string() || v.is_null(); }
bool number_or_null(const Json& v) { return v.is_number() || v.is_null(); }

void check_schema(const Json& doc) {
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(keys(doc), kTop);
  EXPECT_EQ(doc["schema_version"], 1);
  EXPECT_EQ(keys(doc["redline"]), kRedline);
  EXPECT_EQ(doc["redline"]["gpu_backend"], std::string(gpu_backend_name()));
  EXPECT_TRUE(doc["redline"]["gpu_archs_built"].is_array());
  EXPECT_EQ(keys(doc["cpu"]), kCpu);
  EXPECT_TRUE(doc["cpu"]["logical_cores"].is_number_integer());
  EXPECT_TRUE(doc["cpu"]["features"].is_array());
  EXPECT_EQ(doc["cpu"]["check"]["passed"], true);
  EXPECT_EQ(keys(doc["gpu_runtime"]), kRuntime);
  EXPECT_TRUE(doc["gpu_runtime"]["device_count"].is_number_integer());
  EXPECT_TRUE(doc["pci_gpus"].is_array());
  ASSERT_TRUE(doc["gpus"].is_array());
  for (const Json& g : doc["gpus"]) {
    EXPECT_EQ(keys(g), kGpu);
    EXPECT_EQ(keys(g["pcie"]), kPcie);
    EXPECT_EQ(keys(g["compatibility"]), kCompat);
    EXPECT_EQ(keys(g["capabilities"]), kCaps);
    EXPECT_EQ(keys(g["telemetry"]), kTelemetry);
    EXPECT_TRUE(g["usable"].is_boolean());
    EXPECT_TRUE(number_or_null(g["multiprocessors"]));
    EXPECT_TRUE(string_or_null(g["unusable_reason"]));
    // An unusable GPU always says why; a usable one never does.
    EXPECT_EQ(g["usable"].get<bool>(), g["unusable_reason"].is_null());
  }
  ASSERT_TRUE(doc["libraries"].is_array());
  for (const Json& l : doc["libraries"]) {
    EXPECT_EQ(keys(l), kLibrary);
    EXPECT_TRUE(l["found"].is_boolean());
    EXPECT_TRUE(string_or_null(l["version"]));
  }
  EXPECT_EQ(keys(doc["smoke"]), kSmoke);
  for (const Json& s : doc["smoke"]["devices"]) {
    EXPECT_EQ(keys(s), kSmokeDevice);
    for (const Json& c : s["matmul_checks"]) EXPECT_EQ(keys(c), kCheck);
    for (const Json& g : s["gemm"]) EXPECT_EQ(keys(g), kGemm);
    for (const Json& c : s["copy"]) EXPECT_EQ(keys(c), kCopy);
    if (!s["pcie_under_load"].is_null()) EXPECT_EQ(keys(s["pcie_under_load"]), kPcie);
  }
  EXPECT_EQ(keys(doc["verdict"]), kVerdict);
  EXPECT_TRUE(doc["verdict"]["can_run"].is_boolean());
  EXPECT_TRUE(doc["verdict"]["warnings"].is_array());
  EXPECT_TRUE(doc["verdict"]["summary"].is_string());
}

TEST(Doctor, QuickJsonFollowsTheSchema) {
  const ProgramRun run = doctor("--quick --json");
  ASSERT_EQ(run.status, 0) << run.err;
  const Json doc = Json::parse(run.out);
  check_schema(doc);
  EXPECT_EQ(doc["smoke"]["ran"], false);
  EXPECT_EQ(doc["smoke"]["skipped_reason"], "--quick");
  EXPECT_EQ(doc["verdict"]["can_run"], true);
  const Json& usable = doc["verdict"]["usable_devices"];
  EXPECT_NE(std::find(usable.begin(), usable.end(), Json("cpu")), usable.end());
  // The verdict agrees with the devices: the default is the first usable GPU, else the CPU.
  std::string expected = "cpu";
  for (const Json& g : doc["gpus"]) {
    if (g["usable"].get<bool>()) {
      expected = "gpu:" + std::to_string(g["index"].get<int>());
      break;
    }
  }
  EXPECT_EQ(doc["verdict"]["default_device"], expected);
  if (!gpu_built()) {
    EXPECT_TRUE(doc["gpus"].empty());
    EXPECT_EQ(doc["gpu_runtime"]["available"], false);
    EXPECT_EQ(doc["gpu_runtime"]["backend"], "none");
  }
}

TEST(Doctor, EveryJsonFieldIsDocumented) {
  std::ifstream in(source_path("docs/doctor.md"));
  ASSERT_TRUE(in) << "docs/doctor.md is missing";
  std::ostringstream text;
  text << in.rdbuf();
  const std::string docs = text.str();
  for (const Keys* list :
       {&kTop, &kRedline, &kCpu, &kRuntime, &kGpu, &kPcie, &kCompat, &kCaps, &kTelemetry, &kLibrary,
        &kSmoke, &kSmokeDevice, &kCheck, &kGemm, &kCopy, &kVerdict}) {
    for (const std::string& key : *list) {
      EXPECT_NE(docs.find("`" + key + "`"), std::string::npos)
          << "docs/doctor.md does not document the field `" << key << "`";
    }
  }
}

TEST(Doctor, QuickTableSaysWhereRedlineRuns) {
  const ProgramRun run = doctor("--quick");
  ASSERT_EQ(run.status, 0) << run.err;
  for (const char* part :
       {"redline doctor", "\ncpu\n", "self-check     ok", "\ngpu runtime\n",
        "smoke tests: skipped (--quick)", "\nverdict\n", "redline will run on"}) {
    EXPECT_NE(run.out.find(part), std::string::npos) << "missing '" << part << "' in\n" << run.out;
  }
  if (!gpu_built()) {
    EXPECT_NE(run.out.find("none (CPU-only build)"), std::string::npos) << run.out;
    EXPECT_NE(run.out.find("redline will run on the CPU"), std::string::npos) << run.out;
  }
}

TEST(Doctor, HelpAndUsageErrors) {
  ProgramRun run = doctor("--help");
  EXPECT_EQ(run.status, 0);
  EXPECT_NE(run.out.find("--json"), std::string::npos);
  EXPECT_NE(run.out.find("--quick"), std::string::npos);
  run = doctor("--frobnicate");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("unknown option '--frobnicate'"), std::string::npos) << run.err;
  EXPECT_TRUE(run.out.empty());
  run = doctor("--gpu");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("--gpu needs a GPU index"), std::string::npos) << run.err;
  run = doctor("--gpu=-1");
  EXPECT_EQ(run.status, 2);
}

TEST(Doctor, HiddenGpusAndOverridesStillRunOnTheCpu) {
  // No GPU visible (a GPU machine with every device hidden behaves like one without a GPU), and an
  // HSA override that the report must name.
  const ProgramRun run = doctor("--quick --json",
                                "CUDA_VISIBLE_DEVICES= HIP_VISIBLE_DEVICES= ROCR_VISIBLE_DEVICES= "
                                "HSA_OVERRIDE_GFX_VERSION=10.3.0");
  ASSERT_EQ(run.status, 0) << run.err;
  const Json doc = Json::parse(run.out);
  check_schema(doc);
  EXPECT_TRUE(doc["gpus"].empty());
  EXPECT_EQ(doc["verdict"]["default_device"], "cpu");
  EXPECT_EQ(doc["gpu_runtime"]["hsa_override_gfx_version"], "10.3.0");
  bool named = false;
  for (const Json& w : doc["verdict"]["warnings"]) {
    named =
        named || w.get<std::string>().find("HSA_OVERRIDE_GFX_VERSION=10.3.0") != std::string::npos;
  }
  EXPECT_TRUE(named) << doc["verdict"].dump();
}

TEST(DoctorGpu, SmokeTestsMeasureAndCheck) {
  REDLINE_REQUIRE_GPU();
  const ProgramRun run = doctor("--json --gpu 0");
  ASSERT_EQ(run.status, 0) << run.err;
  const Json doc = Json::parse(run.out);
  check_schema(doc);
  ASSERT_EQ(doc["smoke"]["ran"], true);
  ASSERT_EQ(doc["smoke"]["devices"].size(), 1u);
  const Json& s = doc["smoke"]["devices"][0];
  EXPECT_TRUE(s["error"].is_null()) << s["error"];
  ASSERT_FALSE(s["matmul_checks"].empty());
  for (const Json& c : s["matmul_checks"]) {
    EXPECT_EQ(c["passed"], true) << c.dump();
  }
  bool measured_f32 = false;
  for (const Json& g : s["gemm"]) {
    if (g["skipped"].is_null()) {
      EXPECT_GT(g["tflops"].get<double>(), 0.1) << g.dump();
      measured_f32 = measured_f32 || g["dtype"] == "f32";
    }
  }
  EXPECT_TRUE(measured_f32);
  ASSERT_EQ(s["copy"].size(), 5u);
  for (const Json& c : s["copy"]) {
    EXPECT_GT(c["gbps"].get<double>(), 0.5) << c.dump();
    // Nothing crosses a PCIe link faster than the link (5% slack for the clocks of the timers).
    if (c["kind"] != "device_to_device" && !c["fraction_of_pcie"].is_null()) {
      EXPECT_LT(c["fraction_of_pcie"].get<double>(), 1.05) << c.dump();
    }
  }
  EXPECT_EQ(doc["verdict"]["default_device"], "gpu:0");
}

}  // namespace
}  // namespace redline
