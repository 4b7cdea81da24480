// The Householder QR of a short block (at most 32 columns, 576 rows in double, 768 in float) in one thread
// block, the block in registers: the (nb + p) x nb panels of the QR updates (issue #18) and the
// last panels of a blocked QR, where householder_block's grid-wide barrier per column and
// CholeskyQR's four kernels cost more than the work (about 4-6 us a column, measured).
//
// A thread holds a 4 x 8 tile of the block (below). Column j costs two block barriers: one for
// the sum of squares below the diagonal (each warp then adds the warps' partial sums itself, so
// no third barrier is needed), one for the 32 sums v_j^T a_c, c != j: for c > j they are the
// reflector's w (the update of column c), for c < j the Gram entries G(c, j) = v_c^T v_j from
// which T follows at the end (LAPACK's LARFT recurrence, one warp per row of T). Partial sums are
// double buffered by the parity of j, so a warp that runs ahead never overwrites what a slower one
// reads.
// Columns are equilibrated by powers of two first (equilibrate.hpp): no square or sum overflows
// or underflows at any scale of A, and R is unscaled as it is written.
#include <cmath>

#include <tessera/kernels_gpu/gpu_geqrt.hpp>

#include "check.hpp"
#include "engine.hpp"
#include "equilibrate.hpp"
#include "warp_sums.cuh"

