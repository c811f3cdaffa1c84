// `redline doctor`'s smoke tests on one GPU: a 1024^3 matmul checked against the CPU, GEMM
// TFLOP/s (cuBLASLt on CUDA for f32/tf32/bf16; redline's own tiled kernel everywhere) and copy
// bandwidth (host<->device pinned and pageable, device->device). CPU-only twin:
// src/backend/no_gpu_probe.cpp.
//
// Timing method (the same in bench/peer_doctor.py): warm-up runs, then each repeat bracketed by
// events on one stream; the figure is the median repeat.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "backend/gpu_probe.h"
#include "vendor/gpu.h"

#if !REDLINE_HIP && defined(REDLINE_HAS_CUBLASLT)
#include <cublasLt.h>
#define REDLINE_SMOKE_CUBLASLT 1
#else
#define REDLINE_SMOKE_CUBLASLT 0
#endif

namespace redline::gpu {
namespace {

// ---- kernels ------------------------------------------------------------------------------------

// Deterministic values in [-1, 1) from the index (a 32-bit integer hash), so the CPU can rebuild
// the same inputs.
__host__ __device__ inline float hashed_value(uint64_t i, uint32_t seed) {
  uint32_t x = static_cast<uint32_t>(i) * 0x9E3779B1u ^ static_cast<uint32_t>(i >> 32) ^ seed;
  x ^= x >> 16;
  x *= 0x85EBCA6Bu;
  x ^= x >> 13;
  x *= 0xC2B2AE35u;
  x ^= x >> 16;
  return static_cast<float>(x >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

// bf16 as raw bits (round to nearest even), so the same code builds with nvcc and hipcc.
__host__ __device__ inline uint16_t to_bf16(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

__device__ inline float load_as_float(const float* p, int64_t i) { return p[i]; }
__device__ inline float load_as_float(const uint16_t* p, int64_t i) {
  return __uint_as_float(static_cast<uint32_t>(p[i]) << 16);
}

__global__ void fill_f32_kernel(float* dst, int64_t n, uint32_t seed) {  // dst: (n,)
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    dst[i] = hashed_value(i, seed);
  }
}

__global__ void fill_bf16_kernel(uint16_t* dst, int64_t n, uint32_t seed) {  // dst: (n,)
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    dst[i] = to_bf16(hashed_value(i, seed));
  }
}

// C = A B, row-major, f32 accumulation. A: (M, K) T, B: (K, N) T, C: (M, N) f32.
// A 64x64 tile per block of 16x16 threads, each thread 4x4 outputs strided by 16 (so neighbouring
// threads read neighbouring shared-memory words). Plain and portable: the reference engine, not
// the fast one.
constexpr int kTile = 64;
constexpr int kTileK = 16;
constexpr int kThreadsXY = 16;

template <typename T>
__global__ void tiled_matmul_kernel(const T* a, const T* b, float* c, int m, int n, int k) {
  __shared__ float a_tile[kTileK][kTile];  // transposed: a_tile[kk][row]
  __shared__ float b_tile[kTileK][kTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * kThreadsXY + tx;
  const int row0 = blockIdx.y * kTile, col0 = blockIdx.x * kTile;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < k; k0 += kTileK) {
    for (int e = tid; e < kTile * kTileK; e += kThreadsXY * kThreadsXY) {
      const int r = e / kTileK, kk = e % kTileK;  // A tile: 64 rows x 16
      const int gr = row0 + r, gk = k0 + kk;
      a_tile[kk][r] = (gr < m && gk < k) ? load_as_float(a, int64_t{gr} * k + gk) : 0.0f;
      const int kb = e / kTile, cc = e % kTile;  // B tile: 16 x 64 columns
      const int gkb = k0 + kb, gc = col0 + cc;
      b_tile[kb][cc] = (gkb < k && gc < n) ? load_as_float(b, int64_t{gkb} * n + gc) : 0.0f;
    }
    __syncthreads();
    for (int kk = 0; kk < kTileK; ++kk) {
      float av[4], bv[4];
      for (int i = 0; i < 4; ++i) av[i] = a_tile[kk][ty + i * kThreadsXY];
      for (int j = 0; j < 4; ++j) bv[j] = b_tile[kk][tx + j * kThreadsXY];
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
      }
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      const int r = row0 + ty + i * kThreadsXY, col = col0 + tx + j * kThreadsXY;
      if (r < m && col < n) c[int64_t{r} * n + col] = acc[i][j];
    }
  }
}

// ---- resources that free themselves -------------------------------------------------------------

struct DeviceBuffer {
  void* ptr = nullptr;
  explicit DeviceBuffer(size_t bytes) { GPU_CHECK(cudaMalloc(&ptr, bytes)); }
  ~DeviceBuffer() { (void)cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr);
  }
};

struct PinnedBuffer {
  void* ptr = nullptr;
  explicit PinnedBuffer(size_t bytes) { GPU_CHECK(cudaMallocHost(&ptr, bytes)); }
  ~PinnedBuffer() { (void)cudaFreeHost(ptr); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
};

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { GPU_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~Stream() { (void)cudaStreamDestroy(s); }
};

struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  EventPair() {
    GPU_CHECK(cudaEventCreateWithFlags(&start, cudaEventDefault));
    GPU_CHECK(cudaEventCreateWithFlags(&stop, cudaEventDefault));
  }
  ~EventPair() {
    (void)cudaEventDestroy(start);
    (void)cudaEventDestroy(stop);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n == 0 ? -1 : (n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]));
}

