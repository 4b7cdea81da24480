#pragma once
// Least squares min ||A X - B||_2 for full-rank A (m >= n) through tile QR: B := Q^T B, then
// R X = B(0:n, :) by tile back substitution (TRSM on the diagonal, GEMM above it), all tasks.
#include "tessera/qr/geqrf.hpp"
#include "tessera/qr/tile_matrix.hpp"

namespace tessera::qr {

// Inserts the solve for factors f (of an m x n A, m >= n) and right-hand sides b (m x nrhs, tiled
// like f.a()). On completion rows 0..n-1 of b hold X and rows n..m-1 the residual components
// (LAPACK GELS's layout). A zero on R's diagonal makes a task throw std::runtime_error.
template <class T>
void gels_solve_async(runtime& rt, const qr_factors<T>& f, tile_matrix<T>& b, const tile_handles& hb);

// LAPACK GELS ('N') on column-major data: a (m x n, lda, m >= n, not modified), b (m x nrhs, ldb):
// on return b(0:n, :) = X, b(n:m, :) the residual components. OpenBLAS runs single-threaded
// meanwhile. Throws std::invalid_argument for bad arguments (m < n included) or NaN/Inf in a,
// std::runtime_error when A is rank deficient (an exact zero on R's diagonal).
template <class T>
void gels(runtime& rt, int m, int n, int nrhs, const T* a, int lda, T* b, int ldb, int nb, int ib);

}  // namespace tessera::qr
