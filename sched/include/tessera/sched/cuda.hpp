#pragma once
// Typed access to the GPU side of a task_context, for code that includes the CUDA headers.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "tessera/sched/runtime.hpp"

namespace tessera {

namespace detail {
// Code that includes this uses the GPU backend: this reference links it (Tessera::sched_cuda).
inline const bool gpu_backend_enabled = enable_gpu_backend();
}  // namespace detail

inline cudaStream_t stream_of(const task_context& ctx) { return static_cast<cudaStream_t>(ctx.stream()); }
inline cublasHandle_t blas_of(const task_context& ctx) { return static_cast<cublasHandle_t>(ctx.blas()); }
template <class T>
T* device_ptr(const task_context& ctx, handle h) {
  return static_cast<T*>(ctx.device_data(h));
}

// *p := `bytes` of page-locked host memory without a runtime (the runtime's pinned buffers come
// from here too), or cudaMallocHost's error. Large blocks are anonymous mappings asked for
// transparent huge pages, first touched by several threads, then registered with CUDA: on the
// H200 machine a GiB took 0.07 s that way against 0.38-0.47 s from cudaMallocHost, and 0.02 s to
// free against 0.10 s (docs/results/2026-11-28-pinned-host-h200.md). Free with pinned_host_free.
cudaError_t pinned_host_alloc(void** p, std::size_t bytes) noexcept;
void pinned_host_free(void* p) noexcept;

}  // namespace tessera
