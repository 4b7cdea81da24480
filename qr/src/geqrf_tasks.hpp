#pragma once
// The CPU tasks of tile QR: the factorization's four (geqrf.cpp, geqrf_hybrid.cpp) and the
// reflector updates that apply_q.hpp reuses on other matrices.
#include <algorithm>
#include <cstring>

#include "detail.hpp"
#include "tessera/kernels_cpu.hpp"
#include "tessera/qr/geqrf.hpp"

namespace tessera::qr::detail {

// The update half of tile QR as tasks: the reflectors of panel step k (GEQRT's on the diagonal
// tile, TSQRT's below it) applied to the tiles of any matrix C tiled like A (C = A itself while
// factoring; another matrix for apply_q, ungqr and least squares).
template <class T>
class tile_reflector_tasks {
 public:
  // V of diagonal tile k is read from (v, hv) when given (geqrf_options::split_diagonal), else
  // from A's tile.
  tile_reflector_tasks(runtime& rt, const qr_factors<T>& f, const tile_matrix<T>* v = nullptr,
                       const tile_handles* hv = nullptr)
      : _rt(rt), _a(f.a()), _t(f.t()), _ha(f.ha()), _ht(f.ht()), _v(v), _hv(hv), _nb(f.nb()), _ib(f.ib()) {}

  handle v_handle(int k) const { return _v ? (*_hv)(k, 0) : _ha(k, k); }

  // C(k, j) := op(Q_kk) C(k, j). check: first touch of C's tile, verify it is finite.
  void ormqr(kernels::trans op, tile_matrix<T>& c, const tile_handles& hc, int k, int j, int priority,
             bool check = false) {
    const int mk = _a.tile_rows(k), kk = std::min(mk, _a.tile_cols(k)), nj = c.tile_cols(j), ib = _ib;
    const T* v = _v ? _v->tile(k, 0) : _a.tile(k, k);
    const T* tkk = _t.tile(k, k);
    T* ckj = c.tile(k, j);
    const int r0 = k * _nb, c0 = j * c.nb();
    _rt.task([=](task_context& ctx) {
          if (check) require_finite_block("A", mk, nj, ckj, mk, r0, c0);
          kernels::core_ormqr(kernels::side::left, op, mk, nj, kk, ib, v, mk, tkk, ib, ckj, mk,
                              static_cast<T*>(ctx.scratch(0)));
        })
        .read(v_handle(k))
        .read(_ht(k, k))
        .read_write(hc(k, j))
        .scratch(work(c))
        .priority(priority)
        .locality(hc(k, j))
        .label("ormqr")
        .color(color_ormqr)
        .submit();
  }

  // [C(k, j); C(i, j)] := op(Q_ik) [C(k, j); C(i, j)], Q_ik from TSQRT(k, i).
  void tsmqr(kernels::trans op, tile_matrix<T>& c, const tile_handles& hc, int k, int i, int j, int priority,
             bool check = false) {
    const int mk = _a.tile_rows(k), nk = _a.tile_cols(k), mi = _a.tile_rows(i), nj = c.tile_cols(j), ib = _ib;
    T* ckj = c.tile(k, j);
    T* cij = c.tile(i, j);
    const T* v = _a.tile(i, k);
    const T* tik = _t.tile(i, k);
    const int ri = i * _nb, cj = j * c.nb();
    _rt.task([=](task_context& ctx) {
          if (check) require_finite_block("A", mi, nj, cij, mi, ri, cj);
          kernels::core_tsmqr(kernels::side::left, op, mk, nj, mi, nj, nk, ib, ckj, mk, cij, mi, v, mi, tik, ib,
                              static_cast<T*>(ctx.scratch(0)));
        })
        .read_write(hc(k, j))
        .read_write(hc(i, j))
        .read(_ha(i, k))
        .read(_ht(i, k))
        .scratch(work(c))
        .priority(priority)
        .locality(hc(i, j))
        .label("tsmqr")
        .color(color_tsmqr)
        .submit();
  }

 private:
  std::size_t work(const tile_matrix<T>& c) const {
    return kernels::core_workspace_size(std::max(_nb, c.nb()), _ib) * sizeof(T);
  }

