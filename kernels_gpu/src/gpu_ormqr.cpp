#include <tessera/kernels_gpu/gpu_ormqr.hpp>

#include <algorithm>

#include "check.hpp"
#include "engine.hpp"
#include "sizes.hpp"

namespace tessera::kernels {

using detail::at_least_1;
using detail::elems;
using detail::require_ge;
using detail::require_le;
using detail::require_ptr;

std::size_t gpu_ormqr_workspace_size(int m, int n, int k) {
  return elems(m, k) + elems(k, k) + elems(k + std::max(m, 0), k) + elems(k, n);
}

template <class T>
void gpu_ormqr(int m, int n, int k, int ib, const T* V, int ldv, const T* Tb, int ldt, T* C,
               int ldc, T* work, std::size_t lwork, cublasHandle_t handle) {
  constexpr const char* kernel = "gpu_ormqr";
  require_ge(kernel, "m", m, "0", 0);
  require_ge(kernel, "n", n, "0", 0);
  require_ge(kernel, "k", k, "0", 0);
  require_le(kernel, "k", k, "m", m);
  require_ge(kernel, "ib", ib, "1", 1);
  require_ge(kernel, "ldv", ldv, "max(1, m)", at_least_1(m));
  require_ge(kernel, "ldt", ldt, "max(1, min(ib, k))", at_least_1(detail::min_int(ib, k)));
  require_ge(kernel, "ldc", ldc, "max(1, m)", at_least_1(m));
  const std::size_t need = gpu_ormqr_workspace_size(m, n, k);
  require_ge(kernel, "lwork", static_cast<long long>(lwork), "the workspace size",
             static_cast<long long>(need));
  require_ptr(kernel, "handle", handle);
  if (n == 0 || k == 0) return;
  require_ptr(kernel, "V", V);
  require_ptr(kernel, "Tb", Tb);
  require_ptr(kernel, "C", C);
  require_ptr(kernel, "work", work);

  detail::host_pointer_mode mode(kernel, handle);
  const cudaStream_t s = detail::stream_of(kernel, handle);
  // As gpu_tsmqr: Z = [T^T; Vc T^T], then W = Vc^T C and C -= (Vc T^T) W, GEMMs only.
  const int ldz = k + m;
  T* Vc = work;  // m x k, ld m
  T* G = Vc + elems(m, k);
  T* Z = G + elems(k, k);
  T* W = Z + elems(ldz, k);
  detail::unit_lower_copy(kernel, m, k, V, ldv, Vc, m, s);
  detail::gram(kernel, 1, m, m, k, Vc, m, G, handle);
  detail::build_full_t(kernel, 1, k, ib, G, Tb, ldt, 0, Z, ldz, 0, true, s);
  detail::check(kernel, "gemm (V T^T)",
                cublas::gemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, k, k, T(1), Vc, m, Z, ldz, T(0), Z + k, ldz));
  detail::check(kernel, "gemm (W = V^T C)",
                cublas::gemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, k, n, m, T(1), Vc, m, C, ldc, T(0), W, k));
  detail::check(kernel, "gemm (C -= V T^T W)",
                cublas::gemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, T(-1), Z + k, ldz, W, k, T(1), C, ldc));
}

template void gpu_ormqr<float>(int, int, int, int, const float*, int, const float*, int, float*,
                               int, float*, std::size_t, cublasHandle_t);
template void gpu_ormqr<double>(int, int, int, int, const double*, int, const double*, int,
                                double*, int, double*, std::size_t, cublasHandle_t);

}  // namespace tessera::kernels
