#pragma once
// Small fills of device matrices for QR updating (qr/src/update_*.cpp): a factored panel's R
// written back with exact zeros below it (or split from its V), identity blocks, and a triangle
// moved up and left in place. Enqueued on `stream`.
#include <cuda_runtime.h>

#include <tessera/kernels_gpu/common.hpp>

namespace tessera::kernels {

// R (nb + below rows, nb columns, ldr) := [triu(P(0:nb, 0:nb)); 0]: a factored panel's R written
// back where it came from, exact zeros below the diagonal and in the below rows.
template <class T>
void gpu_triu_copy(int nb, int below, const T* P, int ldp, T* R, int ldr, cudaStream_t stream);

// A (nb + below rows, nb columns, lda), a panel factored in place (GEQRT form): V (same shape,
// ldv) := its reflectors with the unit diagonal and the zeros above it explicit (a plain GEMM
// operand), and A := its R with exact zeros below the diagonal. A and V must not overlap.
template <class T>
void gpu_split_panel(int nb, int below, T* A, int lda, T* V, int ldv, cudaStream_t stream);

// A (p x p, lda) := I.
template <class T>
void gpu_identity(int p, T* A, int lda, cudaStream_t stream);

// In place: A's upper triangle of order s (A(i, j), i <= j < s) := the entries dr rows below and
// dc columns right of it (A(i + dr, j + dc); those may lie beyond s), the strict lower part and
// everything else untouched. One thread a chain (i, j) <- (i + dr, j + dc) <- (i + 2 dr, j + 2 dc)
// ..., each entry read before it is written, so the overlap needs no buffer: one read and one
// write an entry, where two 2-D copies through a buffer move the whole square twice. dr >= 1,
// 0 <= dc <= dr; a chain has about s / dr entries, so meant for dr not far below s / 64.
template <class T>
void gpu_shift_upper(int s, int dr, int dc, T* A, int lda, cudaStream_t stream);

}  // namespace tessera::kernels
