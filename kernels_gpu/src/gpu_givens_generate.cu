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

// The sweeps of long strips (where scan_pays) one at a time, each in parallel over its rows, a
// block of 512 threads a column. Sweep j's rotations follow from column j alone:
// the carry that reaches row i is ||x(i:top, j)|| (x(i, j) itself where the rows below are zero),
// so a suffix sum of squares (scaled by a power of two from the column's largest entry, so
// nothing overflows) gives every rotation at once: b_i = that norm, (c, s) = make_rotation(x(i -
// 1, j), b_i). A later column then takes the sweep's rotations as a first-order recurrence,
// v(i - 1) = s_i v(i) + c_i x(i - 1) with x(i) := -s_i x(i - 1) + c_i v(i), solved by tiles of
// 256 rotations from the bottom: a lane composes its run of 8 into one affine map v -> A v + B, a
// scan over the lanes gives each its carry, the tile passes its last carry on.
// The wavefront forms wait on one rotation after another, rows + sweeps of them in sequence; here
// a sweep costs a few block barriers and a pass over its rows. The same rotations and results up
// to rounding (the norms and the carries are summed in another order). Every access to global
// memory is coalesced through shared memory: with a lane's run read from global memory directly
// (each warp load touching 32 lines) the kernel was 2-4x slower.
constexpr int scan_threads = 512;

// Where the sweeps by scans are faster: a sweep cost them about 4 us plus 0.016 us a row on one
// block, the systolic wavefront 0.7-0.9 us a step (rows + sweeps steps). H100, ncu, double, (L, p, base) ->
// wavefront / scans, us: (256, 1, 255) 131 / 7.2, (1000, 1, 999) 502 / 7.9, (257, 5, 100) 55.7 /
// 27.8, (300, 20, 280) 238 / 167, (500, 16, 480) 381 / 133, (3016, 16, 3000) 2298 / 514, (12020,
// 20, 12000) 9356 / 2863; against the block-wide wavefront (p >= 32), (4000, 32, 3968) 8250 /
// 2240, (600, 40, 560) 1585 / 673, (3000, 64, 2936) 9617 / 6246, (6050, 50, 6000) 22803 / 7799;
// but (2000, 31, 40), sweeps of at most 71 rows, 66 / 203 (docs/results/2026-11-27-givens-scan-h100.md).
// A block a column (below) took the scans 1.6-2.5x faster again (H200, 2026-11-28).
inline bool scan_pays(const givens_plan& plan) {
  const int rows = plan.umax_all();  // the longest sweep's rotations
  return plan.p <= 64 && rows >= 64 && rows >= 8 * plan.p;
}

template <class T>
__device__ __forceinline__ T nan_max(T a, T b) {
  return a != a ? a : (b != b || b > a) ? b : a;
}

template <class T>
__device__ T block_max(T v, T* red) {
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
#pragma unroll
  for (int d = 16; d >= 1; d /= 2) v = nan_max(v, __shfl_xor_sync(0xffffffffu, v, d));
  if (lane == 0) red[warp] = v;
  __syncthreads();
  if (warp == 0) {
    T w = lane < scan_threads / 32 ? red[lane] : T(0);  // v >= 0 here
#pragma unroll
    for (int d = 16; d >= 1; d /= 2) w = nan_max(w, __shfl_xor_sync(0xffffffffu, w, d));
    if (lane == 0) red[32] = w;
  }
  __syncthreads();
  return red[32];
}

// The sum of v over the lanes after this one (0 in lane 31).
template <class T>
__device__ __forceinline__ T warp_sum_after(T v, int lane) {
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const T o = __shfl_down_sync(0xffffffffu, v, d);
    if (lane + d < 32) v += o;
  }
  const T after = __shfl_down_sync(0xffffffffu, v, 1);
  return lane == 31 ? T(0) : after;
}

// The sum of v over the threads after this one.
template <class T>
__device__ T block_sum_after(T v, T* red) {
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  const T in_warp = warp_sum_after(v, lane);
  if (lane == 0) red[warp] = in_warp + v;  // the warp's total
  __syncthreads();
  if (warp == 0) red[32 + lane] = warp_sum_after(lane < scan_threads / 32 ? red[lane] : T(0), lane);
  __syncthreads();
  return in_warp + red[32 + warp];
}

// Shared memory of the scan kernel: column j's rows and their rotations a tile at a time, then
// each warp's tile of the column's rows and of the rotations, laid out a lane's run of scan_nb
// entries at a stride of scan_nb + 1 (no bank conflicts).
constexpr int scan_tile = 2048, scan_nb = 8, scan_run = 32 * (scan_nb + 1);
template <class T>
constexpr std::size_t scan_shared_bytes() {
  const std::size_t rot = 3 * scan_tile, apply = 3 * std::size_t(scan_run) * (scan_threads / 32);
  return (rot > apply ? rot : apply) * sizeof(T);
}

