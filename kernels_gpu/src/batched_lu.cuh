#pragma once
// Device code of the batched tiny-matrix kernels (tessera/kernels_gpu/gpu_batched.hpp). One .cu
// per operation and precision includes this and instantiates n = 1..32, so they compile in
// parallel.
//
// Layout of the work: a group of P lanes (P = the next power of two >= n, or n itself where that
// packs more groups into a warp: packed_group; a group never spans two warps, so warp intrinsics
// serve as its barrier) holds one matrix, lane
// i its row i in registers r[0..n-1]. `pos` is the row's current place in LAPACK's row order: the
// pivot search takes the first place of largest |a| among places >= k, as IxAMAX does on the
// swapped matrix, and a swap only exchanges two lanes' pos (lazy swaps); each row is written once,
// at the end, to its final place. The pivot row reaches the other lanes through shared memory
// (one broadcast load per element instead of a shuffle each) for n <= 16, by shuffles above and
// where they measured faster below (lu_by_shuffles, inv_by_shuffles). GETRF of orders 1 and 2 and
// some inverses of those orders take a thread per matrix.
#include <tessera/kernels_gpu/gpu_batched.hpp>

#include <array>
#include <cfloat>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "check.hpp"

namespace tessera::kernels::batched_detail {

inline constexpr int threads_per_block = 128;

template <int N>
constexpr int group_size() {
  return N <= 1 ? 1 : N <= 2 ? 2 : N <= 4 ? 4 : N <= 8 ? 8 : N <= 16 ? 16 : 32;
}

// Groups of exactly n lanes where that fits more matrices in a warp than groups of P (n = 3, 5, 6,
// 9, 10: 10, 6, 5, 3, 3 a warp instead of 8, 4, 4, 2, 2), so that a warp's instructions serve
// more matrices. Their lanes are not aligned to a power of two: shuffles name absolute lanes and
// reductions go down the group. H100, 2^20 matrices, two runs in one call, ms, LU / inverse:
// double n = 5 0.231 / 0.226 -> 0.167 / 0.186, n = 6 0.281 / 0.290 -> 0.234 / 0.255, n = 9 0.840 /
// 0.924 -> 0.638 / 0.656, n = 10 0.937 / 1.045 -> 0.717 / 0.791, n = 3 0.084 / 0.078 -> 0.077 /
// 0.078; single n = 9 0.625 / 0.646 -> 0.522 / 0.498, n = 10 0.667 / 0.697 -> 0.587 / 0.571. Single
// n = 3, 5, 6 were 33-67% slower packed (0.078 -> 0.130 ms at n = 3, with fewer instructions and at
// the same 32 registers; why is not known) and keep groups of P.
template <class T, int N>
inline constexpr bool packed_group = N > 2 && 32 / N > 32 / group_size<N>() && (sizeof(T) == 8 || N > 8);

// Blocks an SM should hold at once: the largest double kernels are held to the registers that
// five blocks leave each thread (96, 8 bytes spilled), so that more warps hide the loads' latency.
// H100, 2^20 matrices, double, n = 32: LU 9.63 ms at 102 registers, 7.77 ms at 96, 8.37 ms at 80
// (six blocks, 472 bytes spilled); the inverse 12.25 / 12.12 / 13.31 ms. The single kernels of
// orders 11-16 are held to twelve blocks (40 registers): LU 3-7% faster (n = 13 / 16 0.735 /
// 0.914 -> 0.685 / 0.851 ms), the inverse within 2%; sixteen blocks were no better, and in double
// twelve blocks spilled (up to 4x slower at n = 13-16). Elsewhere a per-order bound where it
// measured faster (docs/results/2026-11-24-batched-occupancy-h100.md): single 17-32 and double
// 13-17 at eight blocks, double 18-19 at seven, 20-24 at six, 11-12 at ten (single LU up to 13%
// faster, double inverse up to 15%; single n = 32 and double 18-19 later, LU 1-3% faster:
// docs/results/2026-11-25-batched-lu-pivot-register-h100.md); single 6-16 at sixteen blocks and
// double 5-10 at ten gained nothing.
template <class T, int N>
constexpr int min_blocks() {
  if constexpr (sizeof(T) == 8) return N > 24 ? 5 : N > 19 ? 6 : N > 17 ? 7 : N > 12 ? 8 : N > 10 ? 10 : 1;
  else return N > 16 ? 8 : N >= 11 && N <= 16 ? 12 : 1;
}

// Whole-warp groups (n > 16) send the pivot row by shuffles: every lane needs all of it each step,
// n^3 values a matrix, and an SM delivers 128 bytes of shared-memory loads or of shuffles a cycle
// (ncu, the shared-memory inverse at n = 32 in double: memory pipes 74% busy, FP64 36%, DRAM 34%),
// so the pivot lane's stores and the barrier are pure overhead there. H100, 2^20 matrices, same
// run: inverse n = 32 12.11 -> 10.76 ms (double), 6.81 -> 5.45 ms (single); LU 7.77 -> 7.70 and
// 4.67 -> 4.17 ms. For sub-warp groups shuffles were slower (inverse n = 16 in double 2.28 -> 2.40
// ms, n = 4 0.103 -> 0.140 ms).
// The LU (GETRF, and GESV's factorization) of orders 3 to 8 by shuffles too, where they measured
// faster (docs/results/2026-11-24-batched-lu-shuffles-h100.md). H100, 2^20 matrices, two runs, ms:
// double n = 3 / 4 / 6 / 7 / 8 0.093 / 0.121 / 0.321 / 0.393 / 0.388 -> 0.083 / 0.112 / 0.281 /
// 0.346 / 0.379, n = 5 0.225 -> 0.230; single n = 4 0.112 -> 0.101, n = 8 0.274 -> 0.265, n = 3,
// 5, 6, 7 within 2%.
template <int N>
inline constexpr bool lu_by_shuffles = N > 16 || (N >= 3 && N <= 8);
// The inverse by shuffles too (scaling deferred, as for n > 16) for orders 6 to 8, and for orders
// 11 to 15 in single, where they measured faster. H100, 2^20 matrices, two runs, ms: double n = 6
// / 7 / 8 0.316 / 0.426 / 0.421 -> 0.288 / 0.332 / 0.406; single n = 11-15 2-6% faster. Once the
// pivot search of orders 9-16 was cheaper (split_search), shared memory was faster for the rest:
// double n = 9 / 15 0.611 / 1.840 against 0.653 / 2.007 by shuffles, n = 11 and 13 1-2% faster,
// even orders 10-16 7-18%; single n = 9 / 10 / 16 0.429 / 0.474 / 1.151 against 0.450 / 0.513 /
// 1.184 (docs/results/2026-11-24-batched-split-search-h100.md). n = 5 was 2-5% slower by
// shuffles and n = 4 36%.
template <class T, int N>
inline constexpr bool inv_by_shuffles =
    N > 16 || (N >= 6 && N <= 8) || (sizeof(T) == sizeof(float) && N >= 11 && N <= 15);

template <class T>
__device__ __forceinline__ T* matrix_of(const gpu_batch<T>& m, long long b) {
  return m.ptrs ? m.ptrs[b] : m.data + b * m.stride;
}

// Pivot-search keys: 0 for lanes out of the search, 1 for NaN (never wins but against lanes out),
// bits(|a|) + 2 otherwise (for non-negative IEEE numbers the bits order like the values).
__device__ __forceinline__ std::uint64_t abs_key(double x) {
  const auto u = static_cast<std::uint64_t>(__double_as_longlong(x)) & 0x7FFFFFFFFFFFFFFFull;
  return u > 0x7FF0000000000000ull ? 1ull : u + 2ull;
}
__device__ __forceinline__ std::uint32_t abs_key(float x) {
  const std::uint32_t u = __float_as_uint(x) & 0x7FFFFFFFu;
  return u > 0x7F800000u ? 1u : u + 2u;
}

// The winner's pos * 32 + lane over the group: the largest key, ties to the smallest pos (LAPACK's
// first index). Lanes with key 0 take part but never win (some lane has pos >= k).
// A whole warp (P = 32) uses redux.sync; groups of fewer lanes a shuffle butterfly of width P:
// in the first H100 run the redux.sync form gave wrong pivots in 40% of the 16 x 16 matrices (two
// full 16-lane groups a warp; every other order passed), while shuffles with a width are defined
// for sub-warp groups.
template <int P>
__device__ __forceinline__ unsigned group_argmax(unsigned mask, std::uint32_t key, unsigned idx) {
  if constexpr (P == 32) {
    const unsigned m = __reduce_max_sync(mask, key);
    return __reduce_min_sync(mask, key == m ? idx : 1023u);
  } else {
    // (key, 1023 - idx) packed: the larger is the better candidate.
    std::uint64_t v = (static_cast<std::uint64_t>(key) << 10) | (1023u - idx);
#pragma unroll
    for (int d = P / 2; d >= 1; d /= 2) {
      const std::uint64_t o = __shfl_xor_sync(mask, v, d, P);
      v = o > v ? o : v;
    }
    return 1023u - static_cast<unsigned>(v & 1023u);
  }
}
template <int P>
__device__ __forceinline__ unsigned group_argmax(unsigned mask, std::uint64_t key, unsigned idx) {
  if constexpr (P == 32) {
    const auto hi = static_cast<unsigned>(key >> 32), lo = static_cast<unsigned>(key);
    const unsigned mh = __reduce_max_sync(mask, hi);
    const unsigned ml = __reduce_max_sync(mask, hi == mh ? lo : 0u);
    return __reduce_min_sync(mask, (hi == mh && lo == ml) ? idx : 1023u);
  } else {
#pragma unroll
    for (int d = P / 2; d >= 1; d /= 2) {
      const std::uint64_t ok = __shfl_xor_sync(mask, key, d, P);
      const unsigned oi = __shfl_xor_sync(mask, idx, d, P);
      if (ok > key || (ok == key && oi < idx)) {
        key = ok;
        idx = oi;
      }
    }
    return idx;
  }
}

template <class T>
__device__ __forceinline__ T safe_min();
template <>
__device__ __forceinline__ double safe_min<double>() { return DBL_MIN; }
template <>
__device__ __forceinline__ float safe_min<float>() { return FLT_MIN; }

// LAPACK's multiplier (xGETF2): x times the reciprocal of the pivot p (rp = 1 / p) unless |p| is
// below the safe minimum (or p is NaN), then x / p. The division only on that path, as a branch:
// written as one expression, both divisions were done every step. H100, 2^20 matrices, LU by
// shuffles, two runs, ms: double n = 32 / 31 / 28 / 23 7.57 / 7.03 / 5.74 / 4.01 -> 7.14-7.18 /
// 6.87-6.91 / 5.63-5.68 / 3.91-3.93, single n = 30 / 22 3.45 / 2.14 -> 3.38-3.41 / 2.10-2.11.
template <class T>
__device__ __forceinline__ T multiplier(T x, T p, T rp) {
  T l = x * rp;
  if (!(p >= safe_min<T>() || p <= -safe_min<T>())) l = x / p;
  return l;
}

// The reduction of a packed group (its lanes are not aligned to a power of two, so no butterfly):
// lane i merges lane i + d's value for d = 1, 2, 4, .. (the group's last lane where i + d is
// past it), so lane 0 ends with the whole group's; merge(src) shuffles from absolute lane src.
template <int L, class Merge>
__device__ __forceinline__ void down_sweep(int base, int lane, Merge merge) {
#pragma unroll
  for (int d = 1; d < L; d *= 2) merge(base + (lane + d < L ? lane + d : L - 1));
}

// The per-group state the kernels share: which matrix, which lane, and the shared pivot rows.
template <class T, int N>
struct group {
  static constexpr int P = group_size<N>();
  static constexpr bool packed = packed_group<T, N>;
  static constexpr int L = packed ? N : P;  // lanes a group
  static constexpr int per_warp = 32 / L;
  static constexpr int per_block = threads_per_block / 32 * per_warp;  // matrices per block
  // Sub-warp groups of a power of two lanes keep every lane of the warp in every step, also
  // those of groups past the batch's end (they hold zeros and store nothing), so that the warp
  // intrinsics name the whole warp by a constant mask: with a group's mask, a run-time value, the
  // compiler put a MATCH.ANY, a REDUX.OR and a vote before each batch of shuffles. H100, 2^20
  // matrices, ms: single LU n = 3 / 8 / 12 0.0671 / 0.251 / 0.702 -> 0.0483 / 0.235 / 0.640,
  // inverse n = 6 / 13 0.219 / 0.869 -> 0.177 / 0.702; double LU n = 13 / 15 1.224 / 1.588 ->
  // 1.066 / 1.371, inverse n = 2 / 8 0.055 / 0.406 -> 0.032 / 0.363. With packed groups (whose
  // idle lanes then ran too) the LU was 2-23% slower, and with whole-warp groups (their mask is a
  // constant anyway) the single LU at n = 32 27% slower: those leave early, as before
  // (docs/results/2026-11-24-batched-split-search-h100.md).
  static constexpr bool whole = !packed && P < 32;  // groups of P lanes fill the warp: none idle
  int lane, g, base, gid;
  long long b;
  unsigned mask;  // the group's lanes (the whole warp where `whole`)
  unsigned live_lanes;  // the warp's lanes in groups that hold a matrix (all of it where `whole`)
  bool live;    // this lane's group holds a matrix of the batch
  bool active;  // live and lane < N: holds a row
  bool idle;    // beyond the warp's last whole group (packed groups only)
  // Called by every thread of the block (blocks are whole warps), before any returns.
  __device__ explicit group(long long count) {
    const int w = static_cast<int>(threadIdx.x) & 31;
    lane = w % L;
    base = w - lane;
    gid = w / L;
    idle = w >= per_warp * L;
    g = static_cast<int>(threadIdx.x) / 32 * per_warp + gid;
    b = static_cast<long long>(blockIdx.x) * per_block + g;
    live = !idle && b < count;
    active = (live || !whole) && lane < N;  // groups that do not keep the warp leave when not live
    mask = whole || L == 32 ? 0xFFFFFFFFu : idle ? 0u : ((1u << L) - 1u) << base;
    live_lanes = whole ? 0xFFFFFFFFu : __ballot_sync(0xFFFFFFFFu, live);
  }
  // Whether this lane leaves at once: a group past the batch's end, or idle lanes, where the
  // group does not keep the whole warp.
  __device__ bool leaves() const { return !whole && !live; }
  // This group's matrix in m, or none for a group past the batch's end that stays.
  template <class Batch>
  __device__ auto matrix(const Batch& m) const {
    return whole && !live ? nullptr : matrix_of(m, b);
  }
  // The value v of the group's lane src.
  template <class V>
  __device__ V shfl(V v, int src) const {
    if constexpr (packed) return __shfl_sync(mask, v, base + src);
    else return __shfl_sync(mask, v, src, P);
  }
  // The group's minimum of v, in every lane.
  __device__ unsigned min_all(unsigned v) const {
    if constexpr (packed) {
      down_sweep<L>(base, lane, [&](int src) {
        const unsigned o = __shfl_sync(mask, v, src);
        v = o < v ? o : v;
      });
      return __shfl_sync(mask, v, base);
    } else {
#pragma unroll
      for (int d = P / 2; d >= 1; d /= 2) {
        const unsigned o = __shfl_xor_sync(mask, v, d, P);
        v = o < v ? o : v;
      }
      return v;
    }
  }
};

// group_argmax for packed groups by down_sweep; lane 0's best is then sent to all.
template <int L>
__device__ __forceinline__ unsigned packed_argmax(unsigned mask, int base, int lane, std::uint32_t key, unsigned idx) {
  std::uint64_t v = (static_cast<std::uint64_t>(key) << 10) | (1023u - idx);
  down_sweep<L>(base, lane, [&](int src) {
    const std::uint64_t o = __shfl_sync(mask, v, src);
    v = o > v ? o : v;
  });
  v = __shfl_sync(mask, v, base);
  return 1023u - static_cast<unsigned>(v & 1023u);
}
template <int L>
__device__ __forceinline__ unsigned packed_argmax(unsigned mask, int base, int lane, std::uint64_t key, unsigned idx) {
  down_sweep<L>(base, lane, [&](int src) {
    const std::uint64_t ok = __shfl_sync(mask, key, src);
    const unsigned oi = __shfl_sync(mask, idx, src);
    if (ok > key || (ok == key && oi < idx)) {
      key = ok;
      idx = oi;
    }
  });
  return __shfl_sync(mask, idx, base);
}

// group_argmax for the G groups of a warp by full-warp redux.sync, once per group: group q's
// lanes bring their values, every other lane a neutral one (redux.sync over one group's sub-warp
// mask gave wrong pivots, above); each lane keeps its own group's result.
struct redux_max {
  __device__ unsigned operator()(unsigned mask, unsigned v) const { return __reduce_max_sync(mask, v); }
};
struct redux_min {
  __device__ unsigned operator()(unsigned mask, unsigned v) const { return __reduce_min_sync(mask, v); }
};
template <int G, class Reduce>
__device__ __forceinline__ unsigned per_group(unsigned mask, int gid, unsigned v, unsigned neutral, Reduce reduce) {
  unsigned mine = 0;
#pragma unroll
  for (int q = 0; q < G; ++q) {
    const unsigned r = reduce(mask, gid == q ? v : neutral);
    if (gid == q) mine = r;
  }
  return mine;
}
// 32-bit keys: the maximum, then the smallest index that holds it.
template <int G>
__device__ __forceinline__ unsigned split_argmax(unsigned mask, int gid, std::uint32_t key, unsigned idx) {
  const unsigned m = per_group<G>(mask, gid, key, 0u, redux_max{});
  return per_group<G>(mask, gid, key == m ? idx : 1023u, 1023u, redux_min{});
}
// 64-bit keys: the high words' maximum, then the low words' among the lanes that hold it. Written
// out: through per_group the double LU of the packed orders 9 and 10 compiled 4% slower (H100,
// 0.529 / 0.615 against 0.552 / 0.639 ms).
template <int G>
__device__ __forceinline__ unsigned split_argmax(unsigned mask, int gid, std::uint64_t key, unsigned idx) {
  const auto hi = static_cast<unsigned>(key >> 32), lo = static_cast<unsigned>(key);
  unsigned mh = 0, ml = 0, w = 0;
#pragma unroll
  for (int q = 0; q < G; ++q) {
    const unsigned r = __reduce_max_sync(mask, gid == q ? hi : 0u);
    if (gid == q) mh = r;
  }
#pragma unroll
  for (int q = 0; q < G; ++q) {
    const unsigned r = __reduce_max_sync(mask, gid == q && hi == mh ? lo : 0u);
    if (gid == q) ml = r;
  }
#pragma unroll
  for (int q = 0; q < G; ++q) {
    const unsigned r = __reduce_min_sync(mask, gid == q && hi == mh && lo == ml ? idx : 1023u);
    if (gid == q) w = r;
  }
  return w;
}

// Where the pivot search takes split_argmax instead of a shuffle butterfly (or the packed groups'
// down_sweep): two or three groups a warp (n = 9-16), where it costs 2 (float) or 3 (double)
// redux.sync a group against 4 shuffle rounds of 64-bit values with their compares. H100, 2^20
// matrices, two runs in one call, ms, LU: double n = 9 / 10 / 12 / 16 0.622 / 0.734 / 1.143 /
// 1.878 -> 0.528 / 0.614 / 1.023 / 1.629, single n = 9 / 12 / 16 0.521 / 0.822 / 1.137 -> 0.366 /
// 0.701 / 0.982; inverse 3-19% faster. With four or more groups a warp (n <= 8) the redux.sync
// calls outnumber the rounds saved: LU 1.2-2.2x slower.
template <class T, int N>
inline constexpr bool split_search = group<T, N>::per_warp == 2 || group<T, N>::per_warp == 3;

// Shared memory of a block: per group two pivot-row buffers (steps alternate, so a step's writes
// never meet the previous step's reads) of N values plus the pivot's reciprocal, and the pivots.
// 16-byte vectors: the pivot row is read with one 16-byte broadcast load per 2 doubles or 4 floats
// (shared-memory loads, not flops, bounded the Gauss-Jordan inverse: 37% of copy bandwidth in single
// precision with one load per element).
template <class T>
struct vec16;
template <>
struct vec16<float> {
  using type = float4;
  static constexpr int width = 4;
  __device__ static float at(const float4& v, int t) { return t == 0 ? v.x : t == 1 ? v.y : t == 2 ? v.z : v.w; }
};
template <>
struct vec16<double> {
  using type = double2;
  static constexpr int width = 2;
  __device__ static double at(const double2& v, int t) { return t == 0 ? v.x : v.y; }
};

template <class T, int N>
struct shared_rows {
  static constexpr int V = vec16<T>::width;
  static constexpr int len = (N + 1 + V - 1) / V * V;  // N values and the pivot's reciprocal, padded
  alignas(16) T row[group<T, N>::per_block][2][len];
  int piv[group<T, N>::per_block][N];
};

// r[j] -= f * row[j] for j = first .. N-1, row 16-byte aligned (first is a constant once the
// callers' loops are unrolled, so the skipped parts cost nothing).
template <class T, int N>
__device__ __forceinline__ void update_from_row(T (&r)[N], T f, const T* row, int first) {
  using vt = vec16<T>;
  constexpr int V = vt::width;
#pragma unroll
  for (int j0 = 0; j0 < N; j0 += V) {
    if (j0 + V <= first) continue;
    const typename vt::type v = *reinterpret_cast<const typename vt::type*>(row + j0);
#pragma unroll
    for (int t = 0; t < V; ++t) {
      const int j = j0 + t;
      if (j >= first && j < N) r[j] = fma(-f, vt::at(v, t), r[j]);
    }
  }
}

// The pivot search of step k (xk: this lane's entry of column k): every lane learns the pivot's
// lane and pos, and lanes swap places.
template <class T, int N>
__device__ __forceinline__ void find_pivot(const group<T, N>& grp, T xk, int k, int& pos, int& plane,
                                           int& ppos) {
  using key_t = decltype(abs_key(T(0)));
  const key_t key = (grp.active && pos >= k) ? abs_key(xk) : key_t(0);
  const auto idx = static_cast<unsigned>(pos * 32 + grp.lane);
  unsigned w;
  if constexpr (split_search<T, N>) w = split_argmax<group<T, N>::per_warp>(grp.live_lanes, grp.gid, key, idx);
  else if constexpr (group<T, N>::packed) w = packed_argmax<group<T, N>::L>(grp.mask, grp.base, grp.lane, key, idx);
  else w = group_argmax<group<T, N>::P>(grp.mask, key, idx);
  plane = static_cast<int>(w & 31u);
  ppos = static_cast<int>(w >> 5);
  if (pos == k) pos = ppos;      // the row at place k goes where the pivot row was
  if (grp.lane == plane) pos = k;  // and the pivot row to place k
}

// This lane's row of its group's matrix into r, one coalesced load per column (lanes beyond n: none).
template <class T, int N>
__device__ __forceinline__ void load_row(const group<T, N>& grp, const T* a, int ld, T (&r)[N]) {
  if (!grp.active) return;
#pragma unroll
  for (int j = 0; j < N; ++j) r[j] = a[grp.lane + static_cast<long long>(j) * ld];
}

// GETRF's results: this lane's row written once, at its final place pos; the pivots; info.
template <class T, int N>
__device__ __forceinline__ void store_lu(const group<T, N>& grp, T* a, int ld, const T (&r)[N], int pos, int inf,
                                         int my_piv, int* ipiv, int* info) {
  if (!grp.active) return;
#pragma unroll
  for (int j = 0; j < N; ++j) a[pos + static_cast<long long>(j) * ld] = r[j];
  ipiv[grp.b * N + grp.lane] = my_piv;
  if (grp.lane == 0) info[grp.b] = inf;
}

// ---- GETRF ----------------------------------------------------------------------------------
// Right-looking LU as LAPACK's GETF2: l = a(i,k) / u(k,k) (times the reciprocal unless |u(k,k)| is
// below the safe minimum), then the rank-1 update; a zero pivot leaves its column as it is.
template <class T, int N, bool Solve>
__device__ __forceinline__ void lu_in_registers(const group<T, N>& grp, shared_rows<T, N>& s, T (&r)[N],
                                                int& pos, int& info, int (&piv_lane)[N], int& my_piv) {
#pragma unroll
  for (int k = 0; k < N; ++k) {
    int plane, ppos;
    find_pivot(grp, r[k], k, pos, plane, ppos);
    if constexpr (Solve) piv_lane[k] = plane;
    // Lane k keeps pivot k in a register and writes it at the end: the pivot lane's store to
    // shared memory had cost six instructions a step (its address was recomputed each time).
    // H100, 2^20 matrices, two runs, ms: double n = 17 / 24 / 32 2.37 / 4.41 / 7.22-7.23 ->
    // 2.25 / 4.19-4.20 / 6.89-6.94; single n = 17 / 31 1.55 / 3.68-3.71 -> 1.47 / 3.44; single
    // n = 32 and the shuffle orders below 17 within 1%. The shared-memory orders (9-16) too, where
    // the store sat in the pivot lane's branch: double n = 12 / 15 0.944 / 1.310 -> 0.917 / 1.289,
    // single n = 15 0.826 -> 0.786, double n = 9 / 10 0.529 / 0.615 -> 0.542 / 0.621
    // (docs/results/2026-11-25-batched-lu-pivot-register-h100.md).
    if (grp.lane == k) my_piv = ppos + 1;
    if constexpr (lu_by_shuffles<N>) {
      const T p = grp.shfl(r[k], plane);
      // A zero pivot: the column below is all zero (or NaN), nothing to eliminate. Predicated, not
      // a branch: a branch around the step's shuffles made the compiler add convergence barriers
      // and collective fallbacks to every step. H100, 2^20 matrices, ms: double n = 3 / 4 / 17 /
      // 24 / 31 0.076 / 0.112 / 2.71 / 5.38 / 7.40 -> 0.065 / 0.101 / 2.37 / 4.38 / 7.02; single
      // n = 4 / 17 / 24 / 32 0.101 / 1.68 / 2.92 / 4.20 -> 0.074 / 1.57 / 2.55 / 3.67. (The same
      // change in the shared-memory form below, n = 9-16, was 3-6% slower.)
      const bool zero = p == T(0);
      if (zero && info == 0) info = k + 1;
      const bool below = !zero && grp.active && pos > k;
      const T l = multiplier(r[k], p, T(1) / p);
      if (below) r[k] = l;
#pragma unroll
      for (int j = k + 1; j < N; ++j) {
        const T v = grp.shfl(r[j], plane);
        if (below) r[j] = fma(-l, v, r[j]);
      }
    } else {
      T* row = s.row[grp.g][k & 1];
      if (grp.lane == plane) {
#pragma unroll
        for (int j = k; j < N; ++j) row[j] = r[j];
        row[N] = T(1) / r[k];
      }
      __syncwarp(grp.mask);
      const T p = row[k];
      if (p == T(0)) {
        if (info == 0) info = k + 1;
        continue;  // the column below is all zero (or NaN): nothing to eliminate
      }
      if (grp.active && pos > k) {
        // (multiplier() measured 1.5-3% slower here at double n = 16 and single n = 12 and 15.)
        const T l = (p >= safe_min<T>() || p <= -safe_min<T>()) ? r[k] * row[N] : r[k] / p;
        r[k] = l;
        update_from_row<T, N>(r, l, row, k + 1);
      }
    }
  }
}

// GETRF of the group's matrix of A in registers, its results stored: r is this lane's row of L\U
// afterwards, at place pos; piv_lane (Solve) the lane that holds each place. Returns info.
template <class T, int N, bool Solve>
__device__ __forceinline__ int getrf_group(const group<T, N>& grp, shared_rows<T, N>& s, gpu_batch<T> A, int* ipiv,
                                           int* info, T (&r)[N], int& pos, int (&piv_lane)[N]) {
  T* a = grp.matrix(A);
  load_row(grp, a, A.ld, r);
  int inf = 0, my_piv = 0;
  pos = grp.lane;
  lu_in_registers<T, N, Solve>(grp, s, r, pos, inf, piv_lane, my_piv);
  store_lu(grp, a, A.ld, r, pos, inf, my_piv, ipiv, info);
  return inf;
}

template <class T, int N>
__global__ void __launch_bounds__(threads_per_block, min_blocks<T, N>())
    getrf_kernel(gpu_batch<T> A, int* __restrict__ ipiv, int* __restrict__ info, long long count) {
  __shared__ shared_rows<T, N> s;
  const group<T, N> grp(count);
  if (grp.leaves()) return;  // whole groups leave together, so the masks stay right
  T r[N] = {};
  int pos, piv_lane[N];
  getrf_group<T, N, false>(grp, s, A, ipiv, info, r, pos, piv_lane);
}

// ---- inverse: Gauss-Jordan in place, fused with the pivoting ----------------------------------
// One step by shuffles, column k in register kr (a constant once unrolled). Scaling deferred: this
// lane's row of the result is scale * r (1 until it pivots, then 1 / its pivot), so the pivot row
// is sent as it is and the pivot lane multiplies nothing.
template <class T, int N>
__device__ __forceinline__ void gj_step_shuffles(const group<T, N>& grp, T (&r)[N], int kr, int k, int& pos,
                                                 int* piv_lane, T& scale, int& inf) {
  int plane, ppos;
  find_pivot(grp, r[kr], k, pos, plane, ppos);
  if (grp.lane == 0) piv_lane[k] = plane;
  const bool pivot = grp.lane == plane;
  const T p = grp.shfl(r[kr], plane);
  const T d = T(1) / p;
  if (pivot && p == T(0) && inf == 0) inf = k + 1;
  const T f = pivot ? T(0) : r[kr] * d;  // this row's multiplier of the scaled pivot row
#pragma unroll
  for (int j = 0; j < N; ++j) {
    if (j == kr) continue;
    const T v = grp.shfl(r[j], plane);
    if (!pivot) r[j] = fma(-f, v, r[j]);
  }
  r[kr] = pivot ? T(1) : -f;  // column k: 1 / pivot in the pivot row, -f / pivot elsewhere
  if (pivot) scale = d;
}

// r[i] := r[(i + U) mod N].
template <int U, class T, int N>
__device__ __forceinline__ void rotate_left(T (&r)[N]) {
  T t[U];
#pragma unroll
  for (int i = 0; i < U; ++i) t[i] = r[i];
#pragma unroll
  for (int i = 0; i + U < N; ++i) r[i] = r[i + U];
#pragma unroll
  for (int i = 0; i < U; ++i) r[N - U + i] = t[i];
}

// The larger whole-warp inverses run their steps in rounds of inv_round, one round's code for all
// rounds: unrolled over all n steps the kernel outgrew the instruction cache (ncu, n = 32 in
// double: of 10.6 cycles between a warp's instructions, 4.1 waiting for instructions; after, none
// of them, the shuffles the limit). H100, 2^20 matrices, two calls of two runs, ms: double n = 25
// / 28 / 32 7.16-7.17 / 8.58-8.73 / 10.97-11.01 -> 7.03-7.10 / 8.24-8.33 / 10.27-10.37, single
// n = 29 / 32 4.67 / 5.44 -> 4.56-4.57 / 5.31-5.38; rounds of 4 and 16 were no better, and orders
// 17-24 (single 17-28) were 1-9% slower in rounds (docs/results/2026-11-25-batched-inverse-rounds-h100.md).
// (In double, orders 20-25, 27 and 29-32 take inverse_mma_kernel and 26 and 28
// inverse_halves_kernel instead, below.) GETRF stays unrolled: in rounds (its shrinking update
// tested by chunks of 8) it was 4-34% slower at every order from 17
// (docs/results/2026-11-27-small-panel-registers-h100.md, last section).
inline constexpr int inv_round = 8;
template <class T, int N>
inline constexpr bool inv_rounds = N >= (sizeof(T) == 8 ? 25 : 29);

// Step k turns column k into a column of the inverse: the pivot row is divided by the pivot (its
// k-th entry becoming 1/pivot), every other row loses f times it (its k-th entry becoming
// -f/pivot). With rows at their places this inverts PA; A^-1 = (PA)^-1 P, so column j of the
// result belongs in column piv_lane[j] (the original row of place j), row pos.
template <class T, int N>
__global__ void __launch_bounds__(threads_per_block, min_blocks<T, N>())
    inverse_kernel(gpu_batch<T> A, gpu_batch<T> Ainv, int* __restrict__ info, long long count) {
  __shared__ shared_rows<T, N> s;
  const group<T, N> grp(count);
  if (grp.leaves()) return;
  const T* a = grp.matrix(A);
  T r[N] = {};
  load_row(grp, a, A.ld, r);
  int pos = grp.lane, inf = 0;
  // The pivot lanes wait in shared memory, not in N registers (at n = 32 in double 98 registers
  // a thread instead of 130).
  int* piv_lane = s.piv[grp.g];
  [[maybe_unused]] T scale = T(1);
  // In rounds, the row's registers rotated after each (shift: where column j ends up, register
  // (j - shift) mod n).
  constexpr int shift = inv_rounds<T, N> ? inv_round * ((N + inv_round - 1) / inv_round) % N : 0;
  if constexpr (inv_rounds<T, N>) {
#pragma unroll 1
    for (int k0 = 0; k0 < N; k0 += inv_round) {
#pragma unroll
      for (int kk = 0; kk < inv_round; ++kk)
        if (k0 + kk < N) gj_step_shuffles(grp, r, kk, k0 + kk, pos, piv_lane, scale, inf);
      rotate_left<inv_round>(r);
    }
  } else {
#pragma unroll
    for (int k = 0; k < N; ++k) {
      if constexpr (inv_by_shuffles<T, N>) {
        gj_step_shuffles(grp, r, k, k, pos, piv_lane, scale, inf);
      } else {
        int plane, ppos;
        find_pivot(grp, r[k], k, pos, plane, ppos);
        if (grp.lane == 0) piv_lane[k] = plane;
        T* row = s.row[grp.g][k & 1];
        if (grp.lane == plane) {
          const T d = T(1) / r[k];
          if (r[k] == T(0) && inf == 0) inf = k + 1;
          r[k] = T(1);
#pragma unroll
          for (int j = 0; j < N; ++j) r[j] *= d;
          // The whole row, 16 bytes a store (the padding beyond N gets zeros).
          constexpr int V = vec16<T>::width;
          auto rv = [&r](int j) { return j < N ? r[j] : T(0); };
#pragma unroll
          for (int j0 = 0; j0 < N; j0 += V) {
            if constexpr (V == 4)
              *reinterpret_cast<float4*>(row + j0) = make_float4(rv(j0), rv(j0 + 1), rv(j0 + 2), rv(j0 + 3));
            else
              *reinterpret_cast<double2*>(row + j0) = make_double2(rv(j0), rv(j0 + 1));
          }
        }
        __syncwarp(grp.mask);
        if (grp.active && grp.lane != plane) {
          const T f = r[k];
          r[k] = T(0);
          update_from_row<T, N>(r, f, row, 0);
        }
      }
    }
  }
  if constexpr (inv_by_shuffles<T, N>) {
#pragma unroll
    for (int j = 0; j < N; ++j) r[j] *= scale;
  }
  // info: every lane saw the zero pivot only if it was the pivot lane; agree on the smallest.
  const unsigned zero = grp.min_all(inf == 0 ? 1024u : static_cast<unsigned>(inf));
  __syncwarp(grp.mask);  // piv_lane's entries, written by lane 0, seen by every lane
  if (grp.active) {
    T* out = matrix_of(Ainv, grp.b);
    // In place, every lane must have read its row before any writes: the group's loads are done
    // once the reduction above has returned in all of its lanes.
#pragma unroll
    for (int i = 0; i < N; ++i) out[pos + static_cast<long long>(piv_lane[(i + shift) % N]) * Ainv.ld] = r[i];
    if (grp.lane == 0) info[grp.b] = zero == 1024u ? 0 : static_cast<int>(zero);
  }
}

// ---- inverse of the larger even orders in double: a lane two half rows -------------------------
// With a row a lane, every lane takes the whole pivot row each step: n values, and the SM delivers
// 128 bytes of shuffles a cycle, so n^2 values a matrix bound the kernel. Here lane (rg, cg) =
// (lane % 16, lane / 16) holds rows rg and rg + 16 of the half of the columns h cg .. h cg + h - 1
// (h = ceil(n / 2)): a step sends each lane the h entries of the pivot row in its columns and the 2
// of column k in its rows. Column k is entry k % h of its lanes in both rounds of h steps, so one
// round's code serves both. The same pivots, operations and order as the row form (scaling
// deferred), so the same results.
// Where it measured faster than the row form (in rounds or not): double precision, even orders from
// 22. H100, 2^20 matrices, two runs, ms: n = 22 / 26 / 28 / 32 5.22-5.25 / 7.42-7.44 / 8.26-8.31 /
// 10.23-10.27 -> 4.98-5.02 / 6.47-6.51 / 7.39-7.43 / 9.54-9.74; odd orders 2-4% faster (25-29) or
// slower (21, 23, 31: the second half's padding column), single precision 5-30% slower (a shuffle
// a value there, against two in double) (docs/results/2026-11-25-batched-inverse-rounds-h100.md).
template <class T, int N>
inline constexpr bool inv_by_halves = sizeof(T) == 8 && N >= 22 && N % 2 == 0;
// Registers: 96 a thread from order 25 (80 below); 128 was no faster.
template <class T, int N>
constexpr int halves_min_blocks() {
  return N > 24 ? 5 : 6;
}

template <class T, int N>
__global__ void __launch_bounds__(threads_per_block, halves_min_blocks<T, N>())
    inverse_halves_kernel(gpu_batch<T> A, gpu_batch<T> Ainv, int* __restrict__ info, long long count) {
  constexpr int warps = threads_per_block / 32, H = (N + 1) / 2;
  constexpr unsigned all = 0xFFFFFFFFu;
  static_assert(group<T, N>::P == 32 && !group<T, N>::packed, "a whole warp a matrix");
  // Per warp, by step: the pivot row (its original index) and 1 / the pivot. Every row is the
  // pivot once; its place is then that step's (later swaps only move places beyond it).
  __shared__ int s_row[warps][N];
  __shared__ T s_inv[warps][N];
  // The pivot search is the row form's (find_pivot), lane l searching row l at place spos.
  const group<T, N> grp(count);
  if (grp.leaves()) return;
  const int lane = grp.lane, warp = grp.g, rg = lane & 15, cg = lane >> 4;
  const long long b = grp.b;
  const T* in = matrix_of(A, b);
  T a[2][H];
#pragma unroll
  for (int q = 0; q < 2; ++q)
#pragma unroll
    for (int c = 0; c < H; ++c) {
      const int i = rg + 16 * q, j = H * cg + c;
      a[q][c] = i < N && j < N ? in[i + static_cast<long long>(j) * A.ld] : T(0);
    }
  int spos = lane;
  int inf = 0;
#pragma unroll 1
  for (int kg = 0; kg < 2; ++kg) {
    const int k0 = kg * H;  // the lanes of column group kg hold columns k0 .. k0 + H - 1
#pragma unroll
    for (int kk = 0; kk < H; ++kk) {
      const int k = k0 + kk;
      if (k >= N) break;
      T col[2];  // column k in this lane's rows
#pragma unroll
      for (int q = 0; q < 2; ++q) col[q] = __shfl_sync(all, a[q][kk], rg + 16 * kg);
      const T x = cg ? col[1] : col[0];  // row `lane` (rg + 16 cg), this lane's in the search
      int p, ppos;
      find_pivot(grp, x, k, spos, p, ppos);
      const T piv = __shfl_sync(all, x, p);
      const T d = T(1) / piv;
      if (piv == T(0) && inf == 0) inf = k + 1;
      if (lane == 0) {
        s_row[warp][k] = p;
        s_inv[warp][k] = d;
      }
      const bool pq = p >= 16;  // the pivot row's half, the same in every lane
      const int src = (p & 15) + 16 * cg;
      T f[2];
      bool pivot[2];
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        pivot[q] = rg + 16 * q == p;
        f[q] = col[q] * d;  // this row's multiplier of the (unscaled) pivot row
      }
      // The pivot row's half is the same in every lane: a branch, not a select a value (which
      // measured 3-13% slower).
      auto eliminate = [&](const T (&prow)[H]) {
#pragma unroll
        for (int c = 0; c < H; ++c) {
          const T v = __shfl_sync(all, prow[c], src);
#pragma unroll
          for (int q = 0; q < 2; ++q)
            if (!pivot[q]) a[q][c] = fma(-f[q], v, a[q][c]);
        }
      };
      if (pq) eliminate(a[1]);
      else eliminate(a[0]);
      if (cg == kg) {
#pragma unroll
        for (int q = 0; q < 2; ++q) a[q][kk] = pivot[q] ? T(1) : -f[q];  // 1 / pivot, or -f / pivot
      }
    }
  }
  __syncwarp();
  // Every lane has read its part (its values went into step 0), so the result may overwrite it in
  // place. Row i, the pivot of step place(i), is scaled by that step's 1 / pivot and goes to row
  // place(i); column j to column s_row[j].
  T* out = matrix_of(Ainv, b);
  int place[2] = {0, 0};
#pragma unroll
  for (int k = 0; k < N; ++k) {
    const int r = s_row[warp][k];
    if (r == rg) place[0] = k;
    if (r == rg + 16) place[1] = k;
  }
#pragma unroll
  for (int q = 0; q < 2; ++q) {
    if (rg + 16 * q >= N) continue;
    const T sc = s_inv[warp][place[q]];
#pragma unroll
    for (int c = 0; c < H; ++c) {
      const int j = H * cg + c;
      if (j < N) out[place[q] + static_cast<long long>(s_row[warp][j]) * Ainv.ld] = a[q][c] * sc;
    }
  }
  if (lane == 0) info[b] = inf;
}

}  // namespace tessera::kernels::batched_detail

