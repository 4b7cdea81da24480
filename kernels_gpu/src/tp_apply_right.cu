// [C1 C2] := [C1 C2] (I - V_0 T_0 V_0^T) (I - V_1 T_1 V_1^T) ..., V_i = [I; U_i], in one kernel
// (gpu_tpqrt.hpp): a QR update's lane Q taking a group of gpu_tpqrt_chain's panels from the right.
// With cuBLAS that is five calls a panel (copy, two GEMMs, TRMM, subtraction), 12-27 us of host time
// each on the H200's host, which made lane Q, not the chain, the end of such updates
// (docs/results/2026-11-29-rank-k-as-rows-h200.md).
//
// Products from the right leave C's rows independent, so a warp takes 8 rows through every panel of
// the group with no barrier but the block's staging of U_i and T_i: its rows of C2 stay in shared
// memory, and each panel is W = C1_i + C2 U_i, Y = W T_i, C1_i -= Y, C2 -= Y U_i^T on the tensor cores
// (m8n8k4 in double; single precision is computed in double too).
#include <algorithm>

#include <tessera/kernels_gpu/gpu_tpqrt.hpp>

#include "check.hpp"
#include "per_device.hpp"

namespace tessera::kernels {
namespace {

constexpr int nb = 32, warps = 4, threads = 32 * warps, rows = 8 * warps;
// Column-major slabs whose leading dimensions are 4 (mod 16) doubles: a fragment's 16 lanes of a
// half-warp (rows gr, columns tq, or the transpose) then read 16 different 8-byte banks.
constexpr int ldw = 12, ldt = nb + 4;
__host__ __device__ constexpr int round8(int p) { return (p + 7) / 8 * 8; }
__host__ __device__ constexpr int ld_u(int p) { return round8(p) + (round8(p) % 16 == 0 ? 4 : 12); }
// Doubles of shared memory: U_i and T_i for the block, a warp's rows of C2 and its W.
constexpr int shared_doubles(int p) { return ld_u(p) * nb + ldt * nb + warps * ldw * (round8(p) + nb); }

// c += a b for one 8 x 8 tile: a is the lane's entry of the 8 x 4 A operand (row gr, column tq),
// b of the 4 x 8 B (row tq, column gr); c holds row gr, columns 2 tq and 2 tq + 1.
__device__ __forceinline__ void dmma(double (&c)[2], double a, double b) {
  asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};"
      : "+d"(c[0]), "+d"(c[1])
      : "d"(a), "d"(b));
}

