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

}  // namespace tessera::qr