#include "batched_inverse_mma.cuh"

namespace tessera::kernels::batched_detail {

// ---- orders 1 and 2: a thread per matrix ---------------------------------------------------------
// Groups of one or two lanes spent their instructions on group bookkeeping (pivot search, barriers)
// for 8 to 32 bytes of data each; a thread holding the whole matrix swaps rows for real and does
// GETF2's arithmetic in the same order, so the results are the lane kernels'. H100, 2^20 matrices,
// GETRF: n = 2 double 0.062 -> 0.035 ms (cuBLAS 0.032), single 0.061 -> 0.015 (cuBLAS 0.017).
template <class T, int N>
__device__ __forceinline__ void load_matrix(const T* a, int ld, T (&m)[N][N]) {
#pragma unroll
  for (int j = 0; j < N; ++j)
#pragma unroll
    for (int i = 0; i < N; ++i) m[i][j] = a[i + static_cast<long long>(j) * ld];
}

// GETF2 in one thread: m := L\U of its rows swapped, piv[k] = the 0-based row swapped with k.
template <class T, int N>
__device__ __forceinline__ int getf2_in_thread(T (&m)[N][N], int (&piv)[N]) {
  int inf = 0;
#pragma unroll
  for (int k = 0; k < N; ++k) {
    int p = k;  // the first row of largest key (abs_key: NaN never wins), as the lane kernels choose
    auto best = abs_key(m[k][k]);
#pragma unroll
    for (int i = k + 1; i < N; ++i) {
      const auto key = abs_key(m[i][k]);
      if (key > best) {
        best = key;
        p = i;
      }
    }
    piv[k] = p;
#pragma unroll
    for (int i = k + 1; i < N; ++i)
      if (i == p)
#pragma unroll
        for (int j = 0; j < N; ++j) {
          const T t = m[k][j];
          m[k][j] = m[i][j];
          m[i][j] = t;
        }
    const T d = m[k][k];
    if (d == T(0)) {
      if (inf == 0) inf = k + 1;
      continue;
    }
#pragma unroll
    for (int i = k + 1; i < N; ++i) {
      const T l = multiplier(m[i][k], d, T(1) / d);
      m[i][k] = l;
#pragma unroll
      for (int j = k + 1; j < N; ++j) m[i][j] = fma(-l, m[k][j], m[i][j]);
    }
  }
  return inf;
}

template <class T, int N>
__global__ void __launch_bounds__(threads_per_block)
    getrf_thread_kernel(gpu_batch<T> A, int* __restrict__ ipiv, int* __restrict__ info, long long count) {
  const long long b = static_cast<long long>(blockIdx.x) * threads_per_block + threadIdx.x;
  if (b >= count) return;
  T* a = matrix_of(A, b);
  T m[N][N];
  load_matrix(a, A.ld, m);
  int piv[N];
  const int inf = getf2_in_thread(m, piv);
#pragma unroll
  for (int j = 0; j < N; ++j)
#pragma unroll
    for (int i = 0; i < N; ++i) a[i + static_cast<long long>(j) * A.ld] = m[i][j];
#pragma unroll
  for (int k = 0; k < N; ++k) ipiv[b * N + k] = piv[k] + 1;
  info[b] = inf;
}

// The inverse from the factors: U^-1 by columns, then solve X L = U^-1 and undo the swaps on the
// columns, as GETRI does (for n <= 2 a handful of operations).
template <class T, int N>
__global__ void __launch_bounds__(threads_per_block)
    inverse_thread_kernel(gpu_batch<T> A, gpu_batch<T> Ainv, int* __restrict__ info, long long count) {
  const long long b = static_cast<long long>(blockIdx.x) * threads_per_block + threadIdx.x;
  if (b >= count) return;
  T m[N][N];
  load_matrix(matrix_of(A, b), A.ld, m);
  int piv[N];
  const int inf = getf2_in_thread(m, piv);
  // U^-1 in place (upper triangle): column j from the columns before it.
#pragma unroll
  for (int j = 0; j < N; ++j) {
    m[j][j] = T(1) / m[j][j];
    const T ajj = -m[j][j];
#pragma unroll
    for (int i = 0; i < j; ++i) {
      T t = T(0);
#pragma unroll
      for (int l = i; l < j; ++l) t = fma(m[i][l], m[l][j], t);
      m[i][j] = t * ajj;
    }
  }
  // X L = U^-1, columns right to left (L unit lower, its multipliers below the diagonal of m).
#pragma unroll
  for (int j = N - 2; j >= 0; --j) {
    T l[N];
#pragma unroll
    for (int i = j + 1; i < N; ++i) {
      l[i] = m[i][j];
      m[i][j] = T(0);
    }
#pragma unroll
    for (int i = 0; i < N; ++i)
#pragma unroll
      for (int q = j + 1; q < N; ++q) m[i][j] = fma(-m[i][q], l[q], m[i][j]);
  }
  // A^-1 = X P: columns swapped back in reverse order.
#pragma unroll
  for (int k = N - 2; k >= 0; --k)
#pragma unroll
    for (int q = k + 1; q < N; ++q)
      if (piv[k] == q)
#pragma unroll
        for (int i = 0; i < N; ++i) {
          const T t = m[i][k];
          m[i][k] = m[i][q];
          m[i][q] = t;
        }
  T* out = matrix_of(Ainv, b);
#pragma unroll
  for (int j = 0; j < N; ++j)
#pragma unroll
    for (int i = 0; i < N; ++i) out[i + static_cast<long long>(j) * Ainv.ld] = m[i][j];
  info[b] = inf;
}

// ---- solves ---------------------------------------------------------------------------------
// A power of two that makes every nonzero subnormal normal (2^-1074 * 2^54 > 2^-1022).
template <class T>
__device__ __forceinline__ T scale_up() {
  return sizeof(T) == sizeof(float) ? T(0x1p24f) : T(0x1p54);
}

// The substitution's division by d as two multiplies, x / d = (x * rd) * sc to rounding: rd = 1 /
// (d sc), sc = 1, or a power of two where d is below the safe minimum, so that 1 / d, which would
// overflow there, is never formed (d = 0 or NaN gives Inf or NaN, as the division does).
template <class T>
__device__ __forceinline__ void scaled_reciprocal(T d, T& rd, T& sc) {
  sc = d >= safe_min<T>() || d <= -safe_min<T>() ? T(1) : scale_up<T>();
  rd = T(1) / (d * sc);
}

// Forward and back substitution with rows at places pos (src_lane[k]: the lane holding place k);
// y: this lane's entry of one right-hand side, at place pos; rd, sc: scaled_reciprocal of this
// lane's diagonal entry U(pos, pos), worked out once for every right-hand side. A division in the
// pivot lane's branch at each step had put the division's code before every step's shuffle.
template <class T, int N>
__device__ __forceinline__ T substitute(const group<T, N>& grp, const T (&r)[N], int pos,
                                        const int (&src_lane)[N], T rd, T sc, T y) {
#pragma unroll
  for (int k = 0; k < N; ++k) {  // L y = P b, unit diagonal
    const T yk = grp.shfl(y, src_lane[k]);
    if (pos > k) y = fma(-r[k], yk, y);
  }
#pragma unroll
  for (int k = N - 1; k >= 0; --k) {  // U x = y
    if (pos == k) y = y * rd * sc;
    const T xk = grp.shfl(y, src_lane[k]);
    if (pos < k) y = fma(-r[k], xk, y);
  }
  return y;
}

// The place where row `row` of B lands under the swaps of ipiv replayed in order (LAPACK's LASWP);
// pivot(k) gives ipiv[k] - 1.
template <int N, class Pivot>
__device__ __forceinline__ int place_under_swaps(int row, Pivot pivot) {
  int pos = row;
#pragma unroll
  for (int k = 0; k < N; ++k) {
    const int p = pivot(k);
    if (pos == k) pos = p; else if (pos == p) pos = k;
  }
  return pos;
}

// rd, sc for this lane's row (at place pos) of the factors in r.
template <class T, int N>
__device__ __forceinline__ void row_reciprocal(const T (&r)[N], int pos, T& rd, T& sc) {
  T d = T(1);
#pragma unroll
  for (int k = 0; k < N; ++k)
    if (pos == k) d = r[k];
  scaled_reciprocal(d, rd, sc);
}

template <class T, int N>
__global__ void __launch_bounds__(threads_per_block)
    getrs_kernel(int nrhs, gpu_batch<T> LU, const int* __restrict__ ipiv, gpu_batch<T> B, long long count) {
  __shared__ shared_rows<T, N> s;
  const group<T, N> grp(count);
  if (grp.leaves()) return;
  const T* lu = grp.matrix(LU);
  T r[N] = {};
  load_row(grp, lu, LU.ld, r);
  if (grp.active) s.piv[grp.g][grp.lane] = ipiv[grp.b * N + grp.lane];
  __syncwarp(grp.mask);
  // Where this lane's row of B goes under the swaps ipiv: its place pos. Lanes keep their rows of
  // LU (already at their places), so place k is held by lane k; the entry of B that ends at place
  // lane comes from the lane whose pos is lane.
  const int pos = place_under_swaps<N>(grp.lane, [&](int k) { return s.piv[grp.g][k] - 1; });
  int src_lane[N];
#pragma unroll
  for (int k = 0; k < N; ++k) src_lane[k] = k;
  T rd, sc;
  row_reciprocal(r, grp.lane, rd, sc);
  T* b = grp.matrix(B);
  for (int c = 0; c < nrhs; ++c) {
    T* col = b ? b + static_cast<long long>(c) * B.ld : nullptr;
    T x = grp.active ? col[grp.lane] : T(0);
    // Place the entry: row lane of B lands at place pos, held by lane pos.
    T* stage = s.row[grp.g][c & 1];
    if (grp.active) stage[pos] = x;
    __syncwarp(grp.mask);
    T y = grp.active ? stage[grp.lane] : T(0);
    y = substitute(grp, r, grp.lane, src_lane, rd, sc, y);
    if (grp.active) col[grp.lane] = y;
  }
}

// GESV's row kernel holds the LU's occupancy bound for n > 16 but at n = 32 in double (H100, one
// right-hand side, ms: double n = 17 / 24 / 31 3.68 / 6.41 / 10.63 -> 3.11 / 5.81 / 10.25, single
// n = 24 / 32 3.19 / 5.37 -> 2.92 / 4.65; double n = 32 9.51 -> 11.47 and single n = 16 1.12 -> 1.50
// with it, so not there).
template <class T, int N>
constexpr int gesv_min_blocks() {
  if constexpr (sizeof(T) == sizeof(float) && N >= 11 && N <= 16) return 9;
  return N > 16 && !(sizeof(T) == sizeof(double) && N == 32) ? min_blocks<T, N>() : 1;
}

template <class T, int N>
__global__ void __launch_bounds__(threads_per_block, gesv_min_blocks<T, N>())
    gesv_kernel(int nrhs, gpu_batch<T> A, int* __restrict__ ipiv, gpu_batch<T> B, int* __restrict__ info,
                long long count) {
  __shared__ shared_rows<T, N> s;
  const group<T, N> grp(count);
  if (grp.leaves()) return;
  T r[N] = {};
  int pos, piv_lane[N];
  const int inf = getrf_group<T, N, true>(grp, s, A, ipiv, info, r, pos, piv_lane);
  // LAPACK's GESV leaves B alone for a singular A (inf is the group's); such a group still takes
  // part in the substitution's shuffles, on zeros.
  const bool solve = grp.active && inf == 0;
  T* b = solve ? matrix_of(B, grp.b) : nullptr;
  T rd, sc;
  row_reciprocal(r, pos, rd, sc);
  for (int c = 0; c < nrhs; ++c) {
    T* col = solve ? b + static_cast<long long>(c) * B.ld : nullptr;
    // Lane i holds row i of B, which is (PB)'s entry at place pos: the rows never move.
    T y = solve ? col[grp.lane] : T(0);
    y = substitute(grp, r, pos, piv_lane, rd, sc, y);
    if (solve) col[pos] = y;
  }
}

// ---- solves with many right-hand sides: a lane a column -----------------------------------------
// The substitution above sends every step's value to the group by a shuffle, one right-hand side
// after another: bound by the shuffles and their latency once there are several (H100, 2^20
// matrices, n = 32, 32 right-hand sides, double: GETRS 62.7 ms against 11.3 ms for a copy of the
// bytes). Here the factors go to shared memory once, and each lane solves whole columns of B from
// there: broadcast loads and FMAs, no shuffles, as many columns at once as the group has lanes.
// Each lane reads and writes its own column of B in global memory; staging B through shared
// memory for whole-line accesses was slower at most sizes (more shared memory, fewer blocks an SM:
// docs/results/2026-11-27-batched-solve-columns-h100.md).
template <class T, int N>
struct shared_factors {
  static constexpr int per_block = group<T, N>::per_block;
  // The groups of a warp read their factors at once: 16 bytes between their strides puts them
  // on other banks (without it, 2-8 groups of one warp met on the same bank).
  static constexpr int ld = N * N + 16 / static_cast<int>(sizeof(T));
  alignas(16) T lu[per_block][ld];  // L\U with its rows at their places, column-major
  T rd[per_block][N];               // 1 / (U_kk s_k)
  T sc[per_block][N];               // s_k: 1, or 2^p where U_kk is below the safe minimum
  int perm[per_block][N];           // place i holds B's row perm[i]
};

// Lane k's part of the factors' setup: scaled_reciprocal of U_kk. Called by every lane of the
// group after f.lu is in place.
template <class T, int N>
__device__ __forceinline__ void diagonal_reciprocals(const group<T, N>& grp, shared_factors<T, N>& f) {
  __syncwarp(grp.mask);
  if (grp.active) {
    const int k = grp.lane;
    scaled_reciprocal(f.lu[grp.g][k + k * N], f.rd[grp.g][k], f.sc[grp.g][k]);
  }
  __syncwarp(grp.mask);
}

// X := A^-1 B for the group's matrix from f: lane j takes columns j, j + L, ... of b.
template <class T, int N>
__device__ __forceinline__ void solve_columns(const group<T, N>& grp, const shared_factors<T, N>& f, int nrhs, T* b,
                                              int ldb) {
  const T* lu = f.lu[grp.g];
  for (int c = grp.lane; c < nrhs; c += group<T, N>::L) {
    // Keeps the factors' loads in the loop: hoisted out of it as loop invariants (N^2 values),
    // they spilled.
    asm volatile("" ::: "memory");
    T* col = b + static_cast<long long>(c) * ldb;
    T y[N];
#pragma unroll
    for (int i = 0; i < N; ++i) y[i] = col[f.perm[grp.g][i]];
#pragma unroll
    for (int k = 0; k < N; ++k)  // L y = P b, unit diagonal
#pragma unroll
      for (int i = k + 1; i < N; ++i) y[i] = fma(-lu[i + k * N], y[k], y[i]);
#pragma unroll
    for (int k = N - 1; k >= 0; --k) {  // U x = y
      y[k] = y[k] * f.rd[grp.g][k] * f.sc[grp.g][k];
#pragma unroll
      for (int i = 0; i < k; ++i) y[i] = fma(-lu[i + k * N], y[k], y[i]);
    }
#pragma unroll
    for (int i = 0; i < N; ++i) col[i] = y[i];
  }
}

template <class T, int N>
__global__ void __launch_bounds__(threads_per_block)
    getrs_columns_kernel(int nrhs, gpu_batch<T> LU, const int* __restrict__ ipiv, gpu_batch<T> B, long long count) {
  __shared__ shared_factors<T, N> f;
  const group<T, N> grp(count);
  if (grp.leaves()) return;
  if (grp.live) {  // the factors, the group's lanes along the columns (coalesced loads)
    const T* lu = matrix_of(LU, grp.b);
    constexpr int L = group<T, N>::L;
#pragma unroll 8
    for (int q = 0; q < (N * N + L - 1) / L; ++q) {  // unrolled by 8: loads go out together
      const int e = grp.lane + q * L;
      if (e < N * N) f.lu[grp.g][e] = lu[e % N + static_cast<long long>(e / N) * LU.ld];
    }
  }
  // Where B's row lane lands under the swaps ipiv (getrs_kernel's pos): place pos holds it.
  const int piv = grp.active ? ipiv[grp.b * N + grp.lane] - 1 : 0;
  const int pos = place_under_swaps<N>(grp.lane, [&](int k) { return grp.shfl(piv, k); });
  if (grp.active) f.perm[grp.g][pos] = grp.lane;
  diagonal_reciprocals(grp, f);
  if (grp.live) solve_columns(grp, f, nrhs, matrix_of(B, grp.b), B.ld);
}

template <class T, int N>
__global__ void __launch_bounds__(threads_per_block)
    gesv_columns_kernel(int nrhs, gpu_batch<T> A, int* __restrict__ ipiv, gpu_batch<T> B, int* __restrict__ info,
                        long long count) {
  __shared__ shared_rows<T, N> s;
  __shared__ shared_factors<T, N> f;
  const group<T, N> grp(count);
  if (grp.leaves()) return;
  T r[N] = {};
  int pos, piv_lane[N];
  const int inf = getrf_group<T, N, false>(grp, s, A, ipiv, info, r, pos, piv_lane);
  if (grp.active) {  // lane i's row of A, and of B, is at place pos
#pragma unroll
    for (int j = 0; j < N; ++j) f.lu[grp.g][pos + j * N] = r[j];
    f.perm[grp.g][pos] = grp.lane;
  }
  diagonal_reciprocals(grp, f);
  // LAPACK's GESV leaves B alone for a singular A (inf is the group's).
  if (grp.live && inf == 0) solve_columns(grp, f, nrhs, matrix_of(B, grp.b), B.ld);
}

// Whether the column kernels take nrhs right-hand sides of order n: the fewest right-hand sides
// from which they measured faster than the row kernels (H100, 2^20 matrices, 1-32 right-hand sides,
// docs/results/2026-11-27-batched-solve-columns-h100.md). The row form sends every step's value by
// a shuffle, one right-hand side after another; the column form reads all n^2 factors from shared
// memory once per group of columns. Orders where the row form stayed ahead at 32 right-hand sides
// never switch (double GETRS n = 16, two 16-lane groups a warp; single GETRS n = 32 and single GESV
// n >= 29).
template <class T>
int columns_from(bool gesv, int n) {
  constexpr int never = std::numeric_limits<int>::max();
  constexpr bool single = sizeof(T) == sizeof(float);
  if (gesv) {
    if (single) return n <= 16 ? 2 : n <= 20 ? 4 : n <= 28 ? 8 : never;
    return n == 31 ? 8 : 2;
  }
  if (!single && n == 3) return 1;  // the packed row form is slow there
  if (n <= 5) return 4;
  if (n == 16) return single ? 32 : never;
  if (n < 28) return 8;
  return single && n == 32 ? never : 16;
}

template <class T>
bool solve_by_columns(bool gesv, int n, int nrhs) {
  return nrhs >= columns_from<T>(gesv, n);
}

// ---- host side: checks, then a launch through a table over n ----------------------------------
template <class T, int N>
unsigned blocks_for(long long count) {
  constexpr int per_block = group<T, N>::per_block;
  return static_cast<unsigned>((count + per_block - 1) / per_block);
}

// GETRF and the inverse take a thread per matrix up to this order (the kernels above).
inline constexpr int thread_kernel_max_n = 2;

// The inverse too, but for n = 2 in double, where the lane kernel was faster (its three double
// divisions a thread: 0.069 ms against 0.054 for 2^20 matrices on the H100; float: 0.016 against 0.054).
template <class T, int N>
inline constexpr bool inverse_by_thread = N == 1 || (N <= thread_kernel_max_n && sizeof(T) == 4);

inline unsigned thread_blocks(long long count) {
  return static_cast<unsigned>((count + threads_per_block - 1) / threads_per_block);
}

inline void check_common(const char* fn, int n, long long count, cudaStream_t) {
  check::require_ge(fn, "n", n, "1", 1);
  check::require_le(fn, "n", n, "gpu_batched_max_n", gpu_batched_max_n);
  check::require_ge(fn, "count", count, "0", 0);
}

template <class T>
void check_batch(const char* fn, const char* name, const char* ld_name, const gpu_batch<T>& m, int rows,
                 int cols, long long count) {
  if (count == 0) return;
  check::require_ge(fn, ld_name, m.ld, "n", rows);
  if (!m.ptrs) {
    check::require_ptr(fn, name, m.data);
    if (count > 1)
      check::require_ge(fn, "stride", m.stride, "ld * columns",
                        static_cast<long long>(m.ld) * cols);
  }
}

// Calls f(std::integral_constant<int, n>) for the run-time n in 1..32: one instantiation each.
template <int N = 1, class F>
void dispatch(int n, F&& f) {
  if constexpr (N <= gpu_batched_max_n) {
    if (n == N) {
      f(std::integral_constant<int, N>{});
    } else {
      dispatch<N + 1>(n, f);
    }
  }
}

}  // namespace tessera::kernels::batched_detail

