// [R; U] := its QR factor in one persistent kernel (gpu_tpqrt.hpp): the chain of 32-column panels
// of the QR updates' added rows (issue #18), where a launch per panel and per apply (about 5 us
// each) and a panel kernel of 2-3 us a column made the chain cost 100-200 us a panel.
//
// One thread block (16 warps) a slab of 32 columns, the slab's p <= 512 rows of U in registers:
// warp w holds columns 8 (w / 4) .. + 7 (its column group) and row quarter w % 4; lane l holds
// column 8 (w / 4) + l / 4, rows 8 b + 2 (l % 4) + h of its quarter (b < QB, h < 2). That is at
// once the B operand of the tensor cores' FP64 mma (m8n8k4) for W = V^T U (its k index is l % 4,
// the rows' order inside a sum does not matter) and the accumulator of U^T := U^T - W^T V^T, so
// both products of an apply run on the tensor cores from registers, V and W staged in shared
// memory. A group's 4 warps sit on the 4 schedulers.
// A panel goes by column groups: the group's 4 warps factor its 8 columns (one 128-thread barrier
// a column), then the later groups take its 8 reflectors on the tensor cores; Gram entries between
// groups come from one more product at the end, and T from LARFT's recurrence. Columns are
// equilibrated by powers of two first (equilibrate.hpp), as every other panel kernel is.
// Slabs wait for panels through flags (release/acquire at device scope); a cooperative launch
// guarantees that every block is resident, so the waits always end. The slab right after a panel
// takes it group by group as each group's flag is out (its V, Gram block and taus), so that its
// apply overlaps the panel's later groups and the panel's T is off the chain's path (H200: the chain
// 21% shorter; docs/results/2026-11-29-chain-groups-h200.md).
// With several chains U's rows are split into blocks, each [R; U_c] a chain of its own one panel
// behind the block above (tpqrt_chain_kernel): a lane's column is r = ceil(p / chains) rows, not
// p, and the column work, latency-bound, gets shorter with it (the H100: 500 rows to 3000 columns
// 0.59-0.70 of one chain's time in blocks of 64; docs/results/2026-11-27-tpqrt-chains-h100.md).
#include <algorithm>
#include <cmath>
#include <type_traits>

#include <tessera/kernels_gpu/gpu_tpqrt.hpp>

#include "check.hpp"
#include "dmma.cuh"
#include "equilibrate.hpp"
#include "flags.cuh"
#include "givens_blocks_apply.cuh"
#include "per_device.hpp"

namespace tessera::kernels::detail {
namespace {

constexpr int warps = 16, threads = 32 * warps;
constexpr unsigned full_mask = 0xffffffffu;
constexpr int ld33 = 33;  // 32 x 32 blocks in shared memory, padded

// QB blocks of 8 rows a row quarter: p <= 32 QB rows.
template <int QB>
struct shape {
  static constexpr int rows = 32 * QB;
  static constexpr int ldv = rows + 1;  // V staged as Vs[i][row]: ldv = 1 mod 16 (see the i maps)
  static constexpr int vs = 32 * ldv, wp = 4 * 32 * ld33, ts = 32 * ld33;
  // The panel's arrays: V's 4 groups inside Vs, the Gram's quarters inside Wp, R's block in Ts.
  static constexpr int vf_group = 4 * QB * 2 * 32, vf = 0, gq = vs, rs = vs + wp;
  static_assert(4 * vf_group <= vs && 4 * 32 * 32 <= wp, "the panel's arrays fit");
  static constexpr int gram = rs + ts, ff = gram + 32 * ld33, red = ff + 8 * 32, tau = red + 2 * 32,
                       cmax = tau + 32, expo = cmax + 4 * 32;
  static constexpr int xs = expo + 32;  // even: 16-byte aligned
  static constexpr int doubles = xs + rows;
};

// The reflector index of fragment slot (tile, n or k) in the two products, chosen so that a
// warp's 64-bit loads of Vs[i * ldv + row] hit distinct banks (ldv = 1 mod 16: bank = i + row).
// Product 1 (A = V^T, lane (n, k) reads row base + 2k): i mod 16 over a half warp's n is
// {0, 1, 8, 9} (+ 2 for n >= 4), + 2k: 16 distinct. Product 2 (B = V^T, lane (k, n) reads row
// base + n): i mod 16 over k is {0, 4, 8, 12}, + n.
__device__ __forceinline__ int i_product1(int tile, int n) {
  return (n & 1) + 2 * (n >> 2) + 4 * (tile & 1) + 8 * ((n >> 1) & 1) + 16 * (tile >> 1);
}
__device__ __forceinline__ int i_product2(int kk, int k) { return 4 * k + (kk & 3) + 16 * (kk >> 2); }



constexpr int group_data = 72;  // a group's Gram block (8 x 8, row-major) and its 8 taus

template <class T>
struct chain_args {
  int m, p, nrhs, npanels, nslabs;  // nslabs: the column slabs, [R; U]'s panels then [C1; C2]'s
  int chains, rows;                 // U's row blocks (chains) of `rows` rows (the last: the rest)
  T* R;
  int ldr;
  T* U;
  int ldu;
  T* C1;
  int ldc1;
  T* C2;
  int ldc2;
  T* Tf;
  int* flags;    // chains x npanels panel flags
  int* gflags;   // chains x npanels x 4 group flags: panel t's 8-reflector group is out (its V in U)
  int* prog;     // (chains > 1) chains x nslabs progress counters
  double* gdata; // chains x npanels x 4 groups: the group's Gram block (8 x 8) and taus (8)
  int epoch;     // a panel's (or group's) flag once it is out

