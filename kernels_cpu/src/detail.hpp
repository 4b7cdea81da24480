#pragma once
// Small helpers of the kernels' sources: element addressing, the kernels' enums as LAPACK's
// side/trans characters, and one Givens rotation.
#include <cmath>
#include <cstddef>
#include <tessera/kernels_cpu/common.hpp>

namespace tessera::kernels::detail {

template <class T>
inline T* at(T* p, int ld, int i, int j) {
  return p + i + static_cast<std::ptrdiff_t>(j) * ld;
}

constexpr char to_char(side s) { return s == side::left ? 'L' : 'R'; }
constexpr char to_char(trans t) { return t == trans::trans ? 'T' : 'N'; }

// The rotation [c s; -s c] that takes (a, b) to (r, 0): c = a / r, s = b / r, r = hypot(a, b)
// (hypot avoids the overflow and underflow of sqrt(a^2 + b^2)); the identity where b is 0.
template <class T>
inline void make_rotation(T a, T b, T& c, T& s, T& r) {
  c = 1;
  s = 0;
  r = a;
  if (b == T(0)) return;
  r = std::hypot(a, b);
  c = a / r;
  s = b / r;
}

}  // namespace tessera::kernels::detail
