#include "tessera/qr/geqrf.hpp"

#include <algorithm>

#include "detail.hpp"
#include "geqrf_tasks.hpp"
#include "tessera/qr/blas_threads.hpp"
#include "tessera/qr/layout.hpp"

namespace tessera::qr {

template <class T>
qr_factors<T>::qr_factors(runtime& rt, int m, int n, int nb, int ib, tile_allocator alloc) : _rt(&rt) {
  constexpr const char* func = "qr_factors";
  detail::require_at_least(func, "m", m, 1);
  detail::require_at_least(func, "n", n, 1);
  detail::require_ib(func, nb, ib);
  _a = tile_matrix<T>(m, n, nb, alloc);
  _t = tile_matrix<T>(_a.mt() * ib, n, ib, nb, alloc);
  // The kernels write only the triangles of T's ib x ib blocks: zeros elsewhere keep the factors
  // deterministic bytes (comparisons, transfers), for 1/(nb/ib) of A's size.
  std::fill_n(_t.data(), _t.size(), T(0));
  _ha = register_tiles(rt, _a);
  _ht = register_tiles(rt, _t);
}

template <class T>
tile_matrix<T>& qr_factors<T>::v_copies() {
  if (!_v.data()) {
    // Tile (k, 0) has tile row k's rows and nb >= tile_cols(k) columns.
    _v = tile_matrix<T>(std::min(_a.m(), kt() * nb()), nb(), nb());
    _hv = register_tiles(*_rt, _v);
  }
  return _v;
}

template <class T>
const tile_handles& qr_factors<T>::hv() {
  v_copies();
  return _hv;
}

// PLASMA's flat-tree tile QR, the seed's Figure 5a; the task bodies, accesses and priorities are
// in geqrf_tasks.hpp, shared with the hybrid loop.
template <class T>
void geqrf_async(runtime& rt, qr_factors<T>& f, const geqrf_options& options) {
  if (&rt != f.owner()) detail::invalid("geqrf", "the factors were made for another runtime");
  detail::tile_qr_tasks<T> task(rt, f, options.split_diagonal);
  for (int k = 0; k < f.kt(); ++k) {
    task.geqrt(k);
    for (int j = k + 1; j < f.nt(); ++j) task.ormqr(k, j);
    for (int i = k + 1; i < f.mt(); ++i) {
      task.tsqrt(k, i);
      for (int j = k + 1; j < f.nt(); ++j) task.tsmqr(k, i, j);
    }
  }
}

template <class T>
qr_factors<T> geqrf(runtime& rt, int m, int n, const T* a, int lda, int nb, int ib,
                    const geqrf_options& options) {
  constexpr const char* func = "geqrf";
  detail::require_at_least(func, "m", m, 1);
  detail::require_at_least(func, "n", n, 1);
  detail::require_at_least(func, "lda", lda, m, "m");
  detail::require_ib(func, nb, ib);
  if (!a) detail::invalid(func, "A is null");
  qr_factors<T> f(rt, m, n, nb, ib);
  blas_threads single(1);
  to_tiles_async(rt, a, lda, f.a(), f.ha(), "A");
  geqrf_async(rt, f, options);
  rt.wait_all();
  return f;
}

template class qr_factors<float>;
template class qr_factors<double>;
template void geqrf_async<float>(runtime&, qr_factors<float>&, const geqrf_options&);
template void geqrf_async<double>(runtime&, qr_factors<double>&, const geqrf_options&);
template qr_factors<float> geqrf<float>(runtime&, int, int, const float*, int, int, int, const geqrf_options&);
template qr_factors<double> geqrf<double>(runtime&, int, int, const double*, int, int, int, const geqrf_options&);

}  // namespace tessera::qr
