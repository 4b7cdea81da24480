// The Givens sweeps of a strip as a wavefront (tessera/kernels_gpu/gpu_givens.hpp): on one warp
// as a systolic array for p <= 31 (below), else on one thread block:
//
// At step t, sweep j works on rows (i - 1, i), i = U - t + 2 j (U = plan.umax_all()): the active
// sweeps' rows are two apart, so their rotations commute and are made at once (phase 1); then
// every (sweep, later column) pair applies one rotation to two entries (phase 2), all in
// parallel. The steps touch a window of 2p + 2 rows that slides up by one row per step: when it
// fits in shared memory the strip's rows pass through it (one row loaded ahead, one written back
// per step), so a step costs shared-memory latencies, not global ones; otherwise the strip is
// worked on in global memory.
#include <cuda_pipeline.h>

#include <cfloat>

#include <tessera/kernels_gpu/gpu_givens.hpp>

#include "check.hpp"

namespace tessera::kernels {
namespace {

// c = a / r, s = b / r, r = hypot(a, b) (a positive r: the CPUs' givens_generate). The wavefront
// waits on each rotation, so in double it takes one reciprocal hypot and products instead of two
// divisions, r then as a c + b s = (a^2 + b^2) / hypot, a sum of two non-negative terms; where
// 1 / hypot would overflow or be subnormal (hypot below the smallest normal number or above its
// reciprocal) the divisions, as before. H100, deleting 20 / 50 / 100 rows of 12000 x 6000 with
// Q: 4-7% faster in double; in single the same form was 4-7% slower (at p = 50 and 100), so single
// keeps the divisions (docs/results/2026-11-24-givens-rotation-h100.md).
template <class T>
__device__ void make_rotation(T a, T b, T& c, T& s, T& r) {
  c = 1;
  s = 0;
  r = a;
  if (b == T(0)) return;
  if constexpr (sizeof(T) == sizeof(double)) {
    const T rr = rhypot(a, b);
    if (rr >= T(DBL_MIN) && rr < T(1) / T(DBL_MIN)) {
      c = a * rr;
      s = b * rr;
      r = fma(a, c, b * s);
      return;
    }
  }
  r = hypot(a, b);
  c = a / r;
  s = b / r;
}

// Shared: the window rows live at slot row % W (W = 2p + 2), p values each; then 2p (c, s).
template <class T, bool Window>
__global__ void givens_generate_kernel(givens_plan plan, T* X, int ldx, T* cs) {
  extern __shared__ unsigned char smem_raw[];
  T* sm = reinterpret_cast<T*>(smem_raw);
  const int L = plan.L, p = plan.p, U = plan.umax_all(), W = 2 * p + 2;
  T* csm = Window ? sm + static_cast<std::size_t>(W) * p : sm;
  const int tid = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x);
  auto x = [&](int i, int j) -> T& {
    if constexpr (Window)
      return sm[static_cast<std::size_t>(i % W) * p + j];
    else
      return X[i + static_cast<std::ptrdiff_t>(j) * ldx];
  };
  auto g = [&](int i, int j) -> T& { return X[i + static_cast<std::ptrdiff_t>(j) * ldx]; };
  // The window holds rows [lo, hi].
  int lo = max(0, U - 1), hi = min(L - 1, U + 2 * p - 2);
  if constexpr (Window) {
    for (int idx = tid; idx < (hi - lo + 1) * p; idx += nt) {
      const int r = lo + idx / p, j = idx % p;
      x(r, j) = g(r, j);
    }
    __syncthreads();
  }
  for (int step = 0; step < U + p; ++step) {
    const int next = U - step - 2;  // the row step + 1 starts to touch
    T pre = 0;
    if (Window && next >= 0 && tid < p) pre = g(next, tid);  // in flight during the phases
    // Phase 1: the active sweeps' rotations.
    for (int j = tid; j < p; j += nt) {
      const int u = U - step + j;
      bool active = u >= 1 && u <= plan.umax(j);
      T c = 1, s = 0;
      if (active) {
        const int i = u + j;
        T r;
        make_rotation(x(i - 1, j), x(i, j), c, s, r);
        x(i - 1, j) = r;
        x(i, j) = 0;
        cs[2 * (static_cast<std::size_t>(j) * L + i)] = c;
        cs[2 * (static_cast<std::size_t>(j) * L + i) + 1] = s;
      }
      csm[2 * j] = active ? c : T(2);  // 2: not active at this step
      csm[2 * j + 1] = s;
    }
    __syncthreads();
    // Phase 2: each active sweep j's rotation on each later column jj.
    const int jlo = max(0, step - U + 1);
    const int pairs = (p - jlo) * p;
    for (int idx = tid; idx < pairs; idx += nt) {
      const int j = jlo + idx / p, jj = idx % p;
      if (jj <= j) continue;
      const T c = csm[2 * j];
      if (c == T(2)) continue;
      const T s = csm[2 * j + 1];
      const int i = U - step + 2 * j;
      const T v = x(i - 1, jj), w = x(i, jj);
      x(i - 1, jj) = c * v + s * w;
      x(i, jj) = -s * v + c * w;
    }
    if constexpr (Window) {
      __syncthreads();
      // Row U - step + 2p - 2 is final: back to global memory; the prefetched row in.
      const int done = U - step + 2 * p - 2;
      if (done <= hi && done >= lo) {
        for (int j = tid; j < p; j += nt) g(done, j) = x(done, j);
        hi = done - 1;
      }
      if (next >= 0) {
        if (tid < p) x(next, tid) = pre;
        lo = next;
      }
    }
    __syncthreads();
  }
  if constexpr (Window) {
    for (int idx = tid; idx < (hi - lo + 1) * p; idx += nt) {
      const int r = lo + idx / p, j = idx % p;
      g(r, j) = x(r, j);
    }
  }
}

// The wavefront for p <= 31 on one warp, as a systolic array: lane j is sweep j and holds, in
// registers, the two rows its rotation works on at this step (top = row i - 1, bottom = row i,
// i = U - step + 2j), shifted so that element q is column j + q (so column j is element 0 and
// the later columns are the elements after it: all indices static). A step needs no
// communication but one shuffle per element: afterwards the bottom row is final in column j
// (written out) and moves to lane j + 1 as its new top row, the top row becomes the bottom one,
// and lane 0's new top row comes from lane 31, which takes the strip's next row from a ring of
// rows copied ahead (cp.async). The block-wide form spends its steps waiting at three barriers
// and on shared-memory traffic; this one is bound by a rotation's latency. The arithmetic is the
// same, element for element.
template <class T, int P>
__global__ void __launch_bounds__(32) givens_generate_systolic_kernel(givens_plan plan, T* X,
                                                                      int ldx, T* cs) {
  constexpr int ahead = 8;  // rows in flight from global memory
  __shared__ T ring[ahead][P];
  const int L = plan.L, p = plan.p, U = plan.umax_all(), steps = U + p;
  const int lane = static_cast<int>(threadIdx.x), feeder = 31;
  const bool sweep = lane < p;
  const int umax = sweep ? plan.umax(lane) : 0;
  auto at = [&](int row, int col) { return X + row + static_cast<std::ptrdiff_t>(col) * ldx; };
  T ra[P], rb[P];
  // Lane j starts with rows U + 2j - 1 (top) and U + 2j (bottom).
  {
    const int r0 = U + 2 * lane - 1;
#pragma unroll
    for (int q = 0; q < P; ++q) {
      const bool col_ok = sweep && lane + q < p;
      ra[q] = col_ok && r0 >= 0 && r0 < L ? *at(r0, lane + q) : T(0);
      rb[q] = col_ok && r0 + 1 >= 0 && r0 + 1 < L ? *at(r0 + 1, lane + q) : T(0);
    }
  }
  // The ring's slot s % ahead holds row U - s - 2, which lane 0 takes at step s; lane c copies
  // column c. Columns p .. P stay zero.
  auto fetch = [&](int s) {
    const int row = U - s - 2;
    T* dst = &ring[s % ahead][lane < P ? lane : 0];
    if (lane < p) {
      if (row >= 0)
        __pipeline_memcpy_async(dst, at(row, lane), sizeof(T));
      else
        *dst = T(0);
    }
    __pipeline_commit();
  };
  for (int idx = lane; idx < ahead * P; idx += 32) (&ring[0][0])[idx] = T(0);
  __syncwarp();
  for (int s = 0; s < ahead; ++s) fetch(s);

  // One step with the given roles of the two register rows; afterwards `top` holds the bottom
  // row and `bot` the new top row.
  auto step = [&](int t, T(&top)[P], T(&bot)[P]) {
    const int u = U - t + lane, i = u + lane;
    if (sweep && u >= 1 && u <= umax) {
      T c, s, r;
      make_rotation(top[0], bot[0], c, s, r);
      top[0] = r;
      bot[0] = 0;
#pragma unroll
      for (int q = 1; q < P; ++q) {
        const T v = top[q], w = bot[q];
        top[q] = c * v + s * w;
        bot[q] = -s * v + c * w;
      }
      const std::size_t k = 2 * (static_cast<std::size_t>(lane) * L + i);
      cs[k] = c;
      cs[k + 1] = s;
    }
    if (sweep && i >= 0 && i < L) *at(i, lane) = bot[0];  // final in this column
    // Row U - t - 2, copied `ahead` steps ago, into lane 31's bottom row (shifted by one).
    __pipeline_wait_prior(ahead - 1);
    __syncwarp();
    if (lane == feeder) {
#pragma unroll
      for (int q = 1; q < P; ++q) bot[q] = ring[t % ahead][q - 1];
    }
    // Each lane's new top row: lane - 1's bottom row, one column further on.
    const int from = (lane + 31) & 31;
#pragma unroll
    for (int q = 0; q < P - 1; ++q) bot[q] = __shfl_sync(0xffffffffu, bot[q + 1], from);
    bot[P - 1] = 0;
    __syncwarp();
    fetch(t + ahead);  // into the slot just read
  };
  int t = 0;
  for (; t + 1 < steps; t += 2) {
    step(t, ra, rb);
    step(t + 1, rb, ra);
  }
  if (t < steps) {
    step(t, ra, rb);
#pragma unroll
    for (int q = 0; q < P; ++q) {
      const T v = ra[q];
      ra[q] = rb[q];
      rb[q] = v;
    }
  }
  __pipeline_wait_prior(0);
  // The rows still held are final: top = row i - 1, bottom = row i for i = U - steps + 2j.
  const int i = U - steps + 2 * lane;
#pragma unroll
  for (int q = 0; q < P; ++q)
    if (sweep && lane + q < p) {
      if (i - 1 >= 0 && i - 1 < L) *at(i - 1, lane + q) = ra[q];
      if (i >= 0 && i < L) *at(i, lane + q) = rb[q];
    }
}

}  // namespace

