// Block reflectors of at most 32 columns applied from the left in one kernel, where cuBLAS's
// three to five calls a panel cost more than their work (the QR updates' panels, issue #18):
// - gpu_tsmqr_fused (tessera/kernels_gpu/gpu_tsmqr.hpp): [A1; A2] := Q^T [A1; A2], V = [I; V2];
// - gpu_larfb_fused (tessera/kernels_gpu/gpu_larfb.hpp): C := Q^T C, V explicit (the same kernel
//   without A1: V2 = V, A2 = C).
//
// A thread block owns 16 columns of A1 and A2 and does, for them:
//   W = A1 + V2^T A2   (split over the rows: each warp a 32 x 16 partial product, a 4 x 4 tile
//                       a lane, V2's and A2's rows staged through shared memory; then summed)
//   W := T^T W,  A1 -= W,  A2 -= V2 W   (A2 row by row, V2 read straight from global memory).
#include <tessera/kernels_gpu/gpu_larfb.hpp>
#include <tessera/kernels_gpu/gpu_tsmqr.hpp>

#include <cstddef>

#include "check.hpp"

namespace tessera::kernels {
namespace {

constexpr int kmax = gpu_tsmqr_fused_max_kk;  // W's rows (the panel's columns)
constexpr int cw = 16;                         // columns of A1/A2 a block
constexpr int threads = 256;
constexpr int warps = threads / 32;
constexpr int tile = 64;                       // rows of V2 and A2 staged at once
constexpr int vld = kmax + 4;                  // staged V2 rows: 16-byte aligned, 4 values apart
static_assert(vld % (threads / tile) == 0 && cw % (threads / tile) == 0 && kmax * cw % threads == 0 &&
                  kmax * kmax % threads == 0,
              "whole rounds of the block's threads");

// Four consecutive values from shared memory (16-byte aligned).
__device__ __forceinline__ void load4(const double* p, double (&v)[4]) {
  const double2 a = *reinterpret_cast<const double2*>(p), b = *reinterpret_cast<const double2*>(p + 2);
  v[0] = a.x, v[1] = a.y, v[2] = b.x, v[3] = b.y;
}
__device__ __forceinline__ void load4(const float* p, float (&v)[4]) {
  const float4 a = *reinterpret_cast<const float4*>(p);
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
}

template <class T>
struct smem {
  union {
    struct {
      alignas(16) T v[tile][vld];  // V2's rows r0.. (columns beyond kk: zero)
      alignas(16) T a[tile][cw];   // A2's rows r0.. of the block's columns (beyond: zero)
    } st;
    T part[warps][kmax][cw];  // each warp's share of V2^T A2
  } u;
  T t[kmax][kmax + 1];  // T, row l: T(l, 0..kk)
  alignas(16) T w[kmax][cw];  // W, then T^T W
};

// Top: A1 (kk x n) is there, V's top kk x kk block the identity; else V2 is all of V.
template <class T, bool Top>
__global__ void __launch_bounds__(threads, 2) reflectors_kernel(int m, int n, int kk, T* __restrict__ A1,
                                                              int lda1, T* __restrict__ A2, int lda2,
                                                              const T* __restrict__ V, int ldv,
                                                              const T* __restrict__ Tf, int ldt) {
  __shared__ smem<T> s;
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  const int c0 = static_cast<int>(blockIdx.x) * cw, nc = min(cw, n - c0);
  if constexpr (Top) A1 += static_cast<std::ptrdiff_t>(c0) * lda1;
  A2 += static_cast<std::ptrdiff_t>(c0) * lda2;

  // Fixed trip counts, unrolled: the loads go out together instead of one round trip each.
#pragma unroll
  for (int k = 0; k < kmax * kmax / threads; ++k) {
    const int e = tid + k * threads, l = e % kmax, i = e / kmax;
    s.t[l][i] = l <= i && i < kk ? Tf[l + static_cast<std::ptrdiff_t>(i) * ldt] : T(0);
  }

  // V2^T A2: lane (a, b) of warp w sums rows w*8 .. w*8+7 of each tile into W(4a.., 4b..). The
  // next tile's loads are issued before this tile's sums (registers, then shared memory), so a
  // tile costs one memory latency at most: with a loop per tile that waited for each load in turn,
  // a thread block took 47 us for 500 rows in double (ncu, H100).
  const int a = lane & 7, b = lane >> 3;
  const int lr = tid % tile, lg = tid / tile;  // staging: row, and first column (every 4th)
  constexpr int nv = vld / (threads / tile), na = cw / (threads / tile);
  T pv[nv], pa[na];
  auto fetch = [&](int r0) {
    const bool in = r0 + lr < m;
#pragma unroll
    for (int k = 0; k < nv; ++k) {
      const int i = lg + k * (threads / tile);
      pv[k] = in && i < kk ? V[r0 + lr + static_cast<std::ptrdiff_t>(i) * ldv] : T(0);
    }
#pragma unroll
    for (int k = 0; k < na; ++k) {
      const int c = lg + k * (threads / tile);
      pa[k] = in && c < nc ? A2[r0 + lr + static_cast<std::ptrdiff_t>(c) * lda2] : T(0);
    }
  };
  T acc[4][4] = {};
  fetch(0);
#pragma unroll 1
  for (int r0 = 0; r0 < m; r0 += tile) {
#pragma unroll
    for (int k = 0; k < nv; ++k) s.u.st.v[lr][lg + k * (threads / tile)] = pv[k];
#pragma unroll
    for (int k = 0; k < na; ++k) s.u.st.a[lr][lg + k * (threads / tile)] = pa[k];
    __syncthreads();
    if (r0 + tile < m) fetch(r0 + tile);
#pragma unroll
    for (int q = 0; q < tile / warps; ++q) {
      const int r = warp * (tile / warps) + q;
      T va[4], vb[4];
      load4(&s.u.st.v[r][4 * a], va);
      load4(&s.u.st.a[r][4 * b], vb);
#pragma unroll
      for (int x = 0; x < 4; ++x)
#pragma unroll
        for (int y = 0; y < 4; ++y) acc[x][y] = fma(va[x], vb[y], acc[x][y]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int x = 0; x < 4; ++x)
#pragma unroll
    for (int y = 0; y < 4; ++y) s.u.part[warp][4 * a + x][4 * b + y] = acc[x][y];
  __syncthreads();

  // W = A1 (where there is one) + the warps' sums.
#pragma unroll
  for (int k = 0; k < kmax * cw / threads; ++k) {
    const int e = tid + k * threads, i = e % kmax, c = e / kmax;
    T sum = Top && i < kk && c < nc ? A1[i + static_cast<std::ptrdiff_t>(c) * lda1] : T(0);
#pragma unroll
    for (int w = 0; w < warps; ++w) sum += s.u.part[w][i][c];
    s.w[i][c] = sum;
  }
  __syncthreads();

  // T^T W (T upper triangular: row i of the product takes W's rows 0..i); A1 -= it.
  T tw[kmax * cw / threads];
#pragma unroll
  for (int k = 0; k < kmax * cw / threads; ++k) {
    const int e = tid + k * threads, i = e % kmax, c = e / kmax;
    T sum = 0;
#pragma unroll
    for (int l = 0; l < kmax; ++l)
      if (l <= i) sum = fma(s.t[l][i], s.w[l][c], sum);  // as a TRMM: no products with T's zeros
    tw[k] = i < kk ? sum : T(0);
    if (Top && i < kk && c < nc) A1[i + static_cast<std::ptrdiff_t>(c) * lda1] -= sum;
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < kmax * cw / threads; ++k) {
    const int e = tid + k * threads;
    s.w[e % kmax][e / kmax] = tw[k];
  }
  __syncthreads();

  // A2 -= V2 W: a thread takes a row and half of the 16 columns (W's rows are broadcast from
  // shared memory). The row's V2 entries are loaded eight at a time, predicated, not in a loop
  // that stops at kk (that loop waited for one load at a time). W's rows from kk on are zero.
  constexpr int half = cw / 2, rows_per_pass = threads / 2;
  const int ch = half * (tid / rows_per_pass);
#pragma unroll 1
  for (int r = tid % rows_per_pass; r < m; r += rows_per_pass) {
    // W is read again for each row, not held in registers across rows (the compiler hoisted its
    // values out of the loop and spilled them).
    asm volatile("" ::: "memory");
    T x[half];
#pragma unroll
    for (int c = 0; c < half; ++c)
      x[c] = ch + c < nc ? A2[r + static_cast<std::ptrdiff_t>(ch + c) * lda2] : T(0);
#pragma unroll
    for (int i0 = 0; i0 < kmax; i0 += 8) {
      T vv[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) vv[j] = i0 + j < kk ? V[r + static_cast<std::ptrdiff_t>(i0 + j) * ldv] : T(0);
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int c0 = 0; c0 < half; c0 += 4) {
          T wv[4];
          load4(&s.w[i0 + j][ch + c0], wv);
#pragma unroll
          for (int y = 0; y < 4; ++y) x[c0 + y] = fma(-vv[j], wv[y], x[c0 + y]);
        }
    }
#pragma unroll
    for (int c = 0; c < half; ++c)
      if (ch + c < nc) A2[r + static_cast<std::ptrdiff_t>(ch + c) * lda2] = x[c];
  }
}

}  // namespace

namespace {
// V (m x kk) and T's shared checks, and the launch: more than the default 48 KB of shared memory
// is not needed (smem<T> is at most 45 KB).
template <class T, bool Top>
void launch(const char* kernel, const char* kname, int m, int n, int kk, T* A1, int lda1, T* A2, int lda2, const T* V, int ldv,
            const T* Tf, int ldt, cudaStream_t stream) {
  detail::require_ge(kernel, "m", m, "0", 0);
  detail::require_ge(kernel, "n", n, "0", 0);
  detail::require_ge(kernel, kname, kk, "0", 0);
  detail::require_le(kernel, kname, kk, "the widest block, 32", kmax);
  detail::require_ge(kernel, "ldv", ldv, "max(1, m)", m > 1 ? m : 1);
  detail::require_ge(kernel, "ldt", ldt, "max(1, kk)", kk > 1 ? kk : 1);
  if (n == 0 || kk == 0) return;
  detail::require_ptr(kernel, "Tf", Tf);
  if (m > 0) detail::require_ptr(kernel, "V", V);
  reflectors_kernel<T, Top><<<static_cast<unsigned>((n + cw - 1) / cw), threads, 0, stream>>>(
      m, n, kk, A1, lda1, A2, lda2, V, ldv, Tf, ldt);
  detail::check(kernel, "reflectors_kernel launch", cudaGetLastError());
}
}  // namespace

template <class T>
void gpu_tsmqr_fused(int m, int n, int kk, T* A1, int lda1, T* A2, int lda2, const T* V, int ldv,
                     const T* Tf, int ldt, cudaStream_t stream) {
  constexpr const char* kernel = "gpu_tsmqr_fused";
  detail::require_ge(kernel, "lda1", lda1, "max(1, kk)", kk > 1 ? kk : 1);
  detail::require_ge(kernel, "lda2", lda2, "max(1, m)", m > 1 ? m : 1);
  if (n > 0 && kk > 0) {
    detail::require_ptr(kernel, "A1", A1);
    if (m > 0) detail::require_ptr(kernel, "A2", A2);
  }
  launch<T, true>(kernel, "kk", m, n, kk, A1, lda1, A2, lda2, V, ldv, Tf, ldt, stream);
}

template <class T>
void gpu_larfb_fused(int m, int n, int k, const T* V, int ldv, const T* Tf, int ldt, T* C, int ldc,
                     cudaStream_t stream) {
  constexpr const char* kernel = "gpu_larfb_fused";
  detail::require_le(kernel, "k", k, "m", m);
  detail::require_ge(kernel, "ldc", ldc, "max(1, m)", m > 1 ? m : 1);
  if (n > 0 && k > 0) detail::require_ptr(kernel, "C", C);
  launch<T, false>(kernel, "k", m, n, k, static_cast<T*>(nullptr), 1, C, ldc, V, ldv, Tf, ldt, stream);
}

template void gpu_tsmqr_fused<float>(int, int, int, float*, int, float*, int, const float*, int,
                                     const float*, int, cudaStream_t);
template void gpu_tsmqr_fused<double>(int, int, int, double*, int, double*, int, const double*, int,
                                      const double*, int, cudaStream_t);
template void gpu_larfb_fused<float>(int, int, int, const float*, int, const float*, int, float*, int,
                                     cudaStream_t);
template void gpu_larfb_fused<double>(int, int, int, const double*, int, const double*, int, double*, int,
                                      cudaStream_t);

}  // namespace tessera::kernels
