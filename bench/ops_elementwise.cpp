// Memory-bound ops against the device's copy bandwidth: a D2D copy, add (2 reads + 1 write), relu
// (1 + 1), and the fused Adam step (param, grad, m, v read; param, m, v written: 7 x 4 bytes per
// element) on 2^28 f32 elements (1 GiB per tensor) on the GPU, 2^24 on the CPU. GB/s counts the
// bytes each op must move; "% of copy" divides by the copy's GB/s. Median of 7 timed repeats.
// The PyTorch peer (same sizes, torch.optim.Adam(fused=True)) is bench/peer_ops.py.
//
// usage: bench_ops_elementwise [--cpu-only] [--quick]
#include <cstdio>

#include "ops_bench_util.h"
#include "redline/core/random.h"
#include "redline/ops/ops.h"
#include "redline/optim/optim.h"

using namespace redline;

namespace {

void run(Device device, int64_t n) {
  Generator gen(1, 0, device);
  Tensor a = Tensor::empty({n}, DType::f32, device), b = Tensor::empty({n}, DType::f32, device);
  uniform_(a, gen);
  uniform_(b, gen);
  Tensor out = Tensor::empty({n}, DType::f32, device);
  const double bytes = 4.0 * static_cast<double>(n);
  struct Row {
    const char* name;
    double ms, moved;
  };
  std::vector<Row> rows;
  rows.push_back({"copy", bench::median_ms(device, [&] { out.copy_from(a); }), 2 * bytes});
  rows.push_back({"add", bench::median_ms(device, [&] { ops::add(a, b); }), 3 * bytes});
  rows.push_back({"relu", bench::median_ms(device, [&] { ops::relu(a); }), 2 * bytes});
  Variable p(a, true);
  p.set_grad(b);
  optim::Adam adam({p}, optim::AdamOptions{1e-6});
  rows.push_back({"adam step", bench::median_ms(device, [&] { adam.step(); }), 7 * bytes});
  const double copy_gbs = rows[0].moved / (rows[0].ms * 1e-3) / 1e9;
  for (const Row& r : rows) {
    const double gbs = r.moved / (r.ms * 1e-3) / 1e9;
    std::printf("| %s | %s | %ld | %.4f | %.1f | %.0f%% |\n", device.str().c_str(), r.name, n, r.ms,
                gbs, 100.0 * gbs / copy_gbs);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = bench::has_flag(argc, argv, "--quick");
  std::printf("| device | op | elements | ms | GB/s | %% of copy |\n");
  std::printf("| --- | --- | ---: | ---: | ---: | ---: |\n");
  if (!bench::has_flag(argc, argv, "--cpu-only") && gpu_count() > 0) {
    run(Device::gpu(0), quick ? int64_t{1} << 24 : int64_t{1} << 28);
  }
  run(Device::cpu(), quick ? int64_t{1} << 20 : int64_t{1} << 24);
  return 0;
}
