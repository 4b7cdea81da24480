// The [R; U] Givens wavefront kernel measured in 2026-11-28-tp-rotations-h200.md (not kept in the library), as
// it stood in calls 6-7, and the program that timed it per thread block (%globaltimer). Built with
// nvcc -O3 -std=c++20 -arch=sm_90 against kernels_gpu/src (check.hpp, rotation.cuh) of main at 4b65353,
// -DTPROT_ROTS_AHEAD=3 -DTPROT_BATCH=4 [-DTPROT_NO_COPY | -DTPROT_NO_FENCE | -DTPROT_NO_SHFL].

#define TPROT_PROBE  // the per-block timestamps
// [R; U] made triangular by Givens rotations on the GPU (gpu_tp_rotations,
// tessera/kernels_gpu/gpu_rotations.hpp), as a two-dimensional systolic array. Rotation (j, i)
// zeroes U(i, j) into R(j, j) and mixes R's row j with U's row i in every later column. A thread
// block owns nc consecutive columns of [R C1; U C2], a lane one row i of U (its entries of the
// block's columns in registers), and R's row j passes down the lanes, one lane a step: at step s,
// lane i works on row j = s - i. Where j is one of the block's own columns the lane makes the
// rotation from R(j, j) as it arrives and U(i, j); blocks to the right copy it from global memory
// a few steps ahead, once the block that made it has published its progress (every few steps).
// The chain is then m + p rotations long, plus a handoff a block, where Householder panels are m
// columns of reductions each (the TPQRT chain: about 0.9 us a column on an H200).
#include <cuda_pipeline.h>

#include <algorithm>

#include <tessera/kernels_gpu/gpu_rotations.hpp>

#include "check.hpp"
#include "rotation.cuh"

namespace tessera::kernels {
namespace {

constexpr int max_warps = gpu_tp_rotations_max_rows / 32;
// A lane holds a row of U and R's row j passing by: 2 x 16 entries, 64 registers, in double; 32
// columns in single (fewer blocks for the chain to cross).
template <class T>
constexpr int block_cols = sizeof(T) == 8 ? 16 : 32;
#ifndef TPROT_BATCH  // PROBE
#define TPROT_BATCH 4
#define TPROT_ROTS_AHEAD 2
#endif
constexpr int rows_ahead = 16;  // R's rows asked of L2 ahead (the block's own data: as far as it likes)
constexpr int rots_ahead = TPROT_ROTS_AHEAD;   // steps whose rotations are copied ahead
constexpr int batch = TPROT_BATCH;        // steps between a block's published progress, and its waits

// A rotation's slot: 16 bytes (c, s, and in single two unused), copied from L2 in one piece
// (cp.async.cg: L1 is not coherent).
template <class T>
struct alignas(16) slot {
  T v[16 / sizeof(T)];
};

template <class T>
struct tp_args {
  int m, p, nrhs;
  T* R;
  int ldr;
  T* U;
  int ldu;
  T* C1;
  int ldc1;
  T* C2;
  int ldc2;
  slot<T>* cs;  // rotation (j, i) at cs[(j + i) ldg + i]: a step's reads are contiguous
  int ldg;      // 32 x the warps
  int* ticket;
  int* progress;  // block b's steps done, published every `batch` steps (zero at launch)
#ifdef TPROT_PROBE
  long long* times;
#endif
};
#ifdef TPROT_PROBE
__device__ long long now() { long long t; asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t)); return t; }
#define STAMP(q) if (tid == 0) a.times[b * 4 + (q)] = now()
#else
#define STAMP(q)
#endif

