#include <tessera/kernels_gpu/gpu_larfb.hpp>

#include "check.hpp"
#include "engine.hpp"
#include "sizes.hpp"

namespace tessera::kernels {

using detail::at_least_1;
using detail::elems;
using detail::require_ge;
using detail::require_le;
using detail::require_ptr;

namespace {
// From this k on, op(T) W goes to a second buffer: cuBLAS's in-place TRMM takes a slow recursive
// path for a wide T (H100: 94 against 17 us for k = n = 512, 206 against 59 us for n = 7488); below
// it, in place is as fast or faster (k = 64, n = 3000: 8.6 against 15.7 us).
constexpr int out_of_place_k = 256;
}  // namespace

std::size_t gpu_larfb_workspace_size(int m, int n, int k) {
  return elems(m, k) + elems(k, n) * (k >= out_of_place_k ? 2 : 1);
}

template <class T>
void gpu_larfb(cublasOperation_t op, int m, int n, int k, const T* V, int ldv, const T* Tf, int ldt, T* C, int ldc,
               T* work, std::size_t lwork, cublasHandle_t handle) {
  constexpr const char* kernel = "gpu_larfb";
  detail::require_reflector_arguments(kernel, op, m, n, k, ldv, ldt, ldc);
  require_ge(kernel, "lwork", static_cast<long long>(lwork), "the workspace size",
             static_cast<long long>(gpu_larfb_workspace_size(m, n, k)));
  require_ptr(kernel, "handle", handle);
  if (n == 0 || k == 0) return;
  require_ptr(kernel, "V", V);
  require_ptr(kernel, "Tf", Tf);
  require_ptr(kernel, "C", C);
  require_ptr(kernel, "work", work);

  detail::host_pointer_mode mode(kernel, handle);
  const cudaStream_t s = detail::stream_of(kernel, handle);
  T* Vc = work;               // m x k, ld m
  T* W = Vc + elems(m, k);    // k x n, ld k
  T* TW = k >= out_of_place_k ? W + elems(k, n) : W;  // op(T) W, ld k
  detail::unit_lower_copy(kernel, m, k, V, ldv, Vc, m, s);
  detail::check(kernel, "gemm (W = V^T C)",
                cublas::gemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, k, n, m, T(1), Vc, m, C, ldc, T(0), W, k));
  detail::check(kernel, "trmm (W = op(T) W)",
                cublas::trmm(handle, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, op, CUBLAS_DIAG_NON_UNIT, k, n, T(1), Tf,
                             ldt, W, k, TW, k));
  detail::check(kernel, "gemm (C -= V W)",
                cublas::gemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, T(-1), Vc, m, TW, k, T(1), C, ldc));
}

template <class T>
void gpu_larfb(int m, int n, int k, const T* V, int ldv, const T* Tf, int ldt, T* C, int ldc, T* work,
               std::size_t lwork, cublasHandle_t handle) {
  gpu_larfb(CUBLAS_OP_T, m, n, k, V, ldv, Tf, ldt, C, ldc, work, lwork, handle);
}

template void gpu_larfb<float>(cublasOperation_t, int, int, int, const float*, int, const float*, int, float*, int,
                               float*, std::size_t, cublasHandle_t);
template void gpu_larfb<double>(cublasOperation_t, int, int, int, const double*, int, const double*, int, double*, int,
                                double*, std::size_t, cublasHandle_t);
template void gpu_larfb<float>(int, int, int, const float*, int, const float*, int, float*, int,
                               float*, std::size_t, cublasHandle_t);
template void gpu_larfb<double>(int, int, int, const double*, int, const double*, int, double*,
                                int, double*, std::size_t, cublasHandle_t);

}  // namespace tessera::kernels
