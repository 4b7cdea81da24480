#pragma once
// Small fills of device matrices for QR updating (qr/src/update_*.cpp): a factored panel's R
// written back with exact zeros below it, and identity blocks. Enqueued on `stream`.
#include <cuda_runtime.h>

#include <tessera/kernels_gpu/common.hpp>

namespace tessera::kernels {

// R (nb + below rows, nb columns, ldr) := [triu(P(0:nb, 0:nb)); 0]: a factored panel's R written
// back where it came from, exact zeros below the diagonal and in the below rows.
template <class T>
void gpu_triu_copy(int nb, int below, const T* P, int ldp, T* R, int ldr, cudaStream_t stream);

// A (p x p, lda) := I.
template <class T>
void gpu_identity(int p, T* A, int lda, cudaStream_t stream);

}  // namespace tessera::kernels
