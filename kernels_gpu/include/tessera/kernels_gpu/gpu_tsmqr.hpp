#pragma once
// One TSQRT's reflectors applied on the GPU: [A1; A2] := Q^T [A1; A2], Q = I - V T V^T with
// V = [I; V2]. LAPACK TPMQRT (side left, trans, l = 0) semantics; V2 and the ib-blocked T as
// core_tsqrt / LAPACK TPQRT leave them.
//
// gpu_tsmqr builds the full kk x kk T once (off-diagonal blocks T12 = -T11 (V2_1^T V2_2) T22: the
// identity parts of two different blocks are orthogonal) and then works with GEMMs only:
//   W = A1 + V2^T A2;   A1 -= T^T W;   A2 -= (V2 T^T) W
// (the seed's Figure 4c: the in-place TRMM turned into an out-of-place square GEMM; cuBLAS's TRMM
// and GEAM cost more than the extra kk^2 n flops, see bench/gpu). It is gpu_sssmqr with one tile
// row; use gpu_sssmqr_prepare / gpu_sssmqr_apply to build the factors once and reuse them.
// gpu_tsmqr_blocked is LAPACK's ib-blocked sequence on cuBLAS (kk/ib rounds with inner dimension
// ib, TRMM by T_jj), kept as the baseline.
#include <cuda_runtime.h>

#include <tessera/kernels_gpu/common.hpp>

namespace tessera::kernels {

// Elements of work gpu_tsqrt_full_t needs: kk * kk.
std::size_t gpu_tsqrt_full_t_workspace_size(int kk);

// Tf (kk x kk, ldtf >= kk) := the full upper triangular T of Q from V2 (m x kk, ldv) and the
// ib-blocked T (ib x kk, ldt >= min(ib, kk)). The strict lower triangle of Tf is set to zero.
template <class T>
void gpu_tsqrt_full_t(int m, int kk, int ib, const T* V, int ldv, const T* Tb, int ldt, T* Tf,
                      int ldtf, T* work, std::size_t lwork, cublasHandle_t handle);

// Elements of work gpu_tsmqr needs: (kk + m) * kk + max(kk * kk, kk * n).
std::size_t gpu_tsmqr_workspace_size(int m, int n, int kk);

// [A1; A2] := Q^T [A1; A2]. A1: kk x n (lda1), only these kk rows are touched; A2: m x n (lda2);
// V: m x kk (ldv); Tb: ib x kk (ldt).
template <class T>
void gpu_tsmqr(int m, int n, int kk, int ib, T* A1, int lda1, T* A2, int lda2, const T* V,
               int ldv, const T* Tb, int ldt, T* work, std::size_t lwork, cublasHandle_t handle);

// Elements of work gpu_tsmqr_blocked needs: min(ib, kk) * n.
std::size_t gpu_tsmqr_blocked_workspace_size(int kk, int ib, int n);

// Same result as gpu_tsmqr, computed with the ib-blocked T directly.
template <class T>
void gpu_tsmqr_blocked(int m, int n, int kk, int ib, T* A1, int lda1, T* A2, int lda2, const T* V,
                       int ldv, const T* Tb, int ldt, T* work, std::size_t lwork,
                       cublasHandle_t handle);

// The largest kk gpu_tsmqr_fused takes.
inline constexpr int gpu_tsmqr_fused_max_kk = 32;

// The same product as gpu_tsmqr in one kernel on `stream`, for kk <= gpu_tsmqr_fused_max_kk, with
// the full T (kk x kk upper triangular, ldt; its lower part is not read) instead of the ib-blocked
// one: gpu_tsmqr's cuBLAS calls cost more than their work when kk is this small (the QR updates'
// added rows, issue #18). Each thread block takes 16 columns of A1 and A2, so n >= 2000 or so
// fills an H100.
template <class T>
void gpu_tsmqr_fused(int m, int n, int kk, T* A1, int lda1, T* A2, int lda2, const T* V, int ldv,
                     const T* Tf, int ldt, cudaStream_t stream);

}  // namespace tessera::kernels
