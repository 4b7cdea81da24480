#pragma once
// The batched inverse of orders 17 to 32 in double (used where inv_by_mma) by blocks of eight
// Gauss-Jordan steps, the update of the other columns on the tensor cores. Included by
// batched_lu.cuh after the pieces it shares with the other kernels (group, group_argmax,
// matrix_of, threads_per_block) and before the launches.
//
// Why: with a row a lane (inverse_kernel, inverse_halves_kernel) every lane receives the whole
// pivot row every step, n^3 values a matrix through the SM's shuffle and shared-memory pipe. Here a
// warp holds its matrix as the accumulators of m8n8k4 DMMA tiles (lane l: rows 8 ti + l / 4,
// columns 8 tj + 2 (l % 4) + {0, 1}), padded to a multiple of 8 with the identity. Block step K
// factors the eight columns of tile column K alone, a row a lane (their 8 values, so a step sends
// 8 values, not n), in place: the panel becomes G, with D^-1 in the block's pivot rows P and
// -F D^-1 in the others (F the panel, D = F(P)). Every other column c then takes
//   C(i, c) := [i not in P] C(i, c) + G(i, :) C(P, c),
// which is what the eight steps do to it, as one rank-8 product on the tensor cores. The pivot
// rows are zeroed and rebuilt by the product rather than updated as C + (G - I) C(P): with a huge
// pivot (D^-1 tiny) that difference cancels to zero.
//
// Partial pivoting as the row form's, but by the high word of |a| (find_pivot_hi), and the
// block's updates summed in another order, so near ties may pivot differently (the inverse returns
// no pivots); info is LAPACK's, and the result is (PA)^-1 with rows at their places and column j
// written to column row[j], as in inverse_kernel.

#include <cstdint>

#include "dmma.cuh"

