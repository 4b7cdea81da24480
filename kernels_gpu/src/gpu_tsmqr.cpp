#include <tessera/kernels_gpu/gpu_tsmqr.hpp>

#include <algorithm>

#include "check.hpp"
#include "engine.hpp"
#include "sizes.hpp"

namespace tessera::kernels {

using detail::at_least_1;
using detail::elems;
using detail::require_ge;
using detail::require_ptr;

std::size_t gpu_tsqrt_full_t_workspace_size(int kk) { return elems(kk, kk); }
std::size_t gpu_tsmqr_workspace_size(int m, int n, int kk) {
  return elems(kk + std::max(m, 0), kk) + std::max(elems(kk, kk), elems(kk, n));
}
std::size_t gpu_tsmqr_blocked_workspace_size(int kk, int ib, int n) {
  return elems(detail::min_int(ib, kk), n);
}

namespace {

void check_panel(const char* kernel, int m, int kk, int ib, const void* V, int ldv, const void* Tb,
                 int ldt) {
  require_ge(kernel, "m", m, "0", 0);
  require_ge(kernel, "kk", kk, "0", 0);
  require_ge(kernel, "ib", ib, "1", 1);
  require_ge(kernel, "ldv", ldv, "max(1, m)", at_least_1(m));
  require_ge(kernel, "ldt", ldt, "max(1, min(ib, kk))", at_least_1(detail::min_int(ib, kk)));
  if (kk > 0) {
    require_ptr(kernel, "V", V);
    require_ptr(kernel, "Tb", Tb);
  }
}

void check_pair(const char* kernel, int m, int n, int kk, const void* A1, int lda1, const void* A2,
                int lda2) {
  require_ge(kernel, "n", n, "0", 0);
  require_ge(kernel, "lda1", lda1, "max(1, kk)", at_least_1(kk));
  require_ge(kernel, "lda2", lda2, "max(1, m)", at_least_1(m));
  if (n > 0 && kk > 0) {
    require_ptr(kernel, "A1", A1);
    if (m > 0) require_ptr(kernel, "A2", A2);
  }
}

void check_work(const char* kernel, const void* work, std::size_t lwork, std::size_t need) {
  require_ge(kernel, "lwork", static_cast<long long>(lwork), "the workspace size",
             static_cast<long long>(need));
  if (need > 0) require_ptr(kernel, "work", work);
}

}  // namespace

template <class T>
void gpu_tsqrt_full_t(int m, int kk, int ib, const T* V, int ldv, const T* Tb, int ldt, T* Tf,
                      int ldtf, T* work, std::size_t lwork, cublasHandle_t handle) {
  constexpr const char* kernel = "gpu_tsqrt_full_t";
  check_panel(kernel, m, kk, ib, V, ldv, Tb, ldt);
  require_ge(kernel, "ldtf", ldtf, "max(1, kk)", at_least_1(kk));
  check_work(kernel, work, lwork, gpu_tsqrt_full_t_workspace_size(kk));
  require_ptr(kernel, "handle", handle);
  if (kk == 0) return;
  require_ptr(kernel, "Tf", Tf);
  detail::host_pointer_mode mode(kernel, handle);
  detail::gram(kernel, 1, m, m, kk, V, ldv, work, handle);
  detail::build_full_t(kernel, 1, kk, ib, work, Tb, ldt, 0, Tf, ldtf, 0, false,
                       detail::stream_of(kernel, handle));
}

template <class T>
void gpu_tsmqr(int m, int n, int kk, int ib, T* A1, int lda1, T* A2, int lda2, const T* V,
               int ldv, const T* Tb, int ldt, T* work, std::size_t lwork, cublasHandle_t handle) {
  constexpr const char* kernel = "gpu_tsmqr";
  check_panel(kernel, m, kk, ib, V, ldv, Tb, ldt);
  check_pair(kernel, m, n, kk, A1, lda1, A2, lda2);
  check_work(kernel, work, lwork, gpu_tsmqr_workspace_size(m, n, kk));
  require_ptr(kernel, "handle", handle);
  if (m == 0 || n == 0 || kk == 0) return;  // as TPMQRT: no rows below, nothing to apply
  detail::host_pointer_mode mode(kernel, handle);
  const cudaStream_t s = detail::stream_of(kernel, handle);
  // gpu_sssmqr's factors and sweep with a single tile row of m rows.
  T* factors = work;
  T* rest = work + elems(kk + m, kk);
  detail::make_factors(kernel, 1, m, m, kk, ib, V, ldv, Tb, ldt, 0, factors, rest, handle, s);
  detail::apply_factors(kernel, 1, m, m, n, kk, A1, lda1, A2, lda2, V, ldv, factors, rest, 1,
                        handle, s);
}

template <class T>
void gpu_tsmqr_blocked(int m, int n, int kk, int ib, T* A1, int lda1, T* A2, int lda2, const T* V,
                       int ldv, const T* Tb, int ldt, T* work, std::size_t lwork,
                       cublasHandle_t handle) {
  constexpr const char* kernel = "gpu_tsmqr_blocked";
  check_panel(kernel, m, kk, ib, V, ldv, Tb, ldt);
  check_pair(kernel, m, n, kk, A1, lda1, A2, lda2);
  check_work(kernel, work, lwork, gpu_tsmqr_blocked_workspace_size(kk, ib, n));
  require_ptr(kernel, "handle", handle);
  if (m == 0 || n == 0 || kk == 0) return;
  detail::host_pointer_mode mode(kernel, handle);
  detail::apply_blocked(kernel, m, n, kk, ib, A1, lda1, A2, lda2, V, ldv, Tb, ldt, work,
                        detail::min_int(ib, kk), handle, detail::stream_of(kernel, handle));
}

#define TESSERA_TSMQR_INSTANTIATE(T)                                                               \
  template void gpu_tsqrt_full_t<T>(int, int, int, const T*, int, const T*, int, T*, int, T*,     \
                                    std::size_t, cublasHandle_t);                                 \
  template void gpu_tsmqr<T>(int, int, int, int, T*, int, T*, int, const T*, int, const T*, int,  \
                             T*, std::size_t, cublasHandle_t);                                    \
  template void gpu_tsmqr_blocked<T>(int, int, int, int, T*, int, T*, int, const T*, int,         \
                                     const T*, int, T*, std::size_t, cublasHandle_t);
TESSERA_TSMQR_INSTANTIATE(float)
TESSERA_TSMQR_INSTANTIATE(double)
#undef TESSERA_TSMQR_INSTANTIATE

}  // namespace tessera::kernels
