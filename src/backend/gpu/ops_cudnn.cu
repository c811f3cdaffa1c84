// conv2d through cuDNN (CUDA builds that found cuDNN): forward, backward data and backward filter,
// NCHW f32, groups = 1, through the legacy convolution API. The im2col + GEMM path
// (ops_conv.cu + ops_gemm.cu) stays the fallback and the HIP path.
//
// Algorithms are timed once per shape (cudnnFind*AlgorithmEx, like torch's cudnn.benchmark) and
// cached per device; the search synchronizes, so while the stream is being captured a shape not
// yet searched takes cuDNN's heuristic choice (cudnnGet*_v7) instead, uncached. The fastest
// algorithm wins unless ops::set_deterministic(true) asks for deterministic ones only, and f32
// stays f32 (CUDNN_FMA_MATH) unless ops::set_allow_tf32(true). Workspace comes from the caching
// allocator, so a captured graph keeps its blocks in its private pool.
#include "backend/gpu/ops_kernels.h"
#include "backend/gpu/ops_launch.h"

#if REDLINE_HAS_CUDNN && !REDLINE_HIP

#include <cudnn.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string_view>
#include <tuple>
#include <vector>

#include "redline/core/allocator.h"

#define CUDNN_CHECK(call)                                                                      \
  do {                                                                                         \
    const cudnnStatus_t redline_status_ = (call);                                              \
    if (redline_status_ != CUDNN_STATUS_SUCCESS) {                                             \
      throw ::redline::Error(                                                                  \
          ::redline::format("conv2d through cuDNN failed: {} returned {} "                     \
                            "({}:{})",                                                         \
                            #call, cudnnGetErrorString(redline_status_), __FILE__, __LINE__)); \
    }                                                                                          \
  } while (0)

namespace redline::gpu {
namespace {

using ops::ConvGeometry;

// Largest workspace an algorithm may use (and the one the search offers it).
constexpr size_t kMaxWorkspaceBytes = size_t{128} << 20;

enum class Pass { forward, backward_data, backward_filter };

// What the search or the heuristic chose for one shape.
struct Choice {
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace = 0;
};

// pass, geometry, tf32 allowed, deterministic only, common pointer alignment.
using ChoiceKey = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                             int, int, int, int, int, int, bool, bool, uint32_t>;

struct DeviceContext {
  cudnnHandle_t handle = nullptr;
  std::map<ChoiceKey, Choice> choices;
};

std::mutex g_mutex;
std::map<int, DeviceContext> g_contexts;

bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  GPU_CHECK(cudaStreamIsCapturing(stream, &status));
  return status != cudaStreamCaptureStatusNone;
}

// The largest power of two (up to 16) dividing every pointer: an algorithm timed on aligned
// buffers must not be replayed on offset views.
uint32_t common_alignment(const void* a, const void* b, const void* c) {
  const uintptr_t bits = reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) |
                         reinterpret_cast<uintptr_t>(c);
  uint32_t alignment = 16;
  while (alignment > 1 && (bits & (alignment - 1)) != 0) alignment /= 2;
  return alignment;
}

ChoiceKey choice_key(Pass pass, const ConvGeometry& g, CudnnPolicy policy, uint32_t alignment) {
  return {static_cast<int>(pass),
          g.n,
          g.c,
          g.h,
          g.w,
          g.o,
          g.kh,
          g.kw,
          g.stride_h,
          g.stride_w,
          g.pad_h,
          g.pad_w,
          g.dilation_h,
          g.dilation_w,
          policy.allow_tf32,
          policy.deterministic,
          alignment};
}

// One cuDNN descriptor, destroyed with the scope (each member of Descriptors below is complete
// before the next is made, so a throw part-way leaks nothing).
template <typename T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
struct Owned {
  T d = nullptr;
  Owned() { CUDNN_CHECK(Create(&d)); }
  ~Owned() { Destroy(d); }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  operator T() const { return d; }
};
using TensorDesc =
    Owned<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDesc =
    Owned<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvDesc = Owned<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                       cudnnDestroyConvolutionDescriptor>;

int as_int(int64_t v) { return static_cast<int>(v); }

// The descriptors of one call (host objects, cheap to make).
//   x: (N, C, H, W)   w: (O, C, KH, KW)   y: (N, O, OH, OW)   all f32, contiguous
struct Descriptors {
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;

  Descriptors(const ConvGeometry& g, bool allow_tf32) {
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, as_int(g.n),
                                           as_int(g.c), as_int(g.h), as_int(g.w)));
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, as_int(g.n),
                                           as_int(g.o), as_int(g.oh), as_int(g.ow)));
    CUDNN_CHECK(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, as_int(g.o),
                                           as_int(g.c), as_int(g.kh), as_int(g.kw)));
    CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv, g.pad_h, g.pad_w, g.stride_h, g.stride_w,
                                                g.dilation_h, g.dilation_w, CUDNN_CROSS_CORRELATION,
                                                CUDNN_DATA_FLOAT));
    // DEFAULT_MATH lets cuDNN use TF32 tensor cores on Ampere and later; FMA_MATH keeps f32
    // products f32 (the GEMM's policy: TF32 only after ops::set_allow_tf32(true)).
    CUDNN_CHECK(
        cudnnSetConvolutionMathType(conv, allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
    int n = 0, c = 0, h = 0, w_out = 0;
    CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(conv, x, w, &n, &c, &h, &w_out));
    REDLINE_CHECK(n == g.n && c == g.o && h == g.oh && w_out == g.ow,
                  "conv2d through cuDNN: cuDNN computes output ({}, {}, {}, {}) but redline "
                  "expects ({}, {}, {}, {})",
                  n, c, h, w_out, g.n, g.o, g.oh, g.ow);
  }
};

