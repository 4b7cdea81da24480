// Batched getrf in double: n = 1..32 (the kernels are in batched_lu.cuh; one file per operation and
// precision so that they compile in parallel).
#include "batched_lu.cuh"

namespace tessera::kernels {
template void gpu_batched_getrf<double>(int, gpu_batch<double>, int*, int*, long long, cudaStream_t);
}  // namespace tessera::kernels

namespace tessera::kernels {
int gpu_batched_per_block(int n) {
  check::require_ge("tessera::kernels::gpu_batched_per_block", "n", n, "1", 1);
  check::require_le("tessera::kernels::gpu_batched_per_block", "n", n, "gpu_batched_max_n", gpu_batched_max_n);
  int p = 1;
  while (p < n) p *= 2;  // the group size of batched_lu.cuh
  return batched_detail::threads_per_block / p;
}
}  // namespace tessera::kernels
