// Sweeps of Givens rotations on the GPU (tessera/kernels_gpu/gpu_rotations.hpp): the applies, a
// thread a line (sweep_line, below), and the Hessenberg sweep. In that one a warp owns 32
// consecutive columns, lane l column c0 + l, and streams down it: first the rotations of the
// columns left of c0, then its own in turn, rotation c0 + l from lane l's two entries. Every
// column is read and written once, by the lane that owns it, in order down its rows. The
// rotations go to cs, and to shared memory for the block's other warp; their readers wait for
// the values themselves (a slot holds `unset` until written), so no fence or flag stands between
// a rotation and the next warp. Blocks take their place in the order from a ticket, so a warp
// waits only for warps that have started.
#include <tessera/kernels_gpu/gpu_rotations.hpp>

#include "check.hpp"
#include "rotation.cuh"

namespace tessera::kernels {
namespace {

// Two warps a block: 64 columns. Each rotation is stored by every later column, 8 bytes a lane
// down its column; 256 columns on one SM took 1.5 ms for 3000 rotations on an H200, as their
// stores, not the chain, set the pace.
constexpr int warps_per_block = 2, block_cols = 32 * warps_per_block, ahead = 8;

// No rotation has |c| or |s| above 1 (NaN included: it is not equal to 2).
template <class T>
constexpr T unset = T(2);

template <class T>
__global__ void fill_unset_kernel(int n, T* cs) {
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += static_cast<int>(gridDim.x * blockDim.x))
    cs[i] = unset<T>;
}

// Rotations [from, to) on the lane's column (col, its carry), rotation j at rot[2 (j - base)]
// (volatile: global ones from L2, where other SMs write them). A chunk's rows are loaded, then
// its rotations, again until every one is set.
template <class T>
__device__ __forceinline__ void take(int from, int to, bool mine, T* col, T& carry, const volatile T* rot, int base) {
  for (int j = from; j < to; j += ahead) {
    const int n = to - j < ahead ? to - j : ahead;
    T x[ahead], r[2 * ahead];
#pragma unroll
    for (int u = 0; u < ahead; ++u) x[u] = mine && u < n ? col[j + 1 + u] : T(0);
    const volatile T* p = rot + 2 * (j - base);
    for (bool set = false; !set;) {
#pragma unroll
      for (int q = 0; q < 2 * ahead; ++q) r[q] = q < 2 * n ? p[q] : T(0);
      set = true;
#pragma unroll
      for (int q = 0; q < 2 * ahead; ++q) set = set && r[q] != unset<T>;
    }
#pragma unroll
    for (int u = 0; u < ahead; ++u)
      if (u < n) {
        const T co = r[2 * u], s = r[2 * u + 1];
        if (mine) col[j + u] = co * carry + s * x[u];
        carry = -s * carry + co * x[u];
      }
  }
}

// sync[0]: the blocks' ticket (zero at launch); cs all unset at launch.
template <class T>
__global__ void __launch_bounds__(block_cols) hessenberg_kernel(int cols, int k, T* H, int ldh, T* cs,
                                                                int* sync) {
  __shared__ int ticket;
  __shared__ T rs[2 * block_cols];
  if (threadIdx.x == 0) ticket = atomicAdd(&sync[0], 1);
  for (int i = static_cast<int>(threadIdx.x); i < 2 * block_cols; i += block_cols) rs[i] = unset<T>;
  __syncthreads();
  const int lane = static_cast<int>(threadIdx.x % 32), b0 = ticket * block_cols;
  const int c0 = b0 + static_cast<int>(threadIdx.x / 32) * 32;
  if (c0 >= cols) return;
  const int c = c0 + lane;
  const bool mine = c < cols;
  T* col = H + static_cast<std::ptrdiff_t>(mine ? c : c0) * ldh;
  T carry = mine ? col[0] : T(0);
  const int kb = b0 < k ? b0 : k, kc = c0 < k ? c0 : k;
  take(0, kb, mine, col, carry, cs, 0);   // earlier blocks'
  take(kb, kc, mine, col, carry, rs, b0);  // the block's other warp's
  // The warp's own rotations c0 .. c0 + 31 (those below k): lane l's rows c0 + 1 .. c + 1 loaded
  // at once. Rotation c0 + i is lane i's: every lane makes it from lane i's two entries, so the
  // warp never diverges on the chain (0.88 -> 0.74 ms for 3000 rotations in double on an H200
  // against lane i making it and shuffling c and s; single 0.80 -> 0.77), and lane i stores it.
  if (c0 < k) {
    T x[32];
    const int last = c < k ? c + 1 : k;  // the last row this column reads
#pragma unroll
    for (int i = 0; i < 32; ++i) x[i] = mine && c0 + 1 + i <= last ? col[c0 + 1 + i] : T(0);
    volatile T* vrs = rs;
    volatile T* vcs = cs;
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      const int j = c0 + i;
      if (j >= k) break;
      const T a = __shfl_sync(0xffffffffu, carry, i), b = __shfl_sync(0xffffffffu, x[i], i);
      T co, s, r;
      detail::make_rotation(a, b, co, s, r);
      if (lane == i) {
        vrs[2 * (j - b0)] = co;
        vrs[2 * (j - b0) + 1] = s;
        vcs[2 * j] = co;
        vcs[2 * j + 1] = s;
        col[j] = r;
        col[j + 1] = T(0);
      }
      if (lane > i && mine) {
        col[j] = co * carry + s * x[i];
        carry = -s * carry + co * x[i];
      }
    }
  }
  // A column past the last rotation keeps its carry as row k.
  if (mine && c >= k) col[k] = carry;
}

