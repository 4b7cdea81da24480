#include "tessera/qr/check.hpp"

#include <algorithm>
#include <vector>

#include "detail.hpp"
#include "tessera/kernels_cpu/blas.hpp"
#include "tessera/qr/factorize.hpp"
#include "tessera/qr/ungqr.hpp"

namespace tessera::qr {

namespace {
// ||A - Q R|| and ||I - Q^T Q|| for a thin Q (m x k, k = min(m, n)) and R (k x n).
template <class T>
qr_residuals residuals(int m, int n, const T* q, const T* r, const T* a, int lda) {
  const int k = std::min(m, n);
  const std::size_t mm = std::size_t(m);
  std::vector<T> w(mm * n);
  for (int c = 0; c < n; ++c)
    std::copy_n(a + std::size_t(c) * lda, m, w.begin() + std::ptrdiff_t(std::size_t(c) * mm));
  blas::gemm(CblasNoTrans, CblasNoTrans, m, n, k, T(-1), q, m, r, k, T(1), w.data(), m);

  const double eps = blas::lamch<T>('E');
  const double scale = double(std::max(m, n)) * eps;
  const double anorm = blas::lange('1', m, n, a, lda);
  qr_residuals res;
  res.qr = blas::lange('1', m, n, w.data(), m) / ((anorm > 0 ? anorm : 1.0) * scale);

  std::vector<T> e(std::size_t(k) * k, T(0));
  for (int i = 0; i < k; ++i) e[i + std::size_t(i) * k] = T(1);
  blas::syrk(CblasUpper, CblasTrans, k, m, T(-1), q, m, T(1), e.data(), k);
  res.orth = blas::lansy('1', 'U', k, e.data(), k) / scale;
  return res;
}
}  // namespace

template <class T>
qr_residuals check_qr(runtime& rt, const qr_factors<T>& f, const T* a, int lda) {
  constexpr const char* func = "check_qr";
  const int m = f.m(), n = f.n(), k = std::min(m, n);
  detail::require_at_least(func, "lda", lda, m, "m");
  if (!a) detail::invalid(func, "A is null");

  const std::size_t mm = std::size_t(m);
  std::vector<T> q(mm * k);
  ungqr(rt, f, q_shape::thin, q.data(), m);

  // R: the upper trapezoid of the first k rows of the factored tiles.
  std::vector<T> r(std::size_t(k) * n, T(0));
  for (int c = 0; c < n; ++c)
    for (int i = 0; i <= std::min(c, k - 1); ++i) r[i + std::size_t(c) * k] = f.a()(i, c);

  return residuals(m, n, q.data(), r.data(), a, lda);
}

template <class T>
qr_residuals check_geqrt(int m, int n, int nb, const T* qr, int ldqr, const T* t, int ldt, const T* a,
                         int lda) {
  constexpr const char* func = "check_geqrt";
  detail::require_at_least(func, "n", n, 1);
  detail::require_at_least(func, "m", m, n, "n");
  detail::require_at_least(func, "nb", nb, 1);
  detail::require_at_least(func, "ldqr", ldqr, m, "m");
  detail::require_at_least(func, "ldt", ldt, std::min(nb, n), "min(nb, n)");
  detail::require_at_least(func, "lda", lda, m, "m");
  if (!a || !qr || !t) detail::invalid(func, "a matrix is null");
  const std::size_t mm = std::size_t(m);
  std::vector<T> work(std::size_t(std::min(nb, n)) * mm);
  // The thin Q: Q [I; 0]. R: the upper triangle of the factored matrix.
  std::vector<T> q(mm * n, T(0));
  for (int i = 0; i < n; ++i) q[i + std::size_t(i) * mm] = T(1);
  if (blas::gemqrt('L', 'N', m, n, n, std::min(nb, n), qr, ldqr, t, ldt, q.data(), m, work.data()) != 0)
    detail::invalid(func, "LAPACK GEMQRT rejected the factors");
  std::vector<T> r(std::size_t(n) * n, T(0));
  for (int c = 0; c < n; ++c)
    for (int i = 0; i <= c; ++i) r[i + std::size_t(c) * n] = qr[i + std::size_t(c) * ldqr];
  return residuals(m, n, q.data(), r.data(), a, lda);
}

template <class T>
qr_residuals check(factorization<T>& f, const T* a, int lda) {
  constexpr const char* func = "check";
  const int m = f.m(), n = f.n(), k = std::min(m, n);
  detail::require_at_least(func, "lda", lda, std::max(1, m), "max(1, m)");
  if (k == 0) return {};
  if (!a) detail::invalid(func, "A is null");
  std::vector<T> q(std::size_t(m) * k), r(std::size_t(k) * n);
  f.form_q(q_shape::thin, host(q.data(), m, k, m));
  f.copy_r(host(r.data(), k, n, k));
  qr_residuals res = residuals(m, n, q.data(), r.data(), a, lda);
  if (f.full_t()) {
    const double scale = double(std::max(m, n)) * blas::lamch<T>('E');
    std::vector<T> t(std::size_t(n) * n), s(std::size_t(m) * n), v(std::size_t(m) * n);
    f.copy_t(host(t.data(), n, n, n));
    f.copy_s(host(s.data(), m, n, m));
    copy<T>(matrix_ref<const T>{f.geqrt_a(), m, n, f.geqrt_lda(), f.where()}, host(v.data(), m, n, m));
    // LAPACK xLARFT's T for the same reflectors (V below the diagonal, tau = T's diagonal): the
    // GPU's panels (CholeskyQR2 with Householder reconstruction) choose other, equally valid,
    // reflectors than LAPACK's GEQRT3 would, so T is compared where it is a function of V alone.
    std::vector<T> tau(static_cast<std::size_t>(n)), tl(std::size_t(n) * std::size_t(n), T(0));
    for (int i = 0; i < n; ++i) tau[i] = t[i + std::size_t(i) * n];
    if (blas::larft('F', 'C', m, n, v.data(), m, tau.data(), tl.data(), n) != 0)
      detail::invalid(func, "LAPACK LARFT rejected the reflectors");
    // S - V T^T, V unit lower trapezoidal.
    for (int c = 0; c < n; ++c)
      for (int i = 0; i <= c; ++i) v[i + std::size_t(c) * m] = i == c ? T(1) : T(0);
    const double vt = blas::lange('1', m, n, v.data(), m) * blas::lange('1', n, n, t.data(), n);
    blas::trmm(CblasRight, CblasUpper, CblasTrans, CblasNonUnit, m, n, T(1), t.data(), n, v.data(), m);
    for (std::size_t i = 0; i < s.size(); ++i) s[i] -= v[i];
    res.s_error = blas::lange('1', m, n, s.data(), m) / ((vt > 0 ? vt : 1.0) * scale);
    for (int c = 0; c < n; ++c)
      for (int i = c + 1; i < n; ++i) tl[i + std::size_t(c) * n] = T(0);
    const double tn = blas::lange('1', n, n, tl.data(), n);
    for (std::size_t i = 0; i < t.size(); ++i) t[i] -= tl[i];
    res.t_error = blas::lange('1', n, n, t.data(), n) / ((tn > 0 ? tn : 1.0) * scale);
  }
  return res;
}

template qr_residuals check_qr<float>(runtime&, const qr_factors<float>&, const float*, int);
template qr_residuals check_qr<double>(runtime&, const qr_factors<double>&, const double*, int);
template qr_residuals check<float>(factorization<float>&, const float*, int);
template qr_residuals check<double>(factorization<double>&, const double*, int);
template qr_residuals check_geqrt<float>(int, int, int, const float*, int, const float*, int, const float*, int);
template qr_residuals check_geqrt<double>(int, int, int, const double*, int, const double*, int, const double*,
                                          int);

}  // namespace tessera::qr
