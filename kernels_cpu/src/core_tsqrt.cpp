#include <algorithm>
#include <tessera/kernels_cpu/core_tsqrt.hpp>
#include <tessera/kernels_cpu/blas.hpp>
#include <tessera/kernels_cpu/check.hpp>

#include "panel2.hpp"
#include "tsrfb.hpp"

namespace tessera::kernels {
namespace {

// Below this panel width the recursion stops in level-2 loops (panel2.hpp). Every level of the
// recursion makes level-3 calls, and each OpenBLAS level-3 call takes a global lock: with 16 cores
// factoring at once, cutoff 8 made a TSQRT (nb 192, ib 32) ~4x slower than alone.
constexpr int recursion_cutoff = 32;

// Recursive QR of [A; B], A n x n upper triangular, B m x n (m > 0), writing the n x n T
// (GEQRT3's scheme for the triangle-over-square shape, which LAPACK lacks: its TPQRT2 is level 2).
// Split the columns in halves 1 and 2: factor half 1, apply it to half 2, factor half 2, then
// T12 = -T11 (V1^T V2) T22. T12's slot holds the update's W meanwhile, so no workspace.
template <class T>
void tpqrt3(int m, int n, T* A, int lda, T* B, int ldb, T* Tf, int ldt) {
  using detail::at;
  if (n <= recursion_cutoff) {
    detail::tpqrt2_loops(m, n, A, lda, B, ldb, Tf, ldt);
    return;
  }
  const int n1 = n / 2, n2 = n - n1;
  T* T12 = at(Tf, ldt, 0, n1);
  T* B2 = at(B, ldb, 0, n1);
  tpqrt3(m, n1, A, lda, B, ldb, Tf, ldt);
  detail::tsrfb_left_trans(m, n2, n1, B, ldb, Tf, ldt, at(A, lda, 0, n1), lda, B2, ldb, T12, ldt);
  tpqrt3(m, n2, at(A, lda, n1, n1), lda, B2, ldb, at(Tf, ldt, n1, n1), ldt);
  blas::gemm(CblasTrans, CblasNoTrans, n1, n2, m, T(1), B, ldb, B2, ldb, T(0), T12, ldt);
  blas::trmm(CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, n1, n2, T(1), Tf, ldt, T12, ldt);
  blas::trmm(CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, n1, n2, T(1), at(Tf, ldt, n1, n1),
             ldt, T12, ldt);
  for (int j = 0; j < n2; ++j)
    for (int i = 0; i < n1; ++i) *at(T12, ldt, i, j) = -*at(T12, ldt, i, j);
}

}  // namespace

template <class T>
void core_tsqrt(int m, int n, int ib, T* A1, int lda1, T* A2, int lda2, T* Tf, int ldt, T* work) {
  constexpr const char* name = "tessera::kernels::core_tsqrt";
  check::require_ge(name, "m", m, "0", 0);
  check::require_ge(name, "n", n, "0", 0);
  check::require_ge(name, "ib", ib, "1", 1);
  check::require_ge(name, "lda1", lda1, "max(1, n)", std::max(1, n));
  check::require_ge(name, "lda2", lda2, "max(1, m)", std::max(1, m));
  check::require_ge(name, "ldt", ldt, "ib", ib);
  if (n == 0) return;
  const int nb = std::min(ib, n);
  if (m == 0) {
    // Nothing to annihilate: every reflector is the identity (tau = 0). LAPACK returns without
    // writing T, so write the zero T that core_tsmqr then applies as Q = I.
    for (int j = 0; j < n; ++j) std::fill_n(Tf + static_cast<std::ptrdiff_t>(j) * ldt, nb, T(0));
    return;
  }
  // TPQRT's blocked loop with a recursive panel (level-2 loops below recursion_cutoff columns)
  // instead of its level-2 TPQRT2 (bench/kernels: "tsqrt core" against "tsqrt LAPACK TPQRT").
  using detail::at;
  for (int j0 = 0; j0 < n; j0 += nb) {
    const int jb = std::min(nb, n - j0);
    T* V = at(A2, lda2, 0, j0);
    T* tb = at(Tf, ldt, 0, j0);
    tpqrt3(m, jb, at(A1, lda1, j0, j0), lda1, V, lda2, tb, ldt);
    detail::tsrfb_left_trans(m, n - j0 - jb, jb, V, lda2, tb, ldt, at(A1, lda1, j0, j0 + jb), lda1,
                             at(A2, lda2, 0, j0 + jb), lda2, work, jb);
  }
}

template void core_tsqrt<float>(int, int, int, float*, int, float*, int, float*, int, float*);
template void core_tsqrt<double>(int, int, int, double*, int, double*, int, double*, int, double*);

}  // namespace tessera::kernels
