#pragma once
// Argument and status checks: a compare on the hot path, messages built only on failure.
#include <cstddef>

#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace tessera::kernels::detail {

// Throws std::invalid_argument "<kernel>: <arg> = <value> must be <relation> <bound_text> (= <bound>)".
[[noreturn]] void bad_argument(const char* kernel, const char* arg, long long value,
                               const char* relation, const char* bound_text, long long bound);
// Throws std::invalid_argument "<kernel>: <arg> is null".
[[noreturn]] void null_argument(const char* kernel, const char* arg);
// Throw std::runtime_error naming the kernel, the failing call and the library's message.
[[noreturn]] void cublas_failed(const char* kernel, const char* call, cublasStatus_t status);
[[noreturn]] void cuda_failed(const char* kernel, const char* call, cudaError_t status);

inline void require_ge(const char* kernel, const char* arg, long long value, const char* bound_text,
                       long long bound) {
  if (value < bound) [[unlikely]]
    bad_argument(kernel, arg, value, ">=", bound_text, bound);
}

inline void require_le(const char* kernel, const char* arg, long long value, const char* bound_text,
                       long long bound) {
  if (value > bound) [[unlikely]]
    bad_argument(kernel, arg, value, "<=", bound_text, bound);
}

inline void require_ptr(const char* kernel, const char* arg, const void* p) {
  if (p == nullptr) [[unlikely]]
    null_argument(kernel, arg);
}

inline void check(const char* kernel, const char* call, cublasStatus_t status) {
  if (status != CUBLAS_STATUS_SUCCESS) [[unlikely]]
    cublas_failed(kernel, call, status);
}

inline void check(const char* kernel, const char* call, cudaError_t status) {
  if (status != cudaSuccess) [[unlikely]]
    cuda_failed(kernel, call, status);
}

}  // namespace tessera::kernels::detail
