// [C1 C2] := [C1 C2] (I - V T V^T), V = [I; U], in one kernel (gpu_tpqrt.hpp): a QR update's
// lane Q taking a panel of gpu_tpqrt_chain's reflectors from the right. With cuBLAS that is five
// calls a panel (copy, two GEMMs, TRMM, subtraction), 12-27 us of host time each on the H200's host,
// which made lane Q, not the chain, the end of such updates (docs/results/2026-11-29-rank-k-as-rows-h200.md).
//
// A thread block takes 128 rows of C: W = C1 + C2 U (U staged in shared memory 32 of its rows at a
// time), W := W T, C1 -= W, C2 -= W U^T; a thread two rows and 8 of the 32 columns, in double.
#include <algorithm>

#include <tessera/kernels_gpu/gpu_tpqrt.hpp>

#include "check.hpp"

namespace tessera::kernels {
namespace {

constexpr int nb = 32, rows = 128, threads = 256, kc = 32, cols_a_thread = nb / 4;
static_assert(cols_a_thread == 8 && kc / 4 == 8, "fma_2x8 takes 8 columns (and 8 of U's rows) a thread");

// y[h][c] += a_h v[c] for the thread's two rows, v eight consecutive doubles of shared memory
// (16-byte aligned, four 128-bit loads): every product of the kernel, each v serving both rows.
__device__ __forceinline__ void fma_2x8(double (&y)[2][8], double a0, double a1, const double* p) {
  double v[8];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const double2 x = reinterpret_cast<const double2*>(p)[q];
    v[2 * q] = x.x, v[2 * q + 1] = x.y;
  }
#pragma unroll
  for (int c = 0; c < 8; ++c) y[0][c] = fma(a0, v[c], y[0][c]), y[1][c] = fma(a1, v[c], y[1][c]);
}

// A thread: rows r and r + 64 of the block's 128, columns c0 .. c0 + 7 (and in C2's update U's rows
// kq .. kq + 7 of each chunk): each value of U or T loaded from shared memory serves two rows.
template <class T>
__global__ void __launch_bounds__(threads) tp_apply_right_kernel(int n, int p, const T* U, int ldu, const T* Tm,
                                                                 int ldt, T* C1, int ldc1, T* C2, int ldc2) {
  // 48 KB in all. A warp reads one row of Ub or Ts at a time (its threads share c0 and kq):
  // broadcasts; W is stored column by column, so that a warp's 32 rows are 32 banks.
  __shared__ __align__(16) double Ub[kc][nb];  // U's rows k0 .. k0 + kc, or (C2's update) transposed
  __shared__ __align__(16) double Ts[nb][nb];  // T, zeros below the diagonal
  __shared__ double Ws[nb][rows];
  const int tid = static_cast<int>(threadIdx.x), r = tid & 63, c0 = (tid >> 6) * cols_a_thread;
  const int row0 = static_cast<int>(blockIdx.x) * rows + r;
  bool live[2];
  for (int h = 0; h < 2; ++h) live[h] = row0 + 64 * h < n;
  for (int idx = tid; idx < nb * nb; idx += threads) {
    const int i = idx % nb, c = idx / nb;
    Ts[i][c] = i <= c ? static_cast<double>(Tm[i + static_cast<std::size_t>(c) * ldt]) : 0.0;
  }
  auto stage_u = [&](int k0, bool transposed) {  // the last chunk's reads are behind a barrier
    const int kn = min(kc, p - k0);
    for (int idx = tid; idx < kc * nb; idx += threads) {
      const int k = idx % kc, c = idx / kc;
      const double u = k < kn ? static_cast<double>(U[k0 + k + static_cast<std::size_t>(c) * ldu]) : 0.0;
      if (transposed) Ub[c][k] = u;
      else Ub[k][c] = u;
    }
  };
  double w[2][cols_a_thread];
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int c = 0; c < cols_a_thread; ++c)
      w[h][c] = live[h] ? static_cast<double>(C1[row0 + 64 * h + static_cast<std::size_t>(c0 + c) * ldc1]) : 0.0;
  // W = C1 + C2 U
  for (int k0 = 0; k0 < p; k0 += kc) {
    __syncthreads();
    stage_u(k0, false);
    __syncthreads();
    const int kn = min(kc, p - k0);
    for (int k = 0; k < kn; ++k) {
      double x[2];
      for (int h = 0; h < 2; ++h)
        x[h] = live[h] ? static_cast<double>(C2[row0 + 64 * h + static_cast<std::size_t>(k0 + k) * ldc2]) : 0.0;
      fma_2x8(w, x[0], x[1], &Ub[k][c0]);
    }
  }
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int c = 0; c < cols_a_thread; ++c) Ws[c0 + c][r + 64 * h] = w[h][c];
  __syncthreads();
  // W := W T (T's zeros below the diagonal: no branch), C1 -= W
  double y[2][cols_a_thread] = {};
