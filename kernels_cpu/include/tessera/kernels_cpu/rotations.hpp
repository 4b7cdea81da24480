#pragma once
// An upper Hessenberg matrix made upper triangular by one sweep of Givens rotations, and that
// sweep applied to other matrices (QR updating, qr/update.hpp: after a rank-1 update or deleting
// one column, R is upper Hessenberg; qrupdate's qr1up and qrdec do the same).
//
// Rotation j acts on rows (j, j + 1) as givens.hpp's do, [x_j; x_{j+1}] := [c s; -s c] [x_j;
// x_{j+1}], with (c, s) at cs[2 j], cs[2 j + 1]. The sweep is G = G_{k-1} ... G_1 G_0: rotation j
// zeroes H(j + 1, j) after rotations 0 .. j - 1 have been applied to column j.
#include <cstddef>

namespace tessera::kernels {

// H (rows x cols, ldh; zero below its first subdiagonal) := G H, upper triangular with exact
// zeros below the diagonal; cs := the k = min(cols, rows - 1) rotations (2 k values). One thread,
// O(k cols).
template <class T>
void hessenberg_rotations(int rows, int cols, T* H, int ldh, T* cs);

// C (k + 1 rows of ncols columns, ldc) := G C: the sweep's k rotations from the left.
template <class T>
void rotations_left(int k, int ncols, const T* cs, T* C, int ldc);

// C (nrows rows of k + 1 columns, ldc) := C G^T, so that (C G^T)(G H) = C H: from the right.
template <class T>
void rotations_right(int nrows, int k, const T* cs, T* C, int ldc);

// One sweep of givens.hpp's (p = 1: rotation i on rows (i - 1, i) at cs[2 i], made from i = k
// up to 1) as a line sweep: C (k + 1 rows of ncols columns) := G_1 ... G_k C from the left, and
// C (nrows rows of k + 1 columns) := C G_k^T ... G_1^T from the right. The same results as its
// blocks (givens_blocks) up to rounding.
template <class T>
void sweep_up_left(int k, int ncols, const T* cs, T* C, int ldc);
template <class T>
void sweep_up_right(int nrows, int k, const T* cs, T* C, int ldc);

}  // namespace tessera::kernels
