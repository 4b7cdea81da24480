// Batched inverse in double: n = 1..32 (the kernels are in batched_lu.cuh; one file per operation and
// precision so that they compile in parallel).
#include "batched_lu.cuh"

namespace tessera::kernels {
template void gpu_batched_inverse<double>(int, gpu_batch<double>, gpu_batch<double>, int*, long long, cudaStream_t);
}  // namespace tessera::kernels
