#pragma once
// [A; B] := H^T [A; B] for one block of k TSQRT reflectors H = I - [I; V] T [I; V]^T (V full,
// m x k; T upper triangular k x k), A k x n, B m x n: LAPACK TPRFB's left/transpose case with
// l = 0, written out so the recursive TS panel can put W where its T12 block goes.
#include <algorithm>

#include <tessera/kernels_cpu/blas.hpp>

#include "detail.hpp"

namespace tessera::kernels::detail {

// W: k x n (ldw >= k), caller workspace.
template <class T>
void tsrfb_left_trans(int m, int n, int k, const T* V, int ldv, const T* Tb, int ldt, T* A, int lda,
                      T* B, int ldb, T* W, int ldw) {
  if (n == 0 || k == 0) return;
  for (int j = 0; j < n; ++j) std::copy_n(at(A, lda, 0, j), k, at(W, ldw, 0, j));
  if (m > 0)  // W = A + V^T B
    blas::gemm(CblasTrans, CblasNoTrans, k, n, m, T(1), V, ldv, B, ldb, T(1), W, ldw);
  // W = T^T W
  blas::trmm(CblasLeft, CblasUpper, CblasTrans, CblasNonUnit, k, n, T(1), Tb, ldt, W, ldw);
  for (int j = 0; j < n; ++j) {  // A -= W
    T* a = at(A, lda, 0, j);
    const T* w = at(W, ldw, 0, j);
    for (int i = 0; i < k; ++i) a[i] -= w[i];
  }
  if (m > 0)  // B -= V W
    blas::gemm(CblasNoTrans, CblasNoTrans, m, n, k, T(-1), V, ldv, W, ldw, T(1), B, ldb);
}

}  // namespace tessera::kernels::detail
