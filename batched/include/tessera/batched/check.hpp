#pragma once
// Checks of batched results as LAPACK's own tests scale them (xGET01, xGET03, xGET02), in units of
// n * eps * norms, passing below `threshold` (60 here, LAPACK's tests use 30), and LAPACK's flop
// counts (LAWN 41) for rates.
namespace tessera::batched {

inline constexpr double threshold = 60;

// ||P A - L U||_1 / (n ||A||_1 eps): a the original matrix, lu the factors with 1-based pivots ipiv.
template <class T>
double lu_residual(int n, const T* a, int lda, const T* lu, int ldlu, const int* ipiv);
// ||I - A X||_1 / (n ||A||_1 ||X||_1 eps), X the computed inverse.
template <class T>
double inverse_residual(int n, const T* a, int lda, const T* x, int ldx);
// max over columns j of ||b_j - A x_j||_1 / (n ||A||_1 ||x_j||_1 eps).
template <class T>
double solve_residual(int n, int nrhs, const T* a, int lda, const T* x, int ldx, const T* b, int ldb);

// LAWN 41 flop counts of one matrix: GETRF n x n, GETRF + GETRI (the inverse), GETRS with nrhs.
inline double getrf_flops(double n) { return 2.0 / 3.0 * n * n * n - 0.5 * n * n + 5.0 / 6.0 * n; }
inline double getri_flops(double n) { return 4.0 / 3.0 * n * n * n - n * n + 5.0 / 3.0 * n; }
inline double inverse_flops(double n) { return getrf_flops(n) + getri_flops(n); }
inline double getrs_flops(double n, double nrhs) { return nrhs * (2.0 * n * n - n); }

}  // namespace tessera::batched
