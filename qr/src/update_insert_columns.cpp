// Inserting p columns U before column k (tessera/qr/update.hpp). W = Q^T U; its rows below cols
// lie where R is zero, so one blocked Householder QR compresses them into p rows (touching Q's
// last rows - cols columns and D, never R); the rest of W, now rows [k, cols + p) of the new
// columns, is made triangular by p Givens sweeps from the bottom. Householder there would fill
// R's columns right of the block; each Givens sweep adds one subdiagonal to them, and since they
// sit p columns to the right that is exactly the new R's diagonal: R stays triangular. The
// rotations depend on W alone, so they are made first and applied to R, D and Q as GEMMs.
// Needs the full Q (W's part outside range(A)).
#include "update_state.hpp"

namespace tessera::qr::detail {

template <class B, class T>
void insert_columns(update_state<B, T>& st, int k, const T* u, int ldu, int p) {
  auto& be = st.be;
  const int n = st.n, m = st.m, m2 = m + p, pp = std::min(p, n - m);
  st.begin();
  be.ensure(st.in_u, std::size_t(n) * p);
  be.upload(lane_r, n, p, u, ldu, st.in_u.data(), n);
  // W = Q^T U (n x p) in xbuf.
  be.ensure(st.xbuf, std::size_t(n) * p);
  T* W = st.xbuf.data();
  be.dep(lane_q, lane_r);
  be.gemm(lane_r, 'T', 'N', n, p, n, T(1), st.Q(0, 0), st.ldq, st.in_u.data(), n, T(0), W, n);
  be.dep(lane_r, lane_q);  // Q is read before lane Q changes it
  householder_compress(st, n - m, p, W + m, n, m, m);
  // R' = [R(:, 0:k) W(0:m+pp) R(:, k:m)], n x (m + p).
  be.ensure(st.spare_r, std::size_t(n) * m2);
  T* r2 = st.spare_r.data();
  be.zero(lane_r, n, m2, r2, n);
  be.copy(lane_r, m, k, st.R(0, 0), st.ldr, r2, n);
  be.copy(lane_r, m + pp, p, W, n, r2 + std::size_t(k) * n, n);
  be.copy(lane_r, m, m - k, st.R(0, k), st.ldr, r2 + std::size_t(k + p) * n, n);
  st.adopt_r(n);
  st.m = m2;
  // The strip: rows [k, m + pp) of the new columns; column j is nonzero down to row m + j.
  kernels::givens_plan plan;
  plan.L = m + pp - k;
  plan.p = p;
  plan.base = m - k;
  plan.w = givens_block_width<B>(p);
  givens_targets tg;
  tg.off = k;
  tg.col_min = k + p;
  tg.col_end = m2;
  tg.col_shift = p;
  givens_update(st, plan, st.R(k, k), st.ldr, tg);
  st.end();
}

#define TESSERA_INST(B, T) \
  template void insert_columns<B, T>(update_state<B, T>&, int, const T*, int, int);
TESSERA_UPDATE_INSTANTIATE(TESSERA_INST)

}  // namespace tessera::qr::detail
