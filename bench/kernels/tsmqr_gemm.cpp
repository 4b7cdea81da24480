// Left-looking TSMQR. With Y_j = [E_j; V_j] and W_i the already applied block products, block j
// sees A1_j + V_j^T A2 - sum_{i<j} (V_j^T V_i) W_i, so V^T A2 and G = V^T V are computed once with
// k-deep GEMM/SYRK, the short loop only does block-triangular corrections, and A2 -= V W is one
// GEMM. Flops: 4 m2 n k + m2 k^2 + n k^2 (about 6 nb^3 against TPMQRT's 4 nb^3).
#include "tsmqr_gemm.hpp"

#include <algorithm>
#include <tessera/kernels_cpu/blas.hpp>

namespace tessera::bench {

std::size_t tsmqr_gemm_workspace(int n, int k) {
  return static_cast<std::size_t>(k) * static_cast<std::size_t>(n + k);
}

template <class T>
void tsmqr_left_trans_gemm(int m2, int n, int k, int ib, T* A1, int lda1, T* A2, int lda2,
                           const T* V, int ldv, const T* Tf, int ldt, T* work) {
  if (m2 == 0 || n == 0 || k == 0) return;
  T* W = work;                                    // k x n
  T* G = work + static_cast<std::size_t>(k) * n;  // k x k, lower triangle
  const auto at = [](auto* p, int ld, int i, int j) {
    return p + i + static_cast<std::ptrdiff_t>(j) * ld;
  };
  for (int j = 0; j < n; ++j) std::copy_n(at(A1, lda1, 0, j), k, at(W, k, 0, j));
  // W = A1 + V^T A2, G = V^T V
  blas::gemm(CblasTrans, CblasNoTrans, k, n, m2, T(1), V, ldv, A2, lda2, T(1), W, k);
  blas::syrk(CblasLower, CblasTrans, k, m2, T(1), V, ldv, T(0), G, k);
  for (int j0 = 0; j0 < k; j0 += ib) {
    const int jb = std::min(ib, k - j0);
    if (j0 > 0)
      blas::gemm(CblasNoTrans, CblasNoTrans, jb, n, j0, T(-1), at(G, k, j0, 0), k, W, k, T(1),
                 at(W, k, j0, 0), k);
    blas::trmm(CblasLeft, CblasUpper, CblasTrans, CblasNonUnit, jb, n, T(1), at(Tf, ldt, 0, j0),
               ldt, at(W, k, j0, 0), k);
  }
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < k; ++i) *at(A1, lda1, i, j) -= *at(W, k, i, j);
  // A2 -= V W
  blas::gemm(CblasNoTrans, CblasNoTrans, m2, n, k, T(-1), V, ldv, W, k, T(1), A2, lda2);
}

template void tsmqr_left_trans_gemm<float>(int, int, int, int, float*, int, float*, int,
                                           const float*, int, const float*, int, float*);
template void tsmqr_left_trans_gemm<double>(int, int, int, int, double*, int, double*, int,
                                            const double*, int, const double*, int, double*);

}  // namespace tessera::bench
