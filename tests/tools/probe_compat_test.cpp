// The device probe's rules with fabricated inputs: CMake arch lists, code compatibility and the
// one-sentence fix, the HSA_OVERRIDE_GFX_VERSION table, matrix-unit capabilities, PCIe link
// parsing (from a fabricated sysfs tree) and /proc/cpuinfo parsing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "redline/core/device.h"
#include "redline/core/probe.h"
#include "test_util.h"

namespace redline {
namespace {

namespace fs = std::filesystem;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// One sentence: no sentence break inside, no line break, no trailing period.
void expect_one_sentence(const std::string& text) {
  EXPECT_FALSE(text.empty());
  EXPECT_FALSE(contains(text, ". ")) << text;
  EXPECT_FALSE(contains(text, "\n")) << text;
  EXPECT_NE(text.back(), '.') << text;
}

TEST(ArchList, ParsesCudaEntries) {
  const std::vector<ArchTarget> t = parse_arch_list("80-real, 90;90a-real,100f,75-virtual");
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[0].name, "sm_80");
  EXPECT_TRUE(t[0].machine);
  EXPECT_FALSE(t[0].ptx);
  EXPECT_EQ(t[0].cc, 80);
  EXPECT_EQ(t[1].name, "sm_90");  // plain "90" is machine code and PTX
  EXPECT_TRUE(t[1].machine);
  EXPECT_TRUE(t[1].ptx);
  EXPECT_EQ(t[2].name, "sm_90a");
  EXPECT_TRUE(t[2].arch_specific);
  EXPECT_EQ(t[2].cc, 90);
  EXPECT_TRUE(t[3].arch_specific);
  EXPECT_EQ(t[3].cc, 100);
  EXPECT_FALSE(t[4].machine);
  EXPECT_TRUE(t[4].ptx);
  EXPECT_EQ(t[4].text, "75-virtual");
}

TEST(ArchList, KeepsAmdTargetsAndSpecialWords) {
  const std::vector<ArchTarget> t = parse_arch_list("gfx90a:xnack-,gfx11-generic,native,,");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].name, "gfx90a:xnack-");
  EXPECT_TRUE(t[0].machine);
  EXPECT_EQ(t[1].name, "gfx11-generic");
  EXPECT_EQ(t[2].name, "native");
  EXPECT_EQ(t[2].cc, -1);
  EXPECT_TRUE(parse_arch_list("").empty());
}

TEST(GfxNames, FromKfdVersionsAndOverrides) {
  EXPECT_EQ(gfx_name_from_target_version(90010), "gfx90a");
  EXPECT_EQ(gfx_name_from_target_version(90402), "gfx942");
  EXPECT_EQ(gfx_name_from_target_version(100302), "gfx1032");
  EXPECT_EQ(gfx_name_from_target_version(110000), "gfx1100");
  EXPECT_EQ(gfx_name_from_target_version(0), "");
  EXPECT_EQ(gfx_name_from_override("10.3.0"), "gfx1030");
  EXPECT_EQ(gfx_name_from_override("9.0.10"), "gfx90a");
  EXPECT_EQ(gfx_name_from_override(" 11.0.0 "), "gfx1100");
  EXPECT_EQ(gfx_name_from_override("10.3"), "");
  EXPECT_EQ(gfx_name_from_override("gfx1030"), "");
  EXPECT_EQ(strip_gfx_features("gfx90a:sramecc+:xnack-"), "gfx90a");
  EXPECT_EQ(strip_gfx_features("gfx1100"), "gfx1100");
}

TEST(GfxOverrideTable, KnownFamiliesOnly) {
  for (const char* gfx : {"gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"}) {
    const auto ov = hsa_override_for(gfx);
    ASSERT_TRUE(ov.has_value()) << gfx;
    EXPECT_EQ(ov->value, "10.3.0");
    EXPECT_EQ(ov->runs_as, "gfx1030");
  }
  for (const char* gfx : {"gfx1101", "gfx1102", "gfx1103:xnack-"}) {
    const auto ov = hsa_override_for(gfx);
    ASSERT_TRUE(ov.has_value()) << gfx;
    EXPECT_EQ(ov->value, "11.0.0");
    EXPECT_EQ(ov->runs_as, "gfx1100");
  }
  // Officially supported targets and targets without a known-good sibling have none.
  for (const char* gfx : {"gfx1030", "gfx1100", "gfx90a", "gfx942", "gfx906", "gfx1010"}) {
    EXPECT_FALSE(hsa_override_for(gfx).has_value()) << gfx;
  }
}

