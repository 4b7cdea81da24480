#pragma once
// The GPU kernels' checks: Tessera's argument checks (tessera/kernels_cpu/check.hpp) under the
// names the kernels use, and the CUDA and cuBLAS status checks, which need the CUDA types.
#include <cuda_runtime.h>

#include <tessera/kernels_cpu/check.hpp>
#include <tessera/kernels_gpu/cublas.hpp>

namespace tessera::kernels::detail {

using tessera::check::bad_argument;
using tessera::check::require_ge;
using tessera::check::require_le;
using tessera::check::require_ptr;

// Throws std::runtime_error "<kernel>: <call> failed: <CUDA's message>".
[[noreturn]] void cuda_failed(const char* kernel, const char* call, cudaError_t status);

inline void check(const char* kernel, const char* call, cudaError_t status) {
  if (status != cudaSuccess) [[unlikely]]
    cuda_failed(kernel, call, status);
}

using tessera::cublas::check;

}  // namespace tessera::kernels::detail