namespace tessera::kernels::detail {
namespace {

constexpr int cols = 32;
constexpr unsigned full_mask = 0xffffffffu;

// Threads a block, and rows (a thread holds 4 rows of 8 columns). Up to 512 threads a thread has
// 128 registers and double's 32 values do not spill; beyond, a warp's registers must fit a
// quarter of the SM's register file (the SM's four schedulers hold whole warps), so 576 threads
// get 96 (double spills some, ptxas -v) and float's 768 get 80.
constexpr int small_threads = 512;
template <class T>
constexpr int short_threads() {
  return sizeof(T) == sizeof(float) ? 768 : 576;
}
static_assert(gpu_geqrt_one_kernel_rows<double> == small_threads &&
                  gpu_geqrt_one_kernel_rows<float> == short_threads<float>(),
              "gpu_geqrt_one_kernel_rows (gpu_geqrt.hpp) names the unspilled sizes above");

// Thread layout: lane l of warp w holds rows 32 w + 4 (l / 4) + q (q < 4) of the block's columns
// 8 (l % 4) + c (c < 8), a 4 x 8 tile in registers. Against one row a thread this cuts a column's
// shuffles from about 150 to 54 a warp (a 32-value reduction per lane becomes an 8-value one over
// the 8 lanes that share a column group), which bound the kernel: 152 us for 32 x 532 with one
// row a thread (ncu, H100).
constexpr int tile_rows = 4, tile_cols = 8;

// The 8 lanes of a column group (lane bits 2..4) reduce their 8 values: lane (g, b) gets value b
// of group g's reduction, that is the warp's reduction of slot 8 g + b. These are warp_sums.cuh's
// transpose rounds over other lane bits, written out here: through a shared template they
// compiled to more selects and this kernel ran 1-5% slower (H100, 2026-11-24 update-launches
// record).
template <class T, class Op>
__device__ __forceinline__ T group_reduce(T (&v)[tile_cols], int lane, Op op) {
#pragma unroll
  for (int k = 4, bit = 16; k >= 1; k >>= 1, bit >>= 1) {
    const bool upper = (lane & bit) != 0;
#pragma unroll
    for (int i = 0; i < k; ++i) {
      const T send = upper ? v[i] : v[i + k];
      const T keep = upper ? v[i + k] : v[i];
      v[i] = op(keep, __shfl_xor_sync(full_mask, send, bit));
    }
  }
  return v[0];
}

template <class T, int Threads>
__global__ void __launch_bounds__(Threads)
    householder_short_kernel(int m, int nc, T* __restrict__ A, int lda, T* __restrict__ tau, T* __restrict__ Vc,
                             int ldvc, T* __restrict__ Tf, int ldt) {
  constexpr int warps = Threads / 32;
  __shared__ T part[2][warps][cols];  // the warps' partial sums of the 32 slots, by parity of j
  __shared__ T sq[2][warps];          // the warps' partial sums of squares
  __shared__ T alpha_s[2];            // the diagonal entry of column j
  __shared__ T gram[cols * (cols + 1)];  // G(k, c) = v_k^T v_c (k < c) at c + k * 33
  __shared__ T tau_s[cols];
  __shared__ int expo[cols];
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  const int nw = static_cast<int>(blockDim.x) >> 5;
  const int g = lane & 3, slot = 8 * g + (lane >> 2);  // column group; the slot this lane reduces
  const int r0 = 32 * warp + 4 * (lane >> 2);          // first of the 4 rows
  const int c0 = tile_cols * g;                        // first of the 8 columns

  T a[tile_rows][tile_cols];
#pragma unroll
  for (int c = 0; c < tile_cols; ++c)
#pragma unroll
    for (int q = 0; q < tile_rows; ++q)
      a[q][c] = r0 + q < m && c0 + c < nc ? A[r0 + q + static_cast<std::ptrdiff_t>(c0 + c) * lda] : T(0);

  // A := A D, D = diag(2^-e_c): every column's max-abs in [1/2, 1).
  {
    T mx[tile_cols];
#pragma unroll
    for (int c = 0; c < tile_cols; ++c) {
      mx[c] = 0;
#pragma unroll
      for (int q = 0; q < tile_rows; ++q) mx[c] = fmax(mx[c], fabs(a[q][c]));
    }
    part[0][warp][slot] = group_reduce(mx, lane, max_op{});
  }
  __syncthreads();
  T cmax = 0;
  for (int w = 0; w < nw; ++w) cmax = fmax(cmax, part[0][w][lane]);
  const int e = exponent_of_max(static_cast<double>(cmax));  // lane l: column l's
  if (warp == 0) expo[lane] = e;
#pragma unroll
  for (int c = 0; c < tile_cols; ++c) {
    const int ec = __shfl_sync(full_mask, e, c0 + c);
#pragma unroll
    for (int q = 0; q < tile_rows; ++q) a[q][c] = static_cast<T>(scalbn(static_cast<double>(a[q][c]), -ec));
  }

  // The 8 columns of a column group unrolled (a tile's column index must be a constant), the 4
  // groups not: all 32 unrolled ran out of the instruction cache (ncu: 39% of the stalls waiting
  // for instructions) and spilled more; with selects for a runtime column the kernel was slower.
  // H100, double, 128 / 512 / 532 rows: 0.055 / 0.092 / 0.112 ms against 0.063 / 0.090 / 0.111.
#pragma unroll 1
  for (int gj = 0; gj < cols / tile_cols; ++gj)
#pragma unroll
  for (int jj = 0; jj < tile_cols; ++jj) {
    const int j = gj * tile_cols + jj;
    if (j >= nc) break;
    const int buf = jj & 1;
    const bool mine = g == gj;  // this lane holds column j's entries of its rows
    // Reflector j from x = A(j+1:m, j) and alpha = A(j, j) (LAPACK's LARFG; tau = 0 and x := 0
    // where the column's remaining part is negligible, equilibrate.hpp).
    T x[tile_rows], s = 0;
#pragma unroll
    for (int q = 0; q < tile_rows; ++q) {
      x[q] = __shfl_sync(full_mask, a[q][jj], (lane & ~3) | gj);  // from the lane of the same rows
      if (r0 + q > j) s += x[q] * x[q];
      if (mine && r0 + q == j) alpha_s[buf] = a[q][jj];
    }
    s += __shfl_xor_sync(full_mask, s, 4);  // the 4 column groups hold the same x: rows only
    s += __shfl_xor_sync(full_mask, s, 8);
    s += __shfl_xor_sync(full_mask, s, 16);
    if (lane == 0) sq[buf][warp] = s;
    __syncthreads();
    T sigma = lane < nw ? sq[buf][lane] : T(0);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sigma += __shfl_xor_sync(full_mask, sigma, o);
    const T alpha = alpha_s[buf];
    T tj, scale, beta;
    reflector_from_sums<T>(alpha, sigma, beta, tj, scale);
    T v[tile_rows];
#pragma unroll
    for (int q = 0; q < tile_rows; ++q) v[q] = r0 + q > j ? scale * x[q] : (r0 + q == j ? T(1) : T(0));
    // Slot c: v^T a_c (c > j: w_c; c < j: a_c holds v_c below its diagonal, so G(c, j)).
    {
      T p[tile_cols];
#pragma unroll
      for (int c = 0; c < tile_cols; ++c) {
        T t = 0;
#pragma unroll
        for (int q = 0; q < tile_rows; ++q) t = fma(v[q], a[q][c], t);
        p[c] = mine && c == jj ? T(0) : t;
      }
      part[buf][warp][slot] = group_reduce(p, lane, plus_op{});
    }
    __syncthreads();
    T total = 0;
    for (int w = 0; w < nw; ++w) total += part[buf][w][lane];  // lane l: slot l's
    if (warp == 0 && lane < j) gram[j + lane * (cols + 1)] = total;
    T f[tile_rows];
#pragma unroll
    for (int q = 0; q < tile_rows; ++q) f[q] = -tj * v[q];
#pragma unroll
    for (int c = 0; c < tile_cols; ++c) {
      const T wc = __shfl_sync(full_mask, total, c0 + c);
      if (c0 + c > j) {
#pragma unroll
        for (int q = 0; q < tile_rows; ++q) a[q][c] = fma(f[q], wc, a[q][c]);
      }
    }
    if (mine) {
#pragma unroll
      for (int q = 0; q < tile_rows; ++q) a[q][jj] = r0 + q > j ? v[q] : (r0 + q == j ? beta : a[q][jj]);
    }
    if (threadIdx.x == 0) tau_s[j] = tj;
  }
  __syncthreads();

  // Row l of T: t_l = tau_l, t_c = -tau_c sum_{l <= k < c} t_k G(k, c), lane c holding t_c and
  // the running sum (each t_k added to the later lanes as soon as it is known).
  for (int l = warp; l < nc; l += nw) {
    T t = 0, acc = 0;
    for (int c = l; c < nc; ++c) {
      if (lane == c) t = c == l ? tau_s[c] : -tau_s[c] * acc;
      const T tc = __shfl_sync(full_mask, t, c);
      if (lane > c) acc += tc * gram[lane + c * (cols + 1)];
    }
    if (lane < nc) Tf[l + static_cast<std::ptrdiff_t>(lane) * ldt] = lane >= l ? t : T(0);
  }
  if (static_cast<int>(threadIdx.x) < nc) tau[threadIdx.x] = tau_s[threadIdx.x];
#pragma unroll
  for (int c = 0; c < tile_cols; ++c) {
    const int col = c0 + c;
    if (col >= nc) break;
    const std::ptrdiff_t off = static_cast<std::ptrdiff_t>(col);
#pragma unroll
    for (int q = 0; q < tile_rows; ++q) {
      const int r = r0 + q;
      if (r >= m) break;
      A[r + off * lda] = r <= col ? static_cast<T>(scalbn(static_cast<double>(a[q][c]), expo[col])) : a[q][c];
      Vc[r + off * ldvc] = r > col ? a[q][c] : (r == col ? T(1) : T(0));
    }
  }
}

}  // namespace

template <class T>
int householder_short_max_rows() {
  return short_threads<T>();
}

template <class T>
void householder_short_block(const char* kernel, int m, int nc, T* A, int lda, T* tau, T* Vc, int ldvc, T* Tf,
                             int ldt, cudaStream_t stream) {
  if (m <= 0 || nc <= 0) return;
  if (nc > cols) bad_argument(kernel, "ib", nc, "<=", "the widest block", cols);
  if (m > short_threads<T>()) bad_argument(kernel, "rows", m, "<=", "householder_short_max_rows", short_threads<T>());
  const int threads = (m + 31) / 32 * 32;
  if (threads <= small_threads)
    householder_short_kernel<T, small_threads>
        <<<1, static_cast<unsigned>(threads), 0, stream>>>(m, nc, A, lda, tau, Vc, ldvc, Tf, ldt);
  else
    householder_short_kernel<T, short_threads<T>()>
        <<<1, static_cast<unsigned>(threads), 0, stream>>>(m, nc, A, lda, tau, Vc, ldvc, Tf, ldt);
  check(kernel, "householder_short_kernel launch", cudaGetLastError());
}

#define TESSERA_HOUSEHOLDER_SHORT(T)                                                                  \
  template int householder_short_max_rows<T>();                                                      \
  template void householder_short_block<T>(const char*, int, int, T*, int, T*, T*, int, T*, int, \
                                           cudaStream_t);
TESSERA_HOUSEHOLDER_SHORT(float)
TESSERA_HOUSEHOLDER_SHORT(double)
#undef TESSERA_HOUSEHOLDER_SHORT

}  // namespace tessera::kernels::detail