// Runs `enqueue` warmup times, then `repeats` times between events, all queued back to back
// (so a host->device copy keeps the link busy); `while_running` is called until the stream drains.
// Returns the median milliseconds.
template <typename Enqueue, typename WhileRunning>
double time_median_ms(cudaStream_t stream, int warmup, int repeats, Enqueue enqueue,
                      WhileRunning while_running) {
  for (int i = 0; i < warmup; ++i) enqueue();
  GPU_CHECK(cudaStreamSynchronize(stream));
  std::vector<std::unique_ptr<EventPair>> events;
  for (int i = 0; i < repeats; ++i) {
    events.push_back(std::make_unique<EventPair>());
    GPU_CHECK(cudaEventRecord(events.back()->start, stream));
    enqueue();
    GPU_CHECK(cudaEventRecord(events.back()->stop, stream));
  }
  while (cudaEventQuery(events.back()->stop) == cudaErrorNotReady) while_running();
  GPU_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> ms;
  for (const auto& e : events) {
    float t = 0;
    GPU_CHECK(cudaEventElapsedTime(&t, e->start, e->stop));
    ms.push_back(t);
  }
  return median(ms);
}

template <typename Enqueue>
double time_median_ms(cudaStream_t stream, int warmup, int repeats, Enqueue enqueue) {
  return time_median_ms(stream, warmup, repeats, enqueue, [] { std::this_thread::yield(); });
}

int grid_for(int64_t n) { return static_cast<int>(std::min<int64_t>((n + 255) / 256, 65535 * 8)); }

void fill_f32(float* dst, int64_t n, uint32_t seed, cudaStream_t stream) {
  fill_f32_kernel<<<grid_for(n), 256, 0, stream>>>(dst, n, seed);
  GPU_CHECK_LAUNCH();
}

void fill_bf16(uint16_t* dst, int64_t n, uint32_t seed, cudaStream_t stream) {
  fill_bf16_kernel<<<grid_for(n), 256, 0, stream>>>(dst, n, seed);
  GPU_CHECK_LAUNCH();
}

template <typename T>
void launch_tiled(const T* a, const T* b, float* c, int m, int n, int k, cudaStream_t stream) {
  const dim3 block(kThreadsXY, kThreadsXY);
  const dim3 grid((n + kTile - 1) / kTile, (m + kTile - 1) / kTile);
  tiled_matmul_kernel<T><<<grid, block, 0, stream>>>(a, b, c, m, n, k);
  GPU_CHECK_LAUNCH();
}

// ---- cuBLASLt -----------------------------------------------------------------------------------

#if REDLINE_SMOKE_CUBLASLT
#define LT_CHECK(call)                                                                          \
  do {                                                                                          \
    const cublasStatus_t lt_status_ = (call);                                                   \
    if (lt_status_ != CUBLAS_STATUS_SUCCESS) {                                                  \
      throw ::redline::Error(::redline::format("cuBLASLt call {} failed with status {}", #call, \
                                               static_cast<int>(lt_status_)));                  \
    }                                                                                           \
  } while (0)