// A sweep on one line of C: v[0], v[stride], ..., v[k stride] (a row of C from the right, a
// column from the left), rotation t's (c, s) at cs[t cs_step], times `sign` for s: forward
// sweeps go down the line (cs_step 2, sign 1); a sweep made from the bottom up goes up it (v at
// the line's end, stride and cs_step negated, sign -1: [c s; -s c] on the rows' reversed order
// is [c -s; s c]). A line is a chain of k rotations: the next chunk's entries and rotations are
// loaded while this chunk's arithmetic runs.
template <class T>
__device__ __forceinline__ void sweep_line(T* v, std::ptrdiff_t stride, int k, const T* __restrict__ cs, int cs_step,
                                           T sign) {
  T x[ahead], r[2 * ahead], xn[ahead], rn[2 * ahead];
  auto load = [&](int j, T* xx, T* rr) {
#pragma unroll
    for (int u = 0; u < ahead; ++u)
      if (j + u < k) {
        xx[u] = v[(j + 1 + u) * stride];
        rr[2 * u] = cs[cs_step * (j + u)];
        rr[2 * u + 1] = sign * cs[cs_step * (j + u) + 1];
      }
  };
  T carry = v[0];
  load(0, x, r);
  for (int j = 0; j < k; j += ahead) {
    if (j + ahead < k) load(j + ahead, xn, rn);
#pragma unroll
    for (int u = 0; u < ahead; ++u)
      if (j + u < k) {
        v[(j + u) * stride] = r[2 * u] * carry + r[2 * u + 1] * x[u];
        carry = -r[2 * u + 1] * carry + r[2 * u] * x[u];
      }
#pragma unroll
    for (int u = 0; u < ahead; ++u) {
      x[u] = xn[u];
      r[2 * u] = rn[2 * u];
      r[2 * u + 1] = rn[2 * u + 1];
    }
  }
  v[k * stride] = carry;
}

// Line l of C starts at C + l line_step, its entries elem_step apart: Q's rows (from the right),
// D's and R's columns (from the left); `up`: the sweep from the bottom up (sweep_up_*).
template <class T>
__global__ void __launch_bounds__(64) rotations_kernel(int nlines, std::ptrdiff_t line_step, std::ptrdiff_t elem_step,
                                                       int k, const T* __restrict__ cs, T* C, bool up) {
  const int l = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (l >= nlines) return;
  T* v = C + l * line_step;
  if (up)
    sweep_line(v + k * elem_step, -elem_step, k, cs + 2 * k, -2, T(-1));
  else
    sweep_line(v, elem_step, k, cs, 2, T(1));
}

// A thread a line, 64 a block: a line's chain is long and the lines are few (Q's rows, D's
// columns), so they are spread over the SMs.
template <class T>
void launch_lines(const char* kernel, int nlines, std::ptrdiff_t line_step, std::ptrdiff_t elem_step, int k, const T* cs,
                  T* C, bool up, cudaStream_t stream) {
  rotations_kernel<T><<<static_cast<unsigned>((nlines + 63) / 64), 64, 0, stream>>>(nlines, line_step, elem_step, k, cs, C,
                                                                                    up);
  detail::check(kernel, "rotations_kernel launch", cudaGetLastError());
}

