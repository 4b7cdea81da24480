// Deleting p rows at k (tessera/qr/update.hpp). With Z = Q(k:k+p, :), an orthogonal G with
// Z G = [D 0] (D diagonal +-1) and G^T R still triangular below its first p rows gives the new
// factors: Q's other rows and columns p.., R's rows p... G comes from Z alone: a blocked
// Householder QR compresses Z's columns beyond cols (where R's rows are zero, so R is untouched),
// then p Givens sweeps over Z's first cols + p columns, each adding one subdiagonal to R, so that
// rows p.. of R are triangular again. The rotations are made from Z first and applied to R, D and
// Q as GEMMs. Needs the full Q.
#include "update_state.hpp"

namespace tessera::qr::detail {

template <class B, class T>
void delete_rows(update_state<B, T>& st, int k, int p) {
  auto& be = st.be;
  const int n = st.n, m = st.m, pp = std::min(p, n - m), n2 = n - p;
  st.begin();
  // X = Z^T (n x p).
  be.ensure(st.xbuf, std::size_t(n) * p);
  T* X = st.xbuf.data();
  be.dep(lane_q, lane_r);
  be.transpose(lane_r, p, n, st.Q(k, 0), st.ldq, X, n);
  be.dep(lane_r, lane_q);
  householder_compress(st, n - m, p, X + m, n, m, m);
  kernels::givens_plan plan;
  plan.L = m + pp;
  plan.p = p;
  plan.base = m;
  plan.w = givens_block_width<B>(p);
  givens_targets tg;
  tg.off = 0;
  tg.col_min = 0;
  tg.col_end = m;
  tg.col_shift = 0;
  givens_update(st, plan, X, n, tg);
  // The new factors: Q without rows k..k+p and columns 0..p; R and D without rows 0..p. Dropping
  // leading rows or columns moves where the matrix starts in its buffer; of Q's rows, the part on
  // the smaller side of the deleted ones moves next to the other (through a buffer: the ranges
  // overlap), so at k = 0 or at the end nothing is copied.
  const int below = n - k - p;
  if (k > 0 && below > 0) {
    const int rows = std::min(k, below), from = k <= below ? 0 : k + p, to = k <= below ? p : k;
    be.ensure(st.spare_q, std::size_t(rows) * n2);
    be.copy(lane_q, rows, n2, st.Q(from, p), st.ldq, st.spare_q.data(), rows);
    be.copy(lane_q, rows, n2, st.spare_q.data(), rows, st.Q(to, p), st.ldq);
  }
  st.q0 += std::size_t(p) * st.ldq + (k <= below ? p : 0);
  st.r0 += p;
  st.d0 += p;
  st.n = n2;
  st.end();
}

#define TESSERA_INST(B, T) template void delete_rows<B, T>(update_state<B, T>&, int, int);
TESSERA_UPDATE_INSTANTIATE(TESSERA_INST)

}  // namespace tessera::qr::detail
