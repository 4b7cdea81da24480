// Sweeps of Givens rotations on the CPUs (tessera/kernels_cpu/rotations.hpp). The one that makes
// an upper Hessenberg matrix triangular goes column by column: column c takes the rotations made
// so far (its carry is the row the last one left in it), then makes its own; H's columns are
// contiguous, so every access is sequential. The others apply a sweep line by line.
#include "detail.hpp"

#include <tessera/kernels_cpu/rotations.hpp>

namespace tessera::kernels {

template <class T>
void hessenberg_rotations(int rows, int cols, T* H, int ldh, T* cs) {
  if (rows <= 0 || cols <= 0) return;
  const int k = cols < rows - 1 ? cols : rows - 1;
  for (int c = 0; c < cols; ++c) {
    T* h = H + std::size_t(c) * ldh;
    const int done = c < k ? c : k;  // rotations that reach this column
    T carry = h[0];
    for (int j = 0; j < done; ++j) {
      const T co = cs[2 * j], s = cs[2 * j + 1], x = h[j + 1];
      h[j] = co * carry + s * x;
      carry = -s * carry + co * x;
    }
    if (c >= k) {  // past the last rotation: its carry is final
      h[done] = carry;
      continue;
    }
    T co, s, r;
    detail::make_rotation(carry, h[c + 1], co, s, r);
    h[c] = r;
    h[c + 1] = 0;
    cs[2 * c] = co;
    cs[2 * c + 1] = s;
  }
}

template <class T>
void rotations_left(int k, int ncols, const T* cs, T* C, int ldc) {
  for (int c = 0; c < ncols; ++c) {
    T* x = C + std::size_t(c) * ldc;
    T carry = x[0];
    for (int j = 0; j < k; ++j) {
      const T co = cs[2 * j], s = cs[2 * j + 1], v = x[j + 1];
      x[j] = co * carry + s * v;
      carry = -s * carry + co * v;
    }
    x[k] = carry;
  }
}

namespace {

// Columns j and j + 1 of C (nrows rows) := those columns times rotation j's transpose, from cs.
// One rotation at a time over the rows: two contiguous columns, one of which the next rotation
// reads again.
template <class T>
void rotate_columns(int nrows, int j, const T* cs, T* C, int ldc) {
  T* a = C + std::size_t(j) * ldc;
  detail::rotate_pair(nrows, cs[2 * j], cs[2 * j + 1], a, a + ldc);
}

}  // namespace

template <class T>
void rotations_right(int nrows, int k, const T* cs, T* C, int ldc) {
  for (int j = 0; j < k; ++j) rotate_columns(nrows, j, cs, C, ldc);
}

template <class T>
void sweep_up_left(int k, int ncols, const T* cs, T* C, int ldc) {
  for (int c = 0; c < ncols; ++c) {
    T* x = C + std::size_t(c) * ldc;
    T carry = x[k];
    for (int i = k; i >= 1; --i) {
      const T co = cs[2 * i], s = cs[2 * i + 1], v = x[i - 1];
      x[i] = -s * v + co * carry;
      carry = co * v + s * carry;
    }
    x[0] = carry;
  }
}

template <class T>
void sweep_up_right(int nrows, int k, const T* cs, T* C, int ldc) {
  // Rotation i acts on columns i - 1 and i, its (c, s) at cs[2 i].
  for (int i = k; i >= 1; --i) rotate_columns(nrows, i - 1, cs + 2, C, ldc);
}

#define TESSERA_INST(T)                                                  \
  template void hessenberg_rotations<T>(int, int, T*, int, T*);         \
  template void rotations_left<T>(int, int, const T*, T*, int);         \
  template void rotations_right<T>(int, int, const T*, T*, int);        \
  template void sweep_up_left<T>(int, int, const T*, T*, int);          \
  template void sweep_up_right<T>(int, int, const T*, T*, int);
TESSERA_INST(float)
TESSERA_INST(double)
#undef TESSERA_INST

}  // namespace tessera::kernels
