#include <tessera/kernels_gpu/gpu_sssmqr.hpp>

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

namespace {

long long rows_of(int count, int nb, int m_last) {
  return count == 0 ? 0 : static_cast<long long>(count - 1) * nb + m_last;
}

void check_panel(const char* kernel, int count, int nb, int m_last, int kk, const void* V, int ldv) {
  require_ge(kernel, "count", count, "0", 0);
  require_ge(kernel, "nb", nb, "1", 1);
  require_ge(kernel, "kk", kk, "0", 0);
  if (count > 0) {
    require_ge(kernel, "m_last", m_last, "1", 1);
    require_le(kernel, "m_last", m_last, "nb", nb);
  }
  const long long rows = rows_of(count, nb, m_last);
  require_ge(kernel, "ldv", ldv, "max(1, (count - 1) * nb + m_last)", rows > 1 ? rows : 1);
  if (count > 0 && kk > 0) require_ptr(kernel, "V", V);
}

void check_t(const char* kernel, int count, int kk, int ib, const void* Tb, int ldt,
             std::ptrdiff_t strideT) {
  require_ge(kernel, "ib", ib, "1", 1);
  require_ge(kernel, "ldt", ldt, "max(1, min(ib, kk))", at_least_1(detail::min_int(ib, kk)));
  require_ge(kernel, "strideT", strideT, "0", 0);
  if (count > 0 && kk > 0) require_ptr(kernel, "Tb", Tb);
}

void check_matrix(const char* kernel, int count, int nb, int m_last, int n, int kk, const void* A1,
                  int lda1, const void* A2, int lda2) {
  require_ge(kernel, "n", n, "0", 0);
  require_ge(kernel, "lda1", lda1, "max(1, kk)", at_least_1(kk));
  const long long rows = rows_of(count, nb, m_last);
  require_ge(kernel, "lda2", lda2, "max(1, (count - 1) * nb + m_last)", rows > 1 ? rows : 1);
  if (count > 0 && n > 0 && kk > 0) {
    require_ptr(kernel, "A1", A1);
    require_ptr(kernel, "A2", A2);
  }
}

void check_work(const char* kernel, const void* work, std::size_t lwork, std::size_t need,
                cublasHandle_t handle) {
  require_ge(kernel, "lwork", static_cast<long long>(lwork), "the workspace size",
             static_cast<long long>(need));
  if (need > 0) require_ptr(kernel, "work", work);
  require_ptr(kernel, "handle", handle);
}

}  // namespace

std::size_t gpu_sssmqr_factors_size(int count, int nb, int kk) {
  return elems(count, kk) * elems(kk + std::max(nb, 0), 1);
}
std::size_t gpu_sssmqr_prepare_workspace_size(int count, int kk) {
  return elems(count, kk) * elems(kk, 1);
}
std::size_t gpu_sssmqr_apply_workspace_size(int count, int kk, int n) {
  return elems(std::clamp(count, 1, gpu_sssmqr_batch_rows), 1) * elems(kk, n);
}
std::size_t gpu_sssmqr_workspace_size(int count, int nb, int kk, int n) {
  return gpu_sssmqr_factors_size(count, nb, kk) +
         std::max(gpu_sssmqr_prepare_workspace_size(count, kk),
                  gpu_sssmqr_apply_workspace_size(count, kk, n));
}

namespace {
// Rows per batch that lwork elements of workspace allow (kk * n each), up to count and the cap.
int batch_rows(int count, int kk, int n, std::size_t lwork) {
  const std::size_t per_row = std::max<std::size_t>(elems(kk, n), 1);
  return static_cast<int>(std::clamp<std::size_t>(lwork / per_row, 1, static_cast<std::size_t>(
                                                                          std::clamp(count, 1, gpu_sssmqr_batch_rows))));
}
}  // namespace
std::size_t gpu_sssmqr_blocked_workspace_size(int kk, int ib, int n) {
  return elems(detail::min_int(ib, kk), n);
}

template <class T>
void gpu_sssmqr_prepare(int count, int nb, int m_last, int kk, int ib, const T* V, int ldv,
                        const T* Tb, int ldt, std::ptrdiff_t strideT, T* factors, T* work,
                        std::size_t lwork, cublasHandle_t handle) {
  constexpr const char* kernel = "gpu_sssmqr_prepare";
  check_panel(kernel, count, nb, m_last, kk, V, ldv);
  check_t(kernel, count, kk, ib, Tb, ldt, strideT);
  check_work(kernel, work, lwork, gpu_sssmqr_prepare_workspace_size(count, kk), handle);
  if (count == 0 || kk == 0) return;
  require_ptr(kernel, "factors", factors);
  detail::host_pointer_mode mode(kernel, handle);
  detail::make_factors(kernel, count, nb, m_last, kk, ib, V, ldv, Tb, ldt, strideT, factors, work,
                       handle, detail::stream_of(kernel, handle));
}

