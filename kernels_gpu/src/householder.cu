// The column-at-a-time Householder QR of a narrow block (at most 32 columns) of a tall panel, in
// one cooperative kernel: its thread blocks share the rows and meet at a grid-wide barrier once
// per column, instead of a kernel launch per column.
//
// Step j (j = -1 .. nc-1) applies reflector j to the block's rows and, in the same pass over
// them, sums what reflector j+1 needs: x^T x and x^T a_c for every later column c, x being
// column j+1 below the diagonal. A warp reduces its 32 sums in 31 shuffles (each round halves
// the values a lane holds), each thread block adds its sums atomically into a global buffer, and
// after the barrier every block reads the totals. Buffers rotate over three steps: step j reads
// column j's, adds into column j+1's and clears column j+2's, which no block touches until the
// next barrier. The row of the diagonal entry travels the same way, so the row's owner can update
// it while others read it.
//
// Given the block's column maxima (householder_block_scaled, equilibrate.hpp), the kernel first
// scales the columns in place by powers of two to max-abs in [1/2, 1) and at its end unscales R,
// so the sums of squares stay in range at any scale of A; reflectors are scale invariant.
#include <cooperative_groups.h>

#include <cmath>

#include "check.hpp"
#include "engine.hpp"
#include "equilibrate.hpp"
#include "warp_sums.cuh"