template <class T>
__global__ void __launch_bounds__(gpu_tp_rotations_max_rows) tp_rotations_kernel(tp_args<T> a) {
  constexpr int nc = block_cols<T>;
  __shared__ int ticket;
  __shared__ T rows_in[rots_ahead + 1][nc];  // R's row j for lane 0 of warp 0
  __shared__ slot<T> rot_in[rots_ahead + 1][gpu_tp_rotations_max_rows];
  __shared__ T passed[2][max_warps][nc];     // a warp's last lane's row, for the next warp
  __shared__ T out_row[2][nc];               // R's final row j
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  if (tid == 0) ticket = atomicAdd(a.ticket, 1);
  // Zeros where no row has been copied yet: lanes before their rows carry these along, and
  // (1, 0) times them must stay finite.
  for (int q = static_cast<int>(threadIdx.x); q < (rots_ahead + 1) * nc; q += static_cast<int>(blockDim.x))
    (&rows_in[0][0])[q] = T(0);
  for (int q = static_cast<int>(threadIdx.x); q < 2 * max_warps * nc; q += static_cast<int>(blockDim.x))
    (&passed[0][0][0])[q] = T(0);
  __syncthreads();
  const int b = ticket, c0 = b * nc, ncols = a.m + a.nrhs;
  const int i = tid, jend = min(c0 + nc, a.m), steps = jend + a.p - 1;
  const bool row = i < a.p;
  // Column c of [R C1] / [U C2].
  auto top = [&](int j, int c) {
    return c < a.m ? a.R + j + std::ptrdiff_t(c) * a.ldr : a.C1 + j + std::ptrdiff_t(c - a.m) * a.ldc1;
  };
  auto bottom = [&](int c) {
    return c < a.m ? a.U + i + std::ptrdiff_t(c) * a.ldu : a.C2 + i + std::ptrdiff_t(c - a.m) * a.ldc2;
  };
  // Steps up to `last` may read rotations of blocks to the left once the block that makes row
  // min(last, c0 - 1)'s has done them (it has taken every earlier block's up to that step).
  auto wait_for = [&](int last) {
    const int j = min(last, min(c0, a.m) - 1);
    if (j < 0) return;
    const int q = j / nc, need = min(last + 1, min((q + 1) * nc, a.m) + a.p - 1);
    const volatile int* f = a.progress + q;
    while (*f < need) {
    }
    __threadfence();
  };
  T u[nc], r[nc];
#pragma unroll
  for (int k = 0; k < nc; ++k) {
    u[k] = row && c0 + k < ncols ? *bottom(c0 + k) : T(0);
    r[k] = T(0);
  }
  // Step s's copies, rots_ahead steps ahead: R(s, c0 + k) by lane k of warp 0 (asked of L2 further
  // ahead, as R's rows come from DRAM), and each lane's rotation (s - i, i) where a block to the left
  // made it.
  auto copy_ahead = [&](int s) {
#ifdef TPROT_NO_COPY
    __pipeline_commit();
    return;
#endif
    const int j = s - i;
    if (warp == 0 && lane < nc && c0 + lane < ncols) {
      if (s < jend && c0 + lane >= s)
        __pipeline_memcpy_async(&rows_in[s % (rots_ahead + 1)][lane], top(s, c0 + lane), sizeof(T));
      const int f = s + rows_ahead;
      if (f < jend && c0 + lane >= f) asm volatile("prefetch.global.L2 [%0];" ::"l"(top(f, c0 + lane)));
    }
    if (row && j >= 0 && j < c0 && j < jend)
      __pipeline_memcpy_async(&rot_in[s % (rots_ahead + 1)][tid], a.cs + std::ptrdiff_t(s) * a.ldg + i, sizeof(slot<T>));
    __pipeline_commit();
  };
  if (warp == 0 && lane < nc && c0 + lane < ncols)
    for (int f = 0; f < rows_ahead; ++f)
      if (f < jend && c0 + lane >= f) asm volatile("prefetch.global.L2 [%0];" ::"l"(top(f, c0 + lane)));
  if (tid == 0) wait_for(rots_ahead + batch - 1);
  __syncthreads();
  for (int s = 0; s < rots_ahead; ++s) copy_ahead(s);
  const bool last = i == a.p - 1;
  STAMP(0);
  for (int s = 0; s < steps; ++s) {
    if (s == c0) STAMP(1);
    if (s == c0 + 16) STAMP(2);
    __pipeline_wait_prior(rots_ahead - 1);
    __syncwarp();
    const int j = s - i;
    // R's row j as the lane above left it (warp 0's lane 0: from R itself).
#pragma unroll
    for (int k = 0; k < nc; ++k) {
#ifndef TPROT_NO_SHFL
      r[k] = __shfl_up_sync(0xffffffffu, r[k], 1);
#endif
    }
    if (lane == 0) {
#pragma unroll
      for (int k = 0; k < nc; ++k) r[k] = warp == 0 ? rows_in[s % (rots_ahead + 1)][k] : passed[(s + 1) % 2][warp - 1][k];
    }
    const bool active = row && j >= 0 && j < jend;
    // (c, s) = (1, 0) leaves a lane's entries as they are (lanes before or past their rows).
    T c = T(1), sn = T(0);
    const bool make = active && j >= c0;
    if (active && j < c0) {
      const slot<T> g = rot_in[s % (rots_ahead + 1)][tid];
      c = g.v[0];
      sn = g.v[1];
    }
    copy_ahead(s + rots_ahead);
    if (s - 32 * warp < c0) {
      // Every lane of the warp before the block's columns: each takes its rotation on all of them.
#pragma unroll
      for (int k = 0; k < nc; ++k) {
        const T x = r[k], y = u[k];
        r[k] = fma(c, x, sn * y);
        u[k] = fma(c, y, -(sn * x));
      }
    } else {
      if (make) {
        T x = T(0), y = T(0), rr;
#pragma unroll
        for (int k = 0; k < nc; ++k)
          if (c0 + k == j) x = r[k], y = u[k];
        detail::make_rotation(x, y, c, sn, rr);
        slot<T> h{};
        h.v[0] = c;
        h.v[1] = sn;
        a.cs[std::ptrdiff_t(s) * a.ldg + i] = h;
      }
      // Columns from j on take the rotation (column j: r, as make_rotation forms it; U's entry
      // exactly zero), the ones before it are left alone; no branch a column.
#pragma unroll
      for (int k = 0; k < nc; ++k) {
        const bool on = c0 + k >= j;
        const T ck = on ? c : T(1), sk = on ? sn : T(0), x = r[k], y = u[k];
        r[k] = fma(ck, x, sk * y);
        const T un = fma(ck, y, -(sk * x));
        u[k] = make && c0 + k == j ? T(0) : un;
      }
    }
    if (lane == 31 && warp + 1 < max_warps) {
#pragma unroll
      for (int k = 0; k < nc; ++k) passed[s % 2][warp][k] = r[k];
    }
    if (active && last) {  // R's row j is final: stored by nc lanes after the barrier
#pragma unroll
      for (int k = 0; k < nc; ++k) out_row[s % 2][k] = r[k];
    }
    __syncthreads();
    const int jo = s - (a.p - 1);
    if (warp == (a.p - 1) / 32 && lane < nc && jo >= 0 && jo < jend && c0 + lane >= jo && c0 + lane < ncols)
      *top(jo, c0 + lane) = out_row[s % 2][lane];
    // Every `batch` steps: this block's progress out (its rotations, stored before the barrier,
    // first), then the wait that lets the next `batch` steps copy theirs.
    if ((s + 1) % batch == 0 || s + 1 == steps) {
      if (tid == 0) {
#ifndef TPROT_NO_FENCE
        __threadfence();
#endif
        *static_cast<volatile int*>(a.progress + b) = s + 1;
        wait_for(s + rots_ahead + batch);
      }
      __syncthreads();
    }
  }
  STAMP(3);
  __pipeline_wait_prior(0);
  if (row) {
#pragma unroll
    for (int k = 0; k < nc; ++k)
      if (c0 + k < ncols) *bottom(c0 + k) = u[k];
  }
}

