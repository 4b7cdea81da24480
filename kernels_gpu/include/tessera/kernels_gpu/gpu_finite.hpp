#pragma once
// Counts NaN and Inf entries of a device matrix: the check a GPU factorization makes of its input
// where the matrix already is, instead of a pass over host memory on the CPUs.
#include <cuda_runtime.h>

#include <tessera/kernels_gpu/common.hpp>

namespace tessera::kernels {

// *count += the number of non-finite entries of A (m x n, lda), enqueued on stream. count points
// to memory the device can write: device memory, or pinned host memory read after the stream's
// work is done.
template <class T>
void gpu_count_non_finite(int m, int n, const T* A, int lda, unsigned* count, cudaStream_t stream);

}  // namespace tessera::kernels