template <class T>
void gpu_givens_generate(const givens_plan& plan, T* X, int ldx, T* cs, cudaStream_t stream) {
  constexpr const char* kernel = "gpu_givens_generate";
  detail::require_ge(kernel, "L", plan.L, "0", 0);
  detail::require_ge(kernel, "p", plan.p, "0", 0);
  if (plan.L <= 1 || plan.p == 0 || plan.umax_all() == 0) return;
  detail::require_ge(kernel, "ldx", ldx, "L", plan.L);
  const int threads = plan.p >= 64 ? 1024 : (plan.p >= 16 ? 256 : 64);
  const std::size_t window = (std::size_t(2 * plan.p + 2) * plan.p + 2 * plan.p) * sizeof(T);
  constexpr std::size_t window_limit = 200 * 1024;  // of the H100's 227 KB per block
  if (plan.p <= 31) {
    auto run = [&](auto kernel) { kernel<<<1, 32, 0, stream>>>(plan, X, ldx, cs); };
    if (plan.p <= 7)
      run(givens_generate_systolic_kernel<T, 8>);
    else if (plan.p <= 15)
      run(givens_generate_systolic_kernel<T, 16>);
    else if (plan.p <= 23)
      run(givens_generate_systolic_kernel<T, 24>);
    else
      run(givens_generate_systolic_kernel<T, 32>);
  } else if (window <= window_limit && threads >= plan.p) {
    auto k = givens_generate_kernel<T, true>;
    detail::check(kernel, "cudaFuncSetAttribute",
                  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(window_limit)));
    k<<<1, threads, window, stream>>>(plan, X, ldx, cs);
  } else {
    givens_generate_kernel<T, false><<<1, threads, 2 * plan.p * sizeof(T), stream>>>(plan, X, ldx, cs);
  }
  detail::check(kernel, "givens_generate_kernel launch", cudaGetLastError());
}

template void gpu_givens_generate<float>(const givens_plan&, float*, int, float*, cudaStream_t);
template void gpu_givens_generate<double>(const givens_plan&, double*, int, double*, cudaStream_t);

}  // namespace tessera::kernels