// f(slot, c, s) for each of the lane's rotations in a tile (its run e = scan_nb lane + t < n, in
// order), their (c, s) from shared memory.
template <class T, class F>
__device__ __forceinline__ void each_rotation(int lane, int n, const T* ac, const T* as, F&& f) {
#pragma unroll
  for (int t = 0; t < scan_nb; ++t) {
    const int slot = lane * (scan_nb + 1) + t;
    if (scan_nb * lane + t < n) f(slot, ac[slot], as[slot]);
  }
}

// Sweep j's rotations i in [ilo_seg, ihi_seg] (of rows j + 1 .. top, cj) applied to column x by
// one warp, by tiles of 32 scan_nb rotations from the bottom: lane l takes the tile's rotations
// e = scan_nb l .. (e = ihi - i) and composes them into one map of the carry, v -> A v + B; a scan
// over the lanes gives each its carry, the tile passes its last carry on. The tile's entries pass
// through shared memory (sm: a run of x, then c, then s), loaded into registers one tile ahead,
// each tile once its rotations are published (*published: rows from the bottom of the sweep that
// have theirs stored). Map only: x untouched, (SA, SB) := the segment's map of the carry.
// Otherwise: vin is the carry into the segment, the rows ilo_seg .. ihi_seg get their final
// values, row ilo_seg - 1 is taken as `below` (its value before the sweep: the warp below may
// already have written it) and, at the last segment (ilo_seg = j + 1), gets the last carry.
template <bool MapOnly, class T>
__device__ __forceinline__ void scan_apply(T* x, const T* cj, const int* published, int j, int top, int ilo_seg,
                                           int ihi_seg, T vin, T below, int lane, T* sm, T& SA, T& SB) {
  T* ac = sm + scan_run;
  T* as = ac + scan_run;
  const auto at = [](int q) { return q / scan_nb * (scan_nb + 1) + q % scan_nb; };
  T px[scan_nb], pc[scan_nb], ps[scan_nb];
  int seen = 0;  // rows published when last looked (an acquire is a round trip to L2: only when short)
  const auto fetch = [&](int ihi) {
    const int lo = max(ilo_seg, ihi - 32 * scan_nb + 1), n = ihi - lo + 1;
    while (seen < top + 1 - lo) {
      seen = detail::load_acquire<detail::flag_scope::device_global>(published);
      if (seen < top + 1 - lo) __nanosleep(20);
    }
#pragma unroll
    for (int k = 0; k < scan_nb; ++k) {
      const int q = lane + 32 * k, i = ihi - q;
      if (q < n) {
        px[k] = i == ilo_seg && !MapOnly ? below : x[i - 1];
        pc[k] = __ldcg(cj + 2 * i);  // from L2: another block stored them during this kernel
        ps[k] = __ldcg(cj + 2 * i + 1);
      }
    }
  };
  SA = 1, SB = 0;
  fetch(ihi_seg);
  for (int ihi = ihi_seg; ihi >= ilo_seg; ihi -= 32 * scan_nb) {
    const int ilo = max(ilo_seg, ihi - 32 * scan_nb + 1), n = ihi - ilo + 1;
#pragma unroll
    for (int k = 0; k < scan_nb; ++k) {
      const int q = lane + 32 * k;
      if (q < n) {
        sm[at(q)] = px[k];
        ac[at(q)] = pc[k];
        as[at(q)] = ps[k];
      }
    }
    __syncwarp();
    if (ilo > ilo_seg) fetch(ilo - 1);  // the next tile's rows (above this one's: no overlap with its stores)
    T A = 1, B = 0;
    each_rotation(lane, n, ac, as, [&](int slot, T cs_c, T cs_s) {
      B = fma(cs_s, B, cs_c * sm[slot]);
      A *= cs_s;
    });
    // Lane l's incoming carry: the runs of lanes 0 .. l - 1 composed, (A, B) o (A2, B2) = (A A2, A B2 + B).
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const T A2 = __shfl_up_sync(0xffffffffu, A, d), B2 = __shfl_up_sync(0xffffffffu, B, d);
      if (lane >= d) {
        B = fma(A, B2, B);
        A *= A2;
      }
    }
    if constexpr (MapOnly) {
      const T At = __shfl_sync(0xffffffffu, A, 31), Bt = __shfl_sync(0xffffffffu, B, 31);
      SB = fma(At, SB, Bt);
      SA *= At;
      __syncwarp();
      continue;
    }
    const T Ap = __shfl_up_sync(0xffffffffu, A, 1), Bp = __shfl_up_sync(0xffffffffu, B, 1);
    T v = lane == 0 ? vin : fma(Ap, vin, Bp);
    vin = __shfl_sync(0xffffffffu, fma(A, vin, B), 31);  // the next tile's
    each_rotation(lane, n, ac, as, [&](int slot, T cs_c, T cs_s) {
      const T u = sm[slot];
      sm[slot] = -cs_s * u + cs_c * v;  // the final value of row i
      v = cs_c * u + cs_s * v;
    });
    __syncwarp();
#pragma unroll
    for (int k = 0; k < scan_nb; ++k) {
      const int q = lane + 32 * k;
      if (q < n) x[ihi - q] = sm[at(q)];
    }
    __syncwarp();
  }
  if (!MapOnly && ilo_seg == j + 1 && lane == 0) x[j] = vin;
}

