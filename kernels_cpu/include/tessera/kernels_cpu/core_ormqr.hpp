#pragma once
#include <tessera/kernels_cpu/common.hpp>

namespace tessera::kernels {

// C (m x n) := op(Q) C (side::left) or C op(Q) (side::right), where Q = H(1)...H(k) comes from
// core_geqrt: V is the lower part of the factored tile (ldv; m x k for left, n x k for right),
// Tf its ib x k block factors. LAPACK GEMQRT semantics.
template <class T>
void core_ormqr(side s, trans t, int m, int n, int k, int ib, const T* V, int ldv, const T* Tf,
                int ldt, T* C, int ldc, T* work);

extern template void core_ormqr<float>(side, trans, int, int, int, int, const float*, int,
                                       const float*, int, float*, int, float*);
extern template void core_ormqr<double>(side, trans, int, int, int, int, const double*, int,
                                        const double*, int, double*, int, double*);

}  // namespace tessera::kernels
