// The Givens sweeps of a strip (tessera/kernels_gpu/gpu_givens.hpp): long sweeps by scans over
// their rows, a thread block a column (below); otherwise as a wavefront, on one warp as a
// systolic array for p <= 31 (below), else on one thread block:
//
// At step t, sweep j works on rows (i - 1, i), i = U - t + 2 j (U = plan.umax_all()): the active
// sweeps' rows are two apart, so their rotations commute and are made at once (phase 1); then
// every (sweep, later column) pair applies one rotation to two entries (phase 2), all in
// parallel. The steps touch a window of 2p + 2 rows that slides up by one row per step: when it
// fits in shared memory the strip's rows pass through it (one row loaded ahead, one written back
// per step), so a step costs shared-memory latencies, not global ones; otherwise the strip is
// worked on in global memory.
#include <cuda_pipeline.h>

#include <algorithm>
#include <cfloat>

#include <tessera/kernels_gpu/gpu_givens.hpp>

#include "check.hpp"
#include "flags.cuh"
#include "per_device.hpp"
#include "rotation.cuh"

namespace tessera::kernels {
namespace {

using detail::make_rotation;

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

// The sweeps of long strips (where scan_pays) by scans over their rows, a block of 512 threads a
// column, the sweeps pipelined by row tiles. Sweep j's rotations follow from column j alone: the
// carry that reaches row i is ||x(i:top, j)|| (x(i, j) itself where the rows below are zero), so a
// suffix sum of squares gives every rotation of a tile at once: b_i = that norm, (c, s) =
// make_rotation(x(i - 1, j), b_i). A later column takes the sweep's rotations as a first-order
// recurrence, v(i - 1) = s_i v(i) + c_i x(i - 1) with x(i) := -s_i x(i - 1) + c_i v(i): each
// thread composes its rows' maps v -> A v + B, a scan over the block gives each its carry.
//
// Block c (by a ticket taken as it starts, so it waits only for blocks already running) holds its
// column in shared memory and goes up it by steps of H = 512 R rows from the bottom: in step k it
// applies sweeps 0 .. c - 1 to their rows e = base + j - i in [k H, (k + 1) H), in order, then makes
// sweep c's rotations for those rows and publishes them (a device-scope flag per sweep: rows from
// the bottom that have theirs). Sweep j's rotation i needs row i - 1 after sweep j - 1, whose
// rotation there has the same e, so each step is complete in itself, and block c + 1 applies
// sweep c's bottom rows while block c is still going up: a sweep costs a step of one column, not a
// pass over all of it. Where each block went up the whole column sweep by sweep (two passes an
// apply, then the generation), a sweep cost about 5 us plus 2.7 us per 1000 rows on the H200
// (docs/results/2026-11-28-givens-pipeline-h200.md).
//
// The squares are scaled by one power of two for the whole column, 2^-e with 2^e above its
// original norm: the sweeps are rotations on its rows, so the norm, and with it every entry, stays
// below that bound (no overflow); an entry below 2^-500 of the norm (2^-60 in single) may then
// square to zero, which drops less than that from the column. The same rotations and results up
// to rounding (the norms and the carries are summed in another order).
constexpr int scan_threads = 512, scan_warps = scan_threads / 32, scan_max_p = 64;

// Where the sweeps by scans are faster: a sweep cost them about 4 us plus 0.016 us a row on one
// block, the systolic wavefront 0.7-0.9 us a step (rows + sweeps steps). H100, ncu, double, (L, p, base) ->
// wavefront / scans, us: (256, 1, 255) 131 / 7.2, (1000, 1, 999) 502 / 7.9, (257, 5, 100) 55.7 /
// 27.8, (300, 20, 280) 238 / 167, (500, 16, 480) 381 / 133, (3016, 16, 3000) 2298 / 514, (12020,
// 20, 12000) 9356 / 2863; against the block-wide wavefront (p >= 32), (4000, 32, 3968) 8250 /
// 2240, (600, 40, 560) 1585 / 673, (3000, 64, 2936) 9617 / 6246, (6050, 50, 6000) 22803 / 7799;
// but (2000, 31, 40), sweeps of at most 71 rows, 66 / 203 (docs/results/2026-11-27-givens-scan-h100.md).
// A block a column took the scans 1.6-2.5x faster again (H200, 2026-11-28).
inline bool scan_pays(const givens_plan& plan) {
  const int rows = plan.umax_all();  // the longest sweep's rotations
  return plan.p <= scan_max_p && rows >= 64 && rows >= 8 * plan.p;
}

template <class T>
__device__ __forceinline__ T nan_max(T a, T b) {
  return a != a ? a : (b != b || b > a) ? b : a;
}

template <class T>
struct pair_of;
template <>
struct pair_of<double> {
  using type = double2;
};
template <>
struct pair_of<float> {
  using type = float2;
};

// The block's maps v -> A v + B composed from thread 0 up (thread t's after those of the threads
// before it): returns the carry into thread t's map, v0 having entered thread 0's; `out` gets what
// leaves the last thread's, in every thread. One barrier (wA, wB: the warps' composed maps).
template <class T>
__device__ __forceinline__ T block_carry_in(T A, T B, T v0, T* wA, T* wB, T& out) {
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {  // (A, B) o (A2, B2) = (A A2, A B2 + B)
    const T A2 = __shfl_up_sync(0xffffffffu, A, d), B2 = __shfl_up_sync(0xffffffffu, B, d);
    if (lane >= d) {
      B = fma(A, B2, B);
      A *= A2;
    }
  }
  if (lane == 31) wA[warp] = A, wB[warp] = B;
  __syncthreads();
  T v = v0, vw = v0;
#pragma unroll
  for (int w = 0; w < scan_warps; ++w) {
    if (w == warp) vw = v;
    v = fma(wA[w], v, wB[w]);
  }
  out = v;
  const T Ap = __shfl_up_sync(0xffffffffu, A, 1), Bp = __shfl_up_sync(0xffffffffu, B, 1);
  return lane == 0 ? vw : fma(Ap, vw, Bp);
}

// Sweep j's rotations of step k: rows i with e = base + j - i in [k H, (k + 1) H), within [j + 1,
// top_j]; [ilo, ihi], empty if ihi < ilo.
struct step_rows {
  int top, ilo, ihi;
  __device__ step_rows(const givens_plan& plan, int j, int k, int H) {
    top = min(plan.L - 1, plan.base + j);
    ihi = min(top, plan.base + j - k * H);
    ilo = max(j + 1, plan.base + j - (k + 1) * H + 1);
  }
};

// Thread t takes rotations i = ihi - R t - q, q < R (from the bottom up).
template <class T, int R>
__global__ void __launch_bounds__(scan_threads) givens_generate_scan_kernel(givens_plan plan, T* __restrict__ X,
                                                                           int ldx, T* cs, int* sync,
                                                                           bool in_shared) {
  using P = typename pair_of<T>::type;
  extern __shared__ unsigned char scan_raw[];
  __shared__ T wA[scan_warps], wB[scan_warps], carry[scan_max_p];
  __shared__ int seen[scan_max_p], ticket, col_exp;
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  if (tid == 0) ticket = atomicAdd(sync, 1);
  if (tid < scan_max_p) seen[tid] = 0;
  __syncthreads();
  const int c = ticket, L = plan.L, H = scan_threads * R;
  const int ctop = min(L - 1, plan.base + c);  // the column's last row any sweep reaches
  T* __restrict__ xg = X + static_cast<std::ptrdiff_t>(c) * ldx;
  T* x = in_shared ? reinterpret_cast<T*>(scan_raw) : xg;
  {  // The column into shared memory, and its scale: 2^e above sqrt(rows) max |x| >= its norm.
    T m = 0;
    for (int i = tid; i <= ctop; i += scan_threads) {
      const T v = xg[i];
      if (in_shared) x[i] = v;
      m = nan_max(m, abs(v));
    }
#pragma unroll
    for (int d = 16; d >= 1; d /= 2) m = nan_max(m, __shfl_xor_sync(0xffffffffu, m, d));
    if (lane == 0) wA[warp] = m;
    __syncthreads();
    if (tid == 0) {
      T mm = 0;
      for (int w = 0; w < scan_warps; ++w) mm = nan_max(mm, wA[w]);
      // ilogb(mm) + 1 bounds log2 max |x|; half the bits of the rows bound log2 sqrt(rows).
      col_exp = mm > T(0) && isfinite(mm) ? ilogb(mm) + 1 + (33 - __clz(ctop + 1)) / 2 : 0;
    }
    __syncthreads();
  }
  const int e = col_exp;
  T gen_below = 0;  // sweep c's scaled squares of the rows below this step (every thread)
  const int kmax = plan.base >= 1 ? (plan.base - 1) / H : -1;
  for (int k = 0; k <= kmax; ++k) {
    // The flags of the sweeps this step applies, read at once (one trip to L2, not one a sweep),
    // so that each sweep's rotations are loaded while the sweep before is applied.
    if (tid < c) seen[tid] = max(seen[tid], detail::load_acquire<detail::flag_scope::device_global>(sync + 1 + tid));
    P pre[R];
    bool have_pre = false;
    for (int j = 0; j <= c; ++j) {
      const step_rows sr(plan, j, k, H);
      if (sr.top <= j) break;  // this sweep and every later one are empty (the same in every thread)
      if (sr.ihi < sr.ilo) {
        have_pre = false;
        continue;
      }
      const int i0 = sr.ihi - R * tid;
      if (j < c) {
        const int need = sr.top + 1 - sr.ilo;
        if (tid == 0 && seen[j] < need) {
          int v;
          while ((v = detail::load_acquire<detail::flag_scope::device_global>(sync + 1 + j)) < need) __nanosleep(20);
          seen[j] = v;
        }
        __syncthreads();  // sweep j's rotations are out; x has the last sweep's rows
        P rot[R];
        T u[R];
        const T* cj = cs + 2 * static_cast<std::ptrdiff_t>(j) * L;
#pragma unroll
        for (int q = 0; q < R; ++q) {
          const int i = i0 - q;
          if (i >= sr.ilo) {
            rot[q] = have_pre ? pre[q] : __ldcg(reinterpret_cast<const P*>(cj + 2 * i));
            u[q] = x[i - 1];
          }
        }
        // The next sweep's rotations in flight during this one, where they are out.
        have_pre = false;
        if (j + 1 < c) {
          const step_rows nr(plan, j + 1, k, H);
          if (nr.top > j + 1 && nr.ihi >= nr.ilo && seen[j + 1] >= nr.top + 1 - nr.ilo) {
            const T* cn = cs + 2 * static_cast<std::ptrdiff_t>(j + 1) * L;
            const int n0 = nr.ihi - R * tid;
#pragma unroll
            for (int q = 0; q < R; ++q)
              if (n0 - q >= nr.ilo) pre[q] = __ldcg(reinterpret_cast<const P*>(cn + 2 * (n0 - q)));
            have_pre = true;
          }
        }
        T A = 1, B = 0;
#pragma unroll
        for (int q = 0; q < R; ++q)
          if (i0 - q >= sr.ilo) {
            B = fma(rot[q].y, B, rot[q].x * u[q]);
            A *= rot[q].y;
          }
        const T v0 = sr.ihi == sr.top ? x[sr.top] : carry[j];
        T out;
        T v = block_carry_in(A, B, v0, wA, wB, out);
#pragma unroll
        for (int q = 0; q < R; ++q)
          if (i0 - q >= sr.ilo) {
            x[i0 - q] = -rot[q].y * u[q] + rot[q].x * v;  // the final value of row i
            v = rot[q].x * u[q] + rot[q].y * v;
          }
        if (tid == 0) {
          if (sr.ilo == j + 1) x[j] = out;  // the sweep's last carry
          else carry[j] = out;
        }
      } else {
        // Sweep c's rotations of the step from the column as sweep c - 1 left it.
        __syncthreads();
        T xv[R], up[R], sq = 0;
#pragma unroll
        for (int q = 0; q < R; ++q) {
          const int i = i0 - q;
          if (i >= sr.ilo) {
            xv[q] = x[i];
            up[q] = x[i - 1];
            const T y = scalbn(xv[q], -e);
            sq = fma(y, y, sq);
          }
        }
        T total;
        T below = block_carry_in(T(1), sq, gen_below, wA, wB, total);  // the squares of the rows below
        gen_below = total;
        T* cc = cs + 2 * static_cast<std::ptrdiff_t>(c) * L;
#pragma unroll
        for (int q = 0; q < R; ++q) {
          const int i = i0 - q;
          if (i < sr.ilo) continue;
          const T y = scalbn(xv[q], -e);
          const bool rows_below = below != T(0);
          below = fma(y, y, below);
          T cq, sq_, rr;
          make_rotation(up[q], rows_below ? scalbn(sqrt(below), e) : xv[q], cq, sq_, rr);
          P r;
          r.x = cq;
          r.y = sq_;
          *reinterpret_cast<P*>(cc + 2 * i) = r;
          if (i == c + 1) x[c] = rr;  // X(c, c) afterwards (this thread read row c above)
        }
        __syncthreads();
        if (tid == 0) {  // the step's rotations to the later columns' blocks
          __threadfence();
          detail::store_release<detail::flag_scope::device_global>(sync + 1 + c, sr.top + 1 - sr.ilo);
        }
      }
    }
  }
  __syncthreads();
  // The column back: rows above the diagonal as the sweeps left them, zeros below it.
  for (int i = tid; i <= ctop; i += scan_threads)
    if (i > c) xg[i] = T(0);
    else if (in_shared) xg[i] = x[i];
}

// One launch of the scan kernel with R rows a thread; the column in shared memory where `allowed`
// (the device's, or a test's smaller limit) has room for it, else worked on in place.
template <class T, int R>
void launch_scan(const givens_plan& plan, T* X, int ldx, T* cs, int* sync, std::size_t allowed, cudaStream_t stream) {
  constexpr const char* kernel = "gpu_givens_generate";
  auto k = givens_generate_scan_kernel<T, R>;
  // The dynamic limit leaves room for the kernel's static arrays (about 1 KB).
  const std::size_t dyn_max = static_cast<std::size_t>(detail::shared_optin_bytes(kernel)) - 2048;
  const std::size_t col = std::size_t(std::min(plan.L, plan.base + plan.p)) * sizeof(T);
  const bool in_shared = col <= std::min(allowed, dyn_max);
  static detail::per_device_value set;
  detail::allow_shared_memory(set, kernel, k, static_cast<int>(dyn_max));
  k<<<plan.p, scan_threads, in_shared ? col : 0, stream>>>(plan, X, ldx, cs, sync, in_shared);
}

// Rows a thread by the sweeps' length (base): about three steps a sweep, so that block c + 1
// starts a third of the way up; fewer, longer steps mean fewer barriers.
template <class T>
void launch_scan(const givens_plan& plan, T* X, int ldx, T* cs, int* sync, std::size_t allowed, cudaStream_t stream) {
  if (plan.base <= 3 * scan_threads) launch_scan<T, 1>(plan, X, ldx, cs, sync, allowed, stream);
  else if (plan.base <= 6 * scan_threads) launch_scan<T, 2>(plan, X, ldx, cs, sync, allowed, stream);
  else if (plan.base <= 12 * scan_threads) launch_scan<T, 4>(plan, X, ldx, cs, sync, allowed, stream);
  else launch_scan<T, 8>(plan, X, ldx, cs, sync, allowed, stream);
}

}  // namespace

template <class T>
void gpu_givens_generate(const givens_plan& plan, T* X, int ldx, T* cs, int* sync, std::size_t nsync,
                         cudaStream_t stream) {
  constexpr const char* kernel = "gpu_givens_generate";
  detail::require_ge(kernel, "L", plan.L, "0", 0);
  detail::require_ge(kernel, "p", plan.p, "0", 0);
  if (plan.L <= 1 || plan.p == 0 || plan.umax_all() == 0) return;
  detail::require_ge(kernel, "ldx", ldx, "L", plan.L);
  detail::require_ge(kernel, "nsync", static_cast<long long>(nsync), "p + 1",
                     static_cast<long long>(gpu_givens_sync_count(plan)));
  const int threads = plan.p >= 64 ? 1024 : (plan.p >= 16 ? 256 : 64);
  const std::size_t window = (std::size_t(2 * plan.p + 2) * plan.p + 2 * plan.p) * sizeof(T);
  // Each form's shared memory where the device allows it (set once per device); the scans work on
  // the column in place and the wavefront in global memory otherwise, so every form runs on any GPU.
  const std::size_t allowed = detail::gpu_givens_shared_memory(kernel);
  const std::size_t window_limit = std::min<std::size_t>(200 * 1024, allowed);
  if (scan_pays(plan)) {
    detail::check(kernel, "cudaMemsetAsync",
                  cudaMemsetAsync(sync, 0, gpu_givens_sync_count(plan) * sizeof(int), stream));
    launch_scan(plan, X, ldx, cs, sync, allowed, stream);
  } else if (plan.p <= 31) {
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
    static detail::per_device_value window_set;
    // The device's limit, not a test's smaller one: the attribute is set once.
    detail::allow_shared_memory(window_set, kernel, k, std::min(200 * 1024, detail::shared_optin_bytes(kernel)));
    k<<<1, threads, window, stream>>>(plan, X, ldx, cs);
  } else {
    givens_generate_kernel<T, false><<<1, threads, 2 * plan.p * sizeof(T), stream>>>(plan, X, ldx, cs);
  }
  detail::check(kernel, "givens_generate_kernel launch", cudaGetLastError());
}

template void gpu_givens_generate<float>(const givens_plan&, float*, int, float*, int*, std::size_t, cudaStream_t);
template void gpu_givens_generate<double>(const givens_plan&, double*, int, double*, int*, std::size_t,
                                          cudaStream_t);

}  // namespace tessera::kernels
