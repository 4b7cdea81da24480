#pragma once
// C := op(H) C for one block of jb reflectors H = I - V T V^T from GEQRT (V unit lower
// trapezoidal, m x jb; T upper triangular jb x jb), C m x n. Same flops as LAPACK's LARFB, but
// LARFB's left-side path works on C^T: it copies C's rows into W with a strided loop and
// subtracts W^T back the same way. Here W = V^T C (jb x n) keeps C's columns contiguous, which
// bench/kernels measured faster for GEMQRT and GEQRT at nb = 256.
#include <algorithm>
#include <cstddef>

#include <tessera/kernels_cpu/blas.hpp>

#include "detail.hpp"

namespace tessera::kernels::detail {

// W: jb x n, ldw = jb (caller workspace).
template <class T>
void larfb_left(bool transpose, int m, int n, int jb, const T* V, int ldv, const T* Tb, int ldt,
                T* C, int ldc, T* W) {
  if (m == 0 || n == 0 || jb == 0) return;
  const int m2 = m - jb;  // rows below the unit triangle V1
  for (int j = 0; j < n; ++j) std::copy_n(at(C, ldc, 0, j), jb, at(W, jb, 0, j));
  // W = V1^T C1
  blas::trmm(CblasLeft, CblasLower, CblasTrans, CblasUnit, jb, n, T(1), V, ldv, W, jb);
  if (m2 > 0)  // W += V2^T C2
    blas::gemm(CblasTrans, CblasNoTrans, jb, n, m2, T(1), at(V, ldv, jb, 0), ldv, at(C, ldc, jb, 0),
               ldc, T(1), W, jb);
  // W = op(T) W
  blas::trmm(CblasLeft, CblasUpper, transpose ? CblasTrans : CblasNoTrans, CblasNonUnit, jb, n, T(1),
             Tb, ldt, W, jb);
  if (m2 > 0)  // C2 -= V2 W
    blas::gemm(CblasNoTrans, CblasNoTrans, m2, n, jb, T(-1), at(V, ldv, jb, 0), ldv, W, jb, T(1),
               at(C, ldc, jb, 0), ldc);
  // W = V1 W
  blas::trmm(CblasLeft, CblasLower, CblasNoTrans, CblasUnit, jb, n, T(1), V, ldv, W, jb);
  for (int j = 0; j < n; ++j) {  // C1 -= W
    T* c = at(C, ldc, 0, j);
    const T* w = at(W, jb, 0, j);
    for (int i = 0; i < jb; ++i) c[i] -= w[i];
  }
}

}  // namespace tessera::kernels::detail
