#include "fill.hpp"

namespace tessera::bench {
namespace {

template <class T>
__global__ void fill_kernel(T* a, std::size_t n, unsigned long long seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride) {
    unsigned long long z = seed + 0x9E3779B97F4A7C15ull * (i + 1);  // splitmix64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    a[i] = static_cast<T>(static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0);
  }
}

template <class T>
void fill(T* a, std::size_t n, unsigned long long seed, cudaStream_t stream) {
  fill_kernel<T><<<1024, 256, 0, stream>>>(a, n, seed);
}

}  // namespace

void fill_uniform(float* a, std::size_t n, unsigned long long seed, cudaStream_t stream) {
  fill(a, n, seed, stream);
}
void fill_uniform(double* a, std::size_t n, unsigned long long seed, cudaStream_t stream) {
  fill(a, n, seed, stream);
}

}  // namespace tessera::bench