TEST(CudaCompatibility, MachineCodeOfTheSameMajor) {
  Compatibility c = check_compatibility("cuda", "sm_90", "80-real,90", 13);
  EXPECT_TRUE(c.has_code);
  EXPECT_FALSE(c.via_ptx);
  EXPECT_EQ(c.matched, "sm_90");
  EXPECT_TRUE(c.fix.empty());
  c = check_compatibility("cuda", "sm_86", "80-real,90", 13);  // sm_80 cubins run on 8.6
  EXPECT_TRUE(c.has_code);
  EXPECT_EQ(c.matched, "sm_80");
  c = check_compatibility("cuda", "sm_90", "90a-real", 13);  // 'a' runs on exactly 9.0
  EXPECT_TRUE(c.has_code);
  c = check_compatibility("cuda", "sm_80", "86-real", 13);  // never on an older minor
  EXPECT_FALSE(c.has_code);
}

TEST(CudaCompatibility, NewerGpuRunsThroughPtx) {
  const Compatibility c = check_compatibility("cuda", "sm_100", "80-real,90", 13);
  EXPECT_TRUE(c.has_code);
  EXPECT_TRUE(c.via_ptx);
  EXPECT_EQ(c.matched, "compute_90");
  EXPECT_TRUE(contains(c.fix, "-DCMAKE_CUDA_ARCHITECTURES=\"80-real;90;100-real\"")) << c.fix;
  expect_one_sentence(c.fix);
  // Arch-specific PTX (90a) does not run on other GPUs.
  EXPECT_FALSE(check_compatibility("cuda", "sm_100", "90a", 13).has_code);
}

TEST(CudaCompatibility, OlderGpuGetsTheExactFix) {
  Compatibility c = check_compatibility("cuda", "sm_75", "80-real,90", 13);
  EXPECT_FALSE(c.has_code);
  EXPECT_TRUE(contains(c.fix, "sm_75")) << c.fix;
  EXPECT_TRUE(contains(c.fix, "sm_80, sm_90 and PTX compute_90")) << c.fix;
  EXPECT_TRUE(contains(c.fix, "-DCMAKE_CUDA_ARCHITECTURES=\"80-real;90;75\"")) << c.fix;
  expect_one_sentence(c.fix);
  // CUDA 13 cannot compile for Volta: the fix names an older toolkit.
  c = check_compatibility("cuda", "sm_70", "80-real,90", 13);
  EXPECT_FALSE(c.has_code);
  EXPECT_TRUE(contains(c.fix, "CUDA 13 cannot compile for it")) << c.fix;
  EXPECT_TRUE(contains(c.fix, "CUDA 12")) << c.fix;
  expect_one_sentence(c.fix);
  c = check_compatibility("cuda", "sm_70", "80-real,90", 12);
  EXPECT_TRUE(contains(c.fix, "-DCMAKE_CUDA_ARCHITECTURES=\"80-real;90;70\"")) << c.fix;
}

TEST(CudaCompatibility, CmakeSpecialWordsDeferToTheLoadCheck) {
  const Compatibility c = check_compatibility("cuda", "sm_89", "native", 13);
  EXPECT_TRUE(c.has_code);
  EXPECT_EQ(c.matched, "native");
}

