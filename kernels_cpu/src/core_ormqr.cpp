#include <algorithm>
#include <tessera/kernels_cpu/core_ormqr.hpp>
#include <tessera/kernels_cpu/blas.hpp>
#include <tessera/kernels_cpu/check.hpp>

#include "detail.hpp"
#include "larfb.hpp"

namespace tessera::kernels {

template <class T>
void core_ormqr(side s, trans t, int m, int n, int k, int ib, const T* V, int ldv, const T* Tf,
                int ldt, T* C, int ldc, T* work) {
  constexpr const char* name = "tessera::kernels::core_ormqr";
  check::require_ge(name, "m", m, "0", 0);
  check::require_ge(name, "n", n, "0", 0);
  check::require_ge(name, "k", k, "0", 0);
  check::require_ge(name, "ib", ib, "1", 1);
  const bool left = s == side::left;
  const int q = left ? m : n;  // order of Q
  check::require_le(name, "k", k, left ? "m" : "n", q);
  check::require_ge(name, "ldv", ldv, left ? "max(1, m)" : "max(1, n)", std::max(1, q));
  check::require_ge(name, "ldt", ldt, "ib", ib);
  check::require_ge(name, "ldc", ldc, "max(1, m)", std::max(1, m));
  if (m == 0 || n == 0 || k == 0) return;
  const int nb = std::min(ib, k);
  if (left) {
    // LAPACK GEMQRT's left side goes through LARFB's transposed path; larfb_left is 1.6x
    // faster at nb = 256 (bench/kernels: "ormqr core" against "ormqr LAPACK GEMQRT").
    const bool tr = t == trans::trans;
    const int last = (k - 1) / nb * nb;  // Q^T C: first block first; Q C: last block first
    for (int j0 = tr ? 0 : last; tr ? j0 < k : j0 >= 0; j0 += tr ? nb : -nb)
      detail::larfb_left(tr, m - j0, n, std::min(nb, k - j0), detail::at(V, ldv, j0, j0), ldv,
                         detail::at(Tf, ldt, 0, j0), ldt, detail::at(C, ldc, j0, 0), ldc, work);
    return;
  }
  // The right side's LARFB already works on C's columns: as fast as larfb_left on the left.
  check::lapack_info(name, "GEMQRT",
                     blas::gemqrt(detail::to_char(s), detail::to_char(t), m, n, k, nb, V, ldv, Tf,
                                  ldt, C, ldc, work));
}

template void core_ormqr<float>(side, trans, int, int, int, int, const float*, int, const float*,
                                int, float*, int, float*);
template void core_ormqr<double>(side, trans, int, int, int, int, const double*, int, const double*,
                                 int, double*, int, double*);

}  // namespace tessera::kernels