// Workspace from the caching allocator, returned when the scope ends: the block is reused only by
// later work on the same stream, so returning it right after the enqueue is safe.
class Workspace {
 public:
  // optional: when the memory is not there, an empty workspace instead of the error.
  Workspace(int device, size_t bytes, cudaStream_t stream, bool optional = false)
      : allocator_(allocator_for(Device::gpu(device))), bytes_(bytes) {
    if (bytes_ == 0) return;
    try {
      ptr_ = allocator_.allocate(bytes_, stream);
    } catch (const Error&) {
      if (!optional) throw;
      bytes_ = 0;
    }
  }
  ~Workspace() {
    if (ptr_ != nullptr) allocator_.deallocate(ptr_);
  }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  CachingAllocator& allocator_;
  size_t bytes_ = 0;
  void* ptr_ = nullptr;
};

// The fastest usable result of a search (sorted fastest first) or a heuristic (sorted by expected
// speed): succeeded, within the workspace limit, no TF32 unless allowed, deterministic if asked.
// REDLINE_CUDNN_LOG=1 in the environment: every search's ranked results go to stderr.
bool log_searches() {
  static const bool on = [] {
    const char* value = std::getenv("REDLINE_CUDNN_LOG");
    return value != nullptr && *value != '\0' && std::string_view(value) != "0";
  }();
  return on;
}

template <typename Perf>
void log_search(const char* pass, const ConvGeometry& g, const Perf* perfs, int count) {
  std::fprintf(
      stderr,
      "cuDNN search, %s, input (%lld, %lld, %lld, %lld), weight (%lld, %lld, %lld, %lld):\n", pass,
      static_cast<long long>(g.n), static_cast<long long>(g.c), static_cast<long long>(g.h),
      static_cast<long long>(g.w), static_cast<long long>(g.o), static_cast<long long>(g.c),
      static_cast<long long>(g.kh), static_cast<long long>(g.kw));
  for (int i = 0; i < count; ++i) {
    const Perf& p = perfs[i];
    std::fprintf(stderr, "  algo %d: status %d, %.4f ms, %zu bytes, %s, math %d\n",
                 static_cast<int>(p.algo), static_cast<int>(p.status), static_cast<double>(p.time),
                 p.memory,
                 p.determinism == CUDNN_DETERMINISTIC ? "deterministic" : "non-deterministic",
                 static_cast<int>(p.mathType));
  }
}

template <typename Perf>
bool pick(const Perf* perfs, int count, CudnnPolicy policy, Choice* choice) {
  for (int i = 0; i < count; ++i) {
    const Perf& p = perfs[i];
    if (p.status != CUDNN_STATUS_SUCCESS || p.memory > kMaxWorkspaceBytes) continue;
    const bool tensor_op =
        p.mathType == CUDNN_TENSOR_OP_MATH || p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    if (!policy.allow_tf32 && tensor_op) continue;
    if (policy.deterministic && p.determinism != CUDNN_DETERMINISTIC) continue;
    // Without TF32 the algorithm runs under FMA_MATH, the mode it was searched under.
    *choice =
        Choice{static_cast<int>(p.algo), policy.allow_tf32 ? p.mathType : CUDNN_FMA_MATH, p.memory};
    return true;
  }
  return false;
}

const char* pass_name(Pass pass) {
  switch (pass) {
    case Pass::forward:
      return "forward";
    case Pass::backward_data:
      return "backward data";
    case Pass::backward_filter:
      return "backward filter";
  }
  return "?";
}