// The checks and launch of the four sweeps on n lines of k + 1 entries: from the left, C's n
// columns (k + 1 rows, ldc); from the right, its n rows (k + 1 columns).
template <class T>
void lines(const char* kernel, bool left, bool up, int k, int n, const T* cs, T* C, int ldc, cudaStream_t stream) {
  detail::require_ge(kernel, "k", k, "0", 0);
  detail::require_ge(kernel, left ? "ncols" : "nrows", n, "0", 0);
  if (k == 0 || n == 0) return;
  if (left)
    detail::require_ge(kernel, "ldc", ldc, "k + 1", k + 1);
  else
    detail::require_ge(kernel, "ldc", ldc, "max(1, nrows)", n);
  detail::require_ptr(kernel, "cs", cs);
  detail::require_ptr(kernel, "C", C);
  if (left)
    launch_lines(kernel, n, std::ptrdiff_t(ldc), std::ptrdiff_t(1), k, cs, C, up, stream);
  else
    launch_lines(kernel, n, std::ptrdiff_t(1), std::ptrdiff_t(ldc), k, cs, C, up, stream);
}

}  // namespace

template <class T>
void gpu_hessenberg_rotations(int rows, int cols, T* H, int ldh, T* cs, int* sync, cudaStream_t stream) {
  constexpr const char* kernel = "gpu_hessenberg_rotations";
  detail::require_ge(kernel, "rows", rows, "0", 0);
  detail::require_ge(kernel, "cols", cols, "0", 0);
  if (rows == 0 || cols == 0) return;
  detail::require_ge(kernel, "ldh", ldh, "max(1, rows)", rows);
  detail::require_ptr(kernel, "H", H);
  const int k = cols < rows - 1 ? cols : rows - 1;
  if (k > 0) detail::require_ptr(kernel, "cs", cs);
  detail::require_ptr(kernel, "sync", sync);
  detail::check(kernel, "cudaMemsetAsync", cudaMemsetAsync(sync, 0, sizeof(int), stream));
  if (k > 0) {
    fill_unset_kernel<T><<<static_cast<unsigned>((2 * k + 255) / 256 < 64 ? (2 * k + 255) / 256 : 64), 256, 0, stream>>>(2 * k, cs);
    detail::check(kernel, "fill_unset_kernel launch", cudaGetLastError());
  }
  hessenberg_kernel<T><<<static_cast<unsigned>((cols + block_cols - 1) / block_cols), block_cols, 0, stream>>>(
      cols, k, H, ldh, cs, sync);
  detail::check(kernel, "hessenberg_kernel launch", cudaGetLastError());
}

template <class T>
void gpu_rotations_left(int k, int ncols, const T* cs, T* C, int ldc, cudaStream_t stream) {
  lines("gpu_rotations_left", true, false, k, ncols, cs, C, ldc, stream);
}

template <class T>
void gpu_rotations_right(int nrows, int k, const T* cs, T* C, int ldc, cudaStream_t stream) {
  lines("gpu_rotations_right", false, false, k, nrows, cs, C, ldc, stream);
}

template <class T>
void gpu_sweep_up_left(int k, int ncols, const T* cs, T* C, int ldc, cudaStream_t stream) {
  lines("gpu_sweep_up_left", true, true, k, ncols, cs, C, ldc, stream);
}

template <class T>
void gpu_sweep_up_right(int nrows, int k, const T* cs, T* C, int ldc, cudaStream_t stream) {
  lines("gpu_sweep_up_right", false, true, k, nrows, cs, C, ldc, stream);
}

#define TESSERA_INST(T)                                                                       \
  template void gpu_hessenberg_rotations<T>(int, int, T*, int, T*, int*, cudaStream_t);      \
  template void gpu_rotations_left<T>(int, int, const T*, T*, int, cudaStream_t);            \
  template void gpu_rotations_right<T>(int, int, const T*, T*, int, cudaStream_t);            \
  template void gpu_sweep_up_left<T>(int, int, const T*, T*, int, cudaStream_t);             \
  template void gpu_sweep_up_right<T>(int, int, const T*, T*, int, cudaStream_t);
TESSERA_INST(float)
TESSERA_INST(double)
#undef TESSERA_INST

}  // namespace tessera::kernels
