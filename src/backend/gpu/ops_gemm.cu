// GEMM on the GPU: cuBLASLt with bias/activation epilogues and a cache of matmul plans
// (descriptors, layouts and the heuristic's algorithm) per shape; an own tiled kernel where
// cuBLASLt is not linked (HIP builds until hipBLASLt is wired in, see docs/ops.md).
//
// Row-major C = A @ B is computed as column-major C^T = B^T A^T: the operands swap places.
#include <map>
#include <mutex>
#include <tuple>

#include "backend/gpu/ops_kernels.h"
#include "backend/gpu/ops_launch.h"
#include "ops/elementwise_math.h"
#include "redline/core/dtype.h"

#if REDLINE_HAS_CUBLASLT && !REDLINE_HIP
#include <cublasLt.h>
#define REDLINE_GEMM_CUBLASLT 1
#else
#define REDLINE_GEMM_CUBLASLT 0
#endif

namespace redline::gpu {
namespace {

using cpu::GemmArgs;
using cpu::GemmEpilogue;

__device__ inline float load_any(const void* p, DType t, int64_t i) {
  if (t == DType::f32) return static_cast<const float*>(p)[i];
  const uint16_t bits = static_cast<const uint16_t*>(p)[i];
  return t == DType::bf16 ? bf16_bits_to_float(bits) : f16_bits_to_float(bits);
}

__device__ inline void store_any(void* p, DType t, int64_t i, float v) {
  if (t == DType::f32) {
    static_cast<float*>(p)[i] = v;
  } else {
    static_cast<uint16_t*>(p)[i] = t == DType::bf16 ? float_to_bf16_bits(v) : float_to_f16_bits(v);
  }
}

constexpr int kTile = 16;

// The portable kernel: 16x16 output tiles staged through shared memory, f32 accumulation.
__global__ void gemm_tiled_kernel(GemmArgs g) {
  __shared__ float as[kTile][kTile + 1];
  __shared__ float bs[kTile][kTile + 1];
  const int64_t batch = blockIdx.z;
  const int64_t row = blockIdx.y * kTile + threadIdx.y, col = blockIdx.x * kTile + threadIdx.x;
  const int64_t a0 = batch * g.stride_a, b0 = batch * g.stride_b;
  float acc = 0.0f;
  for (int64_t t = 0; t < g.k; t += kTile) {
    const int64_t ak = t + threadIdx.x, bk = t + threadIdx.y;
    as[threadIdx.y][threadIdx.x] =
        row < g.m && ak < g.k
            ? load_any(g.a, g.dtype, a0 + (g.trans_a ? ak * g.lda + row : row * g.lda + ak))
            : 0.0f;
    bs[threadIdx.y][threadIdx.x] =
        bk < g.k && col < g.n
            ? load_any(g.b, g.dtype, b0 + (g.trans_b ? col * g.ldb + bk : bk * g.ldb + col))
            : 0.0f;
    __syncthreads();
    for (int p = 0; p < kTile; ++p) acc += as[threadIdx.y][p] * bs[p][threadIdx.x];
    __syncthreads();
  }
  if (row >= g.m || col >= g.n) return;
  const int64_t at = batch * g.stride_c + row * g.ldc + col;
  float out = g.alpha * acc + (g.beta == 0.0f ? 0.0f : g.beta * load_any(g.c, g.dtype, at));
  if (g.bias != nullptr) out += load_any(g.bias, g.dtype, col);
  if (g.epilogue == GemmEpilogue::relu) out = ops::unary_forward<float>(ops::UnaryOp::relu, out, 0);
  if (g.epilogue == GemmEpilogue::gelu) out = ops::unary_forward<float>(ops::UnaryOp::gelu, out, 0);
  store_any(g.c, g.dtype, at, out);
}

// Exact (erf) GELU over C in place: cuBLASLt's GELU epilogue is the tanh approximation, and the
// CPU twin and autograd use the exact form.
__global__ void gelu_in_place_kernel(GemmArgs g) {
  REDLINE_GRID_STRIDE(at, g.batch * g.m * g.n) {
    const int64_t b = at / (g.m * g.n), i = (at / g.n) % g.m, j = at % g.n;
    const int64_t where = b * g.stride_c + i * g.ldc + j;
    store_any(g.c, g.dtype, where,
              ops::unary_forward<float>(ops::UnaryOp::gelu, load_any(g.c, g.dtype, where), 0));
  }
}

void gemm_tiled(const GemmArgs& g, cudaStream_t stream) {
  const dim3 threads(kTile, kTile);
  const dim3 blocks(static_cast<unsigned>((g.n + kTile - 1) / kTile),
                    static_cast<unsigned>((g.m + kTile - 1) / kTile),
                    static_cast<unsigned>(g.batch));
  gemm_tiled_kernel<<<blocks, threads, 0, stream>>>(g);
  GPU_CHECK_LAUNCH();
}

#if REDLINE_GEMM_CUBLASLT

#define CUBLAS_CHECK(call)                                                                         \
  do {                                                                                             \
    const cublasStatus_t redline_status_ = (call);                                                 \
    if (redline_status_ != CUBLAS_STATUS_SUCCESS) {                                                \
      throw ::redline::Error(::redline::format("cuBLASLt call {} failed with status {} ({}:{})",   \
                                               #call, static_cast<int>(redline_status_), __FILE__, \
                                               __LINE__));                                         \
    }                                                                                              \
  } while (0)

constexpr size_t kWorkspaceBytes = size_t{32} << 20;

// One cached plan: everything cublasLtMatmul needs but the pointers.
struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

using PlanKey = std::tuple<int, int, bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t,
                           int64_t, int64_t, int64_t, int64_t, int64_t, bool, uint32_t, bool>;

// The largest power of two (up to 256) dividing every pointer: the heuristic must only return
// algorithms that accept the operands' alignment (views and per-image pointers can be offset).
uint32_t common_alignment(const GemmArgs& g) {
  uintptr_t bits = reinterpret_cast<uintptr_t>(g.a) | reinterpret_cast<uintptr_t>(g.b) |
                   reinterpret_cast<uintptr_t>(g.c) | reinterpret_cast<uintptr_t>(g.bias);
  const size_t elem = dtype_size(g.dtype);
  bits |= static_cast<uintptr_t>(g.lda * elem) | static_cast<uintptr_t>(g.ldb * elem) |
          static_cast<uintptr_t>(g.ldc * elem);
  if (g.batch > 1) {
    bits |= static_cast<uintptr_t>(g.stride_a * elem) | static_cast<uintptr_t>(g.stride_b * elem) |
            static_cast<uintptr_t>(g.stride_c * elem);
  }
  uint32_t alignment = 256;
  while (alignment > 1 && (bits & (alignment - 1)) != 0) alignment /= 2;
  return alignment;
}

struct DeviceContext {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  std::map<PlanKey, Plan> plans;
};

std::mutex g_mutex;
std::map<int, DeviceContext> g_contexts;

cudaDataType_t cuda_type(DType t) {
  return t == DType::f32 ? CUDA_R_32F : (t == DType::bf16 ? CUDA_R_16BF : CUDA_R_16F);
}

cublasLtMatrixLayout_t make_layout(DType t, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                                   int64_t stride) {
  cublasLtMatrixLayout_t layout = nullptr;
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, cuda_type(t), static_cast<uint64_t>(rows),
                                          static_cast<uint64_t>(cols), ld));
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                  &count, sizeof(count)));
    CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
        layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  }
  return layout;
}