TEST(HipCompatibility, ExactTargetWithFeatures) {
  Compatibility c = check_compatibility("hip", "gfx90a:sramecc+:xnack-", "gfx90a,gfx942,gfx1100");
  EXPECT_TRUE(c.has_code);
  EXPECT_EQ(c.matched, "gfx90a");
  EXPECT_EQ(c.device_arch, "gfx90a");
  // A code object built for xnack+ does not run on a device in xnack- mode.
  EXPECT_FALSE(check_compatibility("hip", "gfx90a:sramecc+:xnack-", "gfx90a:xnack+").has_code);
  EXPECT_TRUE(check_compatibility("hip", "gfx90a:sramecc+:xnack+", "gfx90a:xnack+").has_code);
  // Generic targets cover their family.
  EXPECT_TRUE(check_compatibility("hip", "gfx1101", "gfx11-generic").has_code);
  EXPECT_FALSE(check_compatibility("hip", "gfx1030", "gfx11-generic").has_code);
}

TEST(HipCompatibility, OverrideWhenTheSiblingIsBuilt) {
  const Compatibility c = check_compatibility("hip", "gfx1032", "gfx90a,gfx1030");
  EXPECT_FALSE(c.has_code);
  EXPECT_EQ(c.override_value, "10.3.0");
  EXPECT_FALSE(c.override_needs_rebuild);
  EXPECT_TRUE(contains(c.fix, "the GPU is gfx1032")) << c.fix;
  EXPECT_TRUE(contains(c.fix, "gfx90a and gfx1030")) << c.fix;
  EXPECT_TRUE(contains(c.fix, "HSA_OVERRIDE_GFX_VERSION=10.3.0 (unofficial")) << c.fix;
  EXPECT_TRUE(contains(c.fix, "-DCMAKE_HIP_ARCHITECTURES=\"gfx90a;gfx1030;gfx1032\"")) << c.fix;
  expect_one_sentence(c.fix);
}

TEST(HipCompatibility, OverrideThatNeedsTheSiblingInTheBuild) {
  const Compatibility c = check_compatibility("hip", "gfx1102", "gfx90a,gfx942");
  EXPECT_FALSE(c.has_code);
  EXPECT_EQ(c.override_value, "11.0.0");
  EXPECT_TRUE(c.override_needs_rebuild);
  EXPECT_TRUE(contains(c.fix, "-DCMAKE_HIP_ARCHITECTURES=\"gfx90a;gfx942;gfx1102\"")) << c.fix;
  EXPECT_TRUE(contains(c.fix, "unofficially, add gfx1100")) << c.fix;
  EXPECT_TRUE(contains(c.fix, "HSA_OVERRIDE_GFX_VERSION=11.0.0")) << c.fix;
  expect_one_sentence(c.fix);
}

TEST(HipCompatibility, NoOverrideForOtherTargets) {
  const Compatibility c = check_compatibility("hip", "gfx906", "gfx90a");
  EXPECT_FALSE(c.has_code);
  EXPECT_TRUE(c.override_value.empty());
  EXPECT_FALSE(contains(c.fix, "HSA_OVERRIDE")) << c.fix;
  EXPECT_TRUE(contains(c.fix, "-DCMAKE_HIP_ARCHITECTURES=\"gfx90a;gfx906\"")) << c.fix;
  expect_one_sentence(c.fix);
}

TEST(Compatibility, CpuOnlyBuildSaysHowToGetAGpu) {
  const Compatibility c = check_compatibility("none", "sm_90", "");
  EXPECT_FALSE(c.has_code);
  EXPECT_TRUE(contains(c.fix, "cmake --preset cuda")) << c.fix;
}

TEST(WaveSize, MismatchIsOneSentenceWithTheFix) {
  EXPECT_EQ(wave_size_mismatch(32, 32), "");
  EXPECT_EQ(wave_size_mismatch(64, 64), "");
  const std::string to64 = wave_size_mismatch(32, 64);
  EXPECT_TRUE(contains(to64, "compiled for 32-lane wavefronts but run with 64")) << to64;
  EXPECT_TRUE(contains(to64, "rebuild with -mwavefrontsize64")) << to64;
  expect_one_sentence(to64);
  const std::string to32 = wave_size_mismatch(64, 32);
  EXPECT_TRUE(contains(to32, "rebuild without -mwavefrontsize64")) << to32;
  expect_one_sentence(to32);
}

