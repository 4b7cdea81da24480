#pragma once
// A device matrix copied into another precision (the single-precision QR computed in double on
// GPUs whose FP64 tensor cores outrun their FP32 units: qr/src/blocked_qr_gpu_in_double.cpp).
#include <cuda_runtime.h>

#include <tessera/kernels_gpu/common.hpp>

namespace tessera::kernels {

// B (m x n, ldb) := A (m x n, lda) rounded to To (round to nearest; beyond To's range: +-Inf, as
// a cast gives). Enqueued on `stream`; A and B must not overlap.
template <class From, class To>
void gpu_convert(int m, int n, const From* a, int lda, To* b, int ldb, cudaStream_t stream);

}  // namespace tessera::kernels
