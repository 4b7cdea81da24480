#pragma once
// The insertion loop shared by unmqr (C := op(Q) C), ungqr (Q := Q I) and gels: the update half
// of tile QR replayed on another matrix, by the same task inserters as the factorization.
#include <algorithm>
#include <string>

#include "detail.hpp"
#include "geqrf_tasks.hpp"
#include "tessera/kernels_cpu.hpp"
#include "tessera/qr/geqrf.hpp"

namespace tessera::qr::detail {

template <class T>
void require_applicable(const char* func, runtime& rt, const qr_factors<T>& f,
                        const tile_matrix<T>& c, const tile_handles& hc) {
  if (f.owner() != &rt) invalid(func, "the factors were made for another runtime");
  if (!c.data()) invalid(func, "C is empty");
  if (c.m() != f.m())
    invalid(func, "C has " + std::to_string(c.m()) + " rows, Q is " + std::to_string(f.m()) +
                      " x " + std::to_string(f.m()));
  if (c.mb() != f.nb())
    invalid(func, "C's tiles have " + std::to_string(c.mb()) + " rows, A's " +
                      std::to_string(f.nb()));
  if (hc.mt() != c.mt() || hc.nt() != c.nt()) invalid(func, "C's handles are not those of C");
}

// op == trans: steps k = 0.. in order, each ORMQR on C's tile row k then TSMQR down the rows.
// op == no_trans: the reverse. identity: C started as the identity, so a column tile whose
// columns all lie left of step k's rows is still zero there and the step leaves it alone.
template <class T>
void insert_apply_q(runtime& rt, kernels::trans op, const qr_factors<T>& f, tile_matrix<T>& c,
                    const tile_handles& hc, bool identity) {
  tile_reflector_tasks<T> reflect(rt, f);
  const int mt = f.mt(), kt = f.kt(), nb = f.nb(), ct = c.nt();
  const bool forward = op == kernels::trans::trans;
  auto first_column = [&](int k) {
    if (!identity) return 0;
    int j = 0;
    while (j < ct && std::size_t(j + 1) * c.nb() <= std::size_t(k) * nb) ++j;
    return j;
  };
  auto step = [&](int k) {
    const int priority = forward ? kt - k : k;
    if (forward)
      for (int j = first_column(k); j < ct; ++j) reflect.ormqr(op, c, hc, k, j, priority);
    for (int i = forward ? k + 1 : mt - 1; forward ? i < mt : i > k; i += forward ? 1 : -1)
      for (int j = first_column(k); j < ct; ++j) reflect.tsmqr(op, c, hc, k, i, j, priority);
    if (!forward)
      for (int j = first_column(k); j < ct; ++j) reflect.ormqr(op, c, hc, k, j, priority);
  };
  if (forward)
    for (int k = 0; k < kt; ++k) step(k);
  else
    for (int k = kt - 1; k >= 0; --k) step(k);
}

}  // namespace tessera::qr::detail
