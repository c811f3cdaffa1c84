// Launch floor of the GPU: microseconds per kernel for chains of tiny kernels captured in one graph
// and replayed, the floor under every one-block kernel redline launches (the replay memory's sample
// and update above all). Rows: an empty kernel (1 block of 32 threads, then 16 blocks of 128); a
// one-block kernel that reads and writes one global value, launched plainly and, on sm_90, as a
// chained launch (programmatic dependent launch); one block of 512 threads doing 1, 4 and 7 rounds
// of read, barrier, write, barrier (the shape of a tree update's levels).
// Method: 400 kernels per graph, one warm-up replay, then the median of 7 event-timed replays.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "vendor/gpu.h"

namespace {

constexpr int kKernels = 400;

__device__ inline void chained_prologue() {
#if !REDLINE_HIP && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__global__ void empty_kernel() {}

__global__ void touch_kernel(double* p) {
  chained_prologue();
  if (threadIdx.x == 0) p[0] = p[0] + 1.0;
}

__global__ void rounds_kernel(double* p, int rounds) {
  chained_prologue();
  for (int r = 0; r < rounds; ++r) {
    const double v = p[threadIdx.x + 1024 * r];
    __syncthreads();
    p[threadIdx.x + 1024 * (r + 1)] = v + 1.0;
    __syncthreads();
  }
}

// Median microseconds per kernel of a graph holding kKernels launches made by launch(stream).
template <typename Launch>
double per_kernel_us(Launch launch) {
  cudaStream_t s;
  GPU_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  GPU_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  for (int i = 0; i < kKernels; ++i) launch(s);
  GPU_CHECK(cudaStreamEndCapture(s, &graph));
  GPU_CHECK(cudaGraphInstantiateWithFlags(&exec, graph, 0));
  GPU_CHECK(cudaGraphLaunch(exec, s));
  GPU_CHECK(cudaStreamSynchronize(s));
  std::vector<double> us;
  for (int r = 0; r < 7; ++r) {
    cudaEvent_t a, b;
    GPU_CHECK(cudaEventCreateWithFlags(&a, cudaEventDefault));
    GPU_CHECK(cudaEventCreateWithFlags(&b, cudaEventDefault));
    GPU_CHECK(cudaEventRecord(a, s));
    GPU_CHECK(cudaGraphLaunch(exec, s));
    GPU_CHECK(cudaEventRecord(b, s));
    GPU_CHECK(cudaEventSynchronize(b));
    float ms = 0.0f;
    GPU_CHECK(cudaEventElapsedTime(&ms, a, b));
    us.push_back(ms * 1000.0 / kKernels);
    GPU_CHECK(cudaEventDestroy(a));
    GPU_CHECK(cudaEventDestroy(b));
  }
  GPU_CHECK(cudaGraphExecDestroy(exec));
  GPU_CHECK(cudaGraphDestroy(graph));
  GPU_CHECK(cudaStreamDestroy(s));
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

#if !REDLINE_HIP
void launch_chained_touch(cudaStream_t s, double* p) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(1);
  config.blockDim = dim3(512);
  config.stream = s;
  config.attrs = &attribute;
  config.numAttrs = 1;
  GPU_CHECK(cudaLaunchKernelEx(&config, touch_kernel, p));
}
#endif

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("launch_floor: no GPU, nothing to measure\n");
    return 0;
  }
  double* p = nullptr;
  GPU_CHECK(cudaMalloc(reinterpret_cast<void**>(&p), 8 * 1024 * 8 * sizeof(double)));
  GPU_CHECK(cudaMemset(p, 0, 8 * 1024 * 8 * sizeof(double)));
  std::printf("| kernel in a graph of %d | us per kernel |\n| --- | ---: |\n", kKernels);
  std::printf("| empty, 1 x 32 threads | %.3f |\n",
              per_kernel_us([](cudaStream_t s) { empty_kernel<<<1, 32, 0, s>>>(); }));
  std::printf("| empty, 16 x 128 threads | %.3f |\n",
              per_kernel_us([](cudaStream_t s) { empty_kernel<<<16, 128, 0, s>>>(); }));
  std::printf("| one global read+write, 1 x 512 | %.3f |\n",
              per_kernel_us([p](cudaStream_t s) { touch_kernel<<<1, 512, 0, s>>>(p); }));
#if !REDLINE_HIP
  int device = 0, major = 0;
  GPU_CHECK(cudaGetDevice(&device));
  GPU_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  if (major >= 9) {
    std::printf("| one global read+write, 1 x 512, chained launch | %.3f |\n",
                per_kernel_us([p](cudaStream_t s) { launch_chained_touch(s, p); }));
  }
#endif
  for (int rounds : {1, 4, 7}) {
    std::printf(
        "| %d rounds of read, barrier, write, barrier, 1 x 512 | %.3f |\n", rounds,
        per_kernel_us([p, rounds](cudaStream_t s) { rounds_kernel<<<1, 512, 0, s>>>(p, rounds); }));
  }
  GPU_CHECK(cudaFree(p));
  return 0;
}
