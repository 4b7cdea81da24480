#pragma once
// The GPU forms of the Givens sweeps of QR updating (tessera/kernels_cpu/givens.hpp has the plan,
// the conventions and the CPU forms): the sweeps of a strip as a wavefront, and the blocks of
// rotations that R, Q^T b and Q are then updated with by GEMMs. Enqueued on `stream`.
#include <cuda_runtime.h>

#include <cstddef>

#include <tessera/kernels_cpu/givens.hpp>
#include <tessera/kernels_gpu/common.hpp>

namespace tessera::kernels {

// givens_generate on the GPU: at step t every sweep j whose shifted index u = umax_all - t + j is
// in range makes its rotation (their rows are two apart, so disjoint) and applies it to the
// later columns; umax_all + p steps. For p <= 31 one warp as a systolic array (lane j is sweep
// j, its two rows in registers, no barrier); wider strips on one thread block, three barriers a
// step. Long sweeps (at least 64 and 8 p rows, p <= 64) go one sweep at a time instead, each in
// parallel over its rows by scans (the same rotations up to rounding), a thread block a column,
// sweep j + 1 made while the later columns take sweep j. `sync`: at least gpu_givens_sync_count
// device ints, which the call clears on `stream` (so calls sharing them go on one stream).
template <class T>
void gpu_givens_generate(const givens_plan& plan, T* X, int ldx, T* cs, int* sync, std::size_t nsync,
                         cudaStream_t stream);

// The device ints gpu_givens_generate needs for `plan`'s sweeps: a ticket and a flag a sweep.
inline std::size_t gpu_givens_sync_count(const givens_plan& plan) { return std::size_t(plan.p) + 1; }

// givens_blocks on the GPU: one thread block per block of rotations, one thread per column.
template <class T>
void gpu_givens_blocks(const givens_plan& plan, const T* cs, T* S, cudaStream_t stream);

// The widest block gpu_givens_apply takes (the updates' blocks have w + p <= 192, w <= 128).
inline constexpr int gpu_givens_apply_max_bw = 192, gpu_givens_apply_max_w = 128;

// A plan's rotations cs (gpu_givens_generate's) applied from the left to the columns of M (ldm)
// block by block, in the blocks' order t = 0, 1, ..., by one kernel instead of a GEMM and a copy
// a block: with g = roff + row0(t), M's rows [g, g + rows(t)) in its columns
// [max(jbeg, g + cshift), jend) (R's columns left of that are zero in those rows and are not
// touched) take block t's rotations. The same result as gpu_givens_blocks' blocks applied in
// turn (S_t^T times those rows), up to rounding; arithmetic in double.
// gpu_givens_apply_fits(plan): bw and w within the limits above and the shared memory it needs
// (the block's rows of 32 columns and its rotations) within the device's.
template <class T>
bool gpu_givens_apply_fits(const givens_plan& plan);
template <class T>
void gpu_givens_apply(const givens_plan& plan, const T* cs, T* M, int ldm, int roff, int jbeg, int jend, int cshift,
                      cudaStream_t stream);

// The widest block gpu_givens_blocks_apply takes (the updates' blocks beyond gpu_givens_apply's
// groups of 32 sweeps have w + p <= 128).
inline constexpr int gpu_givens_blocks_apply_max_bw = 128;

// The blocks S_t (gpu_givens_blocks') applied from the left to the columns of M (ldm) in the
// blocks' order by one kernel instead of a GEMM and a copy a block: with g = roff + row0(t), M's
// rows [g, g + rows(t)) in its columns [max(jbeg, g + cshift), jend) become S_t^T times those rows
// (the columns left of that are not touched). Arithmetic in double on the tensor cores (sm_80 and
// later). gpu_givens_blocks_apply_fits(plan): bw within the limit above.
template <class T>
bool gpu_givens_blocks_apply_fits(const givens_plan& plan);
template <class T>
void gpu_givens_blocks_apply(const givens_plan& plan, const T* S, T* M, int ldm, int roff, int jbeg, int jend,
                             int cshift, cudaStream_t stream);

namespace detail {
// The shared memory a block of the Givens kernels may take: the device's opt-in limit, or less
// where a test has set one (0: none), so that the forms for GPUs with less than the H100's (the
// A100's 163 KB, consumer GPUs' 99 KB) are tested on any GPU. Bytes.
void gpu_givens_limit_shared_memory(std::size_t bytes);
std::size_t gpu_givens_shared_memory(const char* kernel);
}  // namespace detail

}  // namespace tessera::kernels
