#pragma once
#include <tessera/kernels_cpu/common.hpp>

namespace tessera::kernels {

// Applies the core_tsqrt reflectors (V: full, m2 x k for left, n2 x k for right; Tf: ib x k) to
// the pair [A1; A2] (side::left; A1 is m1 x n1 with m1 >= k, only its first k rows are touched,
// n1 == n2; A2 is m2 x n2) or [A1 A2] (side::right; A1 is m1 x n1 with n1 >= k, only its first k
// columns are touched, m1 == m2). LAPACK TPMQRT with l = 0: the SSSMQR update of tile QR.
template <class T>
void core_tsmqr(side s, trans t, int m1, int n1, int m2, int n2, int k, int ib, T* A1, int lda1,
                T* A2, int lda2, const T* V, int ldv, const T* Tf, int ldt, T* work);

extern template void core_tsmqr<float>(side, trans, int, int, int, int, int, int, float*, int,
                                       float*, int, const float*, int, const float*, int, float*);
extern template void core_tsmqr<double>(side, trans, int, int, int, int, int, int, double*, int,
                                        double*, int, const double*, int, const double*, int,
                                        double*);

}  // namespace tessera::kernels
