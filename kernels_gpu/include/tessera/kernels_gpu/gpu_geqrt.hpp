#pragma once
// The QR of a tall panel on the GPU, in LAPACK GEQRT form: A = Q R with Q = I - V T V^T, V unit
// lower trapezoidal (stored below R's diagonal) and T upper triangular (n x n, full). A panel of
// a blocked QR, which the GPU factors while it updates the rest of the matrix. The signs of R's
// diagonal (and so V) may differ from LAPACK's: both are QR factorizations of A.
//
// Blocks of ib columns are factored by CholeskyQR2 with Householder reconstruction (four short
// kernels, no grid-wide barrier; kernels_gpu/src/cholqr.cu) where that is accurate, checked on the
// GPU; a block past its reach (cond above about eps^-1/2, rank deficient, zero columns) is left
// untouched and factored one column at a time by one cooperative kernel instead (a grid-wide
// barrier per column). Blocks of at most 576 rows (double; float 768), the QR updates' panels
// and a blocked QR's last ones, are factored by Householder in one thread block instead, the block
// in registers (kernels_gpu/src/householder_short.cu). Each block's reflectors are applied to the rest of the panel as GEMMs; T
// comes from V^T V and the blocks' T (the construction gpu_sssmqr uses).
#include <tessera/kernels_gpu/common.hpp>

namespace tessera::kernels {

// Widest column block gpu_geqrt factors as one block.
inline constexpr int gpu_geqrt_max_ib = 32;

// Rows up to which gpu_geqrt factors a block of up to 32 columns in one kernel, the block held in
// registers without spilling (double 512, float 768): a panel this short costs one launch.
template <class T>
inline constexpr int gpu_geqrt_one_kernel_rows = sizeof(T) == sizeof(float) ? 768 : 512;

// Elements of work gpu_geqrt needs.
std::size_t gpu_geqrt_workspace_size(int m, int n, int ib);

// A (m x n, lda; m >= n) := R above and on its diagonal, V below; T (n x n, ldt >= n) := the
// block reflector's T, zero below its diagonal. 1 <= ib <= gpu_geqrt_max_ib. Columns whose
// remaining part is zero get tau = 0 (LAPACK's convention; such blocks take the Householder
// kernel). Safe at any scale of A, as LAPACK is: each block's columns are equilibrated by powers
// of two before its Gram matrix and sums of squares, and R unscaled after (kernels_gpu/src/
// equilibrate.hpp); only an R entry beyond the precision's range overflows.
template <class T>
void gpu_geqrt(int m, int n, int ib, T* A, int lda, T* Tf, int ldt, T* work, std::size_t lwork,
               cublasHandle_t handle);

}  // namespace tessera::kernels
