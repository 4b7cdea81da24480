#pragma once
// Small fills of device matrices for QR updating (qr/src/update_*.cpp): a factored panel's R
// written back with exact zeros below it (or split from its V), and identity blocks. Enqueued on `stream`.
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

}  // namespace tessera::kernels
