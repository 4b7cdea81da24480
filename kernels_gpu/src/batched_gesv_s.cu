// Batched gesv in float: n = 1..32 (the kernels are in batched_lu.cuh; one file per operation and
// precision so that they compile in parallel).
#include "batched_lu.cuh"

namespace tessera::kernels {
template void gpu_batched_gesv<float>(int, int, gpu_batch<float>, int*, gpu_batch<float>, int*, long long, cudaStream_t);
}  // namespace tessera::kernels