  runtime& _rt;
  const tile_matrix<T>& _a;
  const tile_matrix<T>& _t;
  const tile_handles& _ha;
  const tile_handles& _ht;
  const tile_matrix<T>* _v;
  const tile_handles* _hv;
  int _nb, _ib;
};

// The four tasks of factoring by tiles, one insertion call each, so that the factorization loops
// (CPU: geqrf.cpp, CPUs + GPU: geqrf_hybrid.cpp) read like the seed's Figure 5.
template <class T>
class tile_qr_tasks {
 public:
  tile_qr_tasks(runtime& rt, qr_factors<T>& f, bool split_diagonal)
      : _rt(rt), _f(f), _a(f.a()), _t(f.t()), _ha(f.ha()), _ht(f.ht()), _nb(f.nb()), _ib(f.ib()), _nt(f.nt()),
        _work(kernels::core_workspace_size(f.nb(), f.ib()) * sizeof(T)),
        _update(rt, f, split_diagonal ? &f.v_copies() : nullptr, split_diagonal ? &f.hv() : nullptr),
        _split(split_diagonal) {}

  // Priorities follow the critical path: a task updating tile column j gets 2 (nt - j); the panel
  // of step k one more than the updates of column k.
  int panel_priority(int k) const { return 2 * (_nt - k) + 1; }

  // The handle whose tile holds V of the diagonal tile k (its copy when split).
  handle v_handle(int k) const { return _update.v_handle(k); }

  void geqrt(int k) {
    const int mk = _a.tile_rows(k), nk = _a.tile_cols(k), ib = _ib;
    T* akk = _a.tile(k, k);
    T* tkk = _t.tile(k, k);
    T* vk = _split ? _f.v_copies().tile(k, 0) : nullptr;
    auto b = _rt.task([=](task_context& ctx) {
      if (k == 0) require_finite_block("A", mk, nk, akk, mk, 0, 0);
      kernels::core_geqrt(mk, nk, ib, akk, mk, tkk, ib, static_cast<T*>(ctx.scratch(0)));
      if (vk) std::memcpy(vk, akk, sizeof(T) * std::size_t(mk) * nk);
    });
    b.read_write(_ha(k, k)).write(_ht(k, k));
    if (_split) b.write(v_handle(k));
    b.scratch(_work).priority(panel_priority(k)).locality(_ha(k, k)).label("geqrt").color(color_geqrt).submit();
  }

  // The first touch of every tile (step 0) checks that it is finite, so factoring tiles that did
  // not come through to_tiles_async gets the same validation, for one pass over each tile.
  void ormqr(int k, int j) { _update.ormqr(kernels::trans::trans, _a, _ha, k, j, 2 * (_nt - j), k == 0); }

  // Below the diagonal, tile row k is full (mk == nb >= nk): A_kk's R is nk x nk.
  void tsqrt(int k, int i) {
    const int mk = _a.tile_rows(k), nk = _a.tile_cols(k), mi = _a.tile_rows(i), ib = _ib;
    T* akk = _a.tile(k, k);
    T* aik = _a.tile(i, k);
    T* tik = _t.tile(i, k);
    const int ri = i * _nb, ck = k * _nb;
    _rt.task([=](task_context& ctx) {
          if (k == 0) require_finite_block("A", mi, nk, aik, mi, ri, ck);
          kernels::core_tsqrt(mi, nk, ib, akk, mk, aik, mi, tik, ib, static_cast<T*>(ctx.scratch(0)));
        })
        .read_write(_ha(k, k))
        .read_write(_ha(i, k))
        .write(_ht(i, k))
        .scratch(_work)
        .priority(panel_priority(k))
        .locality(_ha(k, k))
        .label("tsqrt")
        .color(color_tsqrt)
        .submit();
  }

  void tsmqr(int k, int i, int j) { _update.tsmqr(kernels::trans::trans, _a, _ha, k, i, j, 2 * (_nt - j), k == 0); }

 private:
  runtime& _rt;
  qr_factors<T>& _f;
  tile_matrix<T>& _a;
  tile_matrix<T>& _t;
  const tile_handles& _ha;
  const tile_handles& _ht;
  int _nb, _ib, _nt;
  std::size_t _work;
  tile_reflector_tasks<T> _update;
  bool _split;
};

}  // namespace tessera::qr::detail
