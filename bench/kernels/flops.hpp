#pragma once
// Flop counts used for the rates (LAPACK Working Note 41 where it has the operation).
namespace tessera::bench {

// LAWN 41 GEQRF on an n x n matrix (multiplications + additions): 4/3 n^3 + 2 n^2 + 14/3 n.
inline double flops_geqrt(double n) { return 4.0 / 3.0 * n * n * n + 2.0 * n * n + 14.0 / 3.0 * n; }

// QR of an n x n triangle over an m x n tile: 2 m n^2 (leading term; no LAWN 41 entry).
inline double flops_tsqrt(double m, double n) { return 2.0 * m * n * n; }

// LAWN 41 ORMQR, left, C m x n, k reflectors: 4 m n k - 2 n k^2 + 3 n k.
inline double flops_ormqr(double m, double n, double k) {
  return 4.0 * m * n * k - 2.0 * n * k * k + 3.0 * n * k;
}

// Applying the k TSQRT reflectors of an m2 x k V to a k x n and an m2 x n tile: 4 m2 n k
// (W = V^T A2 and A2 -= V W; the ib-sized TRMMs are left out).
inline double flops_tsmqr(double m2, double n, double k) { return 4.0 * m2 * n * k; }

inline double flops_gemm(double m, double n, double k) { return 2.0 * m * n * k; }

}  // namespace tessera::bench