  // Row block c's view: its rows of U and C2, its panels' T and flags (the block's own chain).
  __device__ chain_args chain(int c) const {
    chain_args v = *this;
    v.p = min(rows, p - c * rows);
    v.U = U + c * rows;
    if (C2) v.C2 = C2 + c * rows;
    v.Tf = Tf + static_cast<std::ptrdiff_t>(c) * npanels * 1024;
    v.flags = flags + c * npanels;
    v.gflags = gflags + 4 * c * npanels;
    v.gdata = gdata + static_cast<std::ptrdiff_t>(c) * npanels * group_data * 4;
    return v;
  }
  __device__ int* progress(int c, int s) const { return prog + c * nslabs + s; }
};

// Lane geometry: column `col` of the slab, rows row0 + 8 b + h of [U] (b < QB, h < 2).
struct lane_geometry {
  int lane, warp, cq, rq, n8, k4, col, row0;
  __device__ lane_geometry(int qb) {
    lane = static_cast<int>(threadIdx.x) & 31;
    warp = static_cast<int>(threadIdx.x) >> 5;
    cq = warp >> 2;
    rq = warp & 3;
    n8 = lane >> 2;
    k4 = lane & 3;
    col = 8 * cq + n8;
    row0 = 8 * qb * rq + 2 * k4;
  }
};

// Spins (thread 0) until *flag has reached `value` (signed difference: the flags carry epochs).
__device__ __forceinline__ void wait_for(const int* flag, int value) {
  while (static_cast<int>(static_cast<unsigned>(load_acquire<flag_scope::device_global>(flag)) - static_cast<unsigned>(value)) < 0)
    __nanosleep(64);
}

// [top; a] := H_t^T [top; a] for panel t (top: the slab's 32 rows of R or C1 at the panel's rows).
// Once those rows of top are final, progress (where not null) is set to t + 1.
template <class T, int QB>
__device__ __forceinline__ void apply_panel(const chain_args<T>& g, int t, T* top, int ldtop, int jb,
                                            double (&a)[QB][2], double* sm, const lane_geometry& L,
                                            int* progress) {
  using S = shape<QB>;
  double* Vs = sm;
  double* Wp = sm + S::vs;
  double* Ts = Wp + S::wp;
  const int tid = static_cast<int>(threadIdx.x);
  const int kb = min(32, g.m - 32 * t);
  const T* V = g.U + static_cast<std::ptrdiff_t>(32 * t) * g.ldu;
  const T* Tt = g.Tf + static_cast<std::ptrdiff_t>(t) * 1024;
  // top's rows of the panel, loaded first: their latency overlaps the staging.
  double keep[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int idx = tid + r * threads, i = idx & 31, c = idx >> 5;
    keep[r] = i < kb && c < jb ? static_cast<double>(top[32 * t + i + static_cast<std::ptrdiff_t>(c) * ldtop]) : 0.0;
  }
  // Stage V_t (zero past its reflectors and rows) and T_t (zero below the diagonal). Doubles by
  // cp.async, the loads in flight at once; through L1, which the flag's acquire has just
  // invalidated (CCTL.IVALL), so no line of U read before V_t was written survives.
  if constexpr (sizeof(T) == 8) {
    for (int idx = tid; idx < 32 * S::rows; idx += threads) {
      const int i = idx / S::rows, row = idx % S::rows;
      double* dst = Vs + i * S::ldv + row;
      if (i < kb && row < g.p) {
        const unsigned sa = static_cast<unsigned>(__cvta_generic_to_shared(dst));
        asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(sa), "l"(V + row + static_cast<std::ptrdiff_t>(i) * g.ldu) : "memory");
      } else {
        *dst = 0.0;
      }
    }
    asm volatile("cp.async.wait_all;" ::: "memory");
  } else {
    for (int idx = tid; idx < 32 * S::rows; idx += threads) {
      const int i = idx / S::rows, row = idx % S::rows;
      Vs[i * S::ldv + row] =
          i < kb && row < g.p ? static_cast<double>(__ldcg(V + row + static_cast<std::ptrdiff_t>(i) * g.ldu)) : 0.0;
    }
  }
  for (int idx = tid; idx < 1024; idx += threads) {
    const int i = idx & 31, k = idx >> 5;
    Ts[i * ld33 + k] = i <= k && k < kb ? static_cast<double>(__ldcg(Tt + i + 32 * k)) : 0.0;
  }
  __syncthreads();
  // W_partial (this quarter's rows) = V^T a: 4 tiles of 8 reflectors x this warp's 8 columns.
  double acc[4][2] = {};
#pragma unroll
  for (int b = 0; b < QB; ++b)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = L.row0 + 8 * b + h;
#pragma unroll
      for (int tile = 0; tile < 4; ++tile)
        detail::dmma_8x8x4(acc[tile], Vs[i_product1(tile, L.n8) * S::ldv + row], a[b][h]);
    }
#pragma unroll
  for (int tile = 0; tile < 4; ++tile)
#pragma unroll
    for (int e = 0; e < 2; ++e)
      Wp[(L.rq * 32 + i_product1(tile, L.n8)) * ld33 + 8 * L.cq + 2 * L.k4 + e] = acc[tile][e];
  __syncthreads();
  // W = top + sum of the quarters (into Wp[0]); then W' = T^T W (into Wp[1]), top -= W'.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int idx = tid + r * threads, i = idx & 31, c = idx >> 5;
    double w = Wp[i * ld33 + c] + Wp[(32 + i) * ld33 + c] + Wp[(64 + i) * ld33 + c] + Wp[(96 + i) * ld33 + c];
    Wp[i * ld33 + c] = w + keep[r];
  }
  __syncthreads();
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int idx = tid + r * threads, i = idx & 31, c = idx >> 5;
    // Over all 32 rows (T's zeros below the diagonal): unrolled, four sums, no serial chain of 32.
    double w4[4] = {};
#pragma unroll
    for (int k = 0; k < 32; ++k) w4[k & 3] = fma(Ts[k * ld33 + i], Wp[k * ld33 + c], w4[k & 3]);
    const double w = (w4[0] + w4[1]) + (w4[2] + w4[3]);
    Wp[(32 + i) * ld33 + c] = w;
    if (i < kb && c < jb) top[32 * t + i + static_cast<std::ptrdiff_t>(c) * ldtop] = static_cast<T>(keep[r] - w);
  }
  if (progress) __threadfence();  // the writes above seen before the counter, set after the barrier
  __syncthreads();
  if (progress && tid == 0) store_release<flag_scope::device_global>(progress, t + 1);
  // a^T := a^T - W'^T V^T, a quarter's 8-row blocks one accumulator tile each.
  double wa[8];
#pragma unroll
  for (int kk = 0; kk < 8; ++kk) wa[kk] = -Wp[(32 + i_product2(kk, L.k4)) * ld33 + L.col];
