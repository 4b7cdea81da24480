#pragma once
// The front door's operations on factors in device memory, as GPU tasks on the runtime.
#include "tessera/qr/factorize.hpp"

namespace tessera::qr::detail {

// C := op(Q) C on the device, Q from the blocked form (V: m x k in a, T: nb x k in t, ldt), C
// device memory with m rows. Waits.
template <class T>
void apply_q_device(runtime& rt, trans op, int m, int k, int nb, const T* a, int lda, const T* t, int ldt,
                    matrix_ref<T> c);

// B(0:n, :) := R^-1 B(0:n, :) on the device, R the n x n upper triangle of r. Waits.
template <class T>
void trsm_device(runtime& rt, int n, int nrhs, const T* r, int ldr, matrix_ref<T> b);

}  // namespace tessera::qr::detail
