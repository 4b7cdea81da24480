#pragma once
// A block reflector's Q^T applied from the left on the GPU: C := (I - V T V^T)^T C with V unit
// lower trapezoidal (m x k, read below its diagonal) and T upper triangular (k x k), as
// gpu_geqrt makes them (LAPACK LARFB, side left, trans, forward, columnwise). Three cuBLAS calls:
// W = V^T C, W = T^T W, C -= V W, the first and last GEMMs with inner dimensions m and k: the
// update of a blocked QR, at GEMM speed for k of a few hundred.
#include <cuda_runtime.h>

#include <tessera/kernels_gpu/common.hpp>

namespace tessera::kernels {

// Elements of work gpu_larfb needs: m * k (V with its unit diagonal made explicit) + k * n (W),
// and another k * n for k >= 256 (T W out of place).
std::size_t gpu_larfb_workspace_size(int m, int n, int k);

// C (m x n, ldc) := Q^T C; V: m x k (ldv >= m), k <= m; Tf: k x k upper triangular (ldt >= k).
// op = CUBLAS_OP_N: C := Q C instead (W = T W in the middle).
template <class T>
void gpu_larfb(cublasOperation_t op, int m, int n, int k, const T* V, int ldv, const T* Tf, int ldt, T* C,
               int ldc, T* work, std::size_t lwork, cublasHandle_t handle);
template <class T>
void gpu_larfb(int m, int n, int k, const T* V, int ldv, const T* Tf, int ldt, T* C, int ldc,
               T* work, std::size_t lwork, cublasHandle_t handle);

// The same C := Q^T C in one kernel on `stream`, for k <= 32 and V explicit: its unit diagonal
// and the zeros above it stored (as gpu_split_panel leaves it), T's lower part not read. For the
// QR updates' short panels, where the three calls cost more than their work; each thread block
// takes 16 columns of C and all its rows, so m should be a few hundred at most.
template <class T>
void gpu_larfb_fused(int m, int n, int k, const T* V, int ldv, const T* Tf, int ldt, T* C, int ldc,
                     cudaStream_t stream);

// A band panel's block reflector applied in one kernel on `stream`: side 'L', C (h x n) := Q^T C;
// side 'R', C (n x h) := C Q; Q = I - V T V^T with V explicit (h x k, its unit diagonal and the
// zeros above stored) and T upper triangular (k x k, lower part not read). For the QR updates'
// band panels (h <= 96 rows, k <= 64 reflectors), where three cuBLAS calls a side cost more host
// time than the GPU spends on them. A thread block takes 16 of C's columns (side L) or rows (R)
// at a time; max_blocks > 0 caps the grid (each block then takes several), which leaves room on
// the SMs for other streams' kernels. Returns false, enqueueing nothing, where the device cannot
// give a block the kernel's shared memory (about 105 KB in double: GPUs of 99 KB), so that the
// caller takes another path.
inline constexpr int gpu_larfb_small_max_rows = 96;
inline constexpr int gpu_larfb_small_max_k = 64;
template <class T>
bool gpu_larfb_small(char side, int h, int n, int k, const T* V, int ldv, const T* Tf, int ldt, T* C, int ldc,
                     cudaStream_t stream, int max_blocks = 0);

}  // namespace tessera::kernels
