#pragma once
// Residuals of a QR factorization, LAPACK testing style (xQRT01): scaled so that a backward-stable
// factorization gives values of order 1, whatever the size and precision.
#include <optional>

#include "tessera/qr/geqrf.hpp"

namespace tessera::qr {

struct qr_residuals {
  double qr = 0;     // ||A - Q R||_1 / (||A||_1 max(m, n) eps)
  double orth = 0;   // ||I - Q^T Q||_1 / (max(m, n) eps), Q thin (m x min(m, n))
  // With the full T (Q above is then applied in one step with it):
  std::optional<double> s_error;  // ||S - V T^T||_1 / (||V||_1 ||T||_1 max(m, n) eps)
  // ||T - T_LAPACK||_1 / (||T_LAPACK||_1 max(m, n) eps), T_LAPACK from xLARFT on the same reflectors
  // (V and T's diagonal): the GPU's panels choose other, equally valid, reflectors than LAPACK's
  // xGEQRT3 would, so T is compared where it is a function of V alone.
  std::optional<double> t_error;
  bool passed(double threshold = 60) const noexcept {
    return qr < threshold && orth < threshold && (!s_error || *s_error < threshold) &&
           (!t_error || *t_error < threshold);
  }
};

// Forms the thin Q with ungqr (tasks on rt) and compares against the original a (m x n, lda) with
// BLAS GEMMs (multi-threaded BLAS: this is the expensive part for large problems).
template <class T>
qr_residuals check_qr(runtime& rt, const qr_factors<T>& f, const T* a, int lda);

template <class T>
class factorization;

// The same residuals for any factorization of the front door (either form, either memory): Q
// formed thin and R copied out to the host through it, a (m x n, lda) the original in host memory;
// with the full T also s_error and t_error.
template <class T>
qr_residuals check(factorization<T>& f, const T* a, int lda);

// The same residuals for a factorization in LAPACK GEQRT form (blocked_qr_gpu: qr and t as it leaves
// them, panel width nb), the thin Q formed with LAPACK's GEMQRT, against the original a (m x n).
template <class T>
qr_residuals check_geqrt(int m, int n, int nb, const T* qr, int ldqr, const T* t, int ldt, const T* a,
                         int lda);

}  // namespace tessera::qr
