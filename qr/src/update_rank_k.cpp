// A := A + U V^T (tessera/qr/update.hpp), qrupdate's qr1up in blocks. W = Q^T U: a blocked
// Householder QR compresses its rows below cols (R is zero there), r Givens sweeps bring the
// rest to an r x r triangle in rows 0..r (each sweep adds a subdiagonal to R), then
// R(0:r, :) += W(0:r, :) V^T and the band of r subdiagonals is made triangular again, as for
// deleting columns: where W had r rows below m (L = m + r), R's rows r .. m + r are an m x m
// triangle under r dense rows, which as_rows takes as inserted rows (rows_retriangularize, panels
// of nb_rows); otherwise (n - m < r) by (nb + r) x nb Householder panels (r = 1: R is upper
// Hessenberg, and one Givens sweep does it, as in qrupdate's qr1up). Needs the full Q.
#include "update_state.hpp"

namespace tessera::qr::detail {

template <class B, class T>
void rank_update(update_state<B, T>& st, const T* u, int ldu, const T* v, int ldv, int r, bool as_rows,
                 int nb_rows) {
  auto& be = st.be;
  const int n = st.n, m = st.m, pp = std::min(r, n - m), L = m + pp;
  st.begin();
  be.ensure(st.in_u, std::size_t(n) * r);
  be.upload(lane_r, n, r, u, ldu, st.in_u.data(), n);
  be.ensure(st.in_v, std::size_t(m) * r);
  be.upload(lane_r, m, r, v, ldv, st.in_v.data(), m);
  be.ensure(st.xbuf, std::size_t(n) * r);
  T* W = st.xbuf.data();
  be.dep(lane_q, lane_r);
  be.gemm(lane_r, 'T', 'N', n, r, n, T(1), st.Q(0, 0), st.ldq, st.in_u.data(), n, T(0), W, n);
  be.dep(lane_r, lane_q);
  householder_compress(st, n - m, r, W + m, n, m, m);
  kernels::givens_plan plan;
  plan.L = L;
  plan.p = r;
  plan.base = m;
  plan.w = givens_block_width<B>(r);
  givens_targets tg;
  tg.off = 0;
  tg.col_min = 0;
  tg.col_end = m;
  tg.col_shift = 0;
  // As rows, Q takes the sweeps' last group once the chain is enqueued (rows_retriangularize).
  const bool rows = as_rows && pp == r;
  givens_rest q_rest, rd_rest;
  // And where the GPU's chain kernel takes them, the last group's products on R and D, R's rank
  // product below and the rows' moves are its prologue: each slab's thread block does its own
  // columns before its panels, beside the chain, where lane R had them in line before the chain
  // (the products alone 0.55-0.59 ms of a 5.2 ms rank-64 update of 8000 x 3000 on the H200,
  // docs/results/2026-11-29-givens-blocks-apply-h200.md).
  const bool fuse = rows && nb_rows == 32 && B::template tp_chain_prologue_runs<T>(r);
  givens_update(st, plan, W, n, tg, rows ? &q_rest : nullptr, fuse ? &rd_rest : nullptr);
  // W is upper triangular now: R(0:rr, :) += W(0:rr, 0:r) V^T.
  const int rr = std::min(r, L);
  if (rd_rest.pending) {
    kernels::rank_band_steps<T> pro;
    pro.plan = rd_rest.sub;
    pro.S = st.S.data();
    pro.roff = rd_rest.roff;
    pro.cshift = tg.col_shift - plan.p;
    pro.W = W;
    pro.ldw = n;
    pro.rw = rr;
    pro.V = st.in_v.data();
    pro.ldv = m;
    pro.k = r;
    rows_retriangularize(st, 0, m, r, nb_rows, 0, &q_rest, &pro);
  } else {
    be.gemm(lane_r, 'N', 'T', rr, m, r, T(1), W, n, st.in_v.data(), m, T(1), st.R(0, 0), st.ldr);
    if (rows) rows_retriangularize(st, 0, m, r, nb_rows, 0, &q_rest);
    else band_retriangularize(st, 0, L, std::min(r, L - 1), st.nb);
  }
  st.end();
}

#define TESSERA_INST(B, T) \
  template void rank_update<B, T>(update_state<B, T>&, const T*, int, const T*, int, int, bool, int);
TESSERA_UPDATE_INSTANTIATE(TESSERA_INST)

}  // namespace tessera::qr::detail