namespace tessera::kernels {

template <class T>
int gpu_batched_per_block(int n) {
  constexpr const char* fn = "tessera::kernels::gpu_batched_per_block";
  check::require_ge(fn, "n", n, "1", 1);
  check::require_le(fn, "n", n, "gpu_batched_max_n", gpu_batched_max_n);
  int per_block = 0;
  batched_detail::dispatch(n, [&](auto nc) { per_block = batched_detail::group<T, decltype(nc)::value>::per_block; });
  return per_block;
}

// The public entry points, defined here and instantiated one operation and precision per .cu.
template <class T>
void gpu_batched_getrf(int n, gpu_batch<T> a, int* ipiv, int* info, long long count, cudaStream_t stream) {
  using namespace batched_detail;
  constexpr const char* fn = "tessera::kernels::gpu_batched_getrf";
  check_common(fn, n, count, stream);
  if (count == 0) return;
  check_batch(fn, "a", "lda", a, n, n, count);
  check::require_ptr(fn, "ipiv", ipiv);
  check::require_ptr(fn, "info", info);
  dispatch(n, [&](auto nc) {
    constexpr int N = decltype(nc)::value;
    if constexpr (N <= thread_kernel_max_n)
      getrf_thread_kernel<T, N><<<thread_blocks(count), threads_per_block, 0, stream>>>(a, ipiv, info, count);
    else
      getrf_kernel<T, N><<<blocks_for<T, N>(count), threads_per_block, 0, stream>>>(a, ipiv, info, count);
  });
  detail::check(fn, "getrf_kernel launch", cudaGetLastError());
}

template <class T>
void gpu_batched_inverse(int n, gpu_batch<T> a, gpu_batch<T> ainv, int* info, long long count,
                         cudaStream_t stream) {
  using namespace batched_detail;
  constexpr const char* fn = "tessera::kernels::gpu_batched_inverse";
  check_common(fn, n, count, stream);
  if (count == 0) return;
  check_batch(fn, "a", "lda", a, n, n, count);
  check_batch(fn, "ainv", "ldainv", ainv, n, n, count);
  check::require_ptr(fn, "info", info);
  dispatch(n, [&](auto nc) {
    constexpr int N = decltype(nc)::value;
    if constexpr (inverse_by_thread<T, N>)
      inverse_thread_kernel<T, N><<<thread_blocks(count), threads_per_block, 0, stream>>>(a, ainv, info, count);
    else if constexpr (inv_by_mma<T, N>)
      inverse_mma_kernel<N><<<blocks_for<T, N>(count), threads_per_block, 0, stream>>>(a, ainv, info, count);
    else if constexpr (inv_by_halves<T, N>)
      inverse_halves_kernel<T, N><<<blocks_for<T, N>(count), threads_per_block, 0, stream>>>(a, ainv, info, count);
    else
      inverse_kernel<T, N><<<blocks_for<T, N>(count), threads_per_block, 0, stream>>>(a, ainv, info, count);
  });
  detail::check(fn, "inverse_kernel launch", cudaGetLastError());
}

template <class T>
void gpu_batched_getrs(int n, int nrhs, gpu_batch<T> lu, const int* ipiv, gpu_batch<T> b, long long count,
                       cudaStream_t stream) {
  using namespace batched_detail;
  constexpr const char* fn = "tessera::kernels::gpu_batched_getrs";
  check_common(fn, n, count, stream);
  check::require_ge(fn, "nrhs", nrhs, "0", 0);
  if (count == 0 || nrhs == 0) return;
  check_batch(fn, "lu", "lda", lu, n, n, count);
  check_batch(fn, "b", "ldb", b, n, nrhs, count);
  check::require_ptr(fn, "ipiv", ipiv);
  dispatch(n, [&](auto nc) {
    constexpr int N = decltype(nc)::value;
    if (solve_by_columns<T>(false, n, nrhs))
      getrs_columns_kernel<T, N><<<blocks_for<T, N>(count), threads_per_block, 0, stream>>>(nrhs, lu, ipiv, b, count);
    else
      getrs_kernel<T, N><<<blocks_for<T, N>(count), threads_per_block, 0, stream>>>(nrhs, lu, ipiv, b, count);
  });
  detail::check(fn, "getrs_kernel launch", cudaGetLastError());
}

template <class T>
void gpu_batched_gesv(int n, int nrhs, gpu_batch<T> a, int* ipiv, gpu_batch<T> b, int* info, long long count,
                      cudaStream_t stream) {
  using namespace batched_detail;
  constexpr const char* fn = "tessera::kernels::gpu_batched_gesv";
  check_common(fn, n, count, stream);
  check::require_ge(fn, "nrhs", nrhs, "0", 0);
  if (count == 0) return;
  check_batch(fn, "a", "lda", a, n, n, count);
  if (nrhs > 0) check_batch(fn, "b", "ldb", b, n, nrhs, count);
  check::require_ptr(fn, "ipiv", ipiv);
  check::require_ptr(fn, "info", info);
  dispatch(n, [&](auto nc) {
    constexpr int N = decltype(nc)::value;
    if (solve_by_columns<T>(true, n, nrhs))
      gesv_columns_kernel<T, N><<<blocks_for<T, N>(count), threads_per_block, 0, stream>>>(nrhs, a, ipiv, b, info,
                                                                                          count);
    else
      gesv_kernel<T, N><<<blocks_for<T, N>(count), threads_per_block, 0, stream>>>(nrhs, a, ipiv, b, info, count);
  });
  detail::check(fn, "gesv_kernel launch", cudaGetLastError());
}

}  // namespace tessera::kernels