#pragma unroll
  for (int b = 0; b < QB; ++b) {
    const int row = 8 * QB * L.rq + 8 * b + L.n8;
#pragma unroll
    for (int kk = 0; kk < 8; ++kk) detail::dmma_8x8x4(a[b], wa[kk], Vs[i_product2(kk, L.k4) * S::ldv + row]);
  }
}

// The 4 warps of column group `group` (warps 4 group .. 4 group + 3) meet here; barrier 0 is
// __syncthreads'.
__device__ __forceinline__ void group_barrier(int group) {
  asm volatile("bar.sync %0, 128;" ::"r"(1 + group) : "memory");
}

// V's group of 8 columns in the mma fragment order of its owners, Vf[rq][b][h][lane] = lane's
// a[b][h] (lane = 4 reflector + k4, rows 8 b + 2 k4 + h of quarter rq).
template <int QB>
__device__ __forceinline__ int vf_index(int rq, int b, int h, int lane) {
  return ((rq * QB + b) * 2 + h) * 32 + lane;
}

// This lane's two entries of the 8 x 8 block V_g^T a (group g's reflectors against the lane's
// column group) on the tensor cores, summed over the lane's row quarter.
template <int QB>
__device__ __forceinline__ void vt_times(const double* Vg, const double (&a)[QB][2], const lane_geometry& L,
                                         double (&acc)[2]) {
  acc[0] = 0, acc[1] = 0;
#pragma unroll
  for (int b = 0; b < QB; ++b)
#pragma unroll
    for (int h = 0; h < 2; ++h) detail::dmma_8x8x4(acc, Vg[vf_index<QB>(L.rq, b, h, L.lane)], a[b][h]);
}

// a -= V_g f on the tensor cores: V_g a group's 8 reflectors (Vf order), f their multipliers for
// the slab's 32 columns (ff[i * 32 + column]).
template <int QB>
__device__ __forceinline__ void subtract_v_f(const double* Vg, const double* ff, double (&a)[QB][2],
                                             const lane_geometry& L) {
  const double f0 = -ff[L.k4 * 32 + L.col], f1 = -ff[(4 + L.k4) * 32 + L.col];
  const int h = L.n8 & 1, l0 = 4 * L.k4 + (L.n8 >> 1);
#pragma unroll
  for (int b = 0; b < QB; ++b) {
    detail::dmma_8x8x4(a[b], f0, Vg[vf_index<QB>(L.rq, b, h, l0)]);
    detail::dmma_8x8x4(a[b], f1, Vg[vf_index<QB>(L.rq, b, h, l0 + 16)]);
  }
}

// The panel's block of R (its rows 32 s .., zeros below the diagonal and past jb) into shared
// memory, the Gram entries and taus cleared: factor_panel's start, which apply_panel_groups does
// early where the block is final already (no row block above), so that its loads overlap the waits.
template <class T, int QB>
__device__ __forceinline__ void load_panel_block(const chain_args<T>& g, int s, const T* top, int jb, double* sm) {
  using S = shape<QB>;
  double* Rs = sm + S::rs;
  double* gram = sm + S::gram;
  const int tid = static_cast<int>(threadIdx.x);
  for (int idx = tid; idx < 1024; idx += threads) {
    const int i = idx & 31, c = idx >> 5;
    Rs[i * ld33 + c] =
        i <= c && c < jb ? static_cast<double>(top[32 * s + i + static_cast<std::ptrdiff_t>(c) * g.ldr]) : 0.0;
    gram[i * ld33 + c] = 0.0;  // entries past jb stay 0 (their tau is 0)
  }
  if (tid < 32) sm[S::tau + tid] = 0.0;
}

// [top; a] := H_t^T [top; a] for the chain's panel t just before the slab's own, one group of 8
// reflectors at a time as factor_panel publishes them (W = top's 8 rows + V_g^T a, the multipliers
// f by forward substitution with the group's Gram block and taus, top -= f, a -= V_g f): the slab
// applies the first groups while the later ones are factored, and T, computed after the panel,
// stays off the chain's path. `above` (row block c - 1's progress here) first, as apply_panel.
template <class T, int QB>
__device__ __forceinline__ void apply_panel_groups(const chain_args<T>& g, int t, T* top, int ldtop, int jb,
                                                   double (&a)[QB][2], double* sm, const lane_geometry& L,
                                                   const int* above, int* progress) {
  using S = shape<QB>;
  double* Vg = sm + S::vf;     // V_g in its owners' fragment order (vf_index)
  double* Gq = sm + S::gq;     // W's quarters [rq][8][32]
  double* tops = Gq + 1024;    // top's 8 rows of the group [i][32]
  double* gs = tops + 256;     // the group's Gram block and taus
  double* ff = sm + S::ff;
  const int tid = static_cast<int>(threadIdx.x);
  const T* V = g.U + static_cast<std::ptrdiff_t>(32 * t) * g.ldu;
  if (!above) load_panel_block<T, QB>(g, t + 1, top, jb, sm);
  if (tid == 0 && above) wait_for(above, t + 1);
  for (int grp = 0; grp < 4; ++grp) {
    if (tid == 0) wait_for(g.gflags + 4 * t + grp, g.epoch);
    __syncthreads();  // also: the last group's (or apply's) reads of shared memory are done
    for (int idx = tid; idx < 4 * QB * 2 * 32; idx += threads) {
      const int ln = idx & 31, h = (idx >> 5) & 1, rb = idx >> 6, b = rb % QB, rq = rb / QB;
      const int row = 8 * QB * rq + 8 * b + 2 * (ln & 3) + h;
      Vg[idx] = row < g.p ? static_cast<double>(__ldcg(V + row + static_cast<std::ptrdiff_t>(8 * grp + (ln >> 2)) * g.ldu))
                          : 0.0;
    }
    if (tid < group_data) gs[tid] = __ldcg(g.gdata + (4 * t + grp) * group_data + tid);
    if (tid < 256) {  // top's 8 rows, a thread an entry (their loads in flight with V's)
      const int i = tid >> 5, c = tid & 31;
      tops[tid] = c < jb ? static_cast<double>(top[32 * t + 8 * grp + i + static_cast<std::ptrdiff_t>(c) * ldtop]) : 0.0;
    }
    __syncthreads();
    double acc[2];
    vt_times<QB>(Vg, a, L, acc);
    Gq[(L.rq * 8 + L.n8) * 32 + 8 * L.cq + 2 * L.k4] = acc[0];
    Gq[(L.rq * 8 + L.n8) * 32 + 8 * L.cq + 2 * L.k4 + 1] = acc[1];
    __syncthreads();
    if (tid < 32) {
      double fv[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        double wi = tops[i * 32 + tid] + Gq[i * 32 + tid] + Gq[(8 + i) * 32 + tid] + Gq[(16 + i) * 32 + tid] + Gq[(24 + i) * 32 + tid];
#pragma unroll
        for (int k = 0; k < i; ++k) wi = fma(-gs[k * 8 + i], fv[k], wi);
        fv[i] = tid < jb ? gs[64 + i] * wi : 0.0;
        ff[i * 32 + tid] = fv[i];
      }
      if (tid < jb)
#pragma unroll
        for (int i = 0; i < 8; ++i)
          top[32 * t + 8 * grp + i + static_cast<std::ptrdiff_t>(tid) * ldtop] = static_cast<T>(tops[i * 32 + tid] - fv[i]);
    }
    __syncthreads();
    // top's rows of the panel are final here: the row block below may take the panel (the last
    // warp releases, its wait beside the others' product).
    if (grp == 3 && progress && tid == threads - 32) store_release<flag_scope::device_global>(progress, t + 1);
    subtract_v_f<QB>(Vg, ff, a, L);
  }
}

