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

// The arguments every block reflector application shares: C (m x n, ldc) := op(I - V T V^T) C with
// V m x k (ldv) and T k x k (ldt).
inline void require_reflector_arguments(const char* kernel, cublasOperation_t op, int m, int n, int k, int ldv,
                                        int ldt, int ldc) {
  if (op != CUBLAS_OP_T && op != CUBLAS_OP_N) bad_argument(kernel, "op", op, "==", "CUBLAS_OP_N or _T", 0);
  require_ge(kernel, "m", m, "0", 0);
  require_ge(kernel, "n", n, "0", 0);
  require_ge(kernel, "k", k, "0", 0);
  require_le(kernel, "k", k, "m", m);
  require_ge(kernel, "ldv", ldv, "max(1, m)", m > 1 ? m : 1);
  require_ge(kernel, "ldt", ldt, "max(1, k)", k > 1 ? k : 1);
  require_ge(kernel, "ldc", ldc, "max(1, m)", m > 1 ? m : 1);
}

}  // namespace tessera::kernels::detail
