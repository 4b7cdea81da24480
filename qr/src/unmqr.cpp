#include "tessera/qr/unmqr.hpp"

#include "apply_q.hpp"
#include "detail.hpp"
#include "tessera/qr/blas_threads.hpp"
#include "tessera/qr/layout.hpp"

namespace tessera::qr {

template <class T>
void unmqr_async(runtime& rt, trans op, const qr_factors<T>& f, tile_matrix<T>& c,
                 const tile_handles& hc) {
  detail::require_applicable("unmqr", rt, f, c, hc);
  detail::insert_apply_q(rt, op, f, c, hc, false);
}

template <class T>
void unmqr(runtime& rt, trans op, const qr_factors<T>& f, int nrhs, T* c, int ldc) {
  constexpr const char* func = "unmqr";
  detail::require_at_least(func, "nrhs", nrhs, 1);
  detail::require_at_least(func, "ldc", ldc, f.m(), "m");
  if (!c) detail::invalid(func, "C is null");
  tile_matrix<T> ct(f.m(), nrhs, f.nb());
  const tile_handles hc = register_tiles(rt, ct);
  blas_threads single(1);
  to_tiles_async(rt, c, ldc, ct, hc, "C");
  unmqr_async(rt, op, f, ct, hc);
  rt.wait_all();   // errors surface before c is touched
  to_lapack_async(rt, ct, hc, c, ldc);
  rt.wait_all();
}

template void unmqr_async<float>(runtime&, trans, const qr_factors<float>&, tile_matrix<float>&,
                                 const tile_handles&);
template void unmqr_async<double>(runtime&, trans, const qr_factors<double>&, tile_matrix<double>&,
                                  const tile_handles&);
template void unmqr<float>(runtime&, trans, const qr_factors<float>&, int, float*, int);
template void unmqr<double>(runtime&, trans, const qr_factors<double>&, int, double*, int);

}  // namespace tessera::qr
