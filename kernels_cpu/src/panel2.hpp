#pragma once
// The level-2 panel factorizations of GEQRT and TSQRT (LAPACK's GEQRT2 and TPQRT2 with l = 0) as
// loops over columns, calling only LAPACK's LARFG (level 1).
//
// Why not LAPACK's own: every OpenBLAS level-2/3 call takes a global lock to borrow a buffer, so
// with all cores calling small BLAS at once (the runtime's workers) the calls queue on it (OpenBLAS
// issues #478, #2712, #5589; figures in docs/architecture.md and docs/results/history.md). Level-1
// calls (LARFG's NRM2 and SCAL) take no lock. The loops are the same arithmetic as LAPACK's, column
// by column, with level-1 BLAS for the inner products and updates.
#include <cstddef>

#include <tessera/kernels_cpu/blas.hpp>

#include "detail.hpp"

namespace tessera::kernels::detail {

// T(0:i, i) := T(0:i, 0:i) T(0:i, i), T upper triangular: row r needs entries r.. of the column,
// which rows above it have not overwritten.
template <class T>
void upper_times_column(int i, T* Tf, int ldt) {
  T* y = at(Tf, ldt, 0, i);
  for (int r = 0; r < i; ++r) {
    T s = T(0);
    for (int c = r; c < i; ++c) s += *at(Tf, ldt, r, c) * y[c];
    y[r] = s;
  }
}

// QR of [A; B], A n x n upper triangular, B m x n (m > 0): A := R, B := V (the reflectors below
// the identity), Tf (n x n upper, ldt) := T. TPQRT2 with l = 0.
template <class T>
void tpqrt2_loops(int m, int n, T* A, int lda, T* B, int ldb, T* Tf, int ldt) {
  for (int i = 0; i < n; ++i) {
    T* bi = at(B, ldb, 0, i);
    T tau = T(0);
    blas::larfg(m + 1, at(A, lda, i, i), bi, 1, &tau);
    *at(Tf, ldt, i, i) = tau;
    // H_i = I - tau [e_i; b_i][e_i; b_i]^T on the columns right of i.
    for (int j = i + 1; j < n; ++j) {
      T* aij = at(A, lda, i, j);
      T* bj = at(B, ldb, 0, j);
      const T w = tau * (*aij + blas::dot(m, bi, 1, bj, 1));
      *aij -= w;
      blas::axpy(m, -w, bi, 1, bj, 1);
    }
  }
  // T(0:i, i) = -tau_i T(0:i, 0:i) V(:, 0:i)^T v_i, where v_j^T v_i = b_j^T b_i (the identity
  // parts are distinct unit vectors).
  for (int i = 1; i < n; ++i) {
    const T* bi = at(B, ldb, 0, i);
    const T tau = *at(Tf, ldt, i, i);
    for (int j = 0; j < i; ++j)
      *at(Tf, ldt, j, i) = -tau * blas::dot(m, at(B, ldb, 0, j), 1, bi, 1);
    upper_times_column(i, Tf, ldt);
  }
}

// QR of A (m x n, m >= n > 0): A := R above, V below the diagonal; Tf (n x n upper) := T. GEQRT2.
template <class T>
void geqrt2_loops(int m, int n, T* A, int lda, T* Tf, int ldt) {
  for (int i = 0; i < n; ++i) {
    T* aii = at(A, lda, i, i);
    T tau = T(0);
    blas::larfg(m - i, aii, at(A, lda, i + 1 < m ? i + 1 : i, i), 1, &tau);
    *at(Tf, ldt, i, i) = tau;
    const T diag = *aii;
    *aii = T(1);  // v_i = A(i:m, i) with its unit head, for the products below
    for (int j = i + 1; j < n; ++j) {
      T* aj = at(A, lda, i, j);
      const T w = tau * blas::dot(m - i, aii, 1, aj, 1);
      blas::axpy(m - i, -w, aii, 1, aj, 1);
    }
    *aii = diag;
  }
  // T(0:i, i) = -tau_i T(0:i, 0:i) V(i:m, 0:i)^T v_i (v_i is zero above row i).
  for (int i = 1; i < n; ++i) {
    T* aii = at(A, lda, i, i);
    const T diag = *aii;
    *aii = T(1);
    const T tau = *at(Tf, ldt, i, i);
    for (int j = 0; j < i; ++j)
      *at(Tf, ldt, j, i) = -tau * blas::dot(m - i, at(A, lda, i, j), 1, aii, 1);
    *aii = diag;
    upper_times_column(i, Tf, ldt);
  }
}

}  // namespace tessera::kernels::detail