TEST(Capabilities, FromTheArchitecture) {
  Capabilities c = capabilities_for_arch("sm_90");
  EXPECT_TRUE(c.fp16 && c.bf16 && c.tf32 && c.fp8);
  EXPECT_EQ(c.matrix_unit, "tensor cores (Hopper)");
  c = capabilities_for_arch("sm_80");
  EXPECT_TRUE(c.bf16 && c.tf32);
  EXPECT_FALSE(c.fp8);
  c = capabilities_for_arch("sm_89");
  EXPECT_TRUE(c.fp8);
  c = capabilities_for_arch("sm_75");
  EXPECT_TRUE(c.fp16);
  EXPECT_FALSE(c.bf16 || c.tf32 || c.fp8);
  c = capabilities_for_arch("sm_61");
  EXPECT_FALSE(c.fp16 || c.bf16 || c.tf32 || c.fp8);
  EXPECT_EQ(c.matrix_unit, "none");
  c = capabilities_for_arch("gfx942:sramecc+:xnack-");
  EXPECT_TRUE(c.fp16 && c.bf16 && c.tf32 && c.fp8);
  EXPECT_EQ(c.matrix_unit, "MFMA (CDNA3)");
  c = capabilities_for_arch("gfx90a");
  EXPECT_TRUE(c.bf16);
  EXPECT_FALSE(c.tf32 || c.fp8);
  c = capabilities_for_arch("gfx1100");
  EXPECT_EQ(c.matrix_unit, "WMMA (RDNA3)");
  EXPECT_FALSE(capabilities_for_arch("gfx1030").fp16);
}

TEST(Pcie, SpeedsAndRates) {
  EXPECT_EQ(pcie_gen_from_speed("2.5 GT/s PCIe"), 1);
  EXPECT_EQ(pcie_gen_from_speed("5 GT/s"), 2);
  EXPECT_EQ(pcie_gen_from_speed("8.0 GT/s PCIe"), 3);
  EXPECT_EQ(pcie_gen_from_speed("16.0 GT/s PCIe"), 4);
  EXPECT_EQ(pcie_gen_from_speed("32.0 GT/s PCIe\n"), 5);
  EXPECT_EQ(pcie_gen_from_speed("64.0 GT/s PCIe"), 6);
  EXPECT_EQ(pcie_gen_from_speed("Unknown"), -1);
  EXPECT_NEAR(pcie_lane_gbps(3), 0.985, 1e-3);
  PcieLink link;
  link.current_gen = 4;
  link.current_width = 16;
  link.max_gen = 5;
  link.max_width = 16;
  EXPECT_NEAR(link.current_gbps(), 31.5, 0.05);
  EXPECT_NEAR(link.max_gbps(), 63.0, 0.05);
  EXPECT_TRUE(link.below_max());
  link.current_gen = 5;
  EXPECT_FALSE(link.below_max());
  link.current_width = 8;
  EXPECT_TRUE(link.below_max());
  EXPECT_EQ(normalize_pci_bus_id("00000000:1B:00.0"), "0000:1b:00.0");
  EXPECT_EQ(normalize_pci_bus_id("0000:C1:00.0"), "0000:c1:00.0");
}

