// Deleting p columns at k (tessera/qr/update.hpp): R's columns right of the block move left by p,
// which leaves p subdiagonals in R(k:cols, k:cols - p). Only R's rows k .. cols and Q's columns
// k .. cols change, so the cost does not depend on the number of rows except through Q, and
// Q-less and thin-Q modes are enough.
//
// Two forms, as_rows chosen by the caller (retriangularize_as_rows, from measurements). The band's:
// structured Householder panels of (nb + p) x nb (the seed's Figure 7), or for one column a
// Givens sweep (band_retriangularize). The rows': with
// s = cols - k - p columns right of
// the block, R(k:k+p, k:k+s) is dense and R(k+p:cols, k:k+s) is the old R's trailing triangle:
// rows_retriangularize's [p dense rows; triangle]. There R's columns right of the block move left
// only above row k; the triangle moves up and left in one in-place pass (shift_in_place).
#include "update_state.hpp"

namespace tessera::qr::detail {

template <class B, class T>
void delete_columns(update_state<B, T>& st, int k, int p, int nb, bool as_rows) {
  auto& be = st.be;
  const int m = st.m, s = m - k - p;
  st.begin();
  if (as_rows && s > 0 && shift_in_place(s, p)) {
    // Only the rows above k move left here; the rest moves with the triangle.
    const int rows = st.rrows();
    move_back(be, lane_r, false, s, k, p, st.R(0, k), st.ldr, st.spare_r);
    st.m = m - p;
    rows_retriangularize(st, k, s, p, nb, p);
    be.zero(lane_r, rows, p, st.R(0, m - p), st.ldr);  // after: the triangle's move read them
    st.end();
    return;
  }
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
  rows_retriangularize(st, k, s, p, nb);
  st.end();
}

#define TESSERA_INST(B, T) template void delete_columns<B, T>(update_state<B, T>&, int, int, int, bool);
TESSERA_UPDATE_INSTANTIATE(TESSERA_INST)

}  // namespace tessera::qr::detail
