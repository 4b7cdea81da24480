// A^T B for tall A and B with a small result (the W = V^T C of a panel, V^T V): cuBLAS gives such
// a GEMM a handful of thread blocks, one per output tile, each looping over all m rows (a 32768 x
// 256 panel against 256 columns ran at 1.8 TFLOP/s on an H100). Splitting m into chunks, one
// strided-batched GEMM over them and a sum of the partial results keeps every SM busy.
#include "check.hpp"
#include "engine.hpp"

namespace tessera::kernels::detail {
namespace {

constexpr int tile = 128;         // output tile edge assumed for cuBLAS's kernels
constexpr int target_blocks = 264;  // two per SM of an H100
constexpr int min_chunk = 1024;   // rows per chunk, so each batched GEMM keeps a long inner loop

template <class T>
__global__ void sum_parts_kernel(int k, int n, int parts, const T* __restrict__ P, T beta, T* __restrict__ C,
                                 int ldc) {
  const long long total = static_cast<long long>(k) * n;
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    T s = 0;
    for (int p = 0; p < parts; ++p) s += P[e + p * total];
    const int i = static_cast<int>(e % k), j = static_cast<int>(e / k);
    T& c = C[i + static_cast<std::ptrdiff_t>(j) * ldc];
    c = beta == T(0) ? s : s + beta * c;
  }
}

}  // namespace

int split_k_parts(int k, int n, int m) {
  if (k <= 0 || n <= 0 || m < 4 * min_chunk) return 1;
  const long long tiles = static_cast<long long>((k + tile - 1) / tile) * ((n + tile - 1) / tile);
  if (tiles >= target_blocks / 2) return 1;
  const long long want = (target_blocks + tiles - 1) / tiles, most = m / min_chunk;
  const long long parts = want < most ? want : most;
  return static_cast<int>(parts > 64 ? 64 : parts);
}

std::size_t split_k_workspace(int k, int n, int m) {
  const int parts = split_k_parts(k, n, m);
  return parts > 1 ? static_cast<std::size_t>(parts) * static_cast<std::size_t>(k) * static_cast<std::size_t>(n) : 0;
}

template <class T>
void gemm_tn_tall(const char* kernel, cublasHandle_t h, int k, int n, int m, const T* A, int lda, const T* B,
                  int ldb, T beta, T* C, int ldc, T* work, cudaStream_t stream) {
  const int parts = split_k_parts(k, n, m);
  if (parts <= 1) {
    check(kernel, "gemm (A^T B)", gemm(h, CUBLAS_OP_T, CUBLAS_OP_N, k, n, m, T(1), A, lda, B, ldb, beta, C, ldc));
    return;
  }
  const int chunk = m / parts, rest = m - parts * chunk;
  const long long size = static_cast<long long>(k) * n;
  check(kernel, "gemm_strided (A^T B in chunks)",
        gemm_strided(h, CUBLAS_OP_T, CUBLAS_OP_N, k, n, chunk, T(1), A, lda, chunk, B, ldb, chunk, T(0), work, k,
                     size, parts));
  const int threads = 256;
  long long blocks = (size + threads - 1) / threads;
  blocks = blocks > 1024 ? 1024 : blocks;
  sum_parts_kernel<T><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(k, n, parts, work, beta, C, ldc);
  check(kernel, "sum_parts_kernel launch", cudaGetLastError());
  if (rest > 0) {
    const std::ptrdiff_t off = static_cast<std::ptrdiff_t>(parts) * chunk;
    check(kernel, "gemm (A^T B, last rows)",
          gemm(h, CUBLAS_OP_T, CUBLAS_OP_N, k, n, rest, T(1), A + off, lda, B + off, ldb, T(1), C, ldc));
  }
}

#define TESSERA_SPLIT_K_INSTANTIATE(T)                                                                      \
  template void gemm_tn_tall<T>(const char*, cublasHandle_t, int, int, int, const T*, int, const T*, int, T, \
                                T*, int, T*, cudaStream_t);
TESSERA_SPLIT_K_INSTANTIATE(float)
TESSERA_SPLIT_K_INSTANTIATE(double)
#undef TESSERA_SPLIT_K_INSTANTIATE

}  // namespace tessera::kernels::detail
