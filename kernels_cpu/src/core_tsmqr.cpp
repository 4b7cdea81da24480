#include <algorithm>
#include <tessera/kernels_cpu/core_tsmqr.hpp>
#include <tessera/kernels_cpu/blas.hpp>
#include <tessera/kernels_cpu/check.hpp>

#include "detail.hpp"

namespace tessera::kernels {

template <class T>
void core_tsmqr(side s, trans t, int m1, int n1, int m2, int n2, int k, int ib, T* A1, int lda1,
                T* A2, int lda2, const T* V, int ldv, const T* Tf, int ldt, T* work) {
  constexpr const char* name = "tessera::kernels::core_tsmqr";
  check::require_ge(name, "m1", m1, "0", 0);
  check::require_ge(name, "n1", n1, "0", 0);
  check::require_ge(name, "m2", m2, "0", 0);
  check::require_ge(name, "n2", n2, "0", 0);
  check::require_ge(name, "k", k, "0", 0);
  check::require_ge(name, "ib", ib, "1", 1);
  const bool left = s == side::left;
  if (left) {
    check::require_eq(name, "n2", n2, "n1", n1);
    check::require_ge(name, "m1", m1, "k", k);
  } else {
    check::require_eq(name, "m2", m2, "m1", m1);
    check::require_ge(name, "n1", n1, "k", k);
  }
  check::require_ge(name, "lda1", lda1, "max(1, m1)", std::max(1, m1));
  check::require_ge(name, "lda2", lda2, "max(1, m2)", std::max(1, m2));
  check::require_ge(name, "ldv", ldv, left ? "max(1, m2)" : "max(1, n2)",
                     std::max(1, left ? m2 : n2));
  check::require_ge(name, "ldt", ldt, "ib", ib);
  if (m2 == 0 || n2 == 0 || k == 0) return;
  // TPMQRT with l = 0 is already the GEMM form per block of ib reflectors (W = A1 + V^T A2,
  // W = T^T W, A1 -= W, A2 -= V W), at 85-90% of one-core GEMM for nb = 256, ib = 32. A
  // left-looking variant with k-deep GEMMs (bench/kernels/tsmqr_gemm.cpp) does 1.5x the flops
  // and was 1.4x slower there, so LAPACK stays.
  check::lapack_info(name, "TPMQRT",
                     blas::tpmqrt(detail::to_char(s), detail::to_char(t), m2, n2, k, 0,
                                  std::min(ib, k), V, ldv, Tf, ldt, A1, lda1, A2, lda2, work));
}

template void core_tsmqr<float>(side, trans, int, int, int, int, int, int, float*, int, float*, int,
                                const float*, int, const float*, int, float*);
template void core_tsmqr<double>(side, trans, int, int, int, int, int, int, double*, int, double*,
                                 int, const double*, int, const double*, int, double*);

}  // namespace tessera::kernels
