#pragma once
// Typed access to the GPU side of a task_context, for code that includes the CUDA headers.
#include <cublas_v2.h>
#include <cuda_runtime.h>

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

}  // namespace tessera
