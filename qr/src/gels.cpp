#include "tessera/qr/gels.hpp"

#include <stdexcept>
#include <string>

#include "apply_q.hpp"
#include "detail.hpp"
#include "tessera/kernels_cpu/blas.hpp"
#include "tessera/kernels_cpu/trsm_upper.hpp"
#include "tessera/qr/blas_threads.hpp"
#include "tessera/qr/layout.hpp"

namespace tessera::qr {

// B := Q^T B, then back substitution by tiles: for k = nt-1 .. 0, TRSM with R_kk on B's tile row
// k, then GEMMs push X_k into the rows above. Tile rows of B are independent per tile column, so
// the right-hand sides solve in parallel.
template <class T>
void gels_solve_async(runtime& rt, const qr_factors<T>& f, tile_matrix<T>& b, const tile_handles& hb) {
  constexpr const char* func = "gels";
  detail::require_applicable(func, rt, f, b, hb);
  if (f.m() < f.n())
    detail::invalid(func, "m = " + std::to_string(f.m()) + " < n = " + std::to_string(f.n()) +
                              ": only full-rank least squares with m >= n is supported");
  detail::insert_apply_q(rt, kernels::trans::trans, f, b, hb, false);

  const tile_matrix<T>& A = f.a();
  const tile_handles& ha = f.ha();
  const int nt = f.nt(), nb = f.nb(), ct = b.nt();
  for (int k = nt - 1; k >= 0; --k) {
    const int nk = A.tile_cols(k), ldk = A.tile_rows(k);
    const T* rkk = A.tile(k, k);
    for (int c = 0; c < ct; ++c) {
      const int nc = b.tile_cols(c);
      T* bkc = b.tile(k, c);
      rt.task([=] {
            for (int d = 0; d < nk; ++d)
              if (rkk[d + std::size_t(d) * ldk] == T(0))
                throw std::runtime_error("tessera::qr::gels: R(" + std::to_string(k * nb + d) + ", " +
                                         std::to_string(k * nb + d) +
                                         ") = 0: A is rank deficient, no unique least squares solution");
            kernels::trsm_upper(nk, nc, rkk, ldk, bkc, ldk);
          })
          .read(ha(k, k))
          .read_write(hb(k, c))
          .priority(2 * k + 1)
          .locality(hb(k, c))
          .label("trsm")
          .color(detail::color_trsm)
          .submit();
      for (int i = 0; i < k; ++i) {
        const int mi = A.tile_rows(i);   // == nb: full tile rows above the last
        const T* rik = A.tile(i, k);
        T* bic = b.tile(i, c);
        rt.task([=] {
              blas::gemm(CblasNoTrans, CblasNoTrans, mi, nc, nk, T(-1), rik, mi, bkc, ldk, T(1), bic, mi);
            })
            .read(ha(i, k))
            .read(hb(k, c))
            .read_write(hb(i, c))
            .priority(2 * i)
            .locality(hb(i, c))
            .label("gemm")
            .color(detail::color_gemm)
            .submit();
      }
    }
  }
}

template <class T>
void gels(runtime& rt, int m, int n, int nrhs, const T* a, int lda, T* b, int ldb, int nb, int ib) {
  constexpr const char* func = "gels";
  detail::require_at_least(func, "m", m, 1);
  detail::require_at_least(func, "n", n, 1);
  if (m < n)
    detail::invalid(func, "m = " + std::to_string(m) + " < n = " + std::to_string(n) +
                              ": only full-rank least squares with m >= n is supported");
  detail::require_at_least(func, "nrhs", nrhs, 1);
  detail::require_at_least(func, "lda", lda, m, "m");
  detail::require_at_least(func, "ldb", ldb, m, "m");
  detail::require_ib(func, nb, ib);
  if (!a) detail::invalid(func, "A is null");
  if (!b) detail::invalid(func, "B is null");

  qr_factors<T> f(rt, m, n, nb, ib);
  tile_matrix<T> bt(m, nrhs, nb);
  const tile_handles hb = register_tiles(rt, bt);
  blas_threads single(1);
  to_tiles_async(rt, a, lda, f.a(), f.ha(), "A");
  to_tiles_async(rt, b, ldb, bt, hb, "B");
  geqrf_async(rt, f);
  gels_solve_async(rt, f, bt, hb);
  rt.wait_all();   // errors (NaN, rank deficiency) surface before b is touched
  to_lapack_async(rt, bt, hb, b, ldb);
  rt.wait_all();
}

template void gels_solve_async<float>(runtime&, const qr_factors<float>&, tile_matrix<float>&, const tile_handles&);
template void gels_solve_async<double>(runtime&, const qr_factors<double>&, tile_matrix<double>&, const tile_handles&);
template void gels<float>(runtime&, int, int, int, const float*, int, float*, int, int, int);
template void gels<double>(runtime&, int, int, int, const double*, int, double*, int, int, int);

}  // namespace tessera::qr
