// Batched getrs in float: n = 1..32 (the kernels are in batched_lu.cuh; one file per operation and
// precision so that they compile in parallel).
#include "batched_lu.cuh"

namespace tessera::kernels {
template void gpu_batched_getrs<float>(int, int, gpu_batch<float>, const int*, gpu_batch<float>, long long, cudaStream_t);
}  // namespace tessera::kernels
