#pragma once
// The GPU forms of the Givens sweeps of QR updating (tessera/kernels_cpu/givens.hpp has the plan,
// the conventions and the CPU forms): the sweeps of a strip as a wavefront, and the blocks of
// rotations that R, Q^T b and Q are then updated with by GEMMs. Enqueued on `stream`.
#include <cuda_runtime.h>

#include <tessera/kernels_cpu/givens.hpp>
#include <tessera/kernels_gpu/common.hpp>

namespace tessera::kernels {

// givens_generate on the GPU: at step t every sweep j whose shifted index u = umax_all - t + j is
// in range makes its rotation (their rows are two apart, so disjoint) and applies it to the
// later columns; umax_all + p steps. For p <= 31 one warp as a systolic array (lane j is sweep
// j, its two rows in registers, no barrier); wider strips on one thread block, three barriers a
// step. Long sweeps (at least 64 and 8 p rows, p <= 64) go one sweep at a time instead, each in
// parallel over its rows by scans (the same rotations up to rounding).
template <class T>
void gpu_givens_generate(const givens_plan& plan, T* X, int ldx, T* cs, cudaStream_t stream);

// givens_blocks on the GPU: one thread block per block of rotations, one thread per column.
template <class T>
void gpu_givens_blocks(const givens_plan& plan, const T* cs, T* S, cudaStream_t stream);

}  // namespace tessera::kernels
