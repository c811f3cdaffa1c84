// gather, scatter_add, index_select, index_add. CPU twins: src/backend/cpu/ops_index.cpp.
// Kernels cannot throw: an out-of-range index is reported through the device's KernelFault record
// (backend/gpu_api.h), which the next op or synchronization raises as redline::Error, and is
// otherwise skipped (gather and index_select write 0 there). scatter_add / index_add use atomics,
// so float sums may differ from the CPU in the last bits.
#include "backend/gpu/ops_kernels.h"
#include "backend/gpu/ops_launch.h"

namespace redline::gpu {
namespace {

using ops::DimSplit;

// This translation unit's claim on the device's fault record: the last generation + 1 claimed.
__device__ uint32_t g_fault_claim;

// Records the first out-of-range index of the record's generation; later ones are dropped.
__device__ void report_index_fault(KernelFault* record, KernelFaultOp op, int64_t value,
                                   int64_t position, int64_t limit) {
  volatile KernelFault* f = record;
  const uint32_t generation = f->generation;
  if (atomicMax(&g_fault_claim, generation + 1u) > generation) return;  // already claimed
  f->value = value;
  f->position = position;
  f->limit = limit;
  __threadfence_system();
  f->op = static_cast<int32_t>(op);
  __threadfence_system();
}

template <typename T>
__global__ void gather_kernel(T* out, const T* x, const int64_t* index, DimSplit s, int64_t k,
                              KernelFault* fault) {
  REDLINE_GRID_STRIDE(at, s.outer * k * s.inner) {
    const int64_t a = at / (k * s.inner), i = at % s.inner;
    const int64_t row = index[at];
    if (row >= 0 && row < s.size) {
      out[at] = x[(a * s.size + row) * s.inner + i];
    } else {
      out[at] = T{};
      report_index_fault(fault, KernelFaultOp::gather, row, at, s.size);
    }
  }
}

template <typename T>
__global__ void index_select_kernel(T* out, const T* x, const int64_t* index, DimSplit s, int64_t k,
                                    KernelFault* fault) {
  REDLINE_GRID_STRIDE(at, s.outer * k * s.inner) {
    const int64_t a = at / (k * s.inner), j = (at / s.inner) % k, i = at % s.inner;
    const int64_t row = index[j];
    if (row >= 0 && row < s.size) {
      out[at] = x[(a * s.size + row) * s.inner + i];
    } else {
      out[at] = T{};
      report_index_fault(fault, KernelFaultOp::index_select, row, j, s.size);
    }
  }
}

__device__ inline void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ inline void atomic_add(int32_t* p, int32_t v) { atomicAdd(p, v); }
__device__ inline void atomic_add(int64_t* p, int64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}

// index_per_element: index has one entry per src element (scatter_add), else one per row j.
template <typename T, bool kPerElement>
__global__ void scatter_add_kernel(T* out, const T* src, const int64_t* index, DimSplit s,
                                   int64_t k, KernelFault* fault) {
  REDLINE_GRID_STRIDE(at, s.outer * k * s.inner) {
    const int64_t a = at / (k * s.inner), j = (at / s.inner) % k, i = at % s.inner;
    const int64_t row = kPerElement ? index[at] : index[j];
    if (row >= 0 && row < s.size) {
      atomic_add(&out[(a * s.size + row) * s.inner + i], src[at]);
    } else {
      report_index_fault(fault, kPerElement ? KernelFaultOp::scatter_add : KernelFaultOp::index_add,
                         row, kPerElement ? at : j, s.size);
    }
  }
}

KernelFault* current_fault_record() { return kernel_fault_record(current_device()); }

template <typename T>
void launch_copy_kind(bool select, void* out, const void* x, const int64_t* index,
                      const DimSplit& s, int64_t k, cudaStream_t st) {
  const int64_t n = s.outer * k * s.inner;
  KernelFault* fault = current_fault_record();
  if (select) {
    index_select_kernel<T><<<op_blocks(n), kOpThreads, 0, st>>>(
        static_cast<T*>(out), static_cast<const T*>(x), index, s, k, fault);
  } else {
    gather_kernel<T><<<op_blocks(n), kOpThreads, 0, st>>>(
        static_cast<T*>(out), static_cast<const T*>(x), index, s, k, fault);
  }
  GPU_CHECK_LAUNCH();
}

void launch_copy(bool select, int elem_size, void* out, const void* x, const int64_t* index,
                 const DimSplit& s, int64_t k, cudaStream_t st) {
  if (s.outer * k * s.inner == 0) return;
  switch (elem_size) {
    case 1:
      return launch_copy_kind<uint8_t>(select, out, x, index, s, k, st);
    case 2:
      return launch_copy_kind<uint16_t>(select, out, x, index, s, k, st);
    case 4:
      return launch_copy_kind<uint32_t>(select, out, x, index, s, k, st);
    default:
      return launch_copy_kind<uint64_t>(select, out, x, index, s, k, st);
  }
}

template <bool kPerElement>
void launch_add(DType dtype, void* out, const void* src, const int64_t* index, const DimSplit& s,
                int64_t k, cudaStream_t st) {
  const int64_t n = s.outer * k * s.inner;
  if (n == 0) return;
  KernelFault* fault = current_fault_record();
  switch (dtype) {
    case DType::f32:
      scatter_add_kernel<float, kPerElement><<<op_blocks(n), kOpThreads, 0, st>>>(
          static_cast<float*>(out), static_cast<const float*>(src), index, s, k, fault);
      break;
    case DType::i32:
      scatter_add_kernel<int32_t, kPerElement><<<op_blocks(n), kOpThreads, 0, st>>>(
          static_cast<int32_t*>(out), static_cast<const int32_t*>(src), index, s, k, fault);
      break;
    case DType::i64:
      scatter_add_kernel<int64_t, kPerElement><<<op_blocks(n), kOpThreads, 0, st>>>(
          static_cast<int64_t*>(out), static_cast<const int64_t*>(src), index, s, k, fault);
      break;
    default:
      REDLINE_FAIL("GPU scatter/index add got {}; expected f32, i32 or i64", dtype_name(dtype));
  }
  GPU_CHECK_LAUNCH();
}

}  // namespace

void gather(int elem_size, void* out, const void* x, const int64_t* index, const DimSplit& s,
            int64_t k, StreamHandle stream) {
  launch_copy(false, elem_size, out, x, index, s, k, as_stream(stream));
}

void index_select(int elem_size, void* out, const void* x, const int64_t* index, const DimSplit& s,
                  int64_t k, StreamHandle stream) {
  launch_copy(true, elem_size, out, x, index, s, k, as_stream(stream));
}

void scatter_add(DType dtype, void* out, const void* src, const int64_t* index, const DimSplit& s,
                 int64_t k, StreamHandle stream) {
  launch_add<true>(dtype, out, src, index, s, k, as_stream(stream));
}

void index_add(DType dtype, void* out, const void* src, const int64_t* index, const DimSplit& s,
               int64_t k, StreamHandle stream) {
  launch_add<false>(dtype, out, src, index, s, k, as_stream(stream));
}

}  // namespace redline::gpu