template <class T>
__global__ void __launch_bounds__(threads) tp_apply_right_kernel(int n, int w, int p, const T* __restrict__ U,
                                                                 int ldu, const T* __restrict__ Tm, T* C1, int ldc1,
                                                                 T* C2, int ldc2) {
  extern __shared__ double smem[];
  const int p8 = round8(p), lu = ld_u(p);
  const int tid = static_cast<int>(threadIdx.x), warp = tid >> 5, lane = tid & 31, gr = lane >> 2, tq = lane & 3;
  double* Us = smem;            // U_i, p8 x nb, zeros beyond p rows and the panel's columns
  double* Ts = Us + lu * nb;    // T_i, zeros below the diagonal and beyond the panel's columns
  double* C2w = Ts + ldt * nb + warp * ldw * (p8 + nb);  // the warp's 8 rows of C2 (zeros beyond n, p)
  double* Wb = C2w + ldw * p8;                           // the warp's W, then -Y
  const int r0 = static_cast<int>(blockIdx.x) * rows + warp * 8, row = r0 + gr;
  const bool live = row < n;
  for (int idx = lane; idx < 8 * p8; idx += 32) {
    const int i = idx & 7, j = idx >> 3;
    C2w[i + j * ldw] = r0 + i < n && j < p ? static_cast<double>(C2[r0 + i + static_cast<std::size_t>(j) * ldc2]) : 0.0;
  }
  for (int c0 = 0; c0 < w; c0 += nb) {
    const int jb = min(nb, w - c0);
    __syncthreads();  // every warp is done with the previous panel's U and T
    for (int idx = tid; idx < p8 * nb; idx += threads) {
      const int k = idx % p8, c = idx / p8;
      Us[k + c * lu] = k < p && c < jb ? static_cast<double>(U[k + static_cast<std::size_t>(c0 + c) * ldu]) : 0.0;
    }
    const T* Tp = Tm + static_cast<std::size_t>(c0) * nb;
    for (int idx = tid; idx < nb * nb; idx += threads) {
      const int i = idx % nb, c = idx / nb;
      Ts[i + c * ldt] = i <= c && c < jb ? static_cast<double>(Tp[i + c * nb]) : 0.0;
    }
    __syncthreads();
    // W = C1 + C2 U: the warp's 8 rows, four tiles of 8 columns.
    double q1[4][2], acc[4][2];
#pragma unroll
    for (int tj = 0; tj < 4; ++tj)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int c = 8 * tj + 2 * tq + h;
        q1[tj][h] = live && c < jb ? static_cast<double>(C1[row + static_cast<std::size_t>(c0 + c) * ldc1]) : 0.0;
        acc[tj][h] = q1[tj][h];
      }
    for (int k = 0; k < p8; k += 4) {
      const double a = C2w[gr + (k + tq) * ldw];
#pragma unroll
      for (int tj = 0; tj < 4; ++tj) dmma(acc[tj], a, Us[k + tq + (8 * tj + gr) * lu]);
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
        if (k <= 8 * tj + 7) dmma(y[tj], a, Ts[k + tq + (8 * tj + gr) * ldt]);
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
    // C2 -= Y U^T, eight columns of C2 at a time.
    double a8[nb / 4];
#pragma unroll
    for (int kk = 0; kk < nb / 4; ++kk) a8[kk] = Wb[gr + (4 * kk + tq) * ldw];
    for (int j0 = 0; j0 < p8; j0 += 8) {
      double c[2] = {C2w[gr + (j0 + 2 * tq) * ldw], C2w[gr + (j0 + 2 * tq + 1) * ldw]};
#pragma unroll
      for (int kk = 0; kk < nb / 4; ++kk) dmma(c, a8[kk], Us[j0 + gr + (4 * kk + tq) * lu]);
      C2w[gr + (j0 + 2 * tq) * ldw] = c[0];
      C2w[gr + (j0 + 2 * tq + 1) * ldw] = c[1];
    }
    __syncwarp();
  }
  __syncwarp();
  for (int idx = lane; idx < 8 * p8; idx += 32) {
    const int i = idx & 7, j = idx >> 3;
    if (r0 + i < n && j < p) C2[r0 + i + static_cast<std::size_t>(j) * ldc2] = static_cast<T>(C2w[i + j * ldw]);
  }
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
  if (p > gpu_tp_apply_right_max_p) return false;
  const int bytes = shared_doubles(p) * static_cast<int>(sizeof(double));
  if (bytes > detail::shared_optin_bytes(fn)) return false;
  static detail::per_device_value allowed;
  detail::allow_shared_memory(allowed, fn, tp_apply_right_kernel<T>, detail::shared_optin_bytes(fn));
  tp_apply_right_kernel<T><<<static_cast<unsigned>((n + rows - 1) / rows), threads, bytes, stream>>>(
      n, w, p, U, ldu, Tm, C1, ldc1, C2, ldc2);
  detail::check(fn, "tp_apply_right_kernel launch", cudaGetLastError());
  return true;
}

template bool gpu_tp_apply_right<float>(int, int, int, const float*, int, const float*, float*, int, float*, int,
                                        cudaStream_t);
template bool gpu_tp_apply_right<double>(int, int, int, const double*, int, const double*, double*, int, double*,
                                         int, cudaStream_t);

}  // namespace tessera::kernels
