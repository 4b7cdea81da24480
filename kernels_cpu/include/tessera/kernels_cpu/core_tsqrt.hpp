#pragma once
#include <tessera/kernels_cpu/common.hpp>

namespace tessera::kernels {

// QR of the stacked pair [A1; A2]: A1 is n x n upper triangular (only its upper triangle is read
// and updated), A2 is m x n. On exit A1 holds the new R, A2 holds V (full m x n) and Tf (ib x n,
// ldt >= ib) the block reflector factors. LAPACK TPQRT with l = 0.
template <class T>
void core_tsqrt(int m, int n, int ib, T* A1, int lda1, T* A2, int lda2, T* Tf, int ldt, T* work);

extern template void core_tsqrt<float>(int, int, int, float*, int, float*, int, float*, int,
                                       float*);
extern template void core_tsqrt<double>(int, int, int, double*, int, double*, int, double*, int,
                                        double*);

}  // namespace tessera::kernels
