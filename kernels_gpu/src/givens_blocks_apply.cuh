#pragma once
// A Givens plan's blocks S_t applied in turn from the left to 32 of a matrix's columns by one
// thread block on the tensor cores: gpu_givens_blocks_apply's kernel (a thread block a 32-column
// slice) and the TPQRT chain's rank-k prologue (a slab's columns before its panels) share it.
#include <tessera/kernels_gpu/gpu_givens.hpp>

#include "dmma.cuh"

namespace tessera::kernels::detail {

// Doubles of shared memory givens_blocks_apply_columns stages a block's rows in (32 columns, each
// of gpu_givens_blocks_apply_max_bw rows padded to 4 mod 16, so that the 16 lanes of a half-warp
// read B fragments X(k + tq, c + gr) from 16 banks).
inline constexpr int givens_blocks_ldx = gpu_givens_blocks_apply_max_bw + 4;
inline constexpr int givens_blocks_shared = 32 * givens_blocks_ldx;

// Columns [jb, je) (je - jb <= 32) of M take the plan's blocks in turn: rows [roff + row0(t),
// + rows(t)) of columns from max(jb, that row + cshift) := S_t^T times them. Threads 0 .. 32 Warps
// - 1 of the thread block, each warp 128 / Warps of a block's rows; X: shared memory of
// givens_blocks_shared doubles. Ahead: the k-steps of S_t whose loads are issued at once, before
// the rows' (all 32: a block costs about one trip to memory, S not depending on M; fewer where
// registers are short). Ends with the last block's rows written by every thread.
template <class T, int Warps, int Ahead = gpu_givens_blocks_apply_max_bw / 4>
__device__ __forceinline__ void givens_blocks_apply_columns(const givens_plan& plan, const T* __restrict__ S, T* M,
                                                            int ldm, int roff, int jb, int je, int cshift, double* X) {
  constexpr int maxbw = gpu_givens_blocks_apply_max_bw, rows_w = maxbw / Warps, ri_n = rows_w / 8, ksteps = maxbw / 4;
  constexpr int ldx = givens_blocks_ldx, threads = 32 * Warps;
  static_assert(rows_w % 8 == 0 && ksteps % Ahead == 0, "a warp takes whole 8-row tiles; whole chunks of k");
  const int tid = static_cast<int>(threadIdx.x), warp = tid >> 5, lane = tid & 31, gr = lane >> 2, tq = lane & 3;
  const int nblocks = plan.blocks(), bw = plan.bw(), i0 = rows_w * warp;
  double a[Ahead][ri_n];  // the warp's rows of S_t^T, A(i, k) = S_t(k, i), for k-steps s0 ..
  const auto load_a = [&](const T* St, int rt, int s0) {
#pragma unroll
    for (int s = 0; s < Ahead; ++s)
#pragma unroll
      for (int ri = 0; ri < ri_n; ++ri) {
        const int kk = 4 * (s0 + s) + tq, i = i0 + 8 * ri + gr;
        a[s][ri] = kk < rt && i < rt ? static_cast<double>(St[kk + static_cast<std::size_t>(i) * bw]) : 0.0;
      }
  };
  for (int t = 0; t < nblocks; ++t) {
    const int g = roff + plan.row0(t), rt = plan.rows(t);
    const int c0 = max(jb, g + cshift);  // columns left of c0 are zeros in these rows: untouched
    if (c0 >= je) continue;               // the same in every thread
    const T* St = S + static_cast<std::size_t>(t) * bw * bw;
    load_a(St, rt, 0);
    __syncthreads();  // the previous block's X read and its rows written by every warp
#pragma unroll
    for (int it = 0; it < maxbw * 32 / threads; ++it) {  // rows beyond rt zero (S_t^T's columns there are)
      const int idx = tid + it * threads, k = idx % maxbw, c = idx / maxbw, j = jb + c;
      X[c * ldx + k] = k < rt && j >= c0 && j < je ? static_cast<double>(M[g + k + static_cast<std::size_t>(j) * ldm])
                                                   : 0.0;
    }
    __syncthreads();
    if (i0 < rt) {  // this warp's rows within the block's (warp-uniform)
      double acc[ri_n][4][2] = {};
#pragma unroll 1
      for (int s0 = 0; s0 < ksteps; s0 += Ahead) {
        if (s0 > 0) load_a(St, rt, s0);
#pragma unroll
        for (int s = 0; s < Ahead; ++s) {
          double b[4];
#pragma unroll
          for (int ct = 0; ct < 4; ++ct) b[ct] = X[(8 * ct + gr) * ldx + 4 * (s0 + s) + tq];
#pragma unroll
          for (int ri = 0; ri < ri_n; ++ri)
#pragma unroll
            for (int ct = 0; ct < 4; ++ct) dmma_8x8x4(acc[ri][ct], a[s][ri], b[ct]);
        }
      }
#pragma unroll
      for (int ri = 0; ri < ri_n; ++ri) {
        const int i = i0 + 8 * ri + gr;
        if (i >= rt) continue;
#pragma unroll
        for (int ct = 0; ct < 4; ++ct)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int j = jb + 8 * ct + 2 * tq + h;
            if (j >= c0 && j < je) M[g + i + static_cast<std::size_t>(j) * ldm] = static_cast<T>(acc[ri][ct][h]);
          }
      }
    }
  }
  __syncthreads();
}

}  // namespace tessera::kernels::detail