template <class T>
int blocks_of(int m, int nrhs) {
  return (m + nrhs + block_cols<T> - 1) / block_cols<T>;
}

}  // namespace

std::size_t gpu_tp_rotations_workspace(int m, int p, int nrhs) {
  if (m <= 0 || p <= 0) return 0;
  const int rows = std::min(p, gpu_tp_rotations_max_rows), ldg = (rows + 31) / 32 * 32;
  const std::size_t ints = 1 + std::size_t(std::max(blocks_of<float>(m, nrhs), blocks_of<double>(m, nrhs)));
  return (ints * sizeof(int) + 255) / 256 * 256 + std::size_t(m + rows - 1) * ldg * 16;
}

template <class T>
void gpu_tp_rotations(int m, int p, int nrhs, T* R, int ldr, T* U, int ldu, T* C1, int ldc1, T* C2, int ldc2,
                      void* work, std::size_t lwork, cudaStream_t stream) {
  constexpr const char* fn = "tessera::kernels::gpu_tp_rotations";
  using detail::require_ge;
  require_ge(fn, "m", m, "0", 0);
  require_ge(fn, "p", p, "0", 0);
  require_ge(fn, "nrhs", nrhs, "0", 0);
  if (m == 0 || p == 0) return;
  require_ge(fn, "ldr", ldr, "m", m);
  require_ge(fn, "ldu", ldu, "p", p);
  detail::require_ptr(fn, "R", R);
  detail::require_ptr(fn, "U", U);
  if (nrhs > 0) {
    require_ge(fn, "ldc1", ldc1, "m", m);
    require_ge(fn, "ldc2", ldc2, "p", p);
    detail::require_ptr(fn, "C1", C1);
    detail::require_ptr(fn, "C2", C2);
  }
  const std::size_t need = gpu_tp_rotations_workspace(m, p, nrhs);
  if (lwork < need)
    detail::bad_argument(fn, "lwork", static_cast<long long>(lwork), ">=", "gpu_tp_rotations_workspace(m, p, nrhs)",
                         static_cast<long long>(need));
  detail::require_ptr(fn, "work", work);
  const int blocks = blocks_of<T>(m, nrhs);
  int* ticket = static_cast<int*>(work);
  const std::size_t ints = (std::size_t(1 + blocks) * sizeof(int) + 255) / 256 * 256;
  auto* cs = reinterpret_cast<slot<T>*>(static_cast<unsigned char*>(work) + ints);
  // More rows than a block's lanes: [R; U_0], then [R'; U_1], ... (the same rotations in turn).
  for (int r0 = 0; r0 < p; r0 += gpu_tp_rotations_max_rows) {
    const int rows = std::min(p - r0, gpu_tp_rotations_max_rows), ldg = (rows + 31) / 32 * 32;
    detail::check(fn, "cudaMemsetAsync", cudaMemsetAsync(ticket, 0, std::size_t(1 + blocks) * sizeof(int), stream));
    const tp_args<T> args{m,  rows, nrhs, R,  ldr, U + r0, ldu, C1, ldc1, nrhs > 0 ? C2 + r0 : C2, ldc2,
                          cs, ldg,  ticket, ticket + 1};
    tp_rotations_kernel<T><<<static_cast<unsigned>(blocks), static_cast<unsigned>(ldg), 0, stream>>>(args);
    detail::check(fn, "tp_rotations_kernel launch", cudaGetLastError());
  }
}

