#pragma once
// The full T of a QR (Q = I - V T V^T, T n x n upper triangular, LAPACK xGEQRT3's output) and
// S = V T^T, built one panel at a time from the panels' own T (the seed 001's Algorithm 1), and
// the blocks of Q they give without forming Q.
//
// Storage, as the seed's: one m x n array ST holds T on and above the diagonal and S on and below
// it (S is lower trapezoidal, T upper triangular, and both have the reflectors' tau on the
// diagonal, so nothing is lost). V is the unit lower trapezoid a GEQRT leaves below R in A.
#include <cstddef>

#include <tessera/kernels_cpu/common.hpp>

namespace tessera::kernels {

// Elements of work core_full_t_step needs: 2 * k * w.
std::size_t core_full_t_step_workspace_size(int k, int w);

// Step k of Algorithm 1: the reflectors of columns k..k+w-1 (their V in A(k:m, k:k+w), their own
// T, Tkk (w x w upper, ldt), as GEQRT left them) join the first k, whose T and S are in ST:
//   T(0:k, k:k+w) = -S(k:m, 0:k)^T V_k Tkk,  S(k:m, 0:k) += V_k T(0:k, k:k+w)^T,  S(k:m, k:k+w) = V_k Tkk^T,
// and Tkk goes to ST's diagonal block. V_k is zero above row k and triangular in its top w rows:
// no flop touches those zeros. A (m x n, lda >= m), ST (m x n, ldst >= m), m >= k + w.
template <class T>
void core_full_t_step(int m, int k, int w, const T* A, int lda, const T* Tkk, int ldt, T* ST, int ldst, T* work);

// ST of the whole factorization from a GEQRT's A and blocked T (nb x n, ldt): every step in order.
// work: core_full_t_step_workspace_size(n, nb) elements.
template <class T>
void core_full_t(int m, int n, int nb, const T* A, int lda, const T* Tb, int ldt, T* ST, int ldst, T* work);

// Elements of work core_q_block and core_apply_q_block need for a block of rb rows and cb columns
// of Q (and nrhs right-hand sides): (rb + cb) * p + p * nrhs with p = min(n, r0 + rb, c0 + cb).
std::size_t core_q_block_workspace_size(int n, int r0, int rb, int c0, int cb, int nrhs);

// Qb (rb x cb, ldq) := Q(r0:r0+rb, c0:c0+cb) = I - V(r0:r0+rb, 0:p) S(c0:c0+cb, 0:p)^T: one GEMM
// whose inner dimension p = min(n, r0 + rb, c0 + cb) stops where V's or S's rows end in zeros.
template <class T>
void core_q_block(int m, int n, int r0, int rb, int c0, int cb, const T* A, int lda, const T* ST, int ldst, T* Qb,
                  int ldq, T* work);

// Y := op(Qb) X for the same block, without forming it: trans 'N', X is cb x nrhs and Y rb x nrhs;
// 'T', X is rb x nrhs and Y cb x nrhs. Two GEMMs through a p x nrhs intermediate.
template <class T>
void core_apply_q_block(char trans, int m, int n, int r0, int rb, int c0, int cb, int nrhs, const T* A, int lda,
                        const T* ST, int ldst, const T* X, int ldx, T* Y, int ldy, T* work);

}  // namespace tessera::kernels