// A fabricated sysfs tree under a temporary directory.
class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("redline_sysfs_" + std::to_string(getpid()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& relative, const std::string& text) {
    const fs::path path = root_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  fs::path root_;
};

TEST_F(FakeSysfs, ReadsThePcieLink) {
  write("bus/pci/devices/0000:1b:00.0/current_link_speed", "2.5 GT/s PCIe\n");
  write("bus/pci/devices/0000:1b:00.0/current_link_width", "16\n");
  write("bus/pci/devices/0000:1b:00.0/max_link_speed", "32.0 GT/s PCIe\n");
  write("bus/pci/devices/0000:1b:00.0/max_link_width", "16\n");
  const PcieLink link = read_pcie_sysfs("00000000:1B:00.0", root_.string());
  EXPECT_TRUE(link.known());
  EXPECT_EQ(link.current_gen, 1);
  EXPECT_EQ(link.current_width, 16);
  EXPECT_EQ(link.max_gen, 5);
  EXPECT_EQ(link.max_width, 16);
  EXPECT_EQ(link.source, "sysfs");
  EXPECT_TRUE(link.below_max());
  // Absent device, and a width of 0 (the kernel could not read it): unknown, never an error.
  EXPECT_FALSE(read_pcie_sysfs("0000:99:00.0", root_.string()).known());
  write("bus/pci/devices/0000:2b:00.0/current_link_speed", "Unknown\n");
  write("bus/pci/devices/0000:2b:00.0/current_link_width", "0\n");
  EXPECT_FALSE(read_pcie_sysfs("0000:2b:00.0", root_.string()).known());
}

TEST_F(FakeSysfs, FindsGpusOnThePciBus) {
  write("bus/pci/devices/0000:1b:00.0/class", "0x030200\n");  // NVIDIA 3D controller
  write("bus/pci/devices/0000:1b:00.0/vendor", "0x10de\n");
  write("drivers/nvidia/.keep", "");
  fs::create_directory_symlink(root_ / "drivers/nvidia",
                               root_ / "bus/pci/devices/0000:1b:00.0/driver");
  write("bus/pci/devices/0000:c1:00.0/class", "0x038000\n");  // AMD, no driver bound
  write("bus/pci/devices/0000:c1:00.0/vendor", "0x1002\n");
  write("bus/pci/devices/0000:02:00.0/class", "0x020000\n");  // a network card
  write("bus/pci/devices/0000:02:00.0/vendor", "0x10de\n");
  write("bus/pci/devices/0000:03:00.0/class", "0x030000\n");  // a BMC's VGA (ASPEED)
  write("bus/pci/devices/0000:03:00.0/vendor", "0x1a03\n");
  const std::vector<PciGpu> gpus = probe_pci_gpus(root_.string());
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].bus_id, "0000:1b:00.0");
  EXPECT_EQ(gpus[0].vendor, "nvidia");
  EXPECT_EQ(gpus[0].driver, "nvidia");
  EXPECT_EQ(gpus[1].vendor, "amd");
  EXPECT_EQ(gpus[1].driver, "");
}

