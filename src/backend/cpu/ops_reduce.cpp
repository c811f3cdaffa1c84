// CPU twins of src/backend/gpu/ops_reduce.cu: sum / max / argmax over a dimension, softmax.
#include <cmath>
#include <limits>

#include "backend/cpu/ops_kernels.h"
#include "redline/core/error.h"

namespace redline::cpu {
namespace {

using ops::DimSplit;
using ops::ReduceOp;

// Sums accumulate in double (float inputs) or int64 (integer inputs): the CPU is the reference.
template <typename T, typename Acc>
void reduce_typed(ReduceOp op, void* out, const T* x, const DimSplit& s) {
#pragma omp parallel for collapse(2) if (s.outer * s.inner * s.size > (1 << 16))
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      const T* row = x + o * s.size * s.inner + i;
      if (op == ReduceOp::sum) {
        Acc acc = 0;
        for (int64_t j = 0; j < s.size; ++j) acc += static_cast<Acc>(row[j * s.inner]);
        static_cast<T*>(out)[o * s.inner + i] = static_cast<T>(acc);
        continue;
      }
      int64_t best = 0;
      for (int64_t j = 1; j < s.size; ++j) {
        const T v = row[j * s.inner], b = row[best * s.inner];
        if (v > b || (v != v && b == b)) best = j;  // NaN wins, as in PyTorch
      }
      if (op == ReduceOp::max) {
        static_cast<T*>(out)[o * s.inner + i] = row[best * s.inner];
      } else {
        static_cast<int64_t*>(out)[o * s.inner + i] = best;
      }
    }
  }
}

}  // namespace

void reduce(ReduceOp op, DType dtype, void* out, const void* x, const DimSplit& s) {
  REDLINE_CHECK(s.size > 0 || op == ReduceOp::sum,
                "max/argmax over an empty dimension has no result");
  switch (dtype) {
    case DType::f32:
      return reduce_typed<float, double>(op, out, static_cast<const float*>(x), s);
    case DType::f64:
      return reduce_typed<double, double>(op, out, static_cast<const double*>(x), s);
    case DType::i32:
      return reduce_typed<int32_t, int64_t>(op, out, static_cast<const int32_t*>(x), s);
    case DType::i64:
      return reduce_typed<int64_t, int64_t>(op, out, static_cast<const int64_t*>(x), s);
    default:
      REDLINE_FAIL("CPU reduction got {}; expected f32, f64, i32 or i64", dtype_name(dtype));
  }
}

template <typename T>
void softmax(bool log, T* y, const T* x, const DimSplit& s) {
#pragma omp parallel for collapse(2) if (s.outer * s.inner * s.size > (1 << 16))
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      const int64_t base = o * s.size * s.inner + i;
      T m = -std::numeric_limits<T>::infinity();
      for (int64_t j = 0; j < s.size; ++j) m = std::fmax(m, x[base + j * s.inner]);
      double total = 0;
      for (int64_t j = 0; j < s.size; ++j) total += std::exp(x[base + j * s.inner] - m);
      const T log_total = static_cast<T>(std::log(total));
      for (int64_t j = 0; j < s.size; ++j) {
        const T shifted = x[base + j * s.inner] - m - log_total;
        y[base + j * s.inner] = log ? shifted : std::exp(shifted);
      }
    }
  }
}

// softmax:     dx = y * (dy - sum(dy * y))
// log_softmax: dx = dy - exp(y) * sum(dy)
template <typename T>
void softmax_backward(bool log, T* dx, const T* y, const T* dy, const DimSplit& s) {
#pragma omp parallel for collapse(2) if (s.outer * s.inner * s.size > (1 << 16))
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      const int64_t base = o * s.size * s.inner + i;
      double dot = 0;
      for (int64_t j = 0; j < s.size; ++j) {
        const int64_t at = base + j * s.inner;
        dot += log ? dy[at] : static_cast<double>(dy[at]) * y[at];
      }
      const T d = static_cast<T>(dot);
      for (int64_t j = 0; j < s.size; ++j) {
        const int64_t at = base + j * s.inner;
        dx[at] = log ? dy[at] - std::exp(y[at]) * d : y[at] * (dy[at] - d);
      }
    }
  }
}

template void softmax<float>(bool, float*, const float*, const DimSplit&);
template void softmax<double>(bool, double*, const double*, const DimSplit&);
template void softmax_backward<float>(bool, float*, const float*, const float*, const DimSplit&);
template void softmax_backward<double>(bool, double*, const double*, const double*,
                                       const DimSplit&);

}  // namespace redline::cpu
