#pragma once
// B := R^-1 B for R n x n upper triangular (non-unit), the least-squares solves' last step, safe at
// every scale: BLAS's TRSM where every |R(k, k)| is at least the safe minimum; else LAPACK's
// reference TRSM written out, dividing by R(k, k). OpenBLAS's TRSM multiplies by reciprocals of
// the diagonal, which overflow to Inf for a pivot below 1 / the largest number where the solution
// is finite (a column of A near the bottom of the range).
namespace tessera::kernels {

template <class T>
void trsm_upper(int n, int nrhs, const T* R, int ldr, T* B, int ldb);

// The same solve as reference LAPACK's TRSM does it (side L, upper, no transpose, non-unit), always:
// column by column, dividing by R(k, k), an entry that is zero updating nothing. For tiny R, where
// a BLAS call costs more than its work (the batched GETRS), and for trsm_upper's safe path.
template <class T>
void trsm_upper_divide(int n, int nrhs, const T* R, int ldr, T* B, int ldb);

// Whether some |R(k, k)| is below the safe minimum (NaN counts as not below): where a solve that
// multiplies by reciprocals of the diagonal may overflow.
template <class T>
bool has_tiny_diagonal(int n, const T* diagonal, int stride);

}  // namespace tessera::kernels