// One search times each algorithm once, and its figures are noisy: in one search, conv1's (batch
// 128, 8x8, stride 4) backward-data algorithms 0 and 1 took 0.1567 and 0.1574 ms, and 0 was
// picked, but they run at 0.132 and 0.090 ms. So the search runs kSearchRounds times, and each
// algorithm keeps its best time of the rounds.
constexpr int kSearchRounds = 3;

template <typename Perf, typename Search>
void search_rounds(Perf* perfs, int capacity, int* count, Search search) {
  search(perfs, count);
  std::vector<Perf> again(static_cast<size_t>(capacity));
  for (int round = 1; round < kSearchRounds; ++round) {
    int n = 0;
    search(again.data(), &n);
    for (int k = 0; k < n; ++k) {
      const Perf& a = again[static_cast<size_t>(k)];
      if (a.status != CUDNN_STATUS_SUCCESS) continue;
      for (int i = 0; i < *count; ++i) {
        Perf& p = perfs[i];
        if (p.algo != a.algo || p.mathType != a.mathType) continue;
        if (p.status != CUDNN_STATUS_SUCCESS || a.time < p.time) p = a;
      }
    }
  }
  std::stable_sort(perfs, perfs + *count, [](const Perf& a, const Perf& b) {
    const bool a_ok = a.status == CUDNN_STATUS_SUCCESS, b_ok = b.status == CUDNN_STATUS_SUCCESS;
    if (a_ok != b_ok) return a_ok;
    return a_ok && a.time < b.time;
  });
}

// Searches (or, under capture, asks the heuristic) for pass on these buffers. The search runs the
// convolution and overwrites the output buffer, which the caller then writes again.
Choice choose(DeviceContext& ctx, int device, Pass pass, const Descriptors& d,
              const ConvGeometry& g, CudnnPolicy policy, const void* x, const void* w,
              const void* y, cudaStream_t stream, bool under_capture) {
  Choice choice;
  bool found = false;
  if (pass == Pass::forward) {
    cudnnConvolutionFwdAlgoPerf_t perfs[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int count = 0;
    if (under_capture) {
      CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
          ctx.handle, d.x, d.w, d.conv, d.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perfs));
    } else {
      Workspace ws(device, kMaxWorkspaceBytes, stream, /*optional=*/true);
      search_rounds(perfs, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, [&](auto* out, int* n) {
        CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
            ctx.handle, d.x, x, d.w, w, d.conv, d.y, const_cast<void*>(y),
            CUDNN_CONVOLUTION_FWD_ALGO_COUNT, n, out, ws.get(), ws.bytes()));
      });
    }
    if (log_searches()) log_search(pass_name(pass), g, perfs, count);
    found = pick(perfs, count, policy, &choice);
  } else if (pass == Pass::backward_data) {
    cudnnConvolutionBwdDataAlgoPerf_t perfs[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int count = 0;
    if (under_capture) {
      CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
          ctx.handle, d.w, d.y, d.conv, d.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, perfs));
    } else {
      Workspace ws(device, kMaxWorkspaceBytes, stream, /*optional=*/true);
      search_rounds(perfs, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, [&](auto* out, int* n) {
        CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
            ctx.handle, d.w, w, d.y, y, d.conv, d.x, const_cast<void*>(x),
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, n, out, ws.get(), ws.bytes()));
      });
    }
    if (log_searches()) log_search(pass_name(pass), g, perfs, count);
    found = pick(perfs, count, policy, &choice);
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t perfs[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int count = 0;
    if (under_capture) {
      CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
          ctx.handle, d.x, d.y, d.conv, d.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count,
          perfs));
    } else {
      Workspace ws(device, kMaxWorkspaceBytes, stream, /*optional=*/true);
      search_rounds(perfs, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, [&](auto* out, int* n) {
        CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
            ctx.handle, d.x, x, d.y, y, d.conv, d.w, const_cast<void*>(w),
            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, n, out, ws.get(), ws.bytes()));
      });
    }
    if (log_searches()) log_search(pass_name(pass), g, perfs, count);
    found = pick(perfs, count, policy, &choice);
  }
  if (found && log_searches()) {
    std::fprintf(stderr, "  picked algo %d (%s)\n", choice.algo,
                 under_capture ? "heuristic, under capture" : "search");
  }
  REDLINE_CHECK(
      found,
      "conv2d through cuDNN: no {} algorithm fits input ({}, {}, {}, {}), weight ({}, "
      "{}, {}, {}) within {} MiB of workspace{}{}",
      pass_name(pass), g.n, g.c, g.h, g.w, g.o, g.c, g.kh, g.kw, kMaxWorkspaceBytes >> 20,
      policy.allow_tf32 ? "" : " without TF32",
      policy.deterministic ? " among the deterministic ones (ops::set_deterministic)" : "");
  return choice;
}

