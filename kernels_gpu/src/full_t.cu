// The full T of a block of reflectors from its Gram matrix and ib-blocked T: a kernel building
// each row left to right, and doubling with batched GEMMs; and V made explicit.
#include "check.hpp"
#include "engine.hpp"

namespace tessera::kernels::detail {
namespace {

constexpr int warp = 32;

// One warp per row r of one full T (blockIdx.x picks the TSQRT). The row lives in shared memory;
// block columns are filled left to right: the diagonal block's row from T_jj, an off-diagonal
// block as y = Tf(r, r:c0) G(r:c0, J) (G symmetric: read G(J, s) so lanes read contiguously),
// then Tf(r, J) = -y T_jj.
template <class T>
__global__ void build_full_t_kernel(int kk, int ib, const T* __restrict__ G,
                                    const T* __restrict__ Tb, int ldt, std::ptrdiff_t strideT,
                                    T* __restrict__ Tf, int ldtf, std::ptrdiff_t strideTf,
                                    bool transpose) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int wmax = ib < kk ? ib : kk;
  T* row = reinterpret_cast<T*>(smem_raw) + threadIdx.y * (kk + wmax);
  T* y = row + kk;
  const int lane = static_cast<int>(threadIdx.x);
  const int r = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (r >= kk) return;  // whole warps only: r is uniform across a warp

  const std::ptrdiff_t i = blockIdx.x;
  G += i * static_cast<std::ptrdiff_t>(kk) * kk;
  Tb += i * strideT;
  Tf += i * strideTf;

  for (int c = lane; c < kk; c += warp) row[c] = T(0);
  __syncwarp();
  for (int c0 = (r / ib) * ib; c0 < kk; c0 += ib) {
    const int w = kk - c0 < ib ? kk - c0 : ib;
    if (r >= c0) {
      const int p = r - c0;
      for (int q = lane; q < w; q += warp)
        row[c0 + q] = q >= p ? Tb[p + static_cast<std::ptrdiff_t>(c0 + q) * ldt] : T(0);
    } else {
      for (int q = lane; q < w; q += warp) {
        const T* g = G + (c0 + q);
        T acc = T(0);
        for (int s = r; s < c0; ++s) acc += row[s] * g[static_cast<std::ptrdiff_t>(s) * kk];
        y[q] = acc;
      }
      __syncwarp();
      for (int q = lane; q < w; q += warp) {
        const T* t = Tb + static_cast<std::ptrdiff_t>(c0 + q) * ldt;
        T acc = T(0);
        for (int p = 0; p <= q; ++p) acc += y[p] * t[p];
        row[c0 + q] = -acc;
      }
    }
    __syncwarp();
  }
  if (transpose)
    for (int c = lane; c < kk; c += warp) Tf[c + static_cast<std::ptrdiff_t>(r) * ldtf] = row[c];
  else
    for (int c = lane; c < kk; c += warp) Tf[r + static_cast<std::ptrdiff_t>(c) * ldtf] = row[c];
}

template <class T>
__global__ void unit_lower_copy_kernel(int m, int k, const T* __restrict__ V, int ldv,
                                       T* __restrict__ Vc, int ldvc) {
  const int r = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int c = static_cast<int>(blockIdx.y);
  if (r >= m) return;
  const T v = r > c ? V[r + static_cast<std::ptrdiff_t>(c) * ldv] : (r == c ? T(1) : T(0));
  Vc[r + static_cast<std::ptrdiff_t>(c) * ldvc] = v;
}

// Tf := Tb's diagonal blocks (upper triangles) in place, zeros elsewhere.
template <class T>
__global__ void place_diagonal_blocks_kernel(int n, int ib, const T* __restrict__ Tb, int ldtb, T* __restrict__ Tf,
                                             int ldtf) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x), j = static_cast<int>(blockIdx.y);
  if (i >= n) return;
  const int j0 = j / ib * ib;
  Tf[i + static_cast<std::ptrdiff_t>(j) * ldtf] =
      i >= j0 && i <= j ? Tb[(i - j0) + static_cast<std::ptrdiff_t>(j) * ldtb] : T(0);
}

}  // namespace

