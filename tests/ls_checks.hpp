#pragma once
// Least-squares solutions compared with LAPACK's: two backward-stable solvers agree to a small
// multiple of n eps times the problem's sensitivity, kappa + kappa^2 ||r|| / (||A|| ||x||) (Golub
// and Van Loan), so a fixed bound fails now and then for a random matrix that happens to be ill
// conditioned.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "tessera/kernels_cpu/blas.hpp"

namespace tessera::testing {

// ||R||_F ||R^-1||_F (at least 1) of the upper triangle of an n x n R, column major, ld ldr.
template <class T>
double kappa_f(int n, const T* r, int ldr) {
  std::vector<T> inv(std::size_t(n) * std::size_t(n), T(0));
  for (int i = 0; i < n; ++i) inv[std::size_t(i) * (n + 1)] = T(1);
  tessera::blas::trsm(CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, n, n, T(1), const_cast<T*>(r), ldr,
                      inv.data(), n);
  double rr = 0, ri = 0;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i <= j; ++i) {
      rr += double(r[i + std::size_t(j) * ldr]) * double(r[i + std::size_t(j) * ldr]);
      ri += double(inv[i + std::size_t(j) * n]) * double(inv[i + std::size_t(j) * n]);
    }
  return std::max(1.0, std::sqrt(rr) * std::sqrt(ri));
}

// kappa + kappa^2 ||r|| / (||A|| ||x||).
inline double ls_sensitivity(double kappa, double r_norm, double a_norm, double x_norm) {
  return kappa + kappa * kappa * r_norm / (a_norm * x_norm + 1e-300);
}

}  // namespace tessera::testing