// Factor the slab's panel [R's diagonal block; a] (jb columns), write R's block, V (into U) and T,
// and set the panel's flag. By groups of 8 columns: a group's 4 warps factor its columns (x from
// its owner lanes through shared memory; one 128-thread barrier a column for the sums), then every
// later group takes the 8 reflectors on the tensor cores (W = V^T a, f = the reflectors'
// multipliers by forward substitution with the Gram entries, a -= V f).
template <class T, int QB>
__device__ __forceinline__ void factor_panel(const chain_args<T>& g, int s, T* top, int jb, double (&a)[QB][2],
                                             double* sm, const lane_geometry& L, bool loaded) {
  using S = shape<QB>;
  double* Vf = sm + S::vf;
  double* Gq = sm + S::gq;  // the Gram's quarters [rq][32][32]; in a group's apply W's, [rq][8][32]
  double* Rs = sm + S::rs;
  double* gram = sm + S::gram;
  double* ff = sm + S::ff;
  double* red = sm + S::red;
  double* xs = sm + S::xs;
  double* taus = sm + S::tau;
  double* cmax = sm + S::cmax;
  double* expo = sm + S::expo;
  const int tid = static_cast<int>(threadIdx.x);
  __syncthreads();  // the last apply's reads of shared memory are done
  if (!loaded) load_panel_block<T, QB>(g, s, top, jb, sm);
  {  // A := A D, D = diag(2^-e_c): every column's max-abs in [1/2, 1)
    double mx = 0;
#pragma unroll
    for (int b = 0; b < QB; ++b) mx = fmax(mx, fmax(fabs(a[b][0]), fabs(a[b][1])));
    mx = fmax(mx, __shfl_xor_sync(full_mask, mx, 1));
    mx = fmax(mx, __shfl_xor_sync(full_mask, mx, 2));
    if (L.k4 == 0) cmax[L.rq * 32 + L.col] = mx;
  }
  __syncthreads();
  if (tid < 32) {
    double mx = fmax(fmax(cmax[tid], cmax[32 + tid]), fmax(cmax[64 + tid], cmax[96 + tid]));
    double rm[4] = {};  // R's column, zeros below the diagonal: 32 loads at once, not a chain
#pragma unroll
    for (int i = 0; i < 32; ++i) rm[i & 3] = fmax(rm[i & 3], fabs(Rs[i * ld33 + tid]));
    mx = fmax(mx, fmax(fmax(rm[0], rm[1]), fmax(rm[2], rm[3])));
    expo[tid] = exponent_of_max(mx);
  }
  __syncthreads();
  {
    // Times 2^-e, a double for e in [-1021, 1024]: the same correctly rounded product as scalbn.
    const double d = scalbn(1.0, -static_cast<int>(expo[L.col]));
#pragma unroll
    for (int b = 0; b < QB; ++b)
#pragma unroll
      for (int h = 0; h < 2; ++h) a[b][h] *= d;
    for (int idx = tid; idx < 1024; idx += threads) {
      const int i = idx & 31, c = idx >> 5;
      Rs[i * ld33 + c] = scalbn(Rs[i * ld33 + c], -static_cast<int>(expo[c]));
    }
  }
  __syncthreads();

  const int ngroups = (jb + 7) / 8;
  const bool writer = L.rq == 0 && L.k4 == 0;
  // With a next slab of this chain, each group's V, Gram block and taus go out as soon as the
  // group is factored (apply_panel_groups); the flag's release by the group's first warp, once
  // its stores are behind a block barrier, while the later groups work.
  const bool publish = s + 1 < g.npanels;
  T* Us = g.U + static_cast<std::ptrdiff_t>(32 * s) * g.ldu;
  for (int grp = 0; grp < ngroups; ++grp) {
    double* Vg = Vf + grp * S::vf_group;
    if (publish && grp > 0 && L.warp == 4 * (grp - 1) && L.lane == 0)
      store_release<flag_scope::device_global>(g.gflags + 4 * s + grp - 1, g.epoch);
    if (L.cq == grp) {
      // Reflectors 8 grp .. from alpha = R(j, j) and x = a(:, j) (LARFG as in
      // householder_short.cu: tau = 0 where the remaining column is negligible).
      for (int j = 8 * grp; j < min(jb, 8 * grp + 8); ++j) {
        double* rb = red + (j & 1) * 32;  // [rq][the 8 sums x^T a_c]
        const double alpha = Rs[j * ld33 + j];
        const double rjc = Rs[j * ld33 + L.col];
        // x = a(:, j) through shared memory: its owner lanes hold the warp's rows of it.
        __syncwarp();
        if (L.col == j)
#pragma unroll
          for (int b = 0; b < QB; ++b) *reinterpret_cast<double2*>(xs + L.row0 + 8 * b) = make_double2(a[b][0], a[b][1]);
        __syncwarp();
        double d0 = 0, d1 = 0;
#pragma unroll
        for (int b = 0; b < QB; ++b) {
          const double2 x = *reinterpret_cast<const double2*>(xs + L.row0 + 8 * b);
          d0 = fma(x.x, a[b][0], d0);
          d1 = fma(x.y, a[b][1], d1);
        }
        double dot = d0 + d1;
        dot += __shfl_xor_sync(full_mask, dot, 1);
        dot += __shfl_xor_sync(full_mask, dot, 2);
        if (L.k4 == 0) rb[L.rq * 8 + L.n8] = dot;
        group_barrier(grp);
        const int jj = j & 7;
        const double sigma = rb[jj] + rb[8 + jj] + rb[16 + jj] + rb[24 + jj];  // x^T x
        const double tot = rb[L.n8] + rb[8 + L.n8] + rb[16 + L.n8] + rb[24 + L.n8];
        double tj, scale, beta;
        reflector_from_sums<T>(alpha, sigma, beta, tj, scale);
        // H_j on the columns col > j: w = R(j, col) + v^T a, v = scale x.
        const bool later = L.col > j;
        const double f = tj * fma(scale, tot, rjc), fs = f * scale;
        if (later)
#pragma unroll
          for (int b = 0; b < QB; ++b) {
            const double2 x = *reinterpret_cast<const double2*>(xs + L.row0 + 8 * b);
            a[b][0] = fma(-fs, x.x, a[b][0]);
            a[b][1] = fma(-fs, x.y, a[b][1]);
          }
        if (later) {
          if (writer) Rs[j * ld33 + L.col] = rjc - f;
        } else if (L.col == j) {  // the column becomes v
#pragma unroll
          for (int b = 0; b < QB; ++b) a[b][0] *= scale, a[b][1] *= scale;
          if (writer) Rs[j * ld33 + j] = beta, taus[j] = tj;
        } else if (writer) {  // col < j: a holds v_col, so the sum is G(col, j) = v_col^T v_j
          gram[L.col * ld33 + j] = scale * tot;
        }
      }
#pragma unroll
      for (int b = 0; b < QB; ++b)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          Vg[vf_index<QB>(L.rq, b, h, L.lane)] = a[b][h];
          const int row = L.row0 + 8 * b + h;
          if (L.col < jb && row < g.p) Us[row + static_cast<std::ptrdiff_t>(L.col) * g.ldu] = static_cast<T>(a[b][h]);
        }
      if (publish && L.rq == 0) {  // the writer lanes' Gram entries and taus are this warp's
        __syncwarp();
        double* gd = g.gdata + (4 * s + grp) * group_data;
        for (int idx = L.lane; idx < group_data; idx += 32)
          gd[idx] = idx < 64 ? gram[(8 * grp + idx / 8) * ld33 + 8 * grp + idx % 8] : taus[8 * grp + idx - 64];
      }
    }
    __syncthreads();
    if (8 * (grp + 1) >= jb) {
      if (publish && L.warp == 4 * grp && L.lane == 0)
        store_release<flag_scope::device_global>(g.gflags + 4 * s + grp, g.epoch);
      break;
    }
    // The later groups' columns take the group's reflectors: W = R(rows of the group, :) + V^T a ...
    if (L.cq > grp) {
      double acc[2];
      vt_times<QB>(Vg, a, L, acc);
      Gq[(L.rq * 8 + L.n8) * 32 + 8 * L.cq + 2 * L.k4] = acc[0];
      Gq[(L.rq * 8 + L.n8) * 32 + 8 * L.cq + 2 * L.k4 + 1] = acc[1];
    }
    __syncthreads();
    // ... f_i = tau_i (W_i - sum_{k<i} G(k, i) f_k), the multipliers of the reflectors in turn ...
    if (tid >= 8 * (grp + 1) && tid < 32) {
      double fv[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int r = 8 * grp + i;
        double w = Rs[r * ld33 + tid] + Gq[i * 32 + tid] + Gq[(8 + i) * 32 + tid] + Gq[(16 + i) * 32 + tid] +
                   Gq[(24 + i) * 32 + tid];
#pragma unroll
        for (int k = 0; k < i; ++k) w = fma(-gram[(8 * grp + k) * ld33 + r], fv[k], w);
        fv[i] = taus[r] * w;
        Rs[r * ld33 + tid] -= fv[i];
        ff[i * 32 + tid] = fv[i];
      }
    }
    __syncthreads();
    // ... and a -= V f.
    if (L.cq > grp) subtract_v_f<QB>(Vg, ff, a, L);
  }
  // The Gram entries between groups, G = V^T V on the tensor cores (quarters summed after).
  for (int gk = 0; gk < L.cq && 8 * L.cq < jb; ++gk) {
    double acc[2];
    vt_times<QB>(Vf + gk * S::vf_group, a, L, acc);
    Gq[(L.rq * 32 + 8 * gk + L.n8) * 32 + 8 * L.cq + 2 * L.k4] = acc[0];
    Gq[(L.rq * 32 + 8 * gk + L.n8) * 32 + 8 * L.cq + 2 * L.k4 + 1] = acc[1];
  }
  __syncthreads();
  for (int idx = tid; idx < 1024; idx += threads) {
    const int k = idx & 31, c = idx >> 5;
    if ((k >> 3) < (c >> 3) && c < jb)
      gram[k * ld33 + c] = Gq[k * 32 + c] + Gq[(32 + k) * 32 + c] + Gq[(64 + k) * 32 + c] + Gq[(96 + k) * 32 + c];
  }
  __syncthreads();

  // T by LARFT's recurrence (row l: t_l = tau_l, t_c = -tau_c sum_{l <= k < c} t_k G(k, c)), one
  // warp two rows; R's block unscaled (V went into U group by group).
  T* Tt = g.Tf + static_cast<std::ptrdiff_t>(s) * 1024;
  for (int r = 0; r < 2; ++r) {  // rows w and 31 - w: 33 steps a warp
    const int l = r == 0 ? L.warp : 31 - L.warp;
    if (l >= jb) continue;
    double tv = 0, acc = 0;
    for (int c = l; c < jb; ++c) {
      if (L.lane == c) tv = c == l ? taus[c] : -taus[c] * acc;
      const double tc = __shfl_sync(full_mask, tv, c);
      if (L.lane > c) acc = fma(tc, gram[c * ld33 + L.lane], acc);
    }
    if (L.lane < jb) Tt[l + 32 * L.lane] = static_cast<T>(L.lane >= l ? tv : 0.0);
  }
  for (int idx = tid; idx < 1024; idx += threads) {
    const int i = idx & 31, c = idx >> 5;
    if (i <= c && c < jb)
      top[32 * s + i + static_cast<std::ptrdiff_t>(c) * g.ldr] =
          static_cast<T>(scalbn(Rs[i * ld33 + c], static_cast<int>(expo[c])));
  }
  __threadfence();
  __syncthreads();
  if (tid == 0) store_release<flag_scope::device_global>(g.flags + s, g.epoch);
}

