#pragma once
// LAPACK Working Note 41 operation counts for real GEQRF: what "GFLOP/s" means here, the same
// count LAPACK's timers and cuSOLVER comparisons use whatever the algorithm does internally (tile
// QR does some more).
namespace tessera::qr {

constexpr double geqrf_muls(double m, double n) {
  return m > n ? n * (n * (0.5 - n / 3 + m) + m + 23.0 / 6)
               : m * (m * (-0.5 - m / 3 + n) + 2 * n + 23.0 / 6);
}

constexpr double geqrf_adds(double m, double n) {
  return m > n ? n * (n * (0.5 - n / 3 + m) + 5.0 / 6)
               : m * (m * (-0.5 - m / 3 + n) + n + 5.0 / 6);
}

// FLOPs of a real m x n GEQRF: multiplications plus additions. n x n: 4/3 n^3 + 2 n^2 + 14/3 n.
constexpr double geqrf_flops(double m, double n) { return geqrf_muls(m, n) + geqrf_adds(m, n); }

// The full T and S = V T^T beyond the QR (m >= n), leading terms: T's block columns -S^T V_k T_kk
// and S's updates V_k T^T, 2 m n^2 - 2/3 n^3 each minus the triangles, 2 m n^2 - 4/3 n^3 together:
// 1/3 n^3 for T and 1/3 n^3 for S when square (the and the seed's count).
constexpr double full_t_flops(double m, double n) { return 2 * m * n * n - 4.0 / 3 * n * n * n; }

}  // namespace tessera::qr
