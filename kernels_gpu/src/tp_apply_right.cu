// [C1 C2] := [C1 C2] (I - V_0 T_0 V_0^T) (I - V_1 T_1 V_1^T) ..., V_i = [I; U_i], in one kernel
// (gpu_tpqrt.hpp): a QR update's lane Q taking a group of gpu_tpqrt_chain's panels from the right.
// With cuBLAS that is five calls a panel (copy, two GEMMs, TRMM, subtraction), 12-27 us of host time
// each on the H200's host, which made lane Q, not the chain, the end of such updates
// (docs/results/2026-11-29-rank-k-as-rows-h200.md).
//
// Products from the right leave C's rows independent, so a warp takes 8 rows through every panel of
// the group with no barrier but the block's staging of U_i and T_i: its rows of C2 stay in its
// registers as 8 x 8 accumulator tiles, and each panel is W = C1_i + C2 U_i, Y = W T_i, C1_i -= Y,
// C2 -= Y U_i^T on the tensor cores (m8n8k4 in double; single precision is computed in double too).
// C2's rows in shared memory instead (the first version) took 149 KB a block at p = 200, one block
// an SM, and lane Q was then slower than with cuBLAS's calls (deleting 200 columns of 6000 x 3000
// with Q in double: 3.89-4.03 ms against 3.80; in registers 3.27-3.31), the same up to p = 128
// (docs/results/2026-11-29-tp-apply-right-mma-h200.md).
#include <algorithm>

#include <tessera/kernels_gpu/gpu_tpqrt.hpp>

#include "check.hpp"
#include "dmma.cuh"
#include "per_device.hpp"

namespace tessera::kernels {
namespace {

constexpr int nb = 32, warps = 4, threads = 32 * warps, rows = 8 * warps;
// Leading dimensions 4 (mod 16) doubles: a fragment's 16 lanes of a half-warp then read 16
// different 8-byte banks (with U's rows in the order rho, below).
constexpr int ldw = 12, ldt = nb + 4;
__host__ __device__ constexpr int round8(int p) { return (p + 7) / 8 * 8; }
__host__ __device__ constexpr int ld_u(int p) { return round8(p) + (round8(p) % 16 == 0 ? 4 : 12); }
// Doubles of shared memory: U_i and T_i for the block, a warp's W.
constexpr int shared_doubles(int p) { return ld_u(p) * nb + ldt * nb + warps * ldw * nb; }
// Where U's row k is kept: within each 8 rows, k ^ (bit 2 of k). C2's column products read rows
// 8t + 2 tq + h (h fixed) and the update reads rows 8t + gr; both are then conflict-free.
__device__ __forceinline__ int rho(int k) { return k ^ ((k >> 2) & 1); }

// MAXT: the most 8-column tiles of C2 the kernel holds (p <= 8 MAXT).
template <class T, int MAXT>
__global__ void __launch_bounds__(threads) tp_apply_right_kernel(int n, int w, int p, const T* __restrict__ U,
                                                                 int ldu, const T* __restrict__ Tm, T* C1, int ldc1,
                                                                 T* C2, int ldc2) {
  extern __shared__ double smem[];
  const int p8 = round8(p), lu = ld_u(p), tiles = p8 / 8;
  const int tid = static_cast<int>(threadIdx.x), warp = tid >> 5, lane = tid & 31, gr = lane >> 2, tq = lane & 3;
  double* Us = smem;          // U_i, rows in rho's order, zeros beyond p rows and the panel's columns
  double* Ts = Us + lu * nb;  // T_i, zeros below the diagonal and beyond the panel's columns
  double* Wb = Ts + ldt * nb + warp * ldw * nb;  // the warp's W, then -Y
  const int row = static_cast<int>(blockIdx.x) * rows + warp * 8 + gr;
  const bool live = row < n;
  // c2[t][h] = C2(row, 8 t + 2 tq + h): the lane's part of its warp's 8 rows (zeros beyond n, p).
  double c2[MAXT][2];
#pragma unroll
  for (int t = 0; t < MAXT; ++t)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int j = 8 * t + 2 * tq + h;
      c2[t][h] = t < tiles && live && j < p ? static_cast<double>(C2[row + static_cast<std::size_t>(j) * ldc2]) : 0.0;
    }
  for (int c0 = 0; c0 < w; c0 += nb) {
    const int jb = min(nb, w - c0);
    __syncthreads();  // every warp is done with the previous panel's U and T
    for (int idx = tid; idx < p8 * nb; idx += threads) {
      const int k = idx % p8, c = idx / p8;
      Us[rho(k) + c * lu] = k < p && c < jb ? static_cast<double>(U[k + static_cast<std::size_t>(c0 + c) * ldu]) : 0.0;
    }
    const T* Tp = Tm + static_cast<std::size_t>(c0) * nb;
    for (int idx = tid; idx < nb * nb; idx += threads) {
      const int i = idx % nb, c = idx / nb;
      Ts[i + c * ldt] = i <= c && c < jb ? static_cast<double>(Tp[i + c * nb]) : 0.0;
    }
    __syncthreads();
    // W = C1 + C2 U: the warp's 8 rows, four tiles of 8 columns. C2's columns are taken in the
    // order the lanes hold them (step (t, h): lane tq's column 8t + 2tq + h), U's rows to match.
    double q1[4][2], acc[4][2];
#pragma unroll
    for (int tj = 0; tj < 4; ++tj)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int c = 8 * tj + 2 * tq + h;
        q1[tj][h] = live && c < jb ? static_cast<double>(C1[row + static_cast<std::size_t>(c0 + c) * ldc1]) : 0.0;
        acc[tj][h] = q1[tj][h];
      }
#pragma unroll
    for (int t = 0; t < MAXT; ++t)
      if (t < tiles)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const double* u = Us + 8 * t + rho(2 * tq + h) + gr * lu;
#pragma unroll
          for (int tj = 0; tj < 4; ++tj) detail::dmma_8x8x4(acc[tj], c2[t][h], u[8 * tj * lu]);
        }
#pragma unroll
    for (int tj = 0; tj < 4; ++tj)
#pragma unroll
      for (int h = 0; h < 2; ++h) Wb[gr + (8 * tj + 2 * tq + h) * ldw] = acc[tj][h];
    __syncwarp();
    // Y = W T (T's blocks below the diagonal skipped), C1 -= Y.
    double y[4][2] = {};
#pragma unroll
    for (int k = 0; k < nb; k += 4) {
      const double a = Wb[gr + (k + tq) * ldw];
#pragma unroll
      for (int tj = 0; tj < 4; ++tj)
        if (k <= 8 * tj + 7) detail::dmma_8x8x4(y[tj], a, Ts[k + tq + (8 * tj + gr) * ldt]);
    }
#pragma unroll
    for (int tj = 0; tj < 4; ++tj)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int c = 8 * tj + 2 * tq + h;
        if (live && c < jb) C1[row + static_cast<std::size_t>(c0 + c) * ldc1] = static_cast<T>(q1[tj][h] - y[tj][h]);
      }
    __syncwarp();  // W read by every lane