template <class T>
void gpu_sssmqr_apply(int count, int nb, int m_last, int n, int kk, T* A1, int lda1, T* A2,
                      int lda2, const T* V, int ldv, const T* factors, T* work,
                      std::size_t lwork, cublasHandle_t handle) {
  constexpr const char* kernel = "gpu_sssmqr_apply";
  check_panel(kernel, count, nb, m_last, kk, V, ldv);
  check_matrix(kernel, count, nb, m_last, n, kk, A1, lda1, A2, lda2);
  check_work(kernel, work, lwork, gpu_sssmqr_apply_workspace_size(1, kk, n), handle);
  if (count == 0 || n == 0 || kk == 0) return;
  require_ptr(kernel, "factors", factors);
  detail::host_pointer_mode mode(kernel, handle);
  detail::apply_factors(kernel, count, nb, m_last, n, kk, A1, lda1, A2, lda2, V, ldv, factors,
                        work, batch_rows(count, kk, n, lwork), handle,
                        detail::stream_of(kernel, handle));
}

template <class T>
void gpu_sssmqr(int count, int nb, int m_last, int n, int kk, int ib, T* A1, int lda1, T* A2,
                int lda2, const T* V, int ldv, const T* Tb, int ldt, std::ptrdiff_t strideT,
                T* work, std::size_t lwork, cublasHandle_t handle) {
  constexpr const char* kernel = "gpu_sssmqr";
  check_panel(kernel, count, nb, m_last, kk, V, ldv);
  check_t(kernel, count, kk, ib, Tb, ldt, strideT);
  check_matrix(kernel, count, nb, m_last, n, kk, A1, lda1, A2, lda2);
  const std::size_t fsize = gpu_sssmqr_factors_size(count, nb, kk);
  check_work(kernel, work, lwork,
             fsize + std::max(gpu_sssmqr_prepare_workspace_size(count, kk),
                              gpu_sssmqr_apply_workspace_size(1, kk, n)),
             handle);
  if (count == 0 || n == 0 || kk == 0) return;
  detail::host_pointer_mode mode(kernel, handle);
  const cudaStream_t s = detail::stream_of(kernel, handle);
  T* factors = work;
  T* rest = work + fsize;
  detail::make_factors(kernel, count, nb, m_last, kk, ib, V, ldv, Tb, ldt, strideT, factors, rest,
                       handle, s);
  detail::apply_factors(kernel, count, nb, m_last, n, kk, A1, lda1, A2, lda2, V, ldv, factors,
                        rest, batch_rows(count, kk, n, lwork - fsize), handle, s);
}

template <class T>
void gpu_sssmqr_blocked(int count, int nb, int m_last, int n, int kk, int ib, T* A1, int lda1,
                        T* A2, int lda2, const T* V, int ldv, const T* Tb, int ldt,
                        std::ptrdiff_t strideT, T* work, std::size_t lwork,
                        cublasHandle_t handle) {
  constexpr const char* kernel = "gpu_sssmqr_blocked";
  check_panel(kernel, count, nb, m_last, kk, V, ldv);
  check_t(kernel, count, kk, ib, Tb, ldt, strideT);
  check_matrix(kernel, count, nb, m_last, n, kk, A1, lda1, A2, lda2);
  check_work(kernel, work, lwork, gpu_sssmqr_blocked_workspace_size(kk, ib, n), handle);
  if (count == 0 || n == 0 || kk == 0) return;
  detail::host_pointer_mode mode(kernel, handle);
  const cudaStream_t s = detail::stream_of(kernel, handle);
  for (int i = 0; i < count; ++i) {
    const std::ptrdiff_t r = static_cast<std::ptrdiff_t>(i) * nb;
    detail::apply_blocked(kernel, i + 1 < count ? nb : m_last, n, kk, ib, A1, lda1, A2 + r, lda2,
                          V + r, ldv, Tb + i * strideT, ldt, work, detail::min_int(ib, kk), handle,
                          s);
  }
}

#define TESSERA_SSSMQR_INSTANTIATE(T)                                                              \
  template void gpu_sssmqr_prepare<T>(int, int, int, int, int, const T*, int, const T*, int,      \
                                      std::ptrdiff_t, T*, T*, std::size_t, cublasHandle_t);       \
  template void gpu_sssmqr_apply<T>(int, int, int, int, int, T*, int, T*, int, const T*, int,     \
                                    const T*, T*, std::size_t, cublasHandle_t);                   \
  template void gpu_sssmqr<T>(int, int, int, int, int, int, T*, int, T*, int, const T*, int,      \
                              const T*, int, std::ptrdiff_t, T*, std::size_t, cublasHandle_t);    \
  template void gpu_sssmqr_blocked<T>(int, int, int, int, int, int, T*, int, T*, int, const T*,   \
                                      int, const T*, int, std::ptrdiff_t, T*, std::size_t,        \
                                      cublasHandle_t);
TESSERA_SSSMQR_INSTANTIATE(float)
TESSERA_SSSMQR_INSTANTIATE(double)
#undef TESSERA_SSSMQR_INSTANTIATE

}  // namespace tessera::kernels
