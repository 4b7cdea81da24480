// Batched getrf in float: n = 1..32 (the kernels are in batched_lu.cuh; one file per operation and
// precision so that they compile in parallel).
#include "batched_lu.cuh"

namespace tessera::kernels {
template void gpu_batched_getrf<float>(int, gpu_batch<float>, int*, int*, long long, cudaStream_t);
}  // namespace tessera::kernels

namespace tessera::kernels {
template int gpu_batched_per_block<float>(int);
}  // namespace tessera::kernels
