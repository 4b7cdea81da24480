#pragma once
// The aggregated GPU update of hybrid tile QR (seed, sections 3.2-3.4): one call replaces the
// TSMQR tasks of a whole tile column of step k over a range of columns.
//
// For i = 0 .. count-1, in order (A1 is shared, so the i are sequential; columns are not):
//     [A1; A2_i] := Q_i^T [A1; A2_i],     Q_i = I - [I; V_i] T_i [I; V_i]^T.
// The device matrix is column-major (not tile layout), so the tile rows below tile row k form one
// block and a tile row over many tile columns is one GEMM operand:
//   A1    kk x n       at A1 (lda1)            tile row k, its first kk rows
//   A2_i  m_i x n      at A2 + i*nb (lda2)     m_i = nb, except m_last for i = count-1
//   V_i   m_i x kk     at V + i*nb (ldv)       the panel below tile (k, k), as TSQRT left it
//   T_i   ib x kk      at Tb + i*strideT (ldt) LAPACK TPQRT's ib-blocked layout
// strideT covers both a packed array of T tiles (ldt = ib, strideT = ib * kk) and a column-major
// T matrix with ib rows per tile row (ldt = its leading dimension, strideT = ib).
//
// gpu_sssmqr = gpu_sssmqr_prepare + gpu_sssmqr_apply:
//   prepare (once per step): the full T_i of every TSQRT (one batched GEMM for V_i^T V_i, one
//     small kernel) and the factors Z_i = [T_i^T; V_i T_i^T] ((kk + m_i) x kk, leading dimension
//     kk + nb, at factors + i * (kk + nb) * kk; one more batched GEMM);
//   apply, in batches of up to gpu_sssmqr_batch_rows rows (as many as the workspace holds):
//     W_i = V_i^T A2_i for the batch (one strided-batched GEMM); for each i in order,
//     W_i += A1, A1 -= T_i^T W_i; then A2_i -= (V_i T_i^T) W_i for the batch (one more).
//     Only the A1 chain is sequential, and cuBLAS runs the batched GEMMs (inner dimension nb)
//     faster than one at a time. With room for one row: W = A1 + V_i^T A2_i (copy + GEMM), then
//     [A1; A2_i] -= Z_i W (one strided batch of two GEMMs when the shapes allow).
// Call the two separately to reuse the factors over several column ranges of one step.
#include <tessera/kernels_gpu/common.hpp>

namespace tessera::kernels {

// Elements of the prepared factors: count * (kk + nb) * kk.
std::size_t gpu_sssmqr_factors_size(int count, int nb, int kk);
// Elements of work gpu_sssmqr_prepare needs (the Gram matrices V_i^T V_i): count * kk * kk.
std::size_t gpu_sssmqr_prepare_workspace_size(int count, int kk);
// Most rows gpu_sssmqr_apply batches together: larger batches were no faster on an H200
// (tessera_sssmqr_bench, "apply, R rows/batch"; docs/architecture.md).
inline constexpr int gpu_sssmqr_batch_rows = 8;
// Elements of work gpu_sssmqr_apply needs to batch min(count, gpu_sssmqr_batch_rows) rows over n
// columns: that many times kk * n. Less, down to kk * n, batches fewer.
std::size_t gpu_sssmqr_apply_workspace_size(int count, int kk, int n);
// Elements of work gpu_sssmqr needs: factors + max(prepare, apply); with less, down to factors +
// max(prepare, apply for count 1), it batches fewer rows.
std::size_t gpu_sssmqr_workspace_size(int count, int nb, int kk, int n);

template <class T>
void gpu_sssmqr_prepare(int count, int nb, int m_last, int kk, int ib, const T* V, int ldv,
                        const T* Tb, int ldt, std::ptrdiff_t strideT, T* factors, T* work,
                        std::size_t lwork, cublasHandle_t handle);

template <class T>
void gpu_sssmqr_apply(int count, int nb, int m_last, int n, int kk, T* A1, int lda1, T* A2,
                      int lda2, const T* V, int ldv, const T* factors, T* work,
                      std::size_t lwork, cublasHandle_t handle);

template <class T>
void gpu_sssmqr(int count, int nb, int m_last, int n, int kk, int ib, T* A1, int lda1, T* A2,
                int lda2, const T* V, int ldv, const T* Tb, int ldt, std::ptrdiff_t strideT,
                T* work, std::size_t lwork, cublasHandle_t handle);

// Elements of work gpu_sssmqr_blocked needs: min(ib, kk) * n.
std::size_t gpu_sssmqr_blocked_workspace_size(int kk, int ib, int n);

// The same update with LAPACK's ib-blocked sequence (gpu_tsmqr_blocked per i): the baseline.
template <class T>
void gpu_sssmqr_blocked(int count, int nb, int m_last, int n, int kk, int ib, T* A1, int lda1,
                        T* A2, int lda2, const T* V, int ldv, const T* Tb, int ldt,
                        std::ptrdiff_t strideT, T* work, std::size_t lwork,
                        cublasHandle_t handle);

}  // namespace tessera::kernels