template <class T>
void full_t_by_doubling(const char* kernel, int n, int ib, const T* G, int ldg, const T* Tb, int ldtb, T* Tf,
                        int ldtf, T* X, cublasHandle_t h) {
  if (n <= 0) return;
  const cudaStream_t stream = stream_of(kernel, h);
  constexpr int threads = 256;
  place_diagonal_blocks_kernel<T><<<dim3(static_cast<unsigned>((n + threads - 1) / threads), static_cast<unsigned>(n)),
                                    threads, 0, stream>>>(n, ib, Tb, ldtb, Tf, ldtf);
  check(kernel, "place_diagonal_blocks_kernel launch", cudaGetLastError());
  const auto at = [](auto* p, int i, int j, int ld) { return p + i + static_cast<std::ptrdiff_t>(j) * ld; };
  const cublasOperation_t N = CUBLAS_OP_N;
  for (int b = ib; b < n; b *= 2) {
    // Pairs of two b-wide diagonal blocks, 2b apart: X_p = G12_p T2_p, then T12_p = -T1_p X_p.
    const int pairs = n / (2 * b);
    const long long sg = 2LL * b * (ldg + 1), st = 2LL * b * (ldtf + 1), sx = static_cast<long long>(b) * b;
    if (pairs > 0) {
      check(kernel, "gemm_strided (X = G12 T2)",
            cublas::gemm_strided(h, N, N, b, b, b, T(1), at(G, 0, b, ldg), ldg, sg, at(Tf, b, b, ldtf), ldtf, st, T(0),
                                 X, b, sx, pairs));
      check(kernel, "gemm_strided (T12 = -T1 X)",
            cublas::gemm_strided(h, N, N, b, b, b, T(-1), Tf, ldtf, st, X, b, sx, T(0), at(Tf, 0, b, ldtf), ldtf, st,
                                 pairs));
    }
    // A last pair whose right block is narrower than b.
    const int c0 = pairs * 2 * b, w = n - c0 - b;
    if (w > 0) {
      check(kernel, "gemm (X = G12 T2)",
            cublas::gemm(h, N, N, b, w, w, T(1), at(G, c0, c0 + b, ldg), ldg, at(Tf, c0 + b, c0 + b, ldtf), ldtf, T(0),
                         X, b));
      check(kernel, "gemm (T12 = -T1 X)",
            cublas::gemm(h, N, N, b, w, b, T(-1), at(Tf, c0, c0, ldtf), ldtf, X, b, T(0), at(Tf, c0, c0 + b, ldtf),
                         ldtf));
    }
  }
}

template <class T>
void build_full_t(const char* kernel, int count, int kk, int ib, const T* G, const T* Tb, int ldt,
                  std::ptrdiff_t strideT, T* Tf, int ldtf, std::ptrdiff_t strideTf, bool transpose,
                  cudaStream_t stream) {
  if (count <= 0 || kk <= 0) return;
  const int wmax = ib < kk ? ib : kk;
  const std::size_t per_warp = sizeof(T) * static_cast<std::size_t>(kk + wmax);
  constexpr std::size_t smem_limit = 48 * 1024;  // the default, no opt-in needed
  if (per_warp > smem_limit)
    bad_argument(kernel, "kk", kk, "<=", "what a row of T in 48 KiB of shared memory allows",
                 static_cast<long long>(smem_limit / sizeof(T) / 2));
  int warps = static_cast<int>(smem_limit / per_warp);
  warps = warps > 8 ? 8 : warps;
  const dim3 block(warp, static_cast<unsigned>(warps));
  const dim3 grid(static_cast<unsigned>(count), static_cast<unsigned>((kk + warps - 1) / warps));
  build_full_t_kernel<T><<<grid, block, per_warp * static_cast<std::size_t>(warps), stream>>>(
      kk, ib, G, Tb, ldt, strideT, Tf, ldtf, strideTf, transpose);
  check(kernel, "build_full_t_kernel launch", cudaGetLastError());
}

template <class T>
void unit_lower_copy(const char* kernel, int m, int k, const T* V, int ldv, T* Vc, int ldvc,
                     cudaStream_t stream) {
  if (m <= 0 || k <= 0) return;
  constexpr int threads = 256;
  const dim3 grid(static_cast<unsigned>((m + threads - 1) / threads), static_cast<unsigned>(k));
  unit_lower_copy_kernel<T><<<grid, threads, 0, stream>>>(m, k, V, ldv, Vc, ldvc);
  check(kernel, "unit_lower_copy_kernel launch", cudaGetLastError());
}

#define TESSERA_FULL_T_INSTANTIATE(T)                                                              \
  template void build_full_t<T>(const char*, int, int, int, const T*, const T*, int,              \
                                std::ptrdiff_t, T*, int, std::ptrdiff_t, bool, cudaStream_t);           \
  template void unit_lower_copy<T>(const char*, int, int, const T*, int, T*, int, cudaStream_t);       \
  template void full_t_by_doubling<T>(const char*, int, int, const T*, int, const T*, int, T*, int, T*,  \
                                      cublasHandle_t);
TESSERA_FULL_T_INSTANTIATE(float)
TESSERA_FULL_T_INSTANTIATE(double)
#undef TESSERA_FULL_T_INSTANTIATE

}  // namespace tessera::kernels::detail