// The handle of the current device, bound to stream, with the lock held by the caller.
DeviceContext& context(int device, cudaStream_t stream) {
  DeviceContext& ctx = g_contexts[device];
  if (ctx.handle == nullptr) CUDNN_CHECK(cudnnCreate(&ctx.handle));
  CUDNN_CHECK(cudnnSetStream(ctx.handle, stream));
  return ctx;
}

// Runs one pass: x, w, y are the three buffers (the pass writes one of them); bias (O,) or null
// is added to y after the forward pass.
void run(Pass pass, const float* x, const float* w, const float* y, const float* bias,
         const ConvGeometry& g, CudnnPolicy policy, StreamHandle stream_handle) {
  const cudaStream_t stream = as_stream(stream_handle);
  int device = 0;
  GPU_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(g_mutex);
  DeviceContext& ctx = context(device, stream);
  const Descriptors d(g, policy.allow_tf32);
  const ChoiceKey key = choice_key(pass, g, policy, common_alignment(x, w, y));
  auto it = ctx.choices.find(key);
  Choice choice;
  if (it != ctx.choices.end()) {
    choice = it->second;
  } else {
    const bool under_capture = capturing(stream);
    choice = choose(ctx, device, pass, d, g, policy, x, w, y, stream, under_capture);
    if (!under_capture) ctx.choices[key] = choice;  // a heuristic pick is not the search's
  }
  CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv, choice.math));
  const Workspace ws(device, choice.workspace, stream);
  const float one = 1.0f, zero = 0.0f;
  switch (pass) {
    case Pass::forward:
      CUDNN_CHECK(cudnnConvolutionForward(ctx.handle, &one, d.x, x, d.w, w, d.conv,
                                          static_cast<cudnnConvolutionFwdAlgo_t>(choice.algo),
                                          ws.get(), ws.bytes(), &zero, d.y, const_cast<float*>(y)));
      if (bias != nullptr) {
        TensorDesc bias_desc;
        CUDNN_CHECK(cudnnSetTensor4dDescriptor(bias_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1,
                                               as_int(g.o), 1, 1));
        CUDNN_CHECK(
            cudnnAddTensor(ctx.handle, &one, bias_desc, bias, &one, d.y, const_cast<float*>(y)));
      }
      break;
    case Pass::backward_data:
      CUDNN_CHECK(
          cudnnConvolutionBackwardData(ctx.handle, &one, d.w, w, d.y, y, d.conv,
                                       static_cast<cudnnConvolutionBwdDataAlgo_t>(choice.algo),
                                       ws.get(), ws.bytes(), &zero, d.x, const_cast<float*>(x)));
      break;
    case Pass::backward_filter:
      CUDNN_CHECK(
          cudnnConvolutionBackwardFilter(ctx.handle, &one, d.x, x, d.y, y, d.conv,
                                         static_cast<cudnnConvolutionBwdFilterAlgo_t>(choice.algo),
                                         ws.get(), ws.bytes(), &zero, d.w, const_cast<float*>(w)));
      break;
  }
}

}  // namespace

bool cudnn_conv2d_usable(const ConvGeometry& g, StreamHandle stream) {
  if (g.n <= 0 || g.c <= 0 || g.o <= 0) return false;  // empty tensors: cuDNN refuses zero sizes
  // 4-d descriptors take int sizes and strides: every tensor must index within INT_MAX.
  const int64_t largest =
      std::max({g.n * g.c * g.h * g.w, g.n * g.o * g.oh * g.ow, g.o * g.c * g.kh * g.kw});
  if (largest > INT_MAX) return false;
  int device = 0;
  GPU_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(g_mutex);
  // Creating the handle is not a stream operation and may synchronize: never inside a capture.
  return g_contexts[device].handle != nullptr || !capturing(as_stream(stream));
}

void cudnn_conv2d(const float* x, const float* w, const float* bias, float* y,
                  const ConvGeometry& g, CudnnPolicy policy, StreamHandle stream) {
  run(Pass::forward, x, w, y, bias, g, policy, stream);
}

void cudnn_conv2d_backward_data(const float* w, const float* dy, float* dx, const ConvGeometry& g,
                                CudnnPolicy policy, StreamHandle stream) {
  run(Pass::backward_data, dx, w, dy, nullptr, g, policy, stream);
}

void cudnn_conv2d_backward_filter(const float* x, const float* dy, float* dw, const ConvGeometry& g,
                                  CudnnPolicy policy, StreamHandle stream) {
  run(Pass::backward_filter, x, dw, dy, nullptr, g, policy, stream);
}

}  // namespace redline::gpu

#endif  // REDLINE_HAS_CUDNN && !REDLINE_HIP