// The rank-k prologue (rank_band_steps) on columns [c0, c0 + jb) of [U; R] (own: R's array)
// or [C2; C1] (C1's): the Givens blocks, R's rows 0 .. rw - 1 += W V^T, then the top p rows to U
// (C2) and the m below them up, R's rows from the diagonal's end to p below it zero. The chain's
// next steps read these columns only in this thread block.
template <class T, int QB>
__device__ void slab_prologue(const chain_args<T>& g, const rank_band_steps<T>& pr, bool own, int c0, int jb,
                              double* sm) {
  static_assert(shape<QB>::doubles >= givens_blocks_shared, "the blocks' rows fit the chain's shared memory");
  const int tid = static_cast<int>(threadIdx.x);
  T* M = own ? g.R : g.C1;
  const int ldm = own ? g.ldr : g.ldc1;
  givens_blocks_apply_columns<T, warps, 8>(pr.plan, pr.S, M, ldm, pr.roff, c0, c0 + jb, own ? pr.cshift : -(1 << 30),
                                           sm);
  if (own && pr.rw > 0 && pr.k > 0) {  // W is upper triangular: W(i, l) = 0 for l < i
    for (int idx = tid; idx < pr.rw * jb; idx += threads) {
      const int i = idx % pr.rw, j = c0 + idx / pr.rw;
      double acc[4] = {};
      int l = i;
      for (; l + 3 < pr.k; l += 4)
#pragma unroll
        for (int u = 0; u < 4; ++u)
          acc[u] = fma(static_cast<double>(__ldg(pr.W + i + static_cast<std::ptrdiff_t>(l + u) * pr.ldw)),
                       static_cast<double>(__ldg(pr.V + j + static_cast<std::ptrdiff_t>(l + u) * pr.ldv)), acc[u]);
      for (; l < pr.k; ++l)
        acc[0] = fma(static_cast<double>(__ldg(pr.W + i + static_cast<std::ptrdiff_t>(l) * pr.ldw)),
                     static_cast<double>(__ldg(pr.V + j + static_cast<std::ptrdiff_t>(l) * pr.ldv)), acc[0]);
      T& r = M[i + static_cast<std::ptrdiff_t>(j) * ldm];
      r = static_cast<T>(static_cast<double>(r) + ((acc[0] + acc[1]) + (acc[2] + acc[3])));
    }
    __syncthreads();
  }
  T* B = own ? g.U : g.C2;
  const int ldb = own ? g.ldu : g.ldc2, p = g.p;
  for (int idx = tid; idx < p * jb; idx += threads) {
    const int i = idx % p, j = c0 + idx / p;
    B[i + static_cast<std::ptrdiff_t>(j) * ldb] = M[i + static_cast<std::ptrdiff_t>(j) * ldm];
  }
  __syncthreads();
  // Rows [p, p + lim) up by p, 128 at a time from the top: a chunk's rows are read before any of
  // them is written, and later chunks lie below what is written.
  constexpr int chunk = 128, per = chunk * 32 / threads;
  const int lim = own ? min(g.m, c0 + jb) : g.m;
  for (int a0 = 0; a0 < lim; a0 += chunk) {
    T v[per];
#pragma unroll
    for (int q = 0; q < per; ++q) {
      const int idx = tid + q * threads, i = a0 + idx % chunk, c = idx / chunk;
      if (i < lim && c < jb) v[q] = M[p + i + static_cast<std::ptrdiff_t>(c0 + c) * ldm];
    }
    __syncthreads();
#pragma unroll
    for (int q = 0; q < per; ++q) {
      const int idx = tid + q * threads, i = a0 + idx % chunk, c = idx / chunk;
      if (i < lim && c < jb) M[i + static_cast<std::ptrdiff_t>(c0 + c) * ldm] = v[q];
    }
    __syncthreads();
  }
  if (own) {  // below the slab's diagonal: zeros (rows up to p below it were the band's)
    const int zend = min(g.m + p, c0 + jb + p), nz = zend - lim;
    for (int idx = tid; idx < nz * jb; idx += threads) {
      const int i = lim + idx % nz, j = c0 + idx / nz;
      M[i + static_cast<std::ptrdiff_t>(j) * ldm] = T(0);
    }
  }
  __syncthreads();
}

