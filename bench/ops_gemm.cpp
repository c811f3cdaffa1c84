// GEMM throughput: f32, tf32 and bf16 at 4096^3 and the RL shapes 128x3136x512 and 32x1024x128
// (M x K x N: a batch of 128 Nature-CNN features into 512 units; 32 x 1024 into 128), on the GPU
// (cuBLASLt) and f32 on the CPU (OpenBLAS) for the small shapes. Median of 7 event-timed repeats
// of 10 calls after 3 warm-ups. Prints a Markdown table; the PyTorch peer is bench/peer_ops.py.
//
// usage: bench_ops_gemm [--cpu-only]
#include <cstdio>
#include <string>

#include "ops_bench_util.h"
#include "redline/core/random.h"
#include "redline/ops/ops.h"

using namespace redline;

namespace {

struct Shape3 {
  int64_t m, k, n;
};

void run(Device device, const Shape3& s, const char* mode) {
  const std::string name = mode;
  const DType dtype = name == "bf16" ? DType::bf16 : DType::f32;
  Generator gen(1, 0, device);
  Tensor a = Tensor::empty({s.m, s.k}, DType::f32, device);
  Tensor b = Tensor::empty({s.k, s.n}, DType::f32, device);
  uniform_(a, gen);
  uniform_(b, gen);
  const Tensor ac = ops::cast(a, dtype), bc = ops::cast(b, dtype);
  ops::set_allow_tf32(name == "tf32");
  const int iterations = s.m * s.k * s.n > (int64_t{1} << 32) ? 5 : 50;
  const double ms = bench::median_ms(
      device, [&] { ops::matmul(ac, bc); }, iterations);
  ops::set_allow_tf32(false);
  const double tflops = 2.0 * s.m * s.k * s.n / (ms * 1e-3) / 1e12;
  std::printf("| %s | %s | %ldx%ldx%ld | %.4f | %.2f |\n", device.str().c_str(), mode, s.m, s.k,
              s.n, ms, tflops);
}

}  // namespace

int main(int argc, char** argv) {
  const bool cpu_only = bench::has_flag(argc, argv, "--cpu-only");
  std::printf("| device | mode | M x K x N | ms | TFLOP/s |\n| --- | --- | --- | ---: | ---: |\n");
  const Shape3 shapes[] = {{4096, 4096, 4096}, {128, 3136, 512}, {32, 1024, 128}};
  if (!cpu_only && gpu_count() > 0) {
    for (const Shape3& s : shapes) {
      for (const char* mode : {"f32", "tf32", "bf16"}) run(Device::gpu(0), s, mode);
    }
  } else if (!cpu_only) {
    std::printf("(no usable GPU: %s)\n", gpu_count() == 0 ? "gpu_count() is 0" : "");
  }
  for (const Shape3& s : {shapes[1], shapes[2]}) run(Device::cpu(), s, "f32");
  return 0;
}
