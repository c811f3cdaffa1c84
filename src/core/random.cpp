#include "redline/core/random.h"

#include "backend/cpu/cpu_kernels.h"
#include "backend/gpu_api.h"
#include "redline/core/stream.h"

namespace redline {
namespace {

void fill_random(Tensor& out, Generator& gen, gpu::RandomKind kind, uint32_t bound) {
  REDLINE_CHECK(out.defined() && out.is_contiguous(),
                "random fills need a defined contiguous tensor, got {}", out.describe());
  REDLINE_CHECK(out.device() == gen.device(),
                "the tensor is on {} but the generator serves {}; use a generator of that device",
                out.device(), gen.device());
  if (out.numel() == 0) return;
  int64_t* offset = gen.offset_tensor().data<int64_t>();
  if (out.device().is_cpu()) {
    cpu::random_fill(out.raw_data(), out.numel(), kind, bound, gen.seed(), gen.stream(), offset);
  } else {
    gpu::set_device(out.device().index);
    gpu::random_fill(out.raw_data(), out.numel(), kind, bound, gen.seed(), gen.stream(), offset,
                     Stream::current(out.device()).handle());
  }
}

}  // namespace

Generator::Generator(uint64_t seed, uint64_t stream, Device device)
    : seed_(seed), stream_(stream), offset_(Tensor::zeros({1}, DType::i64, device)) {}

uint64_t Generator::offset() const {
  return static_cast<uint64_t>(offset_.to_vector<int64_t>()[0]);
}

void Generator::set_offset(uint64_t offset) {
  offset_.copy_from(Tensor::from_host<int64_t>({static_cast<int64_t>(offset)}, {1}));
}

void uniform_(Tensor& out, Generator& gen) {
  REDLINE_CHECK(out.dtype() == DType::f32, "uniform_ fills f32 tensors, got {}", out.describe());
  fill_random(out, gen, gpu::RandomKind::uniform_f32, 0);
}

void normal_(Tensor& out, Generator& gen) {
  REDLINE_CHECK(out.dtype() == DType::f32, "normal_ fills f32 tensors, got {}", out.describe());
  fill_random(out, gen, gpu::RandomKind::normal_f32, 0);
}

void randint_(Tensor& out, uint32_t bound, Generator& gen) {
  REDLINE_CHECK(bound > 0, "randint_ needs a bound > 0, got {}", bound);
  REDLINE_CHECK(out.dtype() == DType::i32 || out.dtype() == DType::i64,
                "randint_ fills i32 or i64 tensors, got {}", out.describe());
  fill_random(out, gen,
              out.dtype() == DType::i32 ? gpu::RandomKind::uniform_int_i32
                                        : gpu::RandomKind::uniform_int_i64,
              bound);
}

}  // namespace redline
