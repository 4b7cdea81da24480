#pragma once
// The front door's operations on factors in device memory, as GPU tasks on the runtime.
#include "tessera/qr/factorize.hpp"

namespace tessera::qr::detail {

// A handle on a device matrix (rows x cols, ld) that only GPU tasks use in place.
template <class T>
handle device_handle(runtime& rt, const T* p, int rows, int cols, int ld) {
  return rt.register_device_data(const_cast<T*>(p), sizeof(T) * std::size_t(rows), std::size_t(cols),
                                 sizeof(T) * std::size_t(ld));
}

// C := op(Q) C on the device, Q from the blocked form (V: m x k in a, T: nb x k in t, ldt), C
// device memory with m rows. Waits.
template <class T>
void apply_q_device(runtime& rt, trans op, int m, int k, int nb, const T* a, int lda, const T* t, int ldt,
                    matrix_ref<T> c);

// C := op(Q) C on the device in one step with the full T (upper part of st, ldst). Waits.
template <class T>
void apply_q_full_t_device(runtime& rt, trans op, int m, int k, const T* a, int lda, const T* st, int ldst,
                           matrix_ref<T> c);

// qb := Q(r0:r0+qb.m, c0:c0+qb.n) on the device from V (a) and S (st). Waits.
template <class T>
void q_block_device(runtime& rt, int m, int n, int r0, int c0, const T* a, int lda, const T* st, int ldst,
                    matrix_ref<T> qb);

// y := op(Q(r0:r0+rows, c0:c0+cols)) x on the device. Waits.
template <class T>
void apply_q_block_device(runtime& rt, trans op, int m, int n, int r0, int c0, int rows, int cols, const T* a, int lda,
                          const T* st, int ldst, matrix_ref<const T> x, matrix_ref<T> y);

// B(0:n, :) := R^-1 B(0:n, :) on the device, R the n x n upper triangle of r. Waits.
template <class T>
void trsm_device(runtime& rt, int n, int nrhs, const T* r, int ldr, matrix_ref<T> b);

}  // namespace tessera::qr::detail