// Sets an environment variable for one scope (the KFD probe reads the visibility and override
// variables the way the HIP runtime does).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST_F(FakeSysfs, ReadsTheKfdTopologyBeforeTheHipRuntime) {
  (void)gpu_runtime_precheck();  // this process's own answer, cached before the variables change
  const ScopedEnv no_rocr("ROCR_VISIBLE_DEVICES", "");
  unsetenv("ROCR_VISIBLE_DEVICES");
  const ScopedEnv no_hip("HIP_VISIBLE_DEVICES", "");
  unsetenv("HIP_VISIBLE_DEVICES");
  const ScopedEnv no_cuda("CUDA_VISIBLE_DEVICES", "");
  unsetenv("CUDA_VISIBLE_DEVICES");
  const ScopedEnv no_override("HSA_OVERRIDE_GFX_VERSION", "");
  unsetenv("HSA_OVERRIDE_GFX_VERSION");

  const std::string nodes = "class/kfd/kfd/topology/nodes/";
  write(nodes + "0/properties", "cpu_cores_count 64\nsimd_count 0\ngfx_target_version 0\n");
  write(nodes + "1/properties",
        "cpu_cores_count 0\nsimd_count 416\nsimd_per_cu 4\ngfx_target_version 90010\n"
        "max_engine_clk_fcompute 1700\nlocation_id 49408\ndomain 0\nwave_front_size 64\n");
  write(nodes + "1/mem_banks/0/properties", "heap_type 1\nsize_in_bytes 68702699520\n");
  write(nodes + "2/properties",
        "simd_count 56\nsimd_per_cu 2\ngfx_target_version 100302\nlocation_id 768\n"
        "domain 0\nwave_front_size 32\n");
  std::vector<GpuInfo> gpus = probe_kfd_gpus(root_.string());
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].index, 0);
  EXPECT_EQ(gpus[0].arch, "gfx90a");
  EXPECT_EQ(gpus[0].vendor, "amd");
  EXPECT_EQ(gpus[0].multiprocessors, 104);
  EXPECT_EQ(gpus[0].warp_size, 64);
  EXPECT_EQ(gpus[0].clock_mhz, 1700);
  EXPECT_EQ(gpus[0].pci_bus_id, "0000:c1:00.0");
  EXPECT_EQ(gpus[0].memory_total_bytes, 68702699520u);
  EXPECT_EQ(gpus[1].arch, "gfx1032");
  EXPECT_EQ(gpus[1].pci_bus_id, "0000:03:00.0");
  EXPECT_FALSE(gpus[1].from_runtime);

  // The RDNA2 card lacks code in the default HIP build: the runtime must not start.
  std::string reason = hip_runtime_precheck(gpus, "gfx90a,gfx942,gfx1100");
  EXPECT_TRUE(contains(reason, "hipErrorNoBinaryForGpu")) << reason;
  EXPECT_TRUE(contains(reason, "gfx1032 at 0000:03:00.0")) << reason;
  EXPECT_TRUE(contains(reason, "HSA_OVERRIDE_GFX_VERSION=10.3.0")) << reason;
  EXPECT_TRUE(contains(reason, "HIP_VISIBLE_DEVICES")) << reason;
  expect_one_sentence(reason);
  EXPECT_EQ(hip_runtime_precheck(gpus, "gfx90a,gfx1032"), "");

  {  // Hiding the card, as the runtime would.
    const ScopedEnv visible("HIP_VISIBLE_DEVICES", "0");
    gpus = probe_kfd_gpus(root_.string());
    ASSERT_EQ(gpus.size(), 1u);
    EXPECT_EQ(gpus[0].arch, "gfx90a");
    EXPECT_EQ(hip_runtime_precheck(gpus, "gfx90a,gfx942,gfx1100"), "");
  }
  {  // ROCR_VISIBLE_DEVICES applies first, then HIP_VISIBLE_DEVICES indexes what is left.
    const ScopedEnv rocr("ROCR_VISIBLE_DEVICES", "1");
    const ScopedEnv visible("HIP_VISIBLE_DEVICES", "0");
    gpus = probe_kfd_gpus(root_.string());
    ASSERT_EQ(gpus.size(), 1u);
    EXPECT_EQ(gpus[0].arch, "gfx1032");
  }
  {  // With the override, every GPU loads gfx1030 code.
    const ScopedEnv ov("HSA_OVERRIDE_GFX_VERSION", "10.3.0");
    gpus = probe_kfd_gpus(root_.string());
    ASSERT_EQ(gpus.size(), 2u);
    EXPECT_EQ(gpus[1].arch, "gfx1030");
    EXPECT_EQ(hip_runtime_precheck(gpus, "gfx1030"), "");
    EXPECT_FALSE(hip_runtime_precheck(gpus, "gfx1032").empty());
  }
  // No KFD at all (an NVIDIA or CPU machine): no GPUs, nothing to refuse.
  EXPECT_TRUE(probe_kfd_gpus((root_ / "nothing").string()).empty());
  EXPECT_EQ(hip_runtime_precheck({}, "gfx90a"), "");
}