// Builds the plan for g (column-major view: C^T (n x m) = op(B)^T-side (n x k) @ op(A) (k x m)).
// Returns false when the heuristic finds no algorithm (the caller then uses the own kernel).
bool make_plan(DeviceContext& ctx, const GemmArgs& g, uint32_t alignment, Plan* plan) {
  const cublasComputeType_t compute =
      g.dtype == DType::f32 && g.allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan->desc, compute, CUDA_R_32F));
  const cublasOperation_t op_first = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;  // B plays "A"
  const cublasOperation_t op_second = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_first,
                                              sizeof(op_first)));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_second,
                                              sizeof(op_second)));
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  if (g.bias != nullptr) {
    epilogue =
        g.epilogue == GemmEpilogue::relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  } else if (g.epilogue == GemmEpilogue::relu) {
    epilogue = CUBLASLT_EPILOGUE_RELU;
  }  // gelu runs as a separate exact kernel (see gelu_in_place_kernel)
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                              sizeof(epilogue)));
  plan->a = g.trans_b ? make_layout(g.dtype, g.k, g.n, g.ldb, g.batch, g.stride_b)
                      : make_layout(g.dtype, g.n, g.k, g.ldb, g.batch, g.stride_b);
  plan->b = g.trans_a ? make_layout(g.dtype, g.m, g.k, g.lda, g.batch, g.stride_a)
                      : make_layout(g.dtype, g.k, g.m, g.lda, g.batch, g.stride_a);
  plan->c = make_layout(g.dtype, g.n, g.m, g.ldc, g.batch, g.stride_c);
  cublasLtMatmulPreference_t pref = nullptr;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t workspace = kWorkspaceBytes;
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &workspace, sizeof(workspace)));
  for (const auto attribute :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    CUBLAS_CHECK(
        cublasLtMatmulPreferenceSetAttribute(pref, attribute, &alignment, sizeof(alignment)));
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      ctx.handle, plan->desc, plan->a, plan->b, plan->c, plan->c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0) return false;
  plan->algo = result.algo;
  return true;
}

