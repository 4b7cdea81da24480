#pragma once
// Small helpers of the kernels' sources: element addressing, the kernels' enums as LAPACK's
// side/trans characters, one Givens rotation and its apply to two columns.
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

// (x, y) := (c x + s y, -s x + c y) over n entries: a rotation of two contiguous columns (or rows
// stored as columns), the CPUs' applies of a rotation to another matrix.
template <class T>
inline void rotate_pair(int n, T c, T s, T* x, T* y) {
  for (int i = 0; i < n; ++i) {
    const T u = x[i], v = y[i];
    x[i] = c * u + s * v;
    y[i] = -s * u + c * v;
  }
}

}  // namespace tessera::kernels::detail
