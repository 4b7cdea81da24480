#include "tessera/kernels_cpu/batched.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>

#include "tessera/kernels_cpu/blas.hpp"
#include "tessera/kernels_cpu/check.hpp"
#include "tessera/kernels_cpu/trsm_upper.hpp"

namespace tessera::kernels {
namespace {

// Larger orders than the batched API's 32 work too; this bounds the stack workspace below.
constexpr int max_n = 64;

void check_range(const char* fn, int n, long long first, long long last) {
  check::require_ge(fn, "n", n, "1", 1);
  check::require_le(fn, "n", n, nullptr, max_n);
  check::require_ge(fn, "first", first, "0", 0);
  check::require_ge(fn, "last", last, "first", first);
}

// LU with partial pivoting of one n x n matrix, LAPACK's unblocked GETF2 step for step (the first
// largest |a| pivots, NaN never wins over an earlier entry; a zero pivot sets info and the
// elimination goes on; a pivot below the smallest safe reciprocal divides instead of
// multiplying). At these orders a LAPACK call costs more than its work: written out, the CPU path
// ran 3 to 57 times faster on 16 cores (docs/results/2026-11-24-batched-cpu-share-h100.md).
template <class T>
int getf2(int n, T* a, int lda, int* ipiv) {
  int info = 0;
  const T sfmin = std::numeric_limits<T>::min();
  for (int k = 0; k < n; ++k) {
    T* ck = a + std::size_t(k) * lda;
    int p = k;
    T mx = std::abs(ck[k]);
    for (int i = k + 1; i < n; ++i)
      if (std::abs(ck[i]) > mx) {
        mx = std::abs(ck[i]);
        p = i;
      }
    ipiv[k] = p + 1;
    if (ck[p] != T(0)) {
      if (p != k)
        for (int j = 0; j < n; ++j) std::swap(a[k + std::size_t(j) * lda], a[p + std::size_t(j) * lda]);
      if (std::abs(ck[k]) >= sfmin) {
        const T r = T(1) / ck[k];
        for (int i = k + 1; i < n; ++i) ck[i] *= r;
      } else {
        for (int i = k + 1; i < n; ++i) ck[i] /= ck[k];
      }
    } else if (info == 0) {
      info = k + 1;
    }
    for (int j = k + 1; j < n; ++j) {
      T* cj = a + std::size_t(j) * lda;
      const T u = cj[k];
      for (int i = k + 1; i < n; ++i) cj[i] -= ck[i] * u;
    }
  }
  return info;
}

// A^-1 from GETF2's factors of a nonsingular A, LAPACK's unblocked GETRI: U^-1 in place (TRTI2),
// then X L = U^-1 column by column from the right, then the pivots' column swaps in reverse.
template <class T>
void getri2(int n, T* a, int lda, const int* ipiv) {
  auto at = [a, lda](int i, int j) -> T& { return a[i + std::size_t(j) * lda]; };
  for (int j = 0; j < n; ++j) {
    at(j, j) = T(1) / at(j, j);
    const T ajj = -at(j, j);
    // U^-1(0:j, j) = U^-1(0:j, 0:j) U(0:j, j) (upper triangular times vector, in place), scaled.
    for (int i = 0; i < j; ++i) {
      T sum = at(i, j) * at(i, i);
      for (int l = i + 1; l < j; ++l) sum += at(i, l) * at(l, j);
      at(i, j) = sum;
    }
    for (int i = 0; i < j; ++i) at(i, j) *= ajj;
  }
  T work[64];
  for (int j = n - 2; j >= 0; --j) {
    for (int i = j + 1; i < n; ++i) {
      work[i] = at(i, j);
      at(i, j) = T(0);
    }
    for (int l = j + 1; l < n; ++l) {
      const T w = work[l];
      T* cl = a + std::size_t(l) * lda;
      T* cj = a + std::size_t(j) * lda;
      for (int i = 0; i < n; ++i) cj[i] -= cl[i] * w;
    }
  }
  for (int j = n - 2; j >= 0; --j) {
    const int p = ipiv[j] - 1;
    if (p != j)
      for (int i = 0; i < n; ++i) std::swap(at(i, j), at(i, p));
  }
}

template <class T>
void copy_matrix(int n, const T* a, int lda, T* b, int ldb) {
  for (int j = 0; j < n; ++j)
    std::copy_n(a + std::size_t(j) * lda, n, b + std::size_t(j) * ldb);
}

}  // namespace

template <class T>
void cpu_batched_getrf(int n, batch_ref<T> a, int* ipiv, int* info, long long first, long long last) {
  constexpr const char* fn = "tessera::kernels::cpu_batched_getrf";
  check_range(fn, n, first, last);
  if (first == last) return;
  check::require_ge(fn, "lda", a.ld, "n", n);
  for (long long b = first; b < last; ++b) {
    info[b] = getf2(n, a.matrix(b), a.ld, ipiv + b * n);
  }
}

template <class T>
void cpu_batched_inverse(int n, batch_ref<T> a, batch_ref<T> ainv, int* info, long long first,
                         long long last) {
  constexpr const char* fn = "tessera::kernels::cpu_batched_inverse";
  check_range(fn, n, first, last);
  if (first == last) return;
  check::require_ge(fn, "lda", a.ld, "n", n);
  check::require_ge(fn, "ldainv", ainv.ld, "n", n);
  int ipiv[max_n];
  for (long long b = first; b < last; ++b) {
    T* x = ainv.matrix(b);
    const T* src = a.matrix(b);
    if (x != src) copy_matrix(n, src, a.ld, x, ainv.ld);
    const int r = getf2(n, x, ainv.ld, ipiv);
    if (r == 0) getri2(n, x, ainv.ld, ipiv);
    info[b] = r;
  }
}

// X := A^-1 B from GETF2's factors, reference LAPACK's GETRS step for step: the row swaps, then
// the two triangular solves in TRSM's order (an entry that is zero updates nothing), dividing by
// U's diagonal (trsm_upper_divide). OpenBLAS's TRSM multiplies by reciprocals of the diagonal
// instead, which overflow to Inf for a pivot below 1 / the largest number where the quotient is
// finite.
template <class T>
void getrs2(int n, int nrhs, const T* lu, int ldlu, const int* ipiv, T* b, int ldb) {
  for (int j = 0; j < nrhs; ++j) {
    T* x = b + std::size_t(j) * ldb;
    for (int k = 0; k < n; ++k)
      if (ipiv[k] - 1 != k) std::swap(x[k], x[ipiv[k] - 1]);
    for (int k = 0; k < n; ++k)  // L, unit diagonal
      if (x[k] != T(0)) {
        const T* lk = lu + std::size_t(k) * ldlu;
        for (int i = k + 1; i < n; ++i) x[i] -= x[k] * lk[i];
      }
  }
  trsm_upper_divide(n, nrhs, lu, ldlu, b, ldb);
}

template <class T>
void cpu_batched_getrs(int n, int nrhs, batch_ref<T> lu, const int* ipiv, batch_ref<T> b,
                       long long first, long long last) {
  constexpr const char* fn = "tessera::kernels::cpu_batched_getrs";
  check_range(fn, n, first, last);
  check::require_ge(fn, "nrhs", nrhs, "0", 0);
  if (first == last || nrhs == 0) return;
  check::require_ge(fn, "lda", lu.ld, "n", n);
  check::require_ge(fn, "ldb", b.ld, "n", n);
  for (long long i = first; i < last; ++i) getrs2(n, nrhs, lu.matrix(i), lu.ld, ipiv + i * n, b.matrix(i), b.ld);
}

template <class T>
void cpu_batched_gesv(int n, int nrhs, batch_ref<T> a, int* ipiv, batch_ref<T> b, int* info,
                      long long first, long long last) {
  constexpr const char* fn = "tessera::kernels::cpu_batched_gesv";
  check_range(fn, n, first, last);
  check::require_ge(fn, "nrhs", nrhs, "0", 0);
  if (first == last) return;
  check::require_ge(fn, "lda", a.ld, "n", n);
  if (nrhs > 0) check::require_ge(fn, "ldb", b.ld, "n", n);
  for (long long i = first; i < last; ++i) {
    // GESV through GETRF + GETRS so that nrhs = 0 (no B at all) works as well.
    const int r = getf2(n, a.matrix(i), a.ld, ipiv + i * n);
    info[i] = r;
    if (r == 0 && nrhs > 0) getrs2(n, nrhs, a.matrix(i), a.ld, ipiv + i * n, b.matrix(i), b.ld);
  }
}

template void cpu_batched_getrf<float>(int, batch_ref<float>, int*, int*, long long, long long);
template void cpu_batched_getrf<double>(int, batch_ref<double>, int*, int*, long long, long long);
template void cpu_batched_inverse<float>(int, batch_ref<float>, batch_ref<float>, int*, long long, long long);
template void cpu_batched_inverse<double>(int, batch_ref<double>, batch_ref<double>, int*, long long,
                                          long long);
template void cpu_batched_getrs<float>(int, int, batch_ref<float>, const int*, batch_ref<float>, long long,
                                       long long);
template void cpu_batched_getrs<double>(int, int, batch_ref<double>, const int*, batch_ref<double>,
                                        long long, long long);
template void cpu_batched_gesv<float>(int, int, batch_ref<float>, int*, batch_ref<float>, int*, long long,
                                      long long);
template void cpu_batched_gesv<double>(int, int, batch_ref<double>, int*, batch_ref<double>, int*,
                                       long long, long long);

}  // namespace tessera::kernels
