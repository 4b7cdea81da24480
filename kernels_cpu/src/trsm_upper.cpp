#include "tessera/kernels_cpu/trsm_upper.hpp"

#include <cmath>
#include <cstddef>
#include <limits>

#include "tessera/kernels_cpu/blas.hpp"

namespace tessera::kernels {

template <class T>
bool has_tiny_diagonal(int n, const T* diagonal, int stride) {
  for (int k = 0; k < n; ++k)
    if (std::abs(diagonal[std::size_t(k) * std::size_t(stride)]) < std::numeric_limits<T>::min()) return true;
  return false;
}

template <class T>
void trsm_upper_divide(int n, int nrhs, const T* R, int ldr, T* B, int ldb) {
  for (int j = 0; j < nrhs; ++j) {
    T* x = B + std::size_t(j) * ldb;
    for (int k = n - 1; k >= 0; --k)
      if (x[k] != T(0)) {
        const T* rk = R + std::size_t(k) * ldr;
        x[k] /= rk[k];
        for (int i = 0; i < k; ++i) x[i] -= x[k] * rk[i];
      }
  }
}

template <class T>
void trsm_upper(int n, int nrhs, const T* R, int ldr, T* B, int ldb) {
  if (n <= 0 || nrhs <= 0) return;
  if (has_tiny_diagonal(n, R, ldr + 1))
    trsm_upper_divide(n, nrhs, R, ldr, B, ldb);
  else
    blas::trsm(CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, n, nrhs, T(1), R, ldr, B, ldb);
}

template void trsm_upper_divide<float>(int, int, const float*, int, float*, int);
template void trsm_upper_divide<double>(int, int, const double*, int, double*, int);
template void trsm_upper<float>(int, int, const float*, int, float*, int);
template void trsm_upper<double>(int, int, const double*, int, double*, int);
template bool has_tiny_diagonal<float>(int, const float*, int);
template bool has_tiny_diagonal<double>(int, const double*, int);

}  // namespace tessera::kernels