TEST(Cpuinfo, CountsSocketsCoresAndFeatures) {
  std::string text;
  int processor = 0;
  for (int socket = 0; socket < 2; ++socket) {
    for (int core = 0; core < 2; ++core) {
      for (int thread = 0; thread < 2; ++thread) {
        text += "processor\t: " + std::to_string(processor++) + "\n";
        text += "vendor_id\t: GenuineIntel\n";
        text += "model name\t: Intel(R) Xeon(R) Platinum 8480+\n";
        text += "cpu MHz\t\t: 2000.000\n";
        text += "physical id\t: " + std::to_string(socket) + "\n";
        text += "core id\t\t: " + std::to_string(core) + "\n";
        text += "flags\t\t: fpu sse4_2 avx avx2 fma avx512f amx_bf16 hypervisor\n\n";
      }
    }
  }
  const CpuInfo cpu = parse_cpuinfo(text);
  EXPECT_EQ(cpu.vendor, "GenuineIntel");
  EXPECT_EQ(cpu.model, "Intel(R) Xeon(R) Platinum 8480+");
  EXPECT_EQ(cpu.logical_cores, 8);
  EXPECT_EQ(cpu.physical_cores, 4);
  EXPECT_EQ(cpu.sockets, 2);
  EXPECT_DOUBLE_EQ(cpu.mhz, 2000.0);
  EXPECT_EQ(cpu.features,
            (std::vector<std::string>{"amx_bf16", "avx", "avx2", "avx512f", "fma", "sse4_2"}));
  const CpuInfo arm = parse_cpuinfo(
      "processor\t: 0\nFeatures\t: fp asimd sve bf16 i8mm\nCPU implementer\t: 0x41\n\n"
      "processor\t: 1\nFeatures\t: fp asimd sve bf16 i8mm\nCPU implementer\t: 0x41\n");
  EXPECT_EQ(arm.logical_cores, 2);
  EXPECT_EQ(arm.features, (std::vector<std::string>{"asimd", "bf16", "i8mm", "sve"}));
}

TEST(Probe, ThisMachinesCpu) {
  const CpuInfo cpu = probe_cpu();
  EXPECT_GT(cpu.logical_cores, 0);
  EXPECT_GT(cpu.affinity_cores, 0);
  EXPECT_LE(cpu.affinity_cores, cpu.logical_cores);
  EXPECT_GT(cpu.memory_total_bytes, 0u);
  EXPECT_FALSE(cpu.machine.empty());
}

TEST(Probe, GpuUsableAnswersEverywhere) {
  std::string why;
  if (!gpu_built()) {
    EXPECT_FALSE(gpu_usable(0, &why));
    EXPECT_TRUE(contains(why, "REDLINE_GPU=off")) << why;
  }
  EXPECT_FALSE(gpu_usable(4096, &why));
  EXPECT_FALSE(why.empty());
  if (gpu_backend_name() != "hip") {
    EXPECT_TRUE(gpu_runtime_precheck().empty());
  }
}

TEST(Probe, TelemetryNeverFails) {
  const Telemetry t = read_telemetry("nvidia", "0000:ff:1f.7");  // no GPU sits there
  EXPECT_TRUE(t.source.empty());
  EXPECT_FALSE(t.unavailable.empty());
  EXPECT_FALSE(read_telemetry("amd", "0000:ff:1f.7").unavailable.empty());
  EXPECT_FALSE(read_telemetry("intel", "0000:00:02.0").unavailable.empty());
  EXPECT_FALSE(read_telemetry("nvidia", "").unavailable.empty());
}

TEST(ProbeGpu, EveryRuntimeGpuIsDescribedAndTheFirstIsUsable) {
  REDLINE_REQUIRE_GPU();
  GpuRuntimeInfo runtime;
  const std::vector<GpuInfo> gpus = probe_gpus(&runtime);
  ASSERT_EQ(static_cast<int>(gpus.size()), gpu_count());
  EXPECT_FALSE(runtime.runtime_version.empty());
  for (const GpuInfo& g : gpus) {
    EXPECT_FALSE(g.name.empty());
    EXPECT_TRUE(g.arch.rfind("sm_", 0) == 0 || g.arch.rfind("gfx", 0) == 0) << g.arch;
    EXPECT_GT(g.multiprocessors, 0);
    EXPECT_TRUE(g.warp_size == 32 || g.warp_size == 64) << g.warp_size;
    EXPECT_GT(g.memory_total_bytes, g.memory_free_bytes);
    EXPECT_FALSE(g.pci_bus_id.empty());
    EXPECT_TRUE(g.from_runtime);
  }
  std::string why;
  EXPECT_TRUE(gpu_usable(0, &why)) << why;
  EXPECT_TRUE(gpus[0].compat.has_code) << gpus[0].compat.fix;
}

}  // namespace
}  // namespace redline