// A row-major C (M, N) = A (M, K) B (K, N) through cuBLASLt, which is column-major: it computes
// C^T = B^T A^T, i.e. (N, M) = (N, K) (K, M) with every operand used as stored.
class LtGemm {
 public:
  LtGemm(int64_t m, int64_t n, int64_t k, cudaDataType_t in_type, cudaDataType_t out_type,
         cublasComputeType_t compute, cudaStream_t stream)
      : stream_(stream), workspace_(kWorkspaceBytes) {
    LT_CHECK(cublasLtCreate(&handle_));
    LT_CHECK(cublasLtMatmulDescCreate(&op_, compute, CUDA_R_32F));
    LT_CHECK(cublasLtMatrixLayoutCreate(&b_layout_, in_type, n, k, n));   // B^T: (N, K), ld N
    LT_CHECK(cublasLtMatrixLayoutCreate(&a_layout_, in_type, k, m, k));   // A^T: (K, M), ld K
    LT_CHECK(cublasLtMatrixLayoutCreate(&c_layout_, out_type, n, m, n));  // C^T: (N, M), ld N
    LT_CHECK(cublasLtMatmulPreferenceCreate(&preference_));
    const size_t bytes = kWorkspaceBytes;
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(
        preference_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bytes, sizeof bytes));
    int found = 0;
    LT_CHECK(cublasLtMatmulAlgoGetHeuristic(handle_, op_, b_layout_, a_layout_, c_layout_,
                                            c_layout_, preference_, 1, &heuristic_, &found));
    if (found == 0) throw Error("cuBLASLt found no algorithm for this GEMM");
  }
  ~LtGemm() {
    (void)cublasLtMatmulPreferenceDestroy(preference_);
    (void)cublasLtMatrixLayoutDestroy(c_layout_);
    (void)cublasLtMatrixLayoutDestroy(a_layout_);
    (void)cublasLtMatrixLayoutDestroy(b_layout_);
    (void)cublasLtMatmulDescDestroy(op_);
    (void)cublasLtDestroy(handle_);
  }
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  void run(const void* a, const void* b, void* c) {
    const float alpha = 1.0f, beta = 0.0f;
    LT_CHECK(cublasLtMatmul(handle_, op_, &alpha, b, b_layout_, a, a_layout_, &beta, c, c_layout_,
                            c, c_layout_, &heuristic_.algo, workspace_.ptr, kWorkspaceBytes,
                            stream_));
  }

 private:
  static constexpr size_t kWorkspaceBytes = 32u << 20;  // what NVIDIA recommends for Hopper
  cudaStream_t stream_;
  DeviceBuffer workspace_;
  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_layout_ = nullptr, b_layout_ = nullptr, c_layout_ = nullptr;
  cublasLtMatmulPreference_t preference_ = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic_{};
};
#endif

// ---- the tests ----------------------------------------------------------------------------------

// CPU reference of the check: row-major C = A B with double accumulation, rows split over threads.
std::vector<double> cpu_matmul(const std::vector<float>& a, const std::vector<float>& b, int n,
                               std::vector<double>* magnitude) {
  std::vector<double> c(size_t(n) * n, 0.0);
  magnitude->assign(size_t(n) * n, 0.0);
  const int threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int i = t; i < n; i += threads) {
        double* row = &c[size_t(i) * n];
        double* mag = &(*magnitude)[size_t(i) * n];
        for (int kk = 0; kk < n; ++kk) {
          const double av = a[size_t(i) * n + kk];
          const float* brow = &b[size_t(kk) * n];
          for (int j = 0; j < n; ++j) {
            row[j] += av * brow[j];
            mag[j] += std::fabs(av * brow[j]);
          }
        }
      }
    });
  }
  for (std::thread& th : pool) th.join();
  return c;
}

MatmulCheck compare(const std::string& engine, int n, const std::vector<float>& gpu,
                    const std::vector<double>& ref, const std::vector<double>& magnitude) {
  MatmulCheck check;
  check.engine = engine;
  check.dtype = "f32";
  check.size = n;
  // f32 accumulation over n = 1024 terms of [-1, 1) products errs ~1e-7 of the magnitude; tf32
  // (10-bit mantissa) ~1e-5, so 1e-5 also catches a library silently using tf32.
  check.tolerance = 1e-5;
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double err = std::fabs(gpu[i] - ref[i]) / std::max(magnitude[i], 1e-30);
    if (!(err <= worst)) worst = err;  // NaN propagates as the worst
  }
  check.max_error = worst;
  check.passed = worst <= check.tolerance;
  return check;
}

