#pragma once
// A GEQRT's Q^T applied on the GPU to a row of tiles: C := Q^T C, Q = I - V T V^T with V the unit
// lower trapezoidal part of the factored tile. LAPACK GEMQRT (side left, trans) semantics, built
// like gpu_tsmqr: V copied with its unit diagonal made explicit, full T from V^T V and the
// ib-blocked T, V T^T by one GEMM, then W = V^T C; C -= (V T^T) W.
#include <tessera/kernels_gpu/common.hpp>

namespace tessera::kernels {

// Elements of work gpu_ormqr needs: m * k + k * k + (k + m) * k + k * n.
std::size_t gpu_ormqr_workspace_size(int m, int n, int k);

// C (m x n, ldc) := Q^T C. V: m x k (ldv >= m), read below its diagonal only; Tb: ib x k (ldt);
// k <= m reflectors.
template <class T>
void gpu_ormqr(int m, int n, int k, int ib, const T* V, int ldv, const T* Tb, int ldt, T* C,
               int ldc, T* work, std::size_t lwork, cublasHandle_t handle);

}  // namespace tessera::kernels
