#include <tessera/kernels_gpu/gpu_finite.hpp>

#include "check.hpp"
#include "sizes.hpp"

namespace tessera::kernels {
namespace {

// One block per column strip; one atomic per block that found anything.
template <class T>
__global__ void count_non_finite_kernel(int m, int n, const T* __restrict__ A, int lda, unsigned* count) {
  unsigned found = 0;
  const int c = static_cast<int>(blockIdx.y);
  const T* col = A + static_cast<std::ptrdiff_t>(c) * lda;
  for (int r = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); r < m;
       r += static_cast<int>(gridDim.x * blockDim.x))
    found += isfinite(col[r]) ? 0u : 1u;
  found = __reduce_add_sync(0xffffffffu, found);
  if ((threadIdx.x & 31) == 0 && found) atomicAdd(count, found);
  (void)n;
}

}  // namespace

template <class T>
void gpu_count_non_finite(int m, int n, const T* A, int lda, unsigned* count, cudaStream_t stream) {
  constexpr const char* kernel = "gpu_count_non_finite";
  detail::require_ge(kernel, "m", m, "0", 0);
  detail::require_ge(kernel, "n", n, "0", 0);
  detail::require_ge(kernel, "lda", lda, "max(1, m)", detail::at_least_1(m));
  if (m == 0 || n == 0) return;
  detail::require_ptr(kernel, "A", A);
  detail::require_ptr(kernel, "count", count);
  constexpr int threads = 256;
  const int strips = detail::min_int((m + threads - 1) / threads, 8);
  count_non_finite_kernel<T><<<dim3(static_cast<unsigned>(strips), static_cast<unsigned>(n)), threads, 0, stream>>>(
      m, n, A, lda, count);
  detail::check(kernel, "count_non_finite_kernel launch", cudaGetLastError());
}

template void gpu_count_non_finite<float>(int, int, const float*, int, unsigned*, cudaStream_t);
template void gpu_count_non_finite<double>(int, int, const double*, int, unsigned*, cudaStream_t);

}  // namespace tessera::kernels
