#pragma once
// One Givens rotation on the GPU, for every kernel that makes them (the Givens sweeps of a strip,
// the sweep of a Hessenberg matrix).
#include <cfloat>

namespace tessera::kernels::detail {

// c = a / r, s = b / r, r = hypot(a, b) (a positive r: the CPUs' givens_generate). The wavefront
// waits on each rotation, so in double it takes one reciprocal hypot and products instead of two
// divisions, r then as a c + b s = (a^2 + b^2) / hypot, a sum of two non-negative terms; where
// 1 / hypot would overflow or be subnormal (hypot below the smallest normal number or above its
// reciprocal) the divisions, as before. H100, deleting 20 / 50 / 100 rows of 12000 x 6000 with
// Q: 4-7% faster in double; in single the same form was 4-7% slower (at p = 50 and 100), so single
// keeps the divisions (docs/results/2026-11-24-givens-rotation-h100.md).
template <class T>
__device__ void make_rotation(T a, T b, T& c, T& s, T& r) {
  c = 1;
  s = 0;
  r = a;
  if (b == T(0)) return;
  if constexpr (sizeof(T) == sizeof(double)) {
    const T rr = rhypot(a, b);
    if (rr >= T(DBL_MIN) && rr < T(1) / T(DBL_MIN)) {
      c = a * rr;
      s = b * rr;
      r = fma(a, c, b * s);
      return;
    }
  }
  r = hypot(a, b);
  c = a / r;
  s = b / r;
}

}  // namespace tessera::kernels::detail