namespace tessera::kernels::batched_detail {

template <int N>
inline constexpr int mma_tiles = (N + 7) / 8;

using detail::dmma_8x8x4;

template <int N>
struct mma_shared {
  static constexpr int W = 8 * mma_tiles<N>;  // the padded order
  // Row strides: the pivot rows W + 4 (the B operand's eight rows of four lanes hit distinct
  // banks), the staged result 34 (a tile's eight rows of four lanes distinct, and a lane a row).
  static constexpr int XS = W + 4, OS = 34;
  union alignas(16) {
    double pan[32 * 8];   // the panel, a row a lane, then G (pairs swizzled: pan_at)
    double out[8 * OS];   // one tile column of the result, by row, on its way out
  };
  alignas(16) double x[8 * XS];  // the block's pivot rows, by pivot
  alignas(16) double bc[2][8];   // the pivot row's panel entries, alternating by step
  int row[N];                    // the pivot row of each step
  int pj[32];                    // per row: its pivot index in this block, or -1
};

// Where pair q (columns 2q, 2q + 1) of panel row r lives: rows of 64 bytes, the pairs permuted by
// bits 1 and 2 of r, so that 16-byte accesses a row a lane, 16-byte accesses in the tile layout
// and the 8-byte A operand loads all hit distinct banks.
__device__ __forceinline__ int pan_at(int r, int q) {
  return r * 8 + 2 * (q ^ ((((r >> 1) & 1) << 1) | ((r >> 2) & 1)));
}

// The pivot search of this kernel: the largest |a| by the high 32 bits of its bits (sign cleared),
// ties to the smallest place, so two reductions instead of three. Values within 2^-20 of the
// largest tie, which changes which of them pivots, not the stability of the elimination (the inverse
// returns no pivots). Keys: 0 lanes out of the search, 1 NaN (never wins but against lanes out), 2
// zero, 3 + the high word otherwise (a nonzero value below 2^-1042 still wins over zero, so info is
// LAPACK's first exact zero pivot).
__device__ __forceinline__ std::uint32_t abs_key_hi(double x) {
  const auto u = static_cast<std::uint64_t>(__double_as_longlong(x)) & 0x7FFFFFFFFFFFFFFFull;
  if (u > 0x7FF0000000000000ull) return 1u;
  return u == 0 ? 2u : static_cast<std::uint32_t>(u >> 32) + 3u;
}

template <int N>
__device__ __forceinline__ void find_pivot_hi(const group<double, N>& grp, double xk, int k, int& pos, int& plane) {
  const std::uint32_t key = (grp.active && pos >= k) ? abs_key_hi(xk) : 0u;
  const unsigned w = group_argmax<32>(0xFFFFFFFFu, key, static_cast<unsigned>(pos * 32 + grp.lane));
  plane = static_cast<int>(w & 31u);
  const int ppos = static_cast<int>(w >> 5);
  if (pos == k) pos = ppos;       // the row at place k goes where the pivot row was
  if (grp.lane == plane) pos = k;  // and the pivot row to place k
}

// Where this kernel measured faster than the row form (inverse_kernel, orders 17-19 and odd) and
// the half rows (inverse_halves_kernel, even orders from 22): double orders 20-25, 27 and 29-32.
// H100, 2^20 matrices, two runs, ms, before -> after: n = 20 / 24 / 25 / 27 / 30 / 32 4.37 / 5.94-5.96
// / 7.02-7.05 / 7.82 / 8.92-8.95 / 9.47-9.49 -> 4.15-4.17 / 4.95-4.96 / 6.77 / 7.20-7.21 / 7.57 /
// 8.29; n = 26 and 28 were 7% and 3% slower, 17-19 1-14% (docs/results/2026-11-27-batched-inverse-mma-h100.md).
template <class T, int N>
inline constexpr bool inv_by_mma = sizeof(T) == 8 && N >= 20 && N != 26 && N != 28;
// Five blocks an SM (96 registers, a few bytes spilled) where that measured faster than four (up to
// 128 registers): n = 25 and 32, by 1.4% and 1.7-2.6%; 27-31 were 1-4% slower.
template <int N>
constexpr int mma_min_blocks() {
  return N == 25 || N == 32 ? 5 : 4;
}

template <int N>
__global__ void __launch_bounds__(threads_per_block, mma_min_blocks<N>())
    inverse_mma_kernel(gpu_batch<double> A, gpu_batch<double> Ainv, int* __restrict__ info, long long count) {
  using T = double;
  constexpr int NT = mma_tiles<N>, W = 8 * NT;
  using S = mma_shared<N>;
  constexpr int XS = S::XS, OS = S::OS;
  static_assert(group<T, N>::P == 32 && !group<T, N>::packed, "a whole warp a matrix");
  __shared__ S shared[threads_per_block / 32];
  const group<T, N> grp(count);
  if (grp.leaves()) return;
  S& s = shared[grp.g];
  const int lane = grp.lane, gr = lane >> 2, tq = lane & 3;

  T acc[NT][NT][2];
  {
    const T* a = matrix_of(A, grp.b);
#pragma unroll
    for (int ti = 0; ti < NT; ++ti)
#pragma unroll
      for (int tj = 0; tj < NT; ++tj)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int i = 8 * ti + gr, j = 8 * tj + 2 * tq + h;
          acc[ti][tj][h] = i < N && j < N ? a[i + static_cast<long long>(j) * A.ld] : i == j ? T(1) : T(0);
        }
  }
  int pos = lane, inf = 0;
#pragma unroll
  for (int K = 0; K < NT; ++K) {
    constexpr int full = 8;
    const int steps = N - 8 * K < full ? N - 8 * K : full;  // a constant once unrolled
    // The panel, a row a lane.
#pragma unroll
    for (int ti = 0; ti < NT; ++ti)
      *reinterpret_cast<double2*>(&s.pan[pan_at(8 * ti + gr, tq)]) = make_double2(acc[ti][K][0], acc[ti][K][1]);
    __syncwarp();
    T p[8];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const double2 v = *reinterpret_cast<const double2*>(&s.pan[pan_at(lane, q)]);
      p[2 * q] = v.x;
      p[2 * q + 1] = v.y;
    }
    // Eight Gauss-Jordan steps on the panel's columns. The pivot row reaches the lanes through
    // shared memory (8 broadcast loads; shuffles were 2-3% slower), unscaled: a row's scaling by
    // 1 / its pivot waits for the block's end (scale), as in inverse_kernel, so the pivot lane
    // changes nothing in its step and other lanes need no select.
    int my_j = -1, step_row = 0;  // lane kk keeps step kk's pivot row
    T scale = T(1);
#pragma unroll
    for (int kk = 0; kk < full; ++kk) {
      if (kk >= steps) break;
      const int k = 8 * K + kk;
      int plane;
      find_pivot_hi(grp, p[kk], k, pos, plane);
      if (lane == kk) step_row = plane;
      const bool pivot = lane == plane;
      double* row = s.bc[k & 1];
      if (pivot) {
#pragma unroll
        for (int q = 0; q < 4; ++q) *reinterpret_cast<double2*>(row + 2 * q) = make_double2(p[2 * q], p[2 * q + 1]);
      }
      __syncwarp();
      T v[8];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const double2 w = *reinterpret_cast<const double2*>(row + 2 * q);
        v[2 * q] = w.x;
        v[2 * q + 1] = w.y;
      }
      const T piv = v[kk];
      const T d = T(1) / piv;
      if (pivot) {
        my_j = kk;
        scale = d;
        if (piv == T(0) && inf == 0) inf = k + 1;
      }
      const T fd = p[kk] * d;  // this row's multiplier of the (unscaled) pivot row
#pragma unroll
      for (int j = 0; j < full; ++j)
        if (j != kk && !pivot) p[j] = fma(-fd, v[j], p[j]);
      p[kk] = pivot ? T(1) : -fd;
    }
