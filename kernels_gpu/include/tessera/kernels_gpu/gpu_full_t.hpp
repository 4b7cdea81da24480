#pragma once
// The full T and S = V T^T of a QR on the GPU, and what they are for: Q applied in one step, and
// blocks of Q formed or applied without forming Q. The same operations and storage as the CPU's
// (tessera/kernels_cpu/core_full_t.hpp): one m x n array ST with T on and above the diagonal and S
// on and below it (both hold tau there).
#include <tessera/kernels_gpu/common.hpp>

namespace tessera::kernels {

// Elements of work gpu_full_t_step needs: (m - k) * w for its copy of V_k, k * w for X.
std::size_t gpu_full_t_step_workspace_size(int m, int k, int w);

// Step k of the seed 001's Algorithm 1 (see core_full_t_step): columns k..k+w-1's reflectors (V
// in A(k:m, k:k+w), their T in Tkk) join the first k in ST. V_k copied with its triangle written
// out, two GEMMs with inner dimensions m - k and w, TRMMs by Tkk, one small kernel for the
// diagonal block; all on the handle's stream.
template <class T>
void gpu_full_t_step(int m, int k, int w, const T* A, int lda, const T* Tkk, int ldt, T* ST, int ldst, T* work,
                     std::size_t lwork, cublasHandle_t handle);

// Elements of work gpu_apply_q_full_t needs: 2 * k * n.
std::size_t gpu_apply_q_full_t_workspace_size(int n, int k);

// C (m x n, ldc) := op(Q) C with Q = I - V T V^T for all k reflectors at once (V: A's unit lower
// trapezoid, m x k; Tf: the full k x k T, upper, ldt): W = V^T C, W = op(T) W, C -= V W, V's
// triangle by TRMMs.
template <class T>
void gpu_apply_q_full_t(cublasOperation_t op, int m, int n, int k, const T* V, int ldv, const T* Tf, int ldt, T* C,
                        int ldc, T* work, std::size_t lwork, cublasHandle_t handle);

// Elements of work gpu_q_block and gpu_apply_q_block need (core_q_block_workspace_size's).
std::size_t gpu_q_block_workspace_size(int n, int r0, int rb, int c0, int cb, int nrhs);

// Qb (rb x cb, ldq) := Q(r0:r0+rb, c0:c0+cb) = I - V(r0:r0+rb, :) S(c0:c0+cb, :)^T (see core_q_block).
template <class T>
void gpu_q_block(int m, int n, int r0, int rb, int c0, int cb, const T* A, int lda, const T* ST, int ldst, T* Qb,
                 int ldq, T* work, std::size_t lwork, cublasHandle_t handle);

// Y := op(Qb) X for that block without forming it (see core_apply_q_block).
template <class T>
void gpu_apply_q_block(cublasOperation_t op, int m, int n, int r0, int rb, int c0, int cb, int nrhs, const T* A,
                       int lda, const T* ST, int ldst, const T* X, int ldx, T* Y, int ldy, T* work,
                       std::size_t lwork, cublasHandle_t handle);

}  // namespace tessera::kernels