void run_checks(int n, cudaStream_t stream, SmokeReport* report) {
  const size_t count = size_t(n) * n;
  std::vector<float> a(count), b(count);
  for (size_t i = 0; i < count; ++i) {
    a[i] = hashed_value(i, 1);
    b[i] = hashed_value(i, 2);
  }
  DeviceBuffer da(count * 4), db(count * 4), dc(count * 4);
  fill_f32(da.as<float>(), count, 1, stream);
  fill_f32(db.as<float>(), count, 2, stream);
  std::vector<double> magnitude;
  const std::vector<double> ref = cpu_matmul(a, b, n, &magnitude);
  std::vector<float> out(count);

  launch_tiled(da.as<float>(), db.as<float>(), dc.as<float>(), n, n, n, stream);
  GPU_CHECK(cudaMemcpyAsync(out.data(), dc.ptr, count * 4, cudaMemcpyDeviceToHost, stream));
  GPU_CHECK(cudaStreamSynchronize(stream));
  report->checks.push_back(compare("own tiled kernel", n, out, ref, magnitude));
#if REDLINE_SMOKE_CUBLASLT
  try {
    LtGemm gemm(n, n, n, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, stream);
    GPU_CHECK(cudaMemsetAsync(dc.ptr, 0, count * 4, stream));
    gemm.run(da.ptr, db.ptr, dc.ptr);
    GPU_CHECK(cudaMemcpyAsync(out.data(), dc.ptr, count * 4, cudaMemcpyDeviceToHost, stream));
    GPU_CHECK(cudaStreamSynchronize(stream));
    report->checks.push_back(compare("cuBLASLt", n, out, ref, magnitude));
  } catch (const std::exception& e) {
    MatmulCheck failed;
    failed.engine = "cuBLASLt";
    failed.dtype = "f32";
    failed.size = n;
    failed.error = e.what();
    report->checks.push_back(failed);
  }
#endif
}

GemmResult gemm_result(const char* dtype, const char* engine, int64_t n, double ms) {
  GemmResult r;
  r.dtype = dtype;
  r.engine = engine;
  r.size = n;
  r.median_ms = ms;
  r.tflops = 2.0 * double(n) * n * n / (ms * 1e-3) / 1e12;
  return r;
}

void run_gemms(int64_t n, const SmokeOptions& o, cudaStream_t stream, SmokeReport* report) {
  const size_t count = size_t(n) * n;
  DeviceBuffer a(count * 4), b(count * 4), c(count * 4);
  fill_f32(a.as<float>(), count, 3, stream);
  fill_f32(b.as<float>(), count, 4, stream);
  GPU_CHECK(cudaStreamSynchronize(stream));
  const int m = static_cast<int>(n);
#if REDLINE_SMOKE_CUBLASLT
  struct Case {
    const char* dtype;
    cublasComputeType_t compute;
  };
  for (const Case& cs :
       {Case{"f32", CUBLAS_COMPUTE_32F}, Case{"tf32", CUBLAS_COMPUTE_32F_FAST_TF32}}) {
    try {
      LtGemm gemm(n, n, n, CUDA_R_32F, CUDA_R_32F, cs.compute, stream);
      const double ms =
          time_median_ms(stream, o.warmup, o.repeats, [&] { gemm.run(a.ptr, b.ptr, c.ptr); });
      report->gemms.push_back(gemm_result(cs.dtype, "cuBLASLt", n, ms));
    } catch (const std::exception& e) {
      GemmResult r = gemm_result(cs.dtype, "cuBLASLt", n, -1);
      r.tflops = -1;
      r.skipped = e.what();
      report->gemms.push_back(r);
    }
  }
  try {
    // bf16 in and out, f32 accumulation: what torch.matmul does with bf16 tensors. The bf16
    // operands reuse the first halves of the f32 buffers.
    fill_bf16(a.as<uint16_t>(), count, 3, stream);
    fill_bf16(b.as<uint16_t>(), count, 4, stream);
    LtGemm gemm(n, n, n, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, stream);
    const double ms =
        time_median_ms(stream, o.warmup, o.repeats, [&] { gemm.run(a.ptr, b.ptr, c.ptr); });
    report->gemms.push_back(gemm_result("bf16", "cuBLASLt", n, ms));
  } catch (const std::exception& e) {
    GemmResult r = gemm_result("bf16", "cuBLASLt", n, -1);
    r.tflops = -1;
    r.skipped = e.what();
    report->gemms.push_back(r);
  }
  fill_f32(a.as<float>(), count, 3, stream);
  fill_f32(b.as<float>(), count, 4, stream);
#else
  for (const char* dtype : {"f32", "tf32", "bf16"}) {
    GemmResult r = gemm_result(dtype, REDLINE_HIP ? "hipBLASLt" : "cuBLASLt", n, -1);
    r.tflops = -1;
    r.skipped = REDLINE_HIP ? "the vendor GEMM library is not used by this build's smoke test yet"
                            : "this build was made without cuBLASLt";
    report->gemms.push_back(r);
  }
#endif
  // The portable reference kernel (f32, and bf16 inputs with f32 accumulation).
  const double f32_ms = time_median_ms(stream, 1, std::max(3, o.repeats / 2), [&] {
    launch_tiled(a.as<float>(), b.as<float>(), c.as<float>(), m, m, m, stream);
  });
  report->gemms.push_back(gemm_result("f32", "own tiled kernel", n, f32_ms));
  fill_bf16(a.as<uint16_t>(), count, 3, stream);
  fill_bf16(b.as<uint16_t>(), count, 4, stream);
  const double bf16_ms = time_median_ms(stream, 1, std::max(3, o.repeats / 2), [&] {
    launch_tiled(a.as<uint16_t>(), b.as<uint16_t>(), c.as<float>(), m, m, m, stream);
  });
  report->gemms.push_back(gemm_result("bf16", "own tiled kernel", n, bf16_ms));
}