// Sweep j applied to column x by the whole block: the rotations split into a run of tiles a
// warp; each warp composes its run's map of the carry (pass 1), the maps of the runs below give
// each warp its carry in, and each warp applies its run (pass 2): two passes over a 16th of the
// rows each, where one warp over all of them put 24 tiles of 256 rotations (6000 rows) on the
// sweeps' critical path. sh: the warps' maps and boundary rows.
template <class T>
__device__ void scan_apply_block(T* x, const T* cj, const int* published, int j, int top, T* sm, T* sh) {
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  constexpr int nw = scan_threads / 32, tile = 32 * scan_nb;
  const int nt = (top - j + tile - 1) / tile, w_used = min(nw, nt);
  // Warp w's tiles [t0, t1) from the bottom: rotations ilo .. ihi.
  const int t0 = warp * nt / w_used, t1 = (warp + 1) * nt / w_used;
  const int ihi = top - tile * t0, ilo = max(j + 1, top - tile * t1 + 1);
  T* sa = sh;
  T* sb = sh + nw;
  T* bound = sh + 2 * nw;  // row ilo - 1 of warp w before the sweep
  T* wsm = sm + 3 * scan_run * warp;
  const T top0 = x[top];
  T A = 1, B = 0;
  if (warp < w_used) {
    scan_apply<true>(x, cj, published, j, top, ilo, ihi, T(0), T(0), lane, wsm, A, B);
    if (lane == 0) sa[warp] = A, sb[warp] = B, bound[warp] = x[ilo - 1];
  }
  __syncthreads();
  if (warp < w_used) {
    T vin = top0;
    for (int w = 0; w < warp; ++w) vin = fma(sa[w], vin, sb[w]);
    scan_apply<false>(x, cj, published, j, top, ilo, ihi, vin, bound[warp], lane, wsm, A, B);
  }
  __syncthreads();
}

// Sweep j's rotations (cj, rows j + 1 .. top) from column xj (rows j .. top), which the sweep
// leaves with X(j, j) and exact zeros below it; the whole block. Its scale first: the column's
// largest |x| (NaN wins). Then tiles of rows [tlo, thi] from the bottom, a thread taking `per`
// consecutive rows of a tile: a suffix sum of squares gives each rotation its carry.
template <class T>
__device__ void scan_rotations(int j, int top, T* __restrict__ xj, T* __restrict__ cj, int* published, T* sm,
                               T* red, T& up, T& tile_sum) {
  const int tid = static_cast<int>(threadIdx.x);
  T m = 0;
  for (int i = j + tid; i <= top; i += scan_threads) m = nan_max(m, abs(xj[i]));
  m = block_max(m, red);
  const int e = m > T(0) && isfinite(m) ? ilogb(m) : 0;
  constexpr int per = scan_tile / scan_threads;
  T* xs = sm;               // the tile's rows
  T* cst = sm + scan_tile;  // their rotations (c, s)
  T carry = 0;              // the scaled squares of the rows below the tile
  T rjj = 0;                // X(j, j) afterwards, in the thread of row j + 1
  bool has_jj = false;
  for (int thi = top; thi >= j; thi -= scan_tile) {
    const int tlo = max(j, thi - scan_tile + 1), n = thi - tlo + 1;
#pragma unroll
    for (int r = 0; r < per; ++r)
      if (tid + scan_threads * r < n) xs[tid + scan_threads * r] = xj[tlo + tid + scan_threads * r];
    if (tid == 0) up = tlo > j ? xj[tlo - 1] : T(0);
    __syncthreads();
    T sq = 0;
#pragma unroll
    for (int r = 0; r < per; ++r) {
      const int q = per * tid + r;
      if (q < n) {
        const T y = scalbn(xs[q], -e);
        sq = fma(y, y, sq);
      }
    }
    T below = block_sum_after(sq, red) + carry;  // rows after this thread's
#pragma unroll
    for (int r = per - 1; r >= 0; --r) {
      const int q = per * tid + r, i = tlo + q;
      if (q >= n) continue;
      const T xi = xs[q], y = scalbn(xi, -e);
      const bool rows_below = below != T(0);
      below = fma(y, y, below);
      if (i > j) {
        T c, s, rr;
        make_rotation(q > 0 ? xs[q - 1] : up, rows_below ? scalbn(sqrt(below), e) : xi, c, s, rr);
        cst[2 * q] = c;
        cst[2 * q + 1] = s;
        if (i == j + 1) rjj = rr, has_jj = true;
      }
    }
    if (tid == 0) tile_sum = below;  // thread 0 holds the tile's first rows: all of it and below
    __syncthreads();
    carry = tile_sum;
#pragma unroll
    for (int r = 0; r < 2 * per; ++r) {
      const int q = tid + scan_threads * r;
      if (q < 2 * n && tlo + q / 2 > j) cj[2 * tlo + q] = cst[q];
    }
    __syncthreads();
    if (tid == 0) {  // the tile's rotations to the later columns' blocks, which take them at once
      __threadfence();
      detail::store_release<detail::flag_scope::device_global>(published, top + 1 - tlo);
    }
  }
  for (int i = j + 1 + tid; i <= top; i += scan_threads) xj[i] = T(0);
  if (has_jj) xj[j] = rjj;
}