// Slab i is column slab i / chains of row block i % chains: every slab waits only on slabs of
// lower index (its chain's earlier panels; the row block above it, at the same column slab), so
// that with grid-stride order and every thread block resident the lowest unfinished slab can
// always run. Row block c > 0 takes panel t at column slab s after block c - 1 has (its progress
// counter there, set after each step): R's (or C1's) rows of panel t are then final for block
// c - 1. The blocks' chains thus run as a pipeline one step apart, each with fewer rows a lane.
template <class T, int QB, bool Pro>
__global__ void __launch_bounds__(threads, 1) tpqrt_chain_kernel(chain_args<T> all, rank_band_steps<T> pro) {
  extern __shared__ __align__(16) double sm[];
  const lane_geometry L(QB);
  double a[QB][2];
  const int tid = static_cast<int>(threadIdx.x);
  for (int i = static_cast<int>(blockIdx.x); i < all.nslabs * all.chains; i += static_cast<int>(gridDim.x)) {
    const int s = i / all.chains, c = i % all.chains;
    const chain_args<T> g = all.chain(c);
    const int* above = c > 0 ? all.progress(c - 1, s) : nullptr;
    int* mine = c + 1 < all.chains ? all.progress(c, s) : nullptr;
    const bool own = s < g.npanels;  // a slab of [R; U]; else of [C1; C2], applies only
    const int c0 = 32 * (own ? s : s - g.npanels);
    const int jb = min(32, (own ? g.m : g.nrhs) - c0);
    T* top = own ? g.R + static_cast<std::ptrdiff_t>(c0) * g.ldr : g.C1 + static_cast<std::ptrdiff_t>(c0) * g.ldc1;
    const int ldtop = own ? g.ldr : g.ldc1;
    T* bot = own ? g.U + static_cast<std::ptrdiff_t>(c0) * g.ldu : g.C2 + static_cast<std::ptrdiff_t>(c0) * g.ldc2;
    const int ldbot = own ? g.ldu : g.ldc2;
    if constexpr (Pro) slab_prologue<T, QB>(g, pro, own, c0, jb, sm);
#pragma unroll
    for (int b = 0; b < QB; ++b)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = L.row0 + 8 * b + h;
        a[b][h] = row < g.p && L.col < jb
                      ? static_cast<double>(__ldcg(bot + row + static_cast<std::ptrdiff_t>(L.col) * ldbot))
                      : 0.0;
      }
    const int napply = own ? s : g.npanels;
    for (int t = 0; t < napply; ++t) {
      if (own && t == s - 1) {
        apply_panel_groups<T, QB>(g, t, top, ldtop, jb, a, sm, L, above, mine);
        break;
      }
      if (tid == 0) {
        wait_for(g.flags + t, g.epoch);
        if (above) wait_for(above, t + 1);
      }
      __syncthreads();
      // The apply just before the slab's own panel leaves the counter to the panel's (one fence
      // fewer on the chain's path).
      apply_panel<T, QB>(g, t, top, ldtop, jb, a, sm, L, own && t == s - 1 ? nullptr : mine);
    }
    if (own) {
      if (above && tid == 0) wait_for(above, s + 1);  // the diagonal block as block c - 1 left it
      factor_panel<T, QB>(g, s, top, jb, a, sm, L, s > 0 && !above);  // its first barrier publishes the wait
      if (mine && tid == 0) store_release<flag_scope::device_global>(mine, s + 1);
    } else {
#pragma unroll
      for (int b = 0; b < QB; ++b)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = L.row0 + 8 * b + h;
          if (row < g.p && L.col < jb) bot[row + static_cast<std::ptrdiff_t>(L.col) * ldbot] = static_cast<T>(a[b][h]);
        }
    }
  }
}

