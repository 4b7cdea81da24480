#pragma once
// Candidate TSMQR (side left, trans; the tile-QR update) in a left-looking form with k-deep
// GEMMs instead of TPMQRT's ib-deep ones. Kept here, beside its measurement, because it lost:
// 1.86 ms against TPMQRT's 1.33 ms (double, nb = 256, ib = 32, one core of an AMD EPYC) and
// 1.72 against 1.33 ms on the GPU host's Xeon (OpenBLAS 0.3.21, OPENBLAS_CORETYPE=SKYLAKEX).
#include <cstddef>

namespace tessera::bench {

// Workspace elements: k * n + k * k.
std::size_t tsmqr_gemm_workspace(int n, int k);

// [A1(0:k, :); A2] := Q^T [A1(0:k, :); A2], Q from core_tsqrt (V: m2 x k, Tf: ib x k).
template <class T>
void tsmqr_left_trans_gemm(int m2, int n, int k, int ib, T* A1, int lda1, T* A2, int lda2,
                           const T* V, int ldv, const T* Tf, int ldt, T* work);

}  // namespace tessera::bench
