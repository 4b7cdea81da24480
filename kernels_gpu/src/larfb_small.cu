// gpu_larfb_small (tessera/kernels_gpu/gpu_larfb.hpp): a band panel's block reflector (at most 96
// rows, 64 columns) applied to C from either side in one kernel. The QR updates apply each band
// panel to R's trailing columns, Q^T b and Q's columns; as three cuBLAS calls each, a rank-16
// update of 8000 x 3000 spent 6 of its 9 ms enqueueing them (about 12 us of host time a GEMM on
// the H100 machine, against 3.5 for a kernel), the GPU waiting.
//
// Both sides are the left-side product on X = a slab of C's columns (side L) or the transpose of a
// slab of C's rows (side R): X := X - V (T^T (V^T X)). A thread block takes CW vectors, holds V, T,
// X and W in shared memory and runs the three products with each thread on a few outputs.
#include <tessera/kernels_gpu/gpu_larfb.hpp>

#include <cstddef>

#include "check.hpp"
#include "per_device.hpp"

namespace tessera::kernels {
namespace {

constexpr int hmax = gpu_larfb_small_max_rows, kmax = gpu_larfb_small_max_k;
constexpr int cw = 16;  // vectors (C's columns or rows) a thread block
constexpr int threads = 256;
constexpr int lanes_c = threads / cw;  // threads on one vector in the products
static_assert(kmax % lanes_c == 0 && hmax % lanes_c == 0 && hmax * kmax % threads == 0 && kmax * kmax % threads == 0 &&
                  hmax * cw % threads == 0,
              "whole rounds of the block's threads");

// Padded to an odd number of 8-byte words, so that a row's or column's walk hits distinct banks.
template <class T>
struct smem {
  T v[hmax][kmax + 1];  // V (rows beyond h and columns beyond k: zero)
  T t[kmax][kmax + 1];  // T, upper triangle (below it and beyond k: zero)
  T x[hmax][cw + 1];    // the slab: X(r, c)
  T w[kmax][cw + 1];    // V^T X, then T^T V^T X
};

template <class T>
constexpr std::size_t smem_bytes = sizeof(smem<T>);

// acc[j] += sum over l < count of A(l, q + lanes_c j) B(l, c): consecutive q read consecutive
// entries of A's row, B(l, c) is one value for the sixteen threads of column c.
template <class T, int N, int RA, int LA, int RB, int LB>
__device__ __forceinline__ void column_products(const T (&A)[RA][LA], const T (&B)[RB][LB], int count, int q, int c,
                                                T (&acc)[N]) {
#pragma unroll 4
  for (int l = 0; l < count; ++l) {
    const T b = B[l][c];
#pragma unroll
    for (int j = 0; j < N; ++j) acc[j] = fma(A[l][q + lanes_c * j], b, acc[j]);
  }
}

// Entry e of a slab's walk: its place (r, c) in X and its offset in C, so that consecutive threads
// touch consecutive addresses of C on either side (side R: X(r, c) = C(c0 + c, r)).
template <bool Right>
__device__ __forceinline__ void slab_at(int e, int c0, int ldc, int& r, int& c, std::ptrdiff_t& at) {
  if constexpr (Right) {
    c = e % cw, r = e / cw;
    at = c0 + c + static_cast<std::ptrdiff_t>(r) * ldc;
  } else {
    r = e % hmax, c = e / hmax;
    at = r + static_cast<std::ptrdiff_t>(c0 + c) * ldc;
  }
}

template <class T, bool Right>
__global__ void __launch_bounds__(threads, 2) larfb_small_kernel(int h, int n, int k, const T* __restrict__ V, int ldv,
                                                               const T* __restrict__ Tf, int ldt, T* __restrict__ C,
                                                               int ldc) {
  extern __shared__ __align__(16) unsigned char raw[];
  smem<T>& s = *reinterpret_cast<smem<T>*>(raw);
  const int tid = static_cast<int>(threadIdx.x);

  // Loads: V and T by columns (consecutive threads on consecutive rows), the slab by slab_at. Fixed trip counts,
  // unrolled, so that a thread's loads go out together: a loop of run-time length waited for each
  // load in turn (about 20 us a thread block on the H100, most of the kernel).
#pragma unroll 12
  for (int j = 0; j < hmax * kmax / threads; ++j) {
    const int e = tid + j * threads, r = e % hmax, i = e / hmax;
    s.v[r][i] = r < h && i < k ? V[r + static_cast<std::ptrdiff_t>(i) * ldv] : T(0);
  }
#pragma unroll
  for (int j = 0; j < kmax * kmax / threads; ++j) {
    const int e = tid + j * threads, l = e % kmax, i = e / kmax;
    s.t[l][i] = l <= i && i < k ? Tf[l + static_cast<std::ptrdiff_t>(i) * ldt] : T(0);
  }
  // Slab after slab: a grid smaller than the slabs (max_blocks) loads V and T once a block.
  for (int c0 = static_cast<int>(blockIdx.x) * cw; c0 < n; c0 += static_cast<int>(gridDim.x) * cw) {
    const int nc = min(cw, n - c0);
#pragma unroll
    for (int j = 0; j < hmax * cw / threads; ++j) {
      int r, c;
      std::ptrdiff_t at;
      slab_at<Right>(tid + j * threads, c0, ldc, r, c, at);
      T val = T(0);
      if (r < h && c < nc) val = C[at];
      s.x[r][c] = val;
    }
    __syncthreads();

    // W = V^T X: thread (q, c) takes rows i = q + lanes_c j of W's column c.
    const int q = tid % lanes_c, c = tid / lanes_c;
    constexpr int kw = kmax / lanes_c, hw = hmax / lanes_c;
    {
      T acc[kw] = {};
      column_products(s.v, s.x, h, q, c, acc);
#pragma unroll
      for (int j = 0; j < kw; ++j) s.w[q + lanes_c * j][c] = acc[j];
    }
    __syncthreads();
    // W := T^T W (row i takes W's rows 0..i; T's zeros below the diagonal make the sum exact).
    {
      T acc[kw] = {};
      column_products(s.t, s.w, k, q, c, acc);
      __syncthreads();
#pragma unroll
      for (int j = 0; j < kw; ++j) s.w[q + lanes_c * j][c] = acc[j];
    }
    __syncthreads();
    // X -= V W: thread (q, c) takes rows r = q + lanes_c j of the slab's column c.
    {
      T acc[hw];
#pragma unroll
      for (int j = 0; j < hw; ++j) acc[j] = s.x[q + lanes_c * j][c];
#pragma unroll 4
      for (int i = 0; i < k; ++i) {
        const T wi = s.w[i][c];
#pragma unroll
        for (int j = 0; j < hw; ++j) acc[j] = fma(-s.v[q + lanes_c * j][i], wi, acc[j]);
      }
#pragma unroll
      for (int j = 0; j < hw; ++j) s.x[q + lanes_c * j][c] = acc[j];
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < hmax * cw / threads; ++j) {
      int r, cc;
      std::ptrdiff_t at;
      slab_at<Right>(tid + j * threads, c0, ldc, r, cc, at);
      if (r < h && cc < nc) C[at] = s.x[r][cc];
    }
    __syncthreads();  // the slab is stored before the next one is loaded
  }
}

template <class T, bool Right>
bool launch(int h, int n, int k, const T* V, int ldv, const T* Tf, int ldt, T* C, int ldc, cudaStream_t stream,
            int max_blocks) {
  constexpr const char* kernel = "gpu_larfb_small";
  auto* fn = larfb_small_kernel<T, Right>;
  if (smem_bytes<T> > static_cast<std::size_t>(detail::shared_optin_bytes(kernel))) return false;
  // Once per device (a process-wide once left the second GPU of a process without it).
  static detail::per_device_value allowed;
  detail::allow_shared_memory(allowed, kernel, fn, static_cast<int>(smem_bytes<T>));
  const int slabs = (n + cw - 1) / cw, blocks = max_blocks > 0 && max_blocks < slabs ? max_blocks : slabs;
  fn<<<static_cast<unsigned>(blocks), threads, smem_bytes<T>, stream>>>(h, n, k, V, ldv, Tf, ldt, C, ldc);
  detail::check(kernel, "larfb_small_kernel launch", cudaGetLastError());
  return true;
}

}  // namespace

template <class T>
bool gpu_larfb_small(char side, int h, int n, int k, const T* V, int ldv, const T* Tf, int ldt, T* C, int ldc,
                     cudaStream_t stream, int max_blocks) {
  constexpr const char* kernel = "gpu_larfb_small";
  if (side != 'L' && side != 'R') tessera::check::invalid(kernel, "side must be 'L' or 'R'");
  detail::require_ge(kernel, "h", h, "0", 0);
  detail::require_le(kernel, "h", h, "gpu_larfb_small_max_rows", hmax);
  detail::require_ge(kernel, "n", n, "0", 0);
  detail::require_ge(kernel, "k", k, "0", 0);
  detail::require_le(kernel, "k", k, "h", h);
  detail::require_le(kernel, "k", k, "gpu_larfb_small_max_k", kmax);
  detail::require_ge(kernel, "ldv", ldv, "max(1, h)", h > 1 ? h : 1);
  detail::require_ge(kernel, "ldt", ldt, "max(1, k)", k > 1 ? k : 1);
  if (side == 'L') detail::require_ge(kernel, "ldc", ldc, "max(1, h)", h > 1 ? h : 1);
  else detail::require_ge(kernel, "ldc", ldc, "max(1, n)", n > 1 ? n : 1);
  if (n == 0 || k == 0) return true;
  detail::require_ptr(kernel, "V", V);
  detail::require_ptr(kernel, "Tf", Tf);
  detail::require_ptr(kernel, "C", C);
  return side == 'L' ? launch<T, false>(h, n, k, V, ldv, Tf, ldt, C, ldc, stream, max_blocks)
                     : launch<T, true>(h, n, k, V, ldv, Tf, ldt, C, ldc, stream, max_blocks);
}

template bool gpu_larfb_small<float>(char, int, int, int, const float*, int, const float*, int, float*, int,
                                     cudaStream_t, int);
template bool gpu_larfb_small<double>(char, int, int, int, const double*, int, const double*, int, double*, int,
                                      cudaStream_t, int);

}  // namespace tessera::kernels
