// Device matrices copied into another precision (tessera/kernels_gpu/gpu_convert.hpp).
#include <tessera/kernels_gpu/gpu_convert.hpp>

#include <algorithm>

#include "check.hpp"

namespace tessera::kernels {
namespace {

// A column per blockIdx.y (strided past the grid's limit), rows across the threads: each entry
// read and written once, consecutive threads on consecutive addresses.
template <class From, class To>
__global__ void convert_kernel(int m, int n, const From* a, int lda, To* b, int ldb) {
  const int r = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (r >= m) return;
  for (int c = static_cast<int>(blockIdx.y); c < n; c += static_cast<int>(gridDim.y))
    b[r + static_cast<std::size_t>(c) * ldb] = static_cast<To>(a[r + static_cast<std::size_t>(c) * lda]);
}

}  // namespace

template <class From, class To>
void gpu_convert(int m, int n, const From* a, int lda, To* b, int ldb, cudaStream_t stream) {
  constexpr const char* kernel = "gpu_convert";
  detail::require_ge(kernel, "m", m, "0", 0);
  detail::require_ge(kernel, "n", n, "0", 0);
  if (m == 0 || n == 0) return;
  detail::require_ge(kernel, "lda", lda, "m", m);
  detail::require_ge(kernel, "ldb", ldb, "m", m);
  constexpr int threads = 256;
  const dim3 grid(static_cast<unsigned>((m + threads - 1) / threads), static_cast<unsigned>(std::min(n, 65535)));
  convert_kernel<From, To><<<grid, threads, 0, stream>>>(m, n, a, lda, b, ldb);
  detail::check(kernel, "convert_kernel launch", cudaGetLastError());
}

template void gpu_convert<float, double>(int, int, const float*, int, double*, int, cudaStream_t);
template void gpu_convert<double, float>(int, int, const double*, int, float*, int, cudaStream_t);

}  // namespace tessera::kernels
