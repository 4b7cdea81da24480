// Deleting p columns at k (tessera/qr/update.hpp): R's columns right of the block move left by p,
// which leaves p subdiagonals in R(k:cols, k:cols - p); structured Householder panels of
// (nb + p) x nb make it triangular again (the seed's Figure 7). Only R's rows k .. cols and Q's
// columns k .. cols change, so the cost does not depend on the number of rows except through Q,
// and Q-less and thin-Q modes are enough.
#include "update_state.hpp"

namespace tessera::qr::detail {

template <class B, class T>
void delete_columns(update_state<B, T>& st, int k, int p, int nb) {
  auto& be = st.be;
  const int m = st.m, right = m - k - p;
  st.begin();
  if (right > 0 && right <= 4 * p) {
    // The columns right of the block, moved left p at a time from the left: each piece's source
    // and destination are p columns apart, so they do not overlap.
    for (int c = 0; c < right; c += p)
      be.copy(lane_r, m, std::min(p, right - c), st.R(0, k + p + c), st.ldr, st.R(0, k + c), st.ldr);
  } else if (right > 0) {
    // Many narrow pieces would cost more than a round trip through a buffer.
    be.ensure(st.spare_r, std::size_t(m) * right);
    be.copy(lane_r, m, right, st.R(0, k + p), st.ldr, st.spare_r.data(), m);
    be.copy(lane_r, m, right, st.spare_r.data(), m, st.R(0, k), st.ldr);
  }
  be.zero(lane_r, st.rrows(), p, st.R(0, m - p), st.ldr);
  st.m = m - p;  // the band: columns [k, m - p), rows [0, m)
  band_retriangularize(st, k, m, p, nb);
  // Rows m - p .. m of R are zero now; in thin and Q-less modes they and Q's columns, D's rows
  // past the new cols are no longer kept (D's were residual components).
  st.end();
}

#define TESSERA_INST(B, T) template void delete_columns<B, T>(update_state<B, T>&, int, int, int);
TESSERA_UPDATE_INSTANTIATE(TESSERA_INST)

}  // namespace tessera::qr::detail