// Runs g through cuBLASLt; false when no algorithm fits (then the own kernel runs).
bool gemm_cublaslt(const GemmArgs& g, cudaStream_t stream) {
  int device = 0;
  GPU_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(g_mutex);
  DeviceContext& ctx = g_contexts[device];
  if (ctx.handle == nullptr) {
    CUBLAS_CHECK(cublasLtCreate(&ctx.handle));
    GPU_CHECK(cudaMalloc(&ctx.workspace, kWorkspaceBytes));
  }
  const uint32_t alignment = common_alignment(g);
  const PlanKey key{static_cast<int>(g.dtype),
                    static_cast<int>(g.epilogue),
                    g.trans_a,
                    g.trans_b,
                    g.m,
                    g.n,
                    g.k,
                    g.batch,
                    g.lda,
                    g.ldb,
                    g.ldc,
                    g.stride_a,
                    g.stride_b,
                    g.stride_c,
                    g.bias != nullptr,
                    alignment,
                    g.allow_tf32};
  auto it = ctx.plans.find(key);
  if (it == ctx.plans.end()) {
    Plan plan;
    if (!make_plan(ctx, g, alignment, &plan)) return false;
    it = ctx.plans.emplace(key, plan).first;
  }
  Plan& plan = it->second;
  if (g.bias != nullptr) {
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                &g.bias, sizeof(g.bias)));
  }
  const float alpha = g.alpha, beta = g.beta;
  CUBLAS_CHECK(cublasLtMatmul(ctx.handle, plan.desc, &alpha, g.b, plan.a, g.a, plan.b, &beta, g.c,
                              plan.c, g.c, plan.c, &plan.algo, ctx.workspace, kWorkspaceBytes,
                              stream));
  return true;
}

#endif  // REDLINE_GEMM_CUBLASLT

}  // namespace

void gemm(const GemmArgs& g, StreamHandle stream) {
  REDLINE_CHECK(g.dtype == DType::f32 || g.dtype == DType::bf16 || g.dtype == DType::f16,
                "GPU GEMM got {}; expected f32, bf16 or f16", dtype_name(g.dtype));
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  const cudaStream_t s = as_stream(stream);
  // A shared operand (batch stride 0) or k = 0 runs one product at a time / through the kernel.
  if (g.batch > 1 && (g.stride_a == 0 || g.stride_b == 0)) {
    const size_t elem = dtype_size(g.dtype);
    for (int64_t i = 0; i < g.batch; ++i) {
      GemmArgs one = g;
      one.batch = 1;
      one.a = static_cast<const char*>(g.a) + i * g.stride_a * elem;
      one.b = static_cast<const char*>(g.b) + i * g.stride_b * elem;
      one.c = static_cast<char*>(g.c) + i * g.stride_c * elem;
      gemm(one, stream);
    }
    return;
  }
#if REDLINE_GEMM_CUBLASLT
  if (g.epilogue == GemmEpilogue::gelu) {
    GemmArgs linear_part = g;
    linear_part.epilogue = GemmEpilogue::none;
    if (g.k > 0 && gemm_cublaslt(linear_part, s)) {
      gelu_in_place_kernel<<<op_blocks(g.batch * g.m * g.n), kOpThreads, 0, s>>>(g);
      GPU_CHECK_LAUNCH();
      return;
    }
  } else if (g.k > 0 && gemm_cublaslt(g, s)) {
    return;
  }
#endif
  gemm_tiled(g, s);
}

}  // namespace redline::gpu
