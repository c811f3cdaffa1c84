// CPU GEMM: OpenBLAS (cblas_sgemm / cblas_dgemm) where linked, a loop otherwise; f32 and f64.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "backend/cpu/ops_kernels.h"
#include "ops/elementwise_math.h"
#include "redline/core/error.h"

#if REDLINE_HAS_BLAS
#include <cblas.h>
#endif

namespace redline::cpu {
namespace {

#if REDLINE_HAS_BLAS
int blas_dim(int64_t v) { return static_cast<int>(std::max<int64_t>(v, 1)); }

template <typename T>
void blas_gemm(const GemmArgs& g, const T* a, const T* b, T* c) {
  const CBLAS_TRANSPOSE ta = g.trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = g.trans_b ? CblasTrans : CblasNoTrans;
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, g.alpha, a, blas_dim(g.lda), b, blas_dim(g.ldb),
                g.beta, c, blas_dim(g.ldc));
  } else {
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, g.alpha, a, blas_dim(g.lda), b, blas_dim(g.ldb),
                g.beta, c, blas_dim(g.ldc));
  }
}
#else
template <typename T>
void gemm_loop(const GemmArgs& g, const T* a, const T* b, T* c) {
  for (int64_t i = 0; i < g.m; ++i) {
    for (int64_t j = 0; j < g.n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < g.k; ++p) {
        const T av = g.trans_a ? a[p * g.lda + i] : a[i * g.lda + p];
        const T bv = g.trans_b ? b[j * g.ldb + p] : b[p * g.ldb + j];
        acc += static_cast<double>(av) * bv;
      }
      T& out = c[i * g.ldc + j];
      out = static_cast<T>(g.alpha) * static_cast<T>(acc) +
            (g.beta == 0.0f ? T(0) : static_cast<T>(g.beta) * out);
    }
  }
}
#endif

template <typename T>
void gemm_typed(const GemmArgs& g) {
  for (int64_t batch = 0; batch < g.batch; ++batch) {
    const T* a = static_cast<const T*>(g.a) + batch * g.stride_a;
    const T* b = static_cast<const T*>(g.b) + batch * g.stride_b;
    T* c = static_cast<T*>(g.c) + batch * g.stride_c;
#if REDLINE_HAS_BLAS
    if (g.k == 0) {  // BLAS leaves C untouched for k = 0 only when beta is 1
      for (int64_t i = 0; i < g.m; ++i) {
        for (int64_t j = 0; j < g.n; ++j) {
          T& out = c[i * g.ldc + j];
          out = g.beta == 0.0f ? T(0) : static_cast<T>(g.beta) * out;
        }
      }
    } else {
      blas_gemm<T>(g, a, b, c);
    }
#else
    gemm_loop<T>(g, a, b, c);
#endif
    if (g.bias == nullptr && g.epilogue == GemmEpilogue::none) continue;
    const T* bias = static_cast<const T*>(g.bias);
    for (int64_t i = 0; i < g.m; ++i) {
      for (int64_t j = 0; j < g.n; ++j) {
        T& out = c[i * g.ldc + j];
        if (bias != nullptr) out += bias[j];
        if (g.epilogue == GemmEpilogue::relu)
          out = ops::unary_forward<T>(ops::UnaryOp::relu, out, T(0));
        if (g.epilogue == GemmEpilogue::gelu)
          out = ops::unary_forward<T>(ops::UnaryOp::gelu, out, T(0));
      }
    }
  }
}

}  // namespace

void gemm(const GemmArgs& g) {
  if (g.m == 0 || g.n == 0) return;
  switch (g.dtype) {
    case DType::f32:
      return gemm_typed<float>(g);
    case DType::f64:
      return gemm_typed<double>(g);
    default:
      REDLINE_FAIL("CPU GEMM got {}; expected f32 or f64", dtype_name(g.dtype));
  }
}

}  // namespace redline::cpu
