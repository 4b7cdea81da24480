// Deleting p columns at k (tessera/qr/update.hpp): R's columns right of the block move left by p,
// which leaves p subdiagonals in R(k:cols, k:cols - p). Only R's rows k .. cols and Q's columns
// k .. cols change, so the cost does not depend on the number of rows except through Q, and
// Q-less and thin-Q modes are enough.
//
// Two forms, as_rows chosen by the caller (deletes_by_rows, from measurements). The band's:
// structured Householder panels of (nb + p) x nb (the seed's Figure 7), or for one column a
// Givens sweep (band_retriangularize). The rows': with
// s = cols - k - p columns right of
// the block, R(k:k+p, k:k+s) is dense and R(k+p:cols, k:k+s) is the old R's trailing triangle, so
// moving the p dense rows below the triangle (and Q's columns and D's rows with them) leaves
// [triangle; p rows], which tp_retriangularize factors as inserting rows does: the same flops as
// the band's panels, and on the GPU one persistent kernel for all of R's panels instead of a
// launch or more a panel.
#include "update_state.hpp"

namespace tessera::qr::detail {

template <class B, class T>
void delete_columns(update_state<B, T>& st, int k, int p, int nb, bool as_rows) {
  auto& be = st.be;
  const int m = st.m, s = m - k - p;
  st.begin();
  move_back(be, lane_r, false, s, m, p, st.R(0, k), st.ldr, st.spare_r);
  be.zero(lane_r, st.rrows(), p, st.R(0, m - p), st.ldr);
  st.m = m - p;  // the band: columns [k, m - p), rows [0, m)
  if (!as_rows || s <= 0) {
    band_retriangularize(st, k, m, p, nb);
    // Rows m - p .. m of R are zero now; in thin and Q-less modes they and Q's columns, D's rows
    // past the new cols are no longer kept (D's were residual components).
    st.end();
    return;
  }
  // The dense rows to the panels' U (see tp_retriangularize), the triangle up into their place,
  // zeros below it.
  tp_workspace(st, s, p, nb);
  be.copy(lane_r, p, s, st.R(k, k), st.ldr, st.panels.data() + nb, nb + p);
  move_back(be, lane_r, true, s, s, p, st.R(k, k), st.ldr, st.spare_r);
  be.zero(lane_r, p, s, st.R(k + s, k), st.ldr);
  // D's rows and Q's columns in the same order: the dense rows' p aside, the triangle's moved up.
  T *d2 = nullptr, *q2 = nullptr;
  if (st.nrhs > 0) {
    be.ensure(st.spare_d, std::size_t(p) * st.nrhs);
    d2 = st.spare_d.data();
    be.copy(lane_r, p, st.nrhs, st.D(k, 0), st.ldd, d2, p);
    move_back(be, lane_r, true, s, st.nrhs, p, st.D(k, 0), st.ldd, st.in_b);
  }
  const bool q = st.mode != q_mode::none;
  if (q) {
    be.ensure(st.spare_q, std::size_t(st.n) * p);
    q2 = st.spare_q.data();
    be.copy(lane_q, st.n, p, st.Q(0, k), st.ldq, q2, st.n);
    // Q's columns are the most data here (rows x s): moved once, in pieces of p columns.
    move_back(be, lane_q, false, s, st.n, p, st.Q(0, k), st.ldq, st.xbuf, 64);
  }
  tp_retriangularize(st, s, p, nb, st.R(k, k), st.ldr, d2 ? st.D(k, 0) : nullptr, st.ldd, d2, p,
                     q ? st.Q(0, k) : nullptr, st.ldq, q2, st.n);
  // The set-aside rows' and columns' images follow the triangle's (with full Q; in thin and Q-less
  // modes they are residual components, no longer kept).
  if (st.mode == q_mode::full) {
    if (d2) {
      be.dep(lane_r, lane_d);  // D is done on lane R or lane D
      be.copy(lane_d, p, st.nrhs, d2, p, st.D(k + s, 0), st.ldd);
    }
    be.copy(lane_q, st.n, p, q2, st.n, st.Q(0, k + s), st.ldq);
  }
  st.end();
}

#define TESSERA_INST(B, T) template void delete_columns<B, T>(update_state<B, T>&, int, int, int, bool);
TESSERA_UPDATE_INSTANTIATE(TESSERA_INST)

}  // namespace tessera::qr::detail
