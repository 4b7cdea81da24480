#pragma once
// The four CPU tasks of tile QR, one insertion call each, so that the factorization loops (CPU:
// geqrf.cpp, CPUs + GPU: geqrf_hybrid.cpp) read like the seed's Figure 5.
#include <algorithm>
#include <cstring>

#include "detail.hpp"
#include "tessera/kernels_cpu.hpp"
#include "tessera/qr/geqrf.hpp"

namespace tessera::qr::detail {

template <class T>
class tile_qr_tasks {
 public:
  tile_qr_tasks(runtime& rt, qr_factors<T>& f, bool split_diagonal, std::atomic<std::uint64_t>* progress)
      : _rt(rt), _a(f.a()), _t(f.t()), _ha(f.ha()), _ht(f.ht()), _nb(f.nb()), _ib(f.ib()), _nt(f.nt()),
        _work(kernels::core_workspace_size(f.nb(), f.ib()) * sizeof(T)), _progress(progress) {
    if (split_diagonal) {
      _v = &f.v_copies();
      _hv = &f.hv();
    }
  }

  // Priorities follow the critical path: a task updating tile column j gets 2 (nt - j); the panel
  // of step k one more than the updates of column k.
  int panel_priority(int k) const { return 2 * (_nt - k) + 1; }

  // The handle whose tile holds V of the diagonal tile k (its copy when split).
  handle v_handle(int k) const { return _v ? (*_hv)(k, 0) : _ha(k, k); }
  const T* v_tile(int k) const { return _v ? _v->tile(k, 0) : _a.tile(k, k); }

  void geqrt(int k) {
    const int mk = _a.tile_rows(k), nk = _a.tile_cols(k), ib = _ib;
    T* akk = _a.tile(k, k);
    T* tkk = _t.tile(k, k);
    T* vk = _v ? _v->tile(k, 0) : nullptr;
    auto* progress = _progress;
    auto b = _rt.task([=](task_context& ctx) {
      if (k == 0) check_tile(akk, mk, nk, 0, 0);
      kernels::core_geqrt(mk, nk, ib, akk, mk, tkk, ib, static_cast<T*>(ctx.scratch(0)));
      if (vk) std::memcpy(vk, akk, sizeof(T) * std::size_t(mk) * nk);
      tick(progress);
    });
    b.read_write(_ha(k, k)).write(_ht(k, k));
    if (_v) b.write(v_handle(k));
    b.scratch(_work).priority(panel_priority(k)).locality(_ha(k, k)).label("geqrt").color(color_geqrt).submit();
  }

  void ormqr(int k, int j) {
    const int mk = _a.tile_rows(k), nk = _a.tile_cols(k), kk = std::min(mk, nk), nj = _a.tile_cols(j), ib = _ib;
    const T* v = v_tile(k);
    const T* tkk = _t.tile(k, k);
    T* akj = _a.tile(k, j);
    const int r0 = k * _nb, c0 = j * _nb;
    auto* progress = _progress;
    _rt.task([=](task_context& ctx) {
          if (k == 0) check_tile(akj, mk, nj, r0, c0);
          kernels::core_ormqr(kernels::side::left, kernels::trans::trans, mk, nj, kk, ib, v, mk, tkk, ib, akj, mk,
                              static_cast<T*>(ctx.scratch(0)));
          tick(progress);
        })
        .read(v_handle(k))
        .read(_ht(k, k))
        .read_write(_ha(k, j))
        .scratch(_work)
        .priority(2 * (_nt - j))
        .locality(_ha(k, j))
        .label("ormqr")
        .color(color_ormqr)
        .submit();
  }

  // Below the diagonal, tile row k is full (mk == nb >= nk): A_kk's R is nk x nk.
  void tsqrt(int k, int i) {
    const int mk = _a.tile_rows(k), nk = _a.tile_cols(k), mi = _a.tile_rows(i), ib = _ib;
    T* akk = _a.tile(k, k);
    T* aik = _a.tile(i, k);
    T* tik = _t.tile(i, k);
    const int ri = i * _nb, ck = k * _nb;
    auto* progress = _progress;
    _rt.task([=](task_context& ctx) {
          if (k == 0) check_tile(aik, mi, nk, ri, ck);
          kernels::core_tsqrt(mi, nk, ib, akk, mk, aik, mi, tik, ib, static_cast<T*>(ctx.scratch(0)));
          tick(progress);
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

  void tsmqr(int k, int i, int j) {
    const int mk = _a.tile_rows(k), nk = _a.tile_cols(k), mi = _a.tile_rows(i), nj = _a.tile_cols(j), ib = _ib;
    T* akj = _a.tile(k, j);
    T* aij = _a.tile(i, j);
    const T* aik = _a.tile(i, k);
    const T* tik = _t.tile(i, k);
    const int ri = i * _nb, cj = j * _nb;
    auto* progress = _progress;
    _rt.task([=](task_context& ctx) {
          if (k == 0) check_tile(aij, mi, nj, ri, cj);
          kernels::core_tsmqr(kernels::side::left, kernels::trans::trans, mk, nj, mi, nj, nk, ib, akj, mk, aij, mi,
                              aik, mi, tik, ib, static_cast<T*>(ctx.scratch(0)));
          tick(progress);
        })
        .read_write(_ha(k, j))
        .read_write(_ha(i, j))
        .read(_ha(i, k))
        .read(_ht(i, k))
        .scratch(_work)
        .priority(2 * (_nt - j))
        .locality(_ha(i, j))
        .label("tsmqr")
        .color(color_tsmqr)
        .submit();
  }

 private:
  // The first touch of every tile (step 0) checks that it is finite, so factoring tiles that did
  // not come through to_tiles_async gets the same validation, for one pass over each tile.
  static void check_tile(const T* tile, int rows, int cols, int r0, int c0) {
    require_finite_block("A", rows, cols, tile, rows, r0, c0);
  }

  runtime& _rt;
  tile_matrix<T>& _a;
  tile_matrix<T>& _t;
  const tile_handles& _ha;
  const tile_handles& _ht;
  tile_matrix<T>* _v = nullptr;
  const tile_handles* _hv = nullptr;
  int _nb, _ib, _nt;
  std::size_t _work;
  std::atomic<std::uint64_t>* _progress;
};

}  // namespace tessera::qr::detail
