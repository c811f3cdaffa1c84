// CPU GEMM: OpenBLAS (cblas_sgemm) where linked, a blocked loop otherwise.
#include <algorithm>
#include <cmath>

#include "backend/cpu/ops_kernels.h"
#include "ops/elementwise_math.h"
#include "redline/core/error.h"

#if REDLINE_HAS_BLAS
#include <cblas.h>
#endif

namespace redline::cpu {
namespace {

#if !REDLINE_HAS_BLAS
void gemm_loop(const GemmArgs& g, const float* a, const float* b, float* c) {
  for (int64_t i = 0; i < g.m; ++i) {
    for (int64_t j = 0; j < g.n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < g.k; ++p) {
        const float av = g.trans_a ? a[p * g.lda + i] : a[i * g.lda + p];
        const float bv = g.trans_b ? b[j * g.ldb + p] : b[p * g.ldb + j];
        acc += static_cast<double>(av) * bv;
      }
      float& out = c[i * g.ldc + j];
      out = g.alpha * static_cast<float>(acc) + (g.beta == 0.0f ? 0.0f : g.beta * out);
    }
  }
}
#endif

}  // namespace

void gemm(const GemmArgs& g) {
  REDLINE_CHECK(g.dtype == DType::f32, "CPU GEMM got {}; expected f32", dtype_name(g.dtype));
  if (g.m == 0 || g.n == 0) return;
  for (int64_t batch = 0; batch < g.batch; ++batch) {
    const float* a = static_cast<const float*>(g.a) + batch * g.stride_a;
    const float* b = static_cast<const float*>(g.b) + batch * g.stride_b;
    float* c = static_cast<float*>(g.c) + batch * g.stride_c;
#if REDLINE_HAS_BLAS
    if (g.k == 0) {  // BLAS leaves C untouched for k = 0 only when beta is 1
      for (int64_t i = 0; i < g.m; ++i) {
        for (int64_t j = 0; j < g.n; ++j) {
          float& out = c[i * g.ldc + j];
          out = g.beta == 0.0f ? 0.0f : g.beta * out;
        }
      }
      continue;
    }
    cblas_sgemm(CblasRowMajor, g.trans_a ? CblasTrans : CblasNoTrans,
                g.trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(g.m), static_cast<int>(g.n),
                static_cast<int>(g.k), g.alpha, a, static_cast<int>(std::max<int64_t>(g.lda, 1)), b,
                static_cast<int>(std::max<int64_t>(g.ldb, 1)), g.beta, c,
                static_cast<int>(std::max<int64_t>(g.ldc, 1)));
#else
    gemm_loop(g, a, b, c);
#endif
    if (g.bias == nullptr && g.epilogue == GemmEpilogue::none) continue;
    const float* bias = static_cast<const float*>(g.bias);
    for (int64_t i = 0; i < g.m; ++i) {
      for (int64_t j = 0; j < g.n; ++j) {
        float& out = c[i * g.ldc + j];
        if (bias != nullptr) out += bias[j];
        if (g.epilogue == GemmEpilogue::relu)
          out = ops::unary_forward<float>(ops::UnaryOp::relu, out, 0);
        if (g.epilogue == GemmEpilogue::gelu)
          out = ops::unary_forward<float>(ops::UnaryOp::gelu, out, 0);
      }
    }
  }
}

}  // namespace redline::cpu
