#pragma once
// Uniform [-1, 1) device fill from a counter-based hash: gigabytes in milliseconds, no cuRAND.
#include <cstddef>

#include <cuda_runtime.h>

namespace tessera::bench {

void fill_uniform(float* a, std::size_t n, unsigned long long seed, cudaStream_t stream);
void fill_uniform(double* a, std::size_t n, unsigned long long seed, cudaStream_t stream);

}  // namespace tessera::bench