namespace tessera::kernels::detail {
namespace {

constexpr int max_cols = 32;
constexpr int threads = 256;
constexpr int warps = threads / 32;

// Per column c % 3: the sums (max_cols), then the diagonal row (max_cols).
constexpr int buffers = 3;

template <class T>
struct sums {
  T* total;
  T* row;
};

template <class T>
__device__ sums<T> buffer(T* base, int column) {
  T* p = base + static_cast<std::ptrdiff_t>(column % buffers) * 2 * max_cols;
  return {p, p + max_cols};
}

// Lane l of the warp gets the warp's sum of acc[l] (warp_sums.cuh).
template <class T>
__device__ T warp_transpose_sum(T (&acc)[max_cols], int lane) {
  return warp_transpose_reduce(acc, lane, plus_op{});
}

template <class T>
struct shared_state {
  double unit[max_cols];  // 2^-e_c, the column scaling (equilibrating only)
  T tw[max_cols];   // tau * w_c, w = (row j of A) + v^T A(j+1:m, :)
  T coef[2];        // scale (v = scale * x), beta
  T red[warps][max_cols];
};

template <class T>
__device__ void column_step(int m, int nc, int j, T* __restrict__ A, int lda, T* __restrict__ scratch,
                            T* __restrict__ tau, bool scaled, shared_state<T>& sh) {
  const int blocks = static_cast<int>(gridDim.x);
  const int chunk = (m + blocks - 1) / blocks;
  const int r0 = static_cast<int>(blockIdx.x) * chunk, r1 = min(m, r0 + chunk);
  const int next = j + 1;
  T* s_tw = sh.tw;
  T* s_coef = sh.coef;
  auto& s_red = sh.red;

  if (blockIdx.x == 0 && threadIdx.x < 2 * max_cols) {  // column j+2's buffer, for the next step
    const sums<T> later = buffer(scratch, j + 2);
    later.total[threadIdx.x] = T(0);
  }
  if (j >= 0) {
    const sums<T> in = buffer(scratch, j);
    if (threadIdx.x < max_cols) {
      const int c = static_cast<int>(threadIdx.x);
      s_red[0][c] = c >= j && c < nc ? in.total[c] : T(0);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      const T alpha = in.row[j], sigma = s_red[0][j];
      T t = 0, scale = 0, beta = alpha;
      const T tiny = scaled ? negligible_square<T>() : T(0);
      // Else H = I (LAPACK: tau = 0) and x := 0. NaN takes the first branch and stays visible.
      if (sigma != T(0) && !(alpha * alpha + sigma < tiny)) {
        beta = -copysign(sqrt(alpha * alpha + sigma), alpha);
        t = (beta - alpha) / beta;
        scale = T(1) / (alpha - beta);
      }
      s_coef[0] = scale;
      s_coef[1] = beta;
      s_red[1][0] = t;
      if (blockIdx.x == 0) tau[j] = t;
    }
    __syncthreads();
    if (threadIdx.x < max_cols) {
      const int c = static_cast<int>(threadIdx.x);
      if (c > j && c < nc) s_tw[c] = s_red[1][0] * (in.row[c] + s_coef[0] * s_red[0][c]);
    }
    __syncthreads();
  }

  T acc[max_cols];
#pragma unroll
  for (int c = 0; c < max_cols; ++c) acc[c] = 0;
  const sums<T> out = buffer(scratch, next);
  const T scale = j >= 0 ? s_coef[0] : T(0), beta = j >= 0 ? s_coef[1] : T(0);
  for (int r = max(r0, j < 0 ? 0 : j) + static_cast<int>(threadIdx.x); r < r1; r += threads) {
    T a[max_cols];
#pragma unroll
    for (int c = 0; c < max_cols; ++c)
      if (c >= (j < 0 ? 0 : j) && c < nc) a[c] = A[r + static_cast<std::ptrdiff_t>(c) * lda];
    if (j >= 0) {
      // Indices into a[] stay compile-time constants (unrolled, selected by compares), so a[]
      // lives in registers rather than local memory.
      T xj = 0;
#pragma unroll
      for (int c = 0; c < max_cols; ++c)
        if (c == j) xj = a[c];
      const T v = r == j ? beta : scale * xj;
      const T f = r == j ? T(1) : v;
#pragma unroll
      for (int c = 0; c < max_cols; ++c) {
        if (c == j) a[c] = v;
        else if (c > j && c < nc) a[c] -= f * s_tw[c];
      }
#pragma unroll
      for (int c = 0; c < max_cols; ++c)
        if (c >= j && c < nc) A[r + static_cast<std::ptrdiff_t>(c) * lda] = a[c];
    }
    if (next < nc) {
      if (r == next) {
#pragma unroll
        for (int c = 0; c < max_cols; ++c)
          if (c >= next && c < nc) out.row[c] = a[c];
      } else if (r > next) {
        T x = 0;
#pragma unroll
        for (int c = 0; c < max_cols; ++c)
          if (c == next) x = a[c];
#pragma unroll
        for (int c = 0; c < max_cols; ++c)
          if (c >= next && c < nc) acc[c] += x * a[c];
      }
    }
  }
  if (next >= nc) return;
  __syncthreads();  // s_red is reused below
  // Block sums: within each warp, then across warps, then into the global total.
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  s_red[warp][lane] = warp_transpose_sum(acc, lane);
  __syncthreads();
  if (threadIdx.x < max_cols && static_cast<int>(threadIdx.x) >= next && static_cast<int>(threadIdx.x) < nc) {
    T s = 0;
#pragma unroll
    for (int w = 0; w < warps; ++w) s += s_red[w][threadIdx.x];
    atomicAdd(out.total + threadIdx.x, s);
  }
}

// Row i of T (nc x nc, ldt) from the upper triangle of V's Gram matrix g (32 x 32, column major)
// and tau (LAPACK's LARFT recurrence, T(0:j, j) = -tau_j T(0:j, 0:j) V(:, 0:j)^T v_j: row i
// needs only row i).
template <class T>
__device__ void t_row_from_gram(int i, int nc, const double* g, const T* tau, T* Tf, int ldt) {
  double t[max_cols];
#pragma unroll
  for (int j = 0; j < max_cols; ++j) {
    t[j] = 0;
    if (j < nc && j >= i) {
      const double tj = static_cast<double>(tau[j]);
      if (j == i) {
        t[j] = tj;
      } else {
        double s = 0;
#pragma unroll
        for (int k = 0; k < j; ++k)
          if (k >= i) s += t[k] * g[k + j * max_cols];
        t[j] = -tj * s;
      }
    }
    if (j < nc) Tf[i + static_cast<std::ptrdiff_t>(j) * ldt] = static_cast<T>(t[j]);
  }
}

template <class T>
__global__ void __launch_bounds__(threads) householder_block_kernel(int m, int nc, T* __restrict__ A, int lda,
                                                                    T* __restrict__ tau, T* __restrict__ Vc,
                                                                    int ldvc, T* __restrict__ Tf, int ldt,
                                                                    T* __restrict__ scratch, double* __restrict__ gram,
                                                                    const unsigned long long* __restrict__ colmax,
                                                                    const int* __restrict__ skip) {
  __shared__ shared_state<T> sh;
  if (skip != nullptr && *skip != 0) return;  // every block alike: no barrier is left waiting
  cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  if (colmax != nullptr) {  // A := A D on this block's rows, the rows its steps read (exact: powers of two)
    const int chunk = (m + static_cast<int>(gridDim.x) - 1) / static_cast<int>(gridDim.x);
    const int r0 = static_cast<int>(blockIdx.x) * chunk, r1 = min(m, r0 + chunk);
    if (threadIdx.x < max_cols) sh.unit[threadIdx.x] = ldexp(1.0, -column_exponent(colmax[threadIdx.x]));
    __syncthreads();
    for (int c = 0; c < nc; ++c)
      for (int r = r0 + static_cast<int>(threadIdx.x); r < r1; r += threads) {
        T* a = A + r + static_cast<std::ptrdiff_t>(c) * lda;
        *a = static_cast<T>(static_cast<double>(*a) * sh.unit[c]);
      }
  }
  // Column 0's sums start from zero (each step clears the buffer two columns ahead); cleared here
  // rather than by a memset launched for every block, mostly for nothing.
  if (blockIdx.x == 0 && threadIdx.x < 2 * max_cols) buffer(scratch, 0).total[threadIdx.x] = T(0);
  grid.sync();
  for (int j = -1; j < nc; ++j) {
    column_step(m, nc, j, A, lda, scratch, tau, colmax != nullptr, sh);
    grid.sync();
  }
  // V with its unit diagonal and zero upper part made explicit, for the GEMMs that apply it.
  const int blocks = static_cast<int>(gridDim.x);
  const int chunk = (m + blocks - 1) / blocks;
  const int r0 = static_cast<int>(blockIdx.x) * chunk, r1 = min(m, r0 + chunk);
  for (int r = r0 + static_cast<int>(threadIdx.x); r < r1; r += threads)
    for (int c = 0; c < nc; ++c)
      Vc[r + static_cast<std::ptrdiff_t>(c) * ldvc] =
          r > c ? A[r + static_cast<std::ptrdiff_t>(c) * lda] : (r == c ? T(1) : T(0));
  __syncthreads();  // this block's rows of Vc, read back below
  // gram += Vc^T Vc over this block's rows: lane (i0, j0) of each warp sums a 4 x 8 part of the
  // 32 x 32 matrix over the warp's rows (a warp reads one row at a time), then adds it atomically.
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  const int i0 = (lane >> 2) * 4, j0 = (lane & 3) * 8;
  double acc[4][8] = {};
  for (int r = r0 + warp; r < r1; r += warps) {
    const T* row = Vc + r;
    double xi[4], xj[8];
#pragma unroll
    for (int a = 0; a < 4; ++a)
      xi[a] = i0 + a < nc ? static_cast<double>(row[static_cast<std::ptrdiff_t>(i0 + a) * ldvc]) : 0.0;
#pragma unroll
    for (int b = 0; b < 8; ++b)
      xj[b] = j0 + b < nc ? static_cast<double>(row[static_cast<std::ptrdiff_t>(j0 + b) * ldvc]) : 0.0;
#pragma unroll
    for (int a = 0; a < 4; ++a)
#pragma unroll
      for (int b = 0; b < 8; ++b) acc[a][b] += xi[a] * xj[b];
  }
#pragma unroll
  for (int a = 0; a < 4; ++a)
#pragma unroll
    for (int b = 0; b < 8; ++b)
      if (i0 + a <= j0 + b && j0 + b < nc) atomicAdd(gram + (i0 + a) + (j0 + b) * max_cols, acc[a][b]);
  grid.sync();
  if (blockIdx.x != 0) return;
  if (static_cast<int>(threadIdx.x) < nc) t_row_from_gram(static_cast<int>(threadIdx.x), nc, gram, tau, Tf, ldt);
  // R of A D to R of A (scalbn: 2^e_c need not be a double); R's rows, final since the barrier
  // above, are read by nothing else here (the Vc copy read below the diagonal only).
  if (colmax != nullptr)
    for (int e = static_cast<int>(threadIdx.x); e < nc * nc; e += threads) {
      const int r = e % nc, c = e / nc;
      T* a = A + r + static_cast<std::ptrdiff_t>(c) * lda;
      if (r <= c) *a = static_cast<T>(scalbn(static_cast<double>(*a), column_exponent(colmax[c])));
    }
}

// Few thread blocks: the kernel is launched for every block, and returns at once when CholeskyQR
// did the block, but a cooperative launch first waits until all its thread blocks fit beside the
// update's GEMMs. At 16 instead of 64 a 512-column panel beside the update took 12.4 instead of
// 26.7 ms and the 32768^2 factorization 1.159 instead of 1.165 s (as fast as not launching it).
// The price is paid by blocks that do fall back: one at 32768 rows takes 1.0-1.1 ms instead of
// 0.34 ms (H100), so a panel whose every block is ill-conditioned is about 3x slower.
int column_blocks(int m) {
  const int b = (m + threads - 1) / threads;
  return b < 1 ? 1 : (b > 16 ? 16 : b);
}

}  // namespace

std::size_t householder_scratch_size(int) { return static_cast<std::size_t>(buffers) * 2 * max_cols; }

template <class T>
void householder_block_scaled(const char* kernel, int m, int nc, T* A, int lda, T* tau, T* Vc, int ldvc, T* Tf,
                              int ldt, T* scratch, double* gram, const unsigned long long* column_max, int sms,
                              const int* skip, cudaStream_t stream) {
  if (m <= 0 || nc <= 0) return;
  if (nc > max_cols) bad_argument(kernel, "ib", nc, "<=", "the widest block", max_cols);
  // A cooperative launch needs every block resident at once on the SMs the stream may use.
  int per_sm = 0;
  check(kernel, "cudaOccupancyMaxActiveBlocksPerMultiprocessor",
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, householder_block_kernel<T>, threads, 0));
  const int resident = (per_sm > 0 ? per_sm : 1) * (sms > 0 ? sms : 1);
  const int wanted = column_blocks(m);
  const dim3 grid(static_cast<unsigned>(wanted < resident ? wanted : resident)), block(threads);
  void* args[] = {&m, &nc, &A, &lda, &tau, &Vc, &ldvc, &Tf, &ldt, &scratch, &gram, &column_max, &skip};
  check(kernel, "householder_block_kernel launch",
        cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(&householder_block_kernel<T>), grid, block, args, 0,
                                    stream));
}

template <class T>
void householder_block(const char* kernel, int m, int nc, T* A, int lda, T* tau, T* Vc, int ldvc, T* Tf, int ldt,
                       T* scratch, double* gram, int sms, const int* skip, cudaStream_t stream) {
  householder_block_scaled(kernel, m, nc, A, lda, tau, Vc, ldvc, Tf, ldt, scratch, gram, nullptr, sms, skip, stream);
}

#define TESSERA_HOUSEHOLDER_INSTANTIATE(T)                                                                   \
  template void householder_block<T>(const char*, int, int, T*, int, T*, T*, int, T*, int, T*, double*, int,   \
                                     const int*, cudaStream_t);                                                \
  template void householder_block_scaled<T>(const char*, int, int, T*, int, T*, T*, int, T*, int, T*, double*, \
                                            const unsigned long long*, int, const int*, cudaStream_t);
TESSERA_HOUSEHOLDER_INSTANTIATE(float)
TESSERA_HOUSEHOLDER_INSTANTIATE(double)
#undef TESSERA_HOUSEHOLDER_INSTANTIATE

}  // namespace tessera::kernels::detail
