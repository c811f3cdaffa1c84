// Conv2d forward + backward (dx, dw, dbias) for the three Nature-CNN layers at batch 128:
//   conv1 (128, 4, 84, 84)  * (32, 4, 8, 8)  stride 4 -> (128, 32, 20, 20)
//   conv2 (128, 32, 20, 20) * (64, 32, 4, 4) stride 2 -> (128, 64, 9, 9)
//   conv3 (128, 64, 9, 9)   * (64, 64, 3, 3) stride 1 -> (128, 64, 7, 7)
// GPU (cuDNN where the build found it, else im2col + cuBLASLt GEMM) and CPU; median of 7 timed
// repeats. The GPU runs twice: with the fastest algorithms (the default, like PyTorch's) and with
// deterministic ones only (ops::set_deterministic). The PyTorch peer (cudnn.benchmark = True,
// deterministic off) is bench/peer_ops.py.
//
// usage: bench_ops_conv [--cpu-only] [--tf32] [--parts]
//   --parts: each gradient of the backward alone (dx, dw, dbias) instead of the totals
#include <cstdio>

#include "ops_bench_util.h"
#include "redline/core/random.h"
#include "redline/ops/ops.h"

using namespace redline;

namespace {

struct Layer {
  const char* name;
  int64_t c, h, o, k;
  int stride;
};

void run(Device device, const Layer& l, int64_t batch, bool parts) {
  Generator gen(1, 0, device);
  Tensor x = Tensor::empty({batch, l.c, l.h, l.h}, DType::f32, device);
  Tensor w = Tensor::empty({l.o, l.c, l.k, l.k}, DType::f32, device);
  Tensor b = Tensor::zeros({l.o}, DType::f32, device);
  uniform_(x, gen);
  uniform_(w, gen);
  const ops::Conv2dOptions o{l.stride, l.stride, 0, 0, 1, 1};
  const Tensor y = ops::conv2d(x, w, b, o);
  Tensor dy = Tensor::empty(y.shape(), DType::f32, device);
  uniform_(dy, gen);
  const int iterations = device.is_gpu() ? 20 : 1;
  const double fwd = bench::median_ms(
      device, [&] { ops::conv2d(x, w, b, o); }, iterations);
  const double bwd = bench::median_ms(
      device, [&] { ops::conv2d_backward(x, w, dy, o, true, true, true); }, iterations);
  if (parts) {  // each gradient alone
    const double dx = bench::median_ms(
        device, [&] { ops::conv2d_backward(x, w, dy, o, true, false, false); }, iterations);
    const double dw = bench::median_ms(
        device, [&] { ops::conv2d_backward(x, w, dy, o, false, true, false); }, iterations);
    const double db = bench::median_ms(
        device, [&] { ops::conv2d_backward(x, w, dy, o, false, false, true); }, iterations);
    std::printf("| %s | %s | %s | %.4f | %.4f | %.4f |\n", device.str().c_str(),
                ops::deterministic() ? "deterministic" : "fastest", l.name, dx, dw, db);
    return;
  }
  std::printf("| %s | %s | %s | %s | %.4f | %.4f | %.4f |\n", device.str().c_str(),
              ops::deterministic() ? "deterministic" : "fastest", l.name,
              shape_str(y.shape()).c_str(), fwd, bwd, fwd + bwd);
}

}  // namespace

int main(int argc, char** argv) {
  ops::set_allow_tf32(bench::has_flag(argc, argv, "--tf32"));
  const Layer layers[] = {{"conv1 8x8 s4", 4, 84, 32, 8, 4},
                          {"conv2 4x4 s2", 32, 20, 64, 4, 2},
                          {"conv3 3x3 s1", 64, 9, 64, 3, 1}};
  const bool parts = bench::has_flag(argc, argv, "--parts");
  std::printf("tf32: %s\n", ops::allow_tf32() ? "on" : "off");
  if (parts) {
    std::printf("| device | algorithms | layer | dx ms | dw ms | dbias ms |\n");
    std::printf("| --- | --- | --- | ---: | ---: | ---: |\n");
  } else {
    std::printf("| device | algorithms | layer | output | forward ms | backward ms | total ms |\n");
    std::printf("| --- | --- | --- | --- | ---: | ---: | ---: |\n");
  }
  if (!bench::has_flag(argc, argv, "--cpu-only") && gpu_count() > 0) {
    for (const bool deterministic : {false, true}) {
      ops::set_deterministic(deterministic);
      for (const Layer& l : layers) run(Device::gpu(0), l, 128, parts);
    }
  }
  ops::set_deterministic(false);
  for (const Layer& l : layers) run(Device::cpu(), l, 128, parts);
  return 0;
}
