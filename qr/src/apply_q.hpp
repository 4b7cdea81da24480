#pragma once
// The insertion loop shared by unmqr (C := op(Q) C) and ungqr (Q := Q I): the update half of
// tile QR replayed on another matrix.
#include <algorithm>
#include <string>

#include "detail.hpp"
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
                    const tile_handles& hc, bool identity, std::atomic<std::uint64_t>* progress) {
  using kernels::side;
  const tile_matrix<T>& A = f.a();
  const tile_matrix<T>& Tf = f.t();
  const tile_handles& ha = f.ha();
  const tile_handles& ht = f.ht();
  const int mt = A.mt(), kt = f.kt(), nb = f.nb(), ib = f.ib(), ct = c.nt();
  const std::size_t work = kernels::core_workspace_size(std::max(nb, c.nb()), ib) * sizeof(T);
  const bool forward = op == kernels::trans::trans;

  auto first_column = [&](int k) {
    if (!identity) return 0;
    int j = 0;
    while (j < ct && std::size_t(j + 1) * c.nb() <= std::size_t(k) * nb) ++j;
    return j;
  };
  auto ormqr = [&](int k) {
    const int mk = A.tile_rows(k), kk = std::min(mk, A.tile_cols(k));
    const T* v = A.tile(k, k);
    const T* tkk = Tf.tile(k, k);
    for (int j = first_column(k); j < ct; ++j) {
      const int nj = c.tile_cols(j);
      T* ckj = c.tile(k, j);
      rt.task([=](task_context& ctx) {
            kernels::core_ormqr(side::left, op, mk, nj, kk, ib, v, mk, tkk, ib, ckj, mk,
                                static_cast<T*>(ctx.scratch(0)));
            tick(progress);
          })
          .read(ha(k, k))
          .read(ht(k, k))
          .read_write(hc(k, j))
          .scratch(work)
          .priority(forward ? kt - k : k)
          .locality(hc(k, j))
          .label("ormqr")
          .color(color_ormqr)
          .submit();
    }
  };
  auto tsmqr = [&](int k, int i) {
    const int mk = A.tile_rows(k), nk = A.tile_cols(k), mi = A.tile_rows(i);
    const T* v = A.tile(i, k);
    const T* tik = Tf.tile(i, k);
    for (int j = first_column(k); j < ct; ++j) {
      const int nj = c.tile_cols(j);
      T* ckj = c.tile(k, j);
      T* cij = c.tile(i, j);
      rt.task([=](task_context& ctx) {
            kernels::core_tsmqr(side::left, op, mk, nj, mi, nj, nk, ib, ckj, mk, cij, mi, v, mi,
                                tik, ib, static_cast<T*>(ctx.scratch(0)));
            tick(progress);
          })
          .read_write(hc(k, j))
          .read_write(hc(i, j))
          .read(ha(i, k))
          .read(ht(i, k))
          .scratch(work)
          .priority(forward ? kt - k : k)
          .locality(hc(i, j))
          .label("tsmqr")
          .color(color_tsmqr)
          .submit();
    }
  };

  if (forward) {
    for (int k = 0; k < kt; ++k) {
      ormqr(k);
      for (int i = k + 1; i < mt; ++i) tsmqr(k, i);
    }
  } else {
    for (int k = kt - 1; k >= 0; --k) {
      for (int i = mt - 1; i > k; --i) tsmqr(k, i);
      ormqr(k);
    }
  }
}

}  // namespace tessera::qr::detail