#pragma unroll
    for (int tj = 0; tj < 4; ++tj)
#pragma unroll
      for (int h = 0; h < 2; ++h) Wb[gr + (8 * tj + 2 * tq + h) * ldw] = -y[tj][h];
    __syncwarp();
    // C2 -= Y U^T, into the lane's tiles.
    double a8[nb / 4];
#pragma unroll
    for (int kk = 0; kk < nb / 4; ++kk) a8[kk] = Wb[gr + (4 * kk + tq) * ldw];
#pragma unroll
    for (int t = 0; t < MAXT; ++t)
      if (t < tiles) {
        const double* u = Us + 8 * t + rho(gr) + tq * lu;
#pragma unroll
        for (int kk = 0; kk < nb / 4; ++kk) detail::dmma_8x8x4(c2[t], a8[kk], u[4 * kk * lu]);
      }
    __syncwarp();  // -Y read by every lane before the next panel's W
  }
#pragma unroll
  for (int t = 0; t < MAXT; ++t)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int j = 8 * t + 2 * tq + h;
      if (t < tiles && live && j < p) C2[row + static_cast<std::size_t>(j) * ldc2] = static_cast<T>(c2[t][h]);
    }
}

template <class T, int MAXT>
void launch(int n, int w, int p, const T* U, int ldu, const T* Tm, T* C1, int ldc1, T* C2, int ldc2, int bytes,
            int optin, cudaStream_t stream) {
  constexpr const char* fn = "tessera::kernels::gpu_tp_apply_right";
  static detail::per_device_value allowed;
  detail::allow_shared_memory(allowed, fn, tp_apply_right_kernel<T, MAXT>, optin);
  tp_apply_right_kernel<T, MAXT><<<static_cast<unsigned>((n + rows - 1) / rows), threads, bytes, stream>>>(
      n, w, p, U, ldu, Tm, C1, ldc1, C2, ldc2);
  detail::check(fn, "tp_apply_right_kernel launch", cudaGetLastError());
}

}  // namespace

template <class T>
bool gpu_tp_apply_right(int n, int w, int p, const T* U, int ldu, const T* Tm, T* C1, int ldc1, T* C2, int ldc2,
                        cudaStream_t stream) {
  constexpr const char* fn = "tessera::kernels::gpu_tp_apply_right";
  using detail::require_ge;
  require_ge(fn, "n", n, "0", 0);
  require_ge(fn, "w", w, "0", 0);
  require_ge(fn, "p", p, "0", 0);
  if (n == 0 || w == 0) return true;
  require_ge(fn, "ldc1", ldc1, "n", n);
  if (p > 0) {
    require_ge(fn, "ldu", ldu, "p", p);
    require_ge(fn, "ldc2", ldc2, "n", n);
    detail::require_ptr(fn, "U", U);
    detail::require_ptr(fn, "C2", C2);
  }
  detail::require_ptr(fn, "C1", C1);
  detail::require_ptr(fn, "T", Tm);
  static_assert(gpu_tp_apply_right_max_p <= 8 * 32, "the largest instantiation holds 32 tiles of C2");
  if (p > gpu_tp_apply_right_max_p) return false;
  const int bytes = shared_doubles(p) * static_cast<int>(sizeof(double)), optin = detail::shared_optin_bytes(fn);
  if (bytes > optin) return false;
  // C2's tiles in registers: the fewest instantiated that hold p's.
  const int tiles = round8(p) / 8;
  if (tiles <= 4) launch<T, 4>(n, w, p, U, ldu, Tm, C1, ldc1, C2, ldc2, bytes, optin, stream);
  else if (tiles <= 8) launch<T, 8>(n, w, p, U, ldu, Tm, C1, ldc1, C2, ldc2, bytes, optin, stream);
  else if (tiles <= 16) launch<T, 16>(n, w, p, U, ldu, Tm, C1, ldc1, C2, ldc2, bytes, optin, stream);
  else launch<T, 32>(n, w, p, U, ldu, Tm, C1, ldc1, C2, ldc2, bytes, optin, stream);
  return true;
}

template bool gpu_tp_apply_right<float>(int, int, int, const float*, int, const float*, float*, int, float*, int,
                                        cudaStream_t);
template bool gpu_tp_apply_right<double>(int, int, int, const double*, int, const double*, double*, int, double*,
                                         int, cudaStream_t);

}  // namespace tessera::kernels