CopyResult copy_result(const char* kind, uint64_t bytes, double ms) {
  CopyResult r;
  r.kind = kind;
  r.bytes = bytes;
  r.median_ms = ms;
  r.gbps = double(bytes) / (ms * 1e-3) / 1e9;
  return r;
}

void run_copies(uint64_t bytes, const SmokeOptions& o, cudaStream_t stream, SmokeReport* report) {
  DeviceBuffer src(bytes), dst(bytes);
  PinnedBuffer pinned(bytes);
  std::vector<char> pageable(bytes);
  std::memset(pinned.ptr, 1, bytes);  // touch every page before timing
  std::memset(pageable.data(), 1, bytes);
  GPU_CHECK(cudaMemsetAsync(src.ptr, 2, bytes, stream));

  // Host->device pinned first, reading the PCIe link while the copies keep it busy (GPUs lower
  // the link speed when idle, so a reading at rest understates it).
  PcieLink under_load;
  const auto read_link = [&] {
    if (!o.pci_bus_id.empty()) {
      PcieLink now = read_pcie_sysfs(o.pci_bus_id);
      if (!now.known()) now = read_telemetry(o.vendor, o.pci_bus_id).pcie;
      if (now.known() && (!under_load.known() || now.current_gen > under_load.current_gen ||
                          now.current_width > under_load.current_width)) {
        under_load = now;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  };
  const auto copy = [&](void* to, const void* from, cudaMemcpyKind kind) {
    return [=] { GPU_CHECK(cudaMemcpyAsync(to, from, bytes, kind, stream)); };
  };
  report->copies.push_back(
      copy_result("host_to_device_pinned", bytes,
                  time_median_ms(stream, o.warmup, o.repeats,
                                 copy(dst.ptr, pinned.ptr, cudaMemcpyHostToDevice), read_link)));
  report->pcie_under_load = under_load;
  report->copies.push_back(
      copy_result("host_to_device_pageable", bytes,
                  time_median_ms(stream, o.warmup, o.repeats,
                                 copy(dst.ptr, pageable.data(), cudaMemcpyHostToDevice))));
  report->copies.push_back(
      copy_result("device_to_host_pinned", bytes,
                  time_median_ms(stream, o.warmup, o.repeats,
                                 copy(pinned.ptr, src.ptr, cudaMemcpyDeviceToHost))));
  report->copies.push_back(
      copy_result("device_to_host_pageable", bytes,
                  time_median_ms(stream, o.warmup, o.repeats,
                                 copy(pageable.data(), src.ptr, cudaMemcpyDeviceToHost))));
  report->copies.push_back(
      copy_result("device_to_device", bytes,
                  time_median_ms(stream, o.warmup, o.repeats,
                                 copy(dst.ptr, src.ptr, cudaMemcpyDeviceToDevice))));
}

}  // namespace

SmokeReport run_smoke(int index, const SmokeOptions& options) {
  SmokeReport report;
  report.device = index;
  const auto started = std::chrono::steady_clock::now();
  int previous = 0;
  (void)cudaGetDevice(&previous);
  try {
    GPU_CHECK(cudaSetDevice(index));
    Stream stream;
    run_checks(static_cast<int>(options.check_size), stream.s, &report);

    // Fit the GEMM (three f32 n x n matrices plus a workspace) and the copies (two device buffers)
    // into half of the free memory.
    size_t free_bytes = 0, total_bytes = 0;
    GPU_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    int64_t n = options.gemm_size;
    while (n > 1024 && 3 * size_t(n) * n * 4 + (64u << 20) > free_bytes / 2) n /= 2;
    run_gemms(n, options, stream.s, &report);

    uint64_t bytes = options.copy_bytes;
    while (bytes > (16u << 20) && 2 * bytes > free_bytes / 2) bytes /= 2;
    run_copies(bytes, options, stream.s, &report);
  } catch (const std::exception& e) {
    report.error = e.what();
    (void)cudaGetLastError();
  }
  (void)cudaSetDevice(previous);
  report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

}  // namespace redline::gpu