template void gpu_tp_rotations<float>(int, int, int, float*, int, float*, int, float*, int, float*, int, void*,
                                      std::size_t, cudaStream_t);
template void gpu_tp_rotations<double>(int, int, int, double*, int, double*, int, double*, int, double*, int, void*,
                                       std::size_t, cudaStream_t);

}  // namespace tessera::kernels

// ---- the timing program (it #included the kernel above) ----
// Per-block timestamps of tp_rotations_kernel: start, step c0 (its diagonal), step c0 + 16, end.
#include <cstdio>
#include <vector>
#include <random>
#include <algorithm>
using namespace tessera::kernels;
template <class T>
void run(int m, int p) {
  std::mt19937_64 g(7);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> R(size_t(m) * m), U(size_t(p) * m);
  for (int j = 0; j < m; ++j) for (int i = 0; i < m; ++i) R[i + size_t(j) * m] = i <= j ? T(u(g) + (i == j ? 2 : 0)) : T(0);
  for (auto& x : U) x = T(u(g));
  T *dR, *dU; cudaMalloc(&dR, R.size() * sizeof(T)); cudaMalloc(&dU, U.size() * sizeof(T));
  const int blocks = blocks_of<T>(m, 0), ldg = (p + 31) / 32 * 32;
  size_t lw = gpu_tp_rotations_workspace(m, p, 0);
  unsigned char* w; cudaMalloc(&w, lw);
  long long* times; cudaMalloc(&times, blocks * 4 * sizeof(long long));
  int* ticket = (int*)w;
  auto* cs = reinterpret_cast<slot<T>*>(w + (size_t(1 + blocks) * 4 + 255) / 256 * 256);
  std::vector<long long> h(blocks * 4);
  for (int rep = 0; rep < 3; ++rep) {
    cudaMemcpy(dR, R.data(), R.size() * sizeof(T), cudaMemcpyHostToDevice);
    cudaMemcpy(dU, U.data(), U.size() * sizeof(T), cudaMemcpyHostToDevice);
    cudaMemset(ticket, 0, (1 + blocks) * 4);
    tp_args<T> args{m, p, 0, dR, m, dU, p, nullptr, 1, nullptr, 1, cs, ldg, ticket, ticket + 1, times};
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    cudaEventRecord(e0);
    tp_rotations_kernel<T><<<blocks, ldg>>>(args);
    cudaEventRecord(e1); cudaEventSynchronize(e1);
    float ms; cudaEventElapsedTime(&ms, e0, e1);
    cudaMemcpy(h.data(), times, h.size() * 8, cudaMemcpyDeviceToHost);
    long long t0 = h[0];
    for (int b2 = 0; b2 < blocks; ++b2) t0 = std::min(t0, h[b2 * 4]);
    // crossing: T_b(c0) - T_{b-1}(c0_{b-1}); diagonal steps: (T(c0+16) - T(c0)) / 16
    std::vector<double> cross, diag;
    for (int b2 = 1; b2 < blocks - 1; ++b2) { cross.push_back((h[b2 * 4 + 1] - h[(b2 - 1) * 4 + 1]) / 1e3); diag.push_back((h[b2 * 4 + 2] - h[b2 * 4 + 1]) / 16e3); }
    std::sort(cross.begin(), cross.end()); std::sort(diag.begin(), diag.end());
    printf("%s m=%d p=%d%s: kernel %.3f ms; last block start %.1f us, reaches c0 %.1f us, ends %.1f us; crossing median %.2f us (p10 %.2f p90 %.2f); diag step median %.3f us; block 0 %.1f us\n",
           sizeof(T) == 8 ? "d" : "s", m, p, rep ? "" : " (first)", ms, (h[(blocks - 1) * 4] - t0) / 1e3, (h[(blocks - 1) * 4 + 1] - t0) / 1e3,
           (h[(blocks - 1) * 4 + 3] - t0) / 1e3, cross[cross.size() / 2], cross[cross.size() / 10], cross[cross.size() * 9 / 10], diag[diag.size() / 2], (h[3] - h[0]) / 1e3);
  }
}
int main() { run<double>(3000, 2); run<double>(3000, 200); run<float>(3000, 200); run<double>(3000, 500); }