// Thread blocks an SM holds of the kernel for QB (0 where it cannot run here: no cooperative
// launch, too little shared memory); sms gets the device's SM count. Worked out once per device
// (the kernel's shared-memory attribute set then too): each update asks before it launches.
template <class T, int QB, bool Pro>
int blocks_per_sm(int& sms) {
  constexpr const char* fn = "tessera::kernels::gpu_tpqrt_chain";
  static per_device_value sm_count, per_sm;
  sms = sm_count.get(fn, [] {
    int dev = 0, count = 0;
    check(fn, "cudaGetDevice", cudaGetDevice(&dev));
    check(fn, "cudaDeviceGetAttribute", cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, dev));
    return count;
  });
  return per_sm.get(fn, [] {
    auto kernel = tpqrt_chain_kernel<T, QB, Pro>;
    const std::size_t smem = shape<QB>::doubles * sizeof(double);
    int dev = 0, coop = 0, optin = 0, blocks = 0;
    check(fn, "cudaGetDevice", cudaGetDevice(&dev));
    check(fn, "cudaDeviceGetAttribute", cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
    check(fn, "cudaDeviceGetAttribute",
          cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (!coop || static_cast<std::size_t>(optin) < smem) return 0;
    check(fn, "cudaFuncSetAttribute",
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    check(fn, "cudaOccupancyMaxActiveBlocksPerMultiprocessor",
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, smem));
    return blocks;
  });
}

// The register block that holds p rows (fewer rows a lane: shorter chains in every column).
template <class F>
decltype(auto) with_block(int p, F&& f) {
  if (p <= 64) return f(std::integral_constant<int, 2>{});
  if (p <= 128) return f(std::integral_constant<int, 4>{});
  if (p <= 256) return f(std::integral_constant<int, 8>{});
  return f(std::integral_constant<int, 16>{});
}

template <class T, int QB, bool Pro>
bool launch_chain(const chain_args<T>& g, const rank_band_steps<T>* pro, int max_grid, bool clear,
                  cudaStream_t stream) {
  constexpr const char* fn = "tessera::kernels::gpu_tpqrt_chain";
  auto kernel = tpqrt_chain_kernel<T, QB, Pro>;
  const std::size_t smem = shape<QB>::doubles * sizeof(double);
  int sms = 0;
  const int per_sm = blocks_per_sm<T, QB, Pro>(sms);
  if (per_sm < 1) return false;
  int grid = std::min(g.nslabs * g.chains, sms * per_sm);
  if (max_grid > 0) grid = std::min(grid, max_grid);
  const std::size_t cp = std::size_t(g.chains) * g.npanels;
  if (clear)  // panel and group flags
    check(fn, "cudaMemsetAsync (flags)", cudaMemsetAsync(g.flags, 0, sizeof(int) * 5 * cp, stream));
  if (g.chains > 1)  // the progress counters count from 0 in every call
    check(fn, "cudaMemsetAsync (progress)",
          cudaMemsetAsync(g.prog, 0, sizeof(int) * std::size_t(g.chains) * g.nslabs, stream));
  chain_args<T> arg = g;
  rank_band_steps<T> parg = pro ? *pro : rank_band_steps<T>{};
  void* args[] = {&arg, &parg};
  check(fn, "cudaLaunchCooperativeKernel",
        cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(kernel), dim3(static_cast<unsigned>(grid)),
                                    dim3(threads), args, smem, stream));
  // And the counters and the groups' data cleared after: a later call's flags may lie there, and
  // counts (up to the panels' number) or doubles would read as flags already set.
  char* from = reinterpret_cast<char*>(g.prog);
  check(fn, "cudaMemsetAsync (progress, group data)",
        cudaMemsetAsync(from, 0, reinterpret_cast<char*>(g.gdata + cp * 4 * group_data) - from, stream));
  return true;
}

}  // namespace
}  // namespace tessera::kernels::detail

