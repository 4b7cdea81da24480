#pragma once
#include <tessera/kernels_cpu/common.hpp>

namespace tessera::kernels {

// QR of an m x n tile A (lda). On exit R is in the upper triangle and V (unit lower trapezoidal,
// implicit unit diagonal) below it. Tf is ib x min(m,n) (ldt >= ib) in LAPACK GEQRT's block
// layout: one upper triangular ib x ib factor per block of ib reflectors. work: see
// core_workspace_size. Throws std::invalid_argument on bad sizes or leading dimensions.
template <class T>
void core_geqrt(int m, int n, int ib, T* A, int lda, T* Tf, int ldt, T* work);

extern template void core_geqrt<float>(int, int, int, float*, int, float*, int, float*);
extern template void core_geqrt<double>(int, int, int, double*, int, double*, int, double*);

}  // namespace tessera::kernels
