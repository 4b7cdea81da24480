#include "tessera/qr/ungqr.hpp"

#include <string>

#include "apply_q.hpp"
#include "detail.hpp"
#include "tessera/qr/blas_threads.hpp"
#include "tessera/qr/layout.hpp"

namespace tessera::qr {

template <class T>
void ungqr_async(runtime& rt, const qr_factors<T>& f, tile_matrix<T>& q, const tile_handles& hq) {
  constexpr const char* func = "ungqr";
  detail::require_applicable(func, rt, f, q, hq);
  if (q.n() > f.m())
    detail::invalid(func, "Q has " + std::to_string(q.n()) + " columns: at most m = " +
                              std::to_string(f.m()));
  set_identity_async(rt, q, hq);
  detail::insert_apply_q(rt, kernels::trans::no_trans, f, q, hq, true);
}

template <class T>
void ungqr(runtime& rt, const qr_factors<T>& f, q_shape shape, T* q, int ldq) {
  constexpr const char* func = "ungqr";
  detail::require_at_least(func, "ldq", ldq, f.m(), "m");
  if (!q) detail::invalid(func, "Q is null");
  tile_matrix<T> qt(f.m(), q_columns(f, shape), f.nb());
  const tile_handles hq = register_tiles(rt, qt);
  blas_threads single(1);
  ungqr_async(rt, f, qt, hq);
  to_lapack_async(rt, qt, hq, q, ldq);
  rt.wait_all();
}

template void ungqr_async<float>(runtime&, const qr_factors<float>&, tile_matrix<float>&, const tile_handles&);
template void ungqr_async<double>(runtime&, const qr_factors<double>&, tile_matrix<double>&, const tile_handles&);
template void ungqr<float>(runtime&, const qr_factors<float>&, q_shape, float*, int);
template void ungqr<double>(runtime&, const qr_factors<double>&, q_shape, double*, int);

}  // namespace tessera::qr
