#pragma once
// Residuals of a QR factorization, LAPACK testing style (xQRT01): scaled so that a backward-stable
// factorization gives values of order 1, whatever the size and precision.
#include "tessera/qr/geqrf.hpp"

namespace tessera::qr {

struct qr_residuals {
  double qr = 0;     // ||A - Q R||_1 / (||A||_1 max(m, n) eps)
  double orth = 0;   // ||I - Q^T Q||_1 / (max(m, n) eps), Q thin (m x min(m, n))
  bool passed(double threshold = 60) const noexcept { return qr < threshold && orth < threshold; }
};

// Forms the thin Q with ungqr (tasks on rt) and compares against the original a (m x n, lda) with
// BLAS GEMMs (multi-threaded BLAS: this is the expensive part for large problems).
template <class T>
qr_residuals check_qr(runtime& rt, const qr_factors<T>& f, const T* a, int lda);

template <class T>
class factorization;

// The same residuals for any factorization of the front door (either form, either memory): Q
// formed thin and R copied out to the host through it, a (m x n, lda) the original in host memory.
template <class T>
qr_residuals check(factorization<T>& f, const T* a, int lda);

// The same residuals for a factorization in LAPACK GEQRT form (blocked_qr_gpu: qr and t as it leaves
// them, panel width nb), the thin Q formed with LAPACK's GEMQRT, against the original a (m x n).
template <class T>
qr_residuals check_geqrt(int m, int n, int nb, const T* qr, int ldqr, const T* t, int ldt, const T* a,
                         int lda);

}  // namespace tessera::qr
