#include "tessera/batched/check.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "tessera/kernels_cpu/blas.hpp"

namespace tessera::batched {
namespace {

// Column-major 1-norm of an n x m block, in double; NaN if any entry is NaN (std::max would drop a
// NaN column sum, and a residual over NaN factors would pass).
template <class T>
double norm1(int rows, int cols, const T* a, int lda) {
  double best = 0;
  for (int j = 0; j < cols; ++j) {
    double s = 0;
    for (int i = 0; i < rows; ++i) s += std::fabs(double(a[i + std::size_t(j) * lda]));
    if (std::isnan(s)) return s;
    best = std::max(best, s);
  }
  return best;
}

template <class T>
double eps() {
  return double(blas::lamch<T>('E'));
}

// A residual that came out NaN (a NaN input or result) must fail, not compare false.
double or_inf(double r) { return std::isnan(r) ? INFINITY : r; }

}  // namespace

template <class T>
double lu_residual(int n, const T* a, int lda, const T* lu, int ldlu, const int* ipiv) {
  if (n == 0) return 0;
  const auto un = static_cast<std::size_t>(n);
  // P A: apply the interchanges to a copy of A in order, as LAPACK's LASWP does.
  std::vector<double> pa(un * un), d(un * un, 0.0);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) pa[i + j * un] = double(a[i + std::size_t(j) * lda]);
  for (int k = 0; k < n; ++k) {
    const int p = ipiv[k] - 1;
    if (p < 0 || p >= n) return INFINITY;  // not a pivot at all
    if (p != k)
      for (int j = 0; j < n; ++j) std::swap(pa[k + j * un], pa[p + j * un]);
  }
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      double s = 0;  // (L U)(i, j) = sum over k <= min(i, j) of L(i, k) U(k, j), L unit lower
      for (int k = 0; k <= std::min(i, j); ++k) {
        const double l = k == i ? 1.0 : double(lu[i + std::size_t(k) * ldlu]);
        s += l * double(lu[k + std::size_t(j) * ldlu]);
      }
      d[i + j * un] = s - pa[i + j * un];
    }
  const double an = norm1(n, n, a, lda);
  const double dn = norm1(n, n, d.data(), n);
  if (an == 0) return dn == 0 ? 0 : INFINITY;
  return or_inf(dn / an / (double(n) * eps<T>()));  // in this order: n an eps underflows for tiny A
}

template <class T>
double inverse_residual(int n, const T* a, int lda, const T* x, int ldx) {
  if (n == 0) return 0;
  const auto un = static_cast<std::size_t>(n);
  std::vector<double> r(un * un);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      double s = i == j ? 1.0 : 0.0;
      for (int k = 0; k < n; ++k) s -= double(a[i + std::size_t(k) * lda]) * double(x[k + std::size_t(j) * ldx]);
      r[i + j * un] = s;
    }
  const double an = norm1(n, n, a, lda), xn = norm1(n, n, x, ldx);
  if (an == 0 || xn == 0) return INFINITY;
  return or_inf(norm1(n, n, r.data(), n) / an / xn / (double(n) * eps<T>()));
}

template <class T>
double solve_residual(int n, int nrhs, const T* a, int lda, const T* x, int ldx, const T* b, int ldb) {
  if (n == 0 || nrhs == 0) return 0;
  const double an = norm1(n, n, a, lda);
  double worst = 0;
  for (int j = 0; j < nrhs; ++j) {
    double rn = 0, xn = 0;
    for (int i = 0; i < n; ++i) {
      double s = double(b[i + std::size_t(j) * ldb]);
      for (int k = 0; k < n; ++k) s -= double(a[i + std::size_t(k) * lda]) * double(x[k + std::size_t(j) * ldx]);
      rn += std::fabs(s);
      xn += std::fabs(double(x[i + std::size_t(j) * ldx]));
    }
    if (an == 0 || xn == 0) return rn == 0 ? 0 : INFINITY;
    worst = std::max(worst, or_inf(rn / an / xn / (double(n) * eps<T>())));
  }
  return worst;
}

template double lu_residual<float>(int, const float*, int, const float*, int, const int*);
template double lu_residual<double>(int, const double*, int, const double*, int, const int*);
template double inverse_residual<float>(int, const float*, int, const float*, int);
template double inverse_residual<double>(int, const double*, int, const double*, int);
template double solve_residual<float>(int, int, const float*, int, const float*, int, const float*, int);
template double solve_residual<double>(int, int, const double*, int, const double*, int, const double*, int);

}  // namespace tessera::batched
