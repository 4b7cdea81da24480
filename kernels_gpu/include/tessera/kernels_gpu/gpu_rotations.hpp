#pragma once
// The sweep of Givens rotations that makes an upper Hessenberg matrix triangular, and its
// application to other matrices, on the GPU (tessera/kernels_cpu/rotations.hpp has the
// conventions and the CPU forms). Enqueued on `stream`.
#include <cuda_runtime.h>

#include <tessera/kernels_cpu/rotations.hpp>

namespace tessera::kernels {

// hessenberg_rotations with a warp per 32 columns, each lane streaming down its column; the
// warps hand the rotations on through cs itself. `sync`: 1 device int, which the call clears on
// `stream` (so calls sharing it go on one stream).
template <class T>
void gpu_hessenberg_rotations(int rows, int cols, T* H, int ldh, T* cs, int* sync, cudaStream_t stream);

// rotations_left: a thread per column of C.
template <class T>
void gpu_rotations_left(int k, int ncols, const T* cs, T* C, int ldc, cudaStream_t stream);

// rotations_right: a thread per row of C.
template <class T>
void gpu_rotations_right(int nrows, int k, const T* cs, T* C, int ldc, cudaStream_t stream);

// sweep_up_left, sweep_up_right: a thread per column, per row of C.
template <class T>
void gpu_sweep_up_left(int k, int ncols, const T* cs, T* C, int ldc, cudaStream_t stream);
template <class T>
void gpu_sweep_up_right(int nrows, int k, const T* cs, T* C, int ldc, cudaStream_t stream);

}  // namespace tessera::kernels
