// The small element-wise kernels of the full T and S (gpu_full_t.cpp): the diagonal block of ST,
// rows of V or S with their zeros made explicit, and the identity's part in a block of Q.
#include "check.hpp"
#include "engine.hpp"

namespace tessera::kernels::detail {
namespace {

constexpr int threads = 256;

unsigned blocks_for(long long count) { return static_cast<unsigned>((count + threads - 1) / threads); }

// D (w x w): Tkk on and above the diagonal, (L Tkk^T)(i, j) = Tkk(j, i) + sum_{p=j..i-1} L(i, p) Tkk(j, p)
// below it (L unit lower: V's top triangle). One thread per entry; w <= a panel width.
template <class T>
__global__ void st_diagonal_block_kernel(int w, const T* __restrict__ V, int ldv, const T* __restrict__ Tkk, int ldt,
                                         T* __restrict__ D, int ldd) {
  const long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= static_cast<long long>(w) * w) return;
  const int i = static_cast<int>(e % w), j = static_cast<int>(e / w);
  if (i <= j) {
    D[i + static_cast<std::ptrdiff_t>(j) * ldd] = Tkk[i + static_cast<std::ptrdiff_t>(j) * ldt];
    return;
  }
  T acc = Tkk[j + static_cast<std::ptrdiff_t>(i) * ldt];
  for (int p = j; p < i; ++p) acc += V[i + static_cast<std::ptrdiff_t>(p) * ldv] * Tkk[j + static_cast<std::ptrdiff_t>(p) * ldt];
  D[i + static_cast<std::ptrdiff_t>(j) * ldd] = acc;
}

template <class T>
__global__ void lower_rows_kernel(int r0, int rb, int p, const T* __restrict__ X, int ldx, bool unit,
                                  T* __restrict__ B, int ldb) {
  const long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= static_cast<long long>(rb) * p) return;
  const int i = static_cast<int>(e % rb), j = static_cast<int>(e / rb), r = r0 + i;
  const T x = r >= j ? X[r + static_cast<std::ptrdiff_t>(j) * ldx] : T(0);
  B[i + static_cast<std::ptrdiff_t>(j) * ldb] = r > j ? x : r == j ? (unit ? T(1) : x) : T(0);
}

template <class T>
__global__ void shifted_rows_kernel(int rows, int cols, int in, int shift, const T* __restrict__ X, int ldx,
                                    T* __restrict__ Y, int ldy) {
  const long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= static_cast<long long>(rows) * cols) return;
  const int i = static_cast<int>(e % rows), j = static_cast<int>(e / rows), r = i + shift;
  const T y = X ? (r >= 0 && r < in ? X[r + static_cast<std::ptrdiff_t>(j) * ldx] : T(0)) : (r == j ? T(1) : T(0));
  Y[i + static_cast<std::ptrdiff_t>(j) * ldy] = y;
}

}  // namespace

template <class T>
void st_diagonal_block(const char* kernel, int w, const T* V, int ldv, const T* Tkk, int ldt, T* D, int ldd,
                       cudaStream_t stream) {
  if (w <= 0) return;
  st_diagonal_block_kernel<T><<<blocks_for(static_cast<long long>(w) * w), threads, 0, stream>>>(w, V, ldv, Tkk, ldt,
                                                                                                 D, ldd);
  check(kernel, "st_diagonal_block_kernel launch", cudaGetLastError());
}

template <class T>
void lower_rows(const char* kernel, int r0, int rb, int p, const T* X, int ldx, bool unit, T* B, int ldb,
                cudaStream_t stream) {
  if (rb <= 0 || p <= 0) return;
  lower_rows_kernel<T><<<blocks_for(static_cast<long long>(rb) * p), threads, 0, stream>>>(r0, rb, p, X, ldx, unit, B,
                                                                                          ldb);
  check(kernel, "lower_rows_kernel launch", cudaGetLastError());
}

template <class T>
void shifted_rows(const char* kernel, int rows, int cols, int in, int shift, const T* X, int ldx, T* Y, int ldy,
                  cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  shifted_rows_kernel<T><<<blocks_for(static_cast<long long>(rows) * cols), threads, 0, stream>>>(rows, cols, in, shift,
                                                                                                 X, ldx, Y, ldy);
  check(kernel, "shifted_rows_kernel launch", cudaGetLastError());
}

#define TESSERA_ST_BLOCKS(T)                                                                                \
  template void st_diagonal_block<T>(const char*, int, const T*, int, const T*, int, T*, int, cudaStream_t); \
  template void lower_rows<T>(const char*, int, int, int, const T*, int, bool, T*, int, cudaStream_t);       \
  template void shifted_rows<T>(const char*, int, int, int, int, const T*, int, T*, int, cudaStream_t);
TESSERA_ST_BLOCKS(float)
TESSERA_ST_BLOCKS(double)
#undef TESSERA_ST_BLOCKS

}  // namespace tessera::kernels::detail