#pragma unroll
    for (int j = 0; j < full; ++j) p[j] *= scale;
    if (lane < steps) s.row[8 * K + lane] = step_row;
    __syncwarp();  // every lane has read the panel before G overwrites it
    if (lane < W) {
#pragma unroll
      for (int q = 0; q < 4; ++q)
        *reinterpret_cast<double2*>(&s.pan[pan_at(lane, q)]) = make_double2(p[2 * q], p[2 * q + 1]);
    }
    s.pj[lane] = my_j;
    // A last, partial block has fewer pivot rows: the rest of x must be zeros (G's padded columns
    // are zero in the real rows, and zero times what x held before could be NaN).
    if (steps < full) {
      for (int e = lane; e < (full - steps) * XS; e += 32) s.x[steps * XS + e] = T(0);
    }
    __syncwarp();
    // The block's pivot rows of the other columns to x, and zero in acc (the product rebuilds them).
#pragma unroll
    for (int ti = 0; ti < NT; ++ti) {
      const int j = s.pj[8 * ti + gr];
#pragma unroll
      for (int tj = 0; tj < NT; ++tj) {
        if (tj == K) continue;
        if (j >= 0)
          *reinterpret_cast<double2*>(&s.x[j * XS + 8 * tj + 2 * tq]) = make_double2(acc[ti][tj][0], acc[ti][tj][1]);
#pragma unroll
        for (int h = 0; h < 2; ++h) acc[ti][tj][h] = j >= 0 ? T(0) : acc[ti][tj][h];
      }
    }
    __syncwarp();
    // acc(:, other) += G x, in two products of k = 4.
#pragma unroll
    for (int kc = 0; kc < 2; ++kc) {
      T af[NT];
#pragma unroll
      for (int ti = 0; ti < NT; ++ti) af[ti] = s.pan[pan_at(8 * ti + gr, 2 * kc + (tq >> 1)) + (tq & 1)];
#pragma unroll
      for (int tj = 0; tj < NT; ++tj) {
        if (tj == K) continue;
        const T bf = s.x[(4 * kc + tq) * XS + 8 * tj + gr];
#pragma unroll
        for (int ti = 0; ti < NT; ++ti) dmma_8x8x4(acc[ti][tj], af[ti], bf);
      }
    }
    // The panel's columns become G's.
#pragma unroll
    for (int ti = 0; ti < NT; ++ti) {
      const double2 v = *reinterpret_cast<const double2*>(&s.pan[pan_at(8 * ti + gr, tq)]);
      acc[ti][K][0] = v.x;
      acc[ti][K][1] = v.y;
    }
    __syncwarp();  // G and x read by every lane before the next block rewrites them
  }
  // info: only the pivot lane saw a zero pivot; agree on the smallest step.
  const unsigned zero = grp.min_all(inf == 0 ? 1024u : static_cast<unsigned>(inf));
  // Each tile column through shared memory by row, then out a column at a time: lane i writes row
  // i to its place pos, column j to column row[j] (a permutation within each column: coalesced).
  T* out = matrix_of(Ainv, grp.b);
#pragma unroll
  for (int tj = 0; tj < NT; ++tj) {
#pragma unroll
    for (int ti = 0; ti < NT; ++ti)
#pragma unroll
      for (int h = 0; h < 2; ++h) s.out[(2 * tq + h) * OS + 8 * ti + gr] = acc[ti][tj][h];
    __syncwarp();
    if (lane < N) {
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        const int j = 8 * tj + c;
        if (j < N) out[pos + static_cast<long long>(s.row[j]) * Ainv.ld] = s.out[c * OS + lane];
      }
    }
    __syncwarp();
  }
  if (lane == 0) info[grp.b] = zero == 1024u ? 0 : static_cast<int>(zero);
}

}  // namespace tessera::kernels::batched_detail