#pragma unroll 4
  for (int l = 0; l < nb; ++l) fma_2x8(y, Ws[l][r], Ws[l][r + 64], &Ts[l][c0]);
  __syncthreads();
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int c = 0; c < cols_a_thread; ++c) {
      Ws[c0 + c][r + 64 * h] = y[h][c];
      if (live[h]) {
        T& d = C1[row0 + 64 * h + static_cast<std::size_t>(c0 + c) * ldc1];
        d = static_cast<T>(static_cast<double>(d) - y[h][c]);
      }
    }
  // C2 -= W U^T, U's rows a chunk at a time, a thread 8 of the chunk's rows
  const int kq = (tid >> 6) * (kc / 4);
  for (int k0 = 0; k0 < p; k0 += kc) {
    __syncthreads();
    stage_u(k0, true);
    __syncthreads();
    double a[2][kc / 4] = {};
#pragma unroll 4
    for (int c = 0; c < nb; ++c) fma_2x8(a, Ws[c][r], Ws[c][r + 64], &Ub[c][kq]);
    for (int h = 0; h < 2; ++h)
      if (live[h])
#pragma unroll
        for (int j = 0; j < kc / 4; ++j)
          if (k0 + kq + j < p) {
            T& d = C2[row0 + 64 * h + static_cast<std::size_t>(k0 + kq + j) * ldc2];
            d = static_cast<T>(static_cast<double>(d) - a[h][j]);
          }
  }
}

}  // namespace

template <class T>
void gpu_tp_apply_right(int n, int nbv, int p, const T* U, int ldu, const T* Tm, int ldt, T* C1, int ldc1, T* C2,
                        int ldc2, cudaStream_t stream) {
  constexpr const char* fn = "tessera::kernels::gpu_tp_apply_right";
  using detail::require_ge;
  require_ge(fn, "n", n, "0", 0);
  require_ge(fn, "p", p, "0", 0);
  tessera::check::require_eq(fn, "nb", nbv, "32", nb);
  if (n == 0) return;
  require_ge(fn, "ldc1", ldc1, "n", n);
  require_ge(fn, "ldt", ldt, "nb", nb);
  if (p > 0) {
    require_ge(fn, "ldu", ldu, "p", p);
    require_ge(fn, "ldc2", ldc2, "n", n);
    detail::require_ptr(fn, "U", U);
    detail::require_ptr(fn, "C2", C2);
  }
  detail::require_ptr(fn, "C1", C1);
  detail::require_ptr(fn, "T", Tm);
  tp_apply_right_kernel<T><<<static_cast<unsigned>((n + rows - 1) / rows), threads, 0, stream>>>(
      n, p, U, ldu, Tm, ldt, C1, ldc1, C2, ldc2);
  detail::check(fn, "tp_apply_right_kernel launch", cudaGetLastError());
}

template void gpu_tp_apply_right<float>(int, int, int, const float*, int, const float*, int, float*, int, float*, int,
                                        cudaStream_t);
template void gpu_tp_apply_right<double>(int, int, int, const double*, int, const double*, int, double*, int,
                                         double*, int, cudaStream_t);

}  // namespace tessera::kernels