// The sweeps by scans, a thread block a column, pipelined: block c takes sweeps 0 .. c - 1 on its
// column (scan_apply_block), each tile of rotations as soon as it is published, then makes sweep
// c's rotations from it, publishing them 2048 rows at a time from the bottom (sync[1 + c]: rows
// stored, with release). So block c applies sweep j while block j + 1 makes sweep j + 1, and a
// sweep's critical path is a generation and the tail of one column's apply, where one block
// applying every later column (its loads alone) left a 64-sweep strip of 6100 rows at 33 us a
// sweep on the H200, 21 us now (docs/results/2026-11-28-givens-pipeline-h200.md). Columns go by
// tickets (sync[0]) in the order blocks start, so a block waits only for blocks already running:
// no deadlock whatever the GPU schedules first.
template <class T>
__global__ void __launch_bounds__(scan_threads) givens_generate_scan_kernel(givens_plan plan, T* __restrict__ X,
                                                                           int ldx, T* cs, int* sync) {
  extern __shared__ unsigned char scan_raw[];
  T* sm = reinterpret_cast<T*>(scan_raw);
  __shared__ T red[64];
  __shared__ T up, tile_sum;  // the row above a rotation tile; the squares from its top down
  __shared__ int ticket;
  const int L = plan.L;
  const int tid = static_cast<int>(threadIdx.x);
  if (tid == 0) ticket = atomicAdd(sync, 1);
  __syncthreads();
  const int c = ticket;
  T* __restrict__ xc = X + static_cast<std::ptrdiff_t>(c) * ldx;
  __shared__ T maps[3 * scan_threads / 32];
  for (int j = 0; j < c; ++j) {
    const int top = min(L - 1, plan.base + j);
    if (top <= j) break;  // this sweep and every later one are empty
    scan_apply_block(xc, cs + 2 * static_cast<std::size_t>(j) * L, sync + 1 + j, j, top, sm, maps);
  }
  const int top = min(L - 1, plan.base + c);
  if (top <= c) return;  // an empty sweep: no later block waits for it
  scan_rotations(c, top, xc, cs + 2 * static_cast<std::size_t>(c) * L, sync + 1 + c, sm, red, up, tile_sum);
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
  // Each form's shared memory where the device allows it (set once per device); the wavefront
  // forms otherwise, which run on any GPU.
  const std::size_t allowed = detail::gpu_givens_shared_memory(kernel);
  const std::size_t window_limit = std::min<std::size_t>(200 * 1024, allowed);
  constexpr std::size_t scan_bytes = scan_shared_bytes<T>();
  if (scan_pays(plan) && scan_bytes <= allowed) {
    auto k = givens_generate_scan_kernel<T>;
    static detail::per_device_value scan_set;
    detail::allow_shared_memory(scan_set, kernel, k, static_cast<int>(scan_bytes));
    detail::check(kernel, "cudaMemsetAsync",
                  cudaMemsetAsync(sync, 0, gpu_givens_sync_count(plan) * sizeof(int), stream));
    k<<<plan.p, scan_threads, scan_bytes, stream>>>(plan, X, ldx, cs, sync);
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