namespace tessera::kernels {

namespace {
// The workspace: panel flags and group flags (kept from call to call: they carry epochs), then
// the progress counters and the groups' data (the call's own: 0 again when it is done, on the
// stream, so that a later call's flags may lie there).
struct chain_workspace {
  std::size_t panels, flags, gflags, prog, gdata, bytes;  // offsets in ints (gdata: in doubles)
  chain_workspace(int m, int nrhs, int chains) {
    panels = std::size_t(m + 31) / 32;
    const std::size_t slabs = panels + std::size_t(nrhs + 31) / 32, c = std::size_t(chains);
    flags = 0;
    gflags = c * panels;
    prog = gflags + 4 * c * panels;
    const std::size_t ints = prog + (chains > 1 ? c * slabs : 0) + 1;
    gdata = (ints * sizeof(int) + sizeof(double) - 1) / sizeof(double);
    bytes = (gdata + c * panels * 4 * detail::group_data) * sizeof(double);
  }
};
}  // namespace

std::size_t gpu_tpqrt_chain_workspace(int m, int nrhs, int chains) { return chain_workspace(m, nrhs, chains).bytes; }

template <class T>
bool gpu_tpqrt_chain(int m, int p, int nrhs, T* R, int ldr, T* U, int ldu, T* C1, int ldc1, T* C2, int ldc2,
                     T* Tf, void* work, std::size_t lwork, cudaStream_t stream, int max_grid, int epoch,
                     int chains, const rank_band_steps<T>* pro) {
  constexpr const char* fn = "tessera::kernels::gpu_tpqrt_chain";
  using detail::require_ge;
  require_ge(fn, "m", m, "0", 0);
  require_ge(fn, "p", p, "0", 0);
  require_ge(fn, "nrhs", nrhs, "0", 0);
  require_ge(fn, "epoch", epoch, "0", 0);
  require_ge(fn, "chains", chains, "1", 1);
  if (m == 0 || p == 0) return false;
  chains = std::min(chains, p);
  const int rows = (p + chains - 1) / chains;
  chains = (p + rows - 1) / rows;  // every row block has rows (p = 5, chains = 4: blocks of 2, 2, 1)
  if (rows > gpu_tpqrt_chain_max_rows) return false;
  require_ge(fn, "ldr", ldr, "m", m);
  require_ge(fn, "ldu", ldu, "p", p);
  detail::require_ptr(fn, "R", R);
  detail::require_ptr(fn, "U", U);
  detail::require_ptr(fn, "T", Tf);
  detail::require_ptr(fn, "work", work);
  const int extra = pro ? p : 0;  // the prologue's rows over R and C1
  if (pro) {
    detail::require_le(fn, "chains", chains, "1 (with a prologue)", 1);
    require_ge(fn, "ldr", ldr, "m + p (with a prologue)", m + p);
    detail::require_le(fn, "prologue plan.bw()", pro->plan.bw(), "gpu_givens_blocks_apply_max_bw",
                       gpu_givens_blocks_apply_max_bw);
    if (pro->plan.blocks() > 0) detail::require_ptr(fn, "prologue S", pro->S);
    if (pro->rw > 0 && pro->k > 0) {
      detail::require_ptr(fn, "prologue W", pro->W);
      detail::require_ptr(fn, "prologue V", pro->V);
      require_ge(fn, "prologue ldw", pro->ldw, "prologue rw", pro->rw);
      require_ge(fn, "prologue ldv", pro->ldv, "m", m);
    }
  }
  if (nrhs > 0) {
    require_ge(fn, "ldc1", ldc1, pro ? "m + p (with a prologue)" : "m", m + extra);
    require_ge(fn, "ldc2", ldc2, "p", p);
    detail::require_ptr(fn, "C1", C1);
    detail::require_ptr(fn, "C2", C2);
  }
  const std::size_t need = gpu_tpqrt_chain_workspace(m, nrhs, chains);
  if (lwork < need)
    detail::bad_argument(fn, "lwork", static_cast<long long>(lwork), ">=", "gpu_tpqrt_chain_workspace(m, nrhs, chains)",
                         static_cast<long long>(need));
  const int npanels = (m + 31) / 32;
  const chain_workspace ws(m, nrhs, chains);
  int* iw = static_cast<int*>(work);
  const detail::chain_args<T> g{m,       p,
                                nrhs,    npanels,
                                npanels + (nrhs + 31) / 32, chains,
                                rows,    R,
                                ldr,     U,
                                ldu,     C1,
                                ldc1,    C2,
                                ldc2,    Tf,
                                iw + ws.flags, iw + ws.gflags,
                                iw + ws.prog, static_cast<double*>(work) + ws.gdata,
                                epoch > 0 ? epoch : 1};
  return detail::with_block(rows, [&](auto qb) {
    constexpr int QB = decltype(qb)::value;
    return pro ? detail::launch_chain<T, QB, true>(g, pro, max_grid, epoch == 0, stream)
               : detail::launch_chain<T, QB, false>(g, pro, max_grid, epoch == 0, stream);
  });
}

template <class T>
bool gpu_tpqrt_chain_runs(int p, int chains) {
  if (p < 1 || chains < 1) return false;
  const int rows = (p + std::min(chains, p) - 1) / std::min(chains, p);
  if (rows > gpu_tpqrt_chain_max_rows) return false;
  int sms = 0;
  return detail::with_block(rows,
                            [&](auto qb) { return detail::blocks_per_sm<T, decltype(qb)::value, false>(sms) >= 1; });
}

template bool gpu_tpqrt_chain_runs<float>(int, int);
template bool gpu_tpqrt_chain_runs<double>(int, int);
template bool gpu_tpqrt_chain<float>(int, int, int, float*, int, float*, int, float*, int, float*, int, float*,
                                     void*, std::size_t, cudaStream_t, int, int, int,
                                     const rank_band_steps<float>*);
template bool gpu_tpqrt_chain<double>(int, int, int, double*, int, double*, int, double*, int, double*, int,
                                      double*, void*, std::size_t, cudaStream_t, int, int, int,
                                      const rank_band_steps<double>*);

}  // namespace tessera::kernels
