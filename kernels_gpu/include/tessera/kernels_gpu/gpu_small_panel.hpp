#pragma once
// The QR of a small panel (at most 64 columns, a few hundred rows) in one thread block with the
// panel in shared memory: the QR updates' band panels (deleting columns, rank-k updates, issue
// #18), whose every column otherwise costs a chain of barriers and launches. One warp runs the
// chain of reflectors with no block barrier (each lane owns two columns), the others build T
// beside it. Enqueued on `stream`.
#include <cstddef>

#include <cuda_runtime.h>

namespace tessera::kernels {

// Widest panel and widest band gpu_small_panel_qr takes.
inline constexpr int gpu_small_panel_max_cols = 64;
inline constexpr int gpu_small_panel_max_band = 32;

// A (h x n, lda; h >= n >= 1), zero below its band-th subdiagonal (column j below row j + band,
// the band of a QR update; band >= h - 1: a dense panel) := R (upper triangle; exact zeros below
// the diagonal), V (h x n, ldv; not overlapping A) := the reflectors with the unit diagonal and the
// zeros above it stored (a plain GEMM operand, as gpu_split_panel leaves it), T (n x n, ldt) := the
// block reflector's upper triangular factor with zeros below: A = (I - V T V^T) [R; 0], LAPACK
// GEQRT's V and T. Entries below the band are not read. Computed in double for T = float too; safe
// at any scale (each column equilibrated by a power of two, as in equilibrate.hpp; a remaining
// column below 2^-960 (float 2^-90) of its squared norm counts as zero, tau = 0). Returns false,
// having done nothing, where the panel does not fit (n > gpu_small_panel_max_cols, a band over
// gpu_small_panel_max_band, or too many rows for the device's shared memory); throws on bad
// arguments and CUDA errors.
template <class T>
bool gpu_small_panel_qr(int h, int n, int band, T* A, int lda, T* V, int ldv, T* Tf, int ldt, cudaStream_t stream);

}  // namespace tessera::kernels
