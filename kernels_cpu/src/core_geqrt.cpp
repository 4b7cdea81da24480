#include <algorithm>
#include <tessera/kernels_cpu/core_geqrt.hpp>
#include <tessera/kernels_cpu/check.hpp>

#include "larfb.hpp"
#include "panel2.hpp"

namespace tessera::kernels {

template <class T>
void core_geqrt(int m, int n, int ib, T* A, int lda, T* Tf, int ldt, T* work) {
  constexpr const char* name = "tessera::kernels::core_geqrt";
  check::require_ge(name, "m", m, "0", 0);
  check::require_ge(name, "n", n, "0", 0);
  check::require_ge(name, "ib", ib, "1", 1);
  check::require_ge(name, "lda", lda, "max(1, m)", std::max(1, m));
  check::require_ge(name, "ldt", ldt, "ib", ib);
  const int k = std::min(m, n);
  if (k == 0) return;
  // GEQRT's own loop: each panel of ib columns by level-2 loops (panel2.hpp: no OpenBLAS lock,
  // which LAPACK's recursive GEQRT3 takes hundreds of times per tile) and larfb_left for the update
  // right of it (bench/kernels: "geqrt core" against "geqrt LAPACK GEQRT", --threads 1 and 16).
  // An ib beyond min(m, n) is one block: the same T layout.
  const int nb = std::min(ib, k);
  for (int j0 = 0; j0 < k; j0 += nb) {
    const int jb = std::min(nb, k - j0);
    T* panel = detail::at(A, lda, j0, j0);
    T* tb = detail::at(Tf, ldt, 0, j0);
    detail::geqrt2_loops(m - j0, jb, panel, lda, tb, ldt);
    if (j0 + jb < n)
      detail::larfb_left(true, m - j0, n - j0 - jb, jb, panel, lda, tb, ldt,
                         detail::at(A, lda, j0, j0 + jb), lda, work);
  }
}

template void core_geqrt<float>(int, int, int, float*, int, float*, int, float*);
template void core_geqrt<double>(int, int, int, double*, int, double*, int, double*);

}  // namespace tessera::kernels
