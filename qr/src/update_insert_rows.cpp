// Inserting p rows U at k (tessera/qr/update.hpp): [R; U] is brought back to triangular form by
// Householder panels whose vectors are [I; 0; v] (the seed's structure, LAPACK TPQRT with l = 0):
// each panel touches nb rows of R and the p new rows only. Q (full or thin) gets the new rows at
// k and p new columns of the identity at its end, which the panels then mix in; in Q-less mode
// the position k does not matter (a row permutation of A leaves R as it is).
#include "update_state.hpp"

namespace tessera::qr::detail {

template <class B, class T>
void insert_rows(update_state<B, T>& st, int k, const T* u, int ldu, int p, const T* bu, int ldbu, int nb) {
  auto& be = st.be;
  const int n = st.n, m = st.m, n2 = n + p;
  st.begin();
  const bool full = st.mode == q_mode::full;
  // Q' = [Q(0:k) 0; 0 I; Q(k:n) 0]: the extra columns at qc (n for full Q, cols for thin).
  const int qc = st.qcols();
  if (qc > 0) {
    be.ensure(st.spare_q, std::size_t(n2) * (qc + p));
    T* q2 = st.spare_q.data();
    // Each element written once (full Q at n = 14000 is 1.6 GB: a zeroing pass first cost as much
    // as the copy): Q's rows, the zero rows between them, and the new columns [0; I; 0].
    T* q2e = q2 + std::size_t(qc) * n2;
    be.copy(lane_q, k, qc, st.Q(0, 0), st.ldq, q2, n2);
    be.zero(lane_q, p, qc, q2 + k, n2);
    be.copy(lane_q, n - k, qc, st.Q(k, 0), st.ldq, q2 + k + p, n2);
    be.zero(lane_q, k, p, q2e, n2);
    be.identity(lane_q, p, q2e + k, n2);
    be.zero(lane_q, n - k, p, q2e + k + p, n2);
    st.adopt_q(n2);
  }
  // D' = [D; BU]: the new right-hand sides below D (full: D's own rows; else a separate block).
  T* dnew = nullptr;
  int lddnew = 1;
  if (st.nrhs > 0) {
    if (full) {
      be.ensure(st.spare_d, std::size_t(n2) * st.nrhs);
      be.copy(lane_r, n, st.nrhs, st.D(0, 0), st.ldd, st.spare_d.data(), n2);
      be.upload(lane_r, p, st.nrhs, bu, ldbu, st.spare_d.data() + n, n2);
      st.adopt_d(n2);
      dnew = st.D(n, 0);
      lddnew = n2;
    } else {
      be.ensure(st.in_b, std::size_t(p) * st.nrhs);
      be.upload(lane_r, p, st.nrhs, bu, ldbu, st.in_b.data(), p);
      dnew = st.in_b.data();
      lddnew = p;
    }
  }
  if (full) {  // R keeps rows x cols with zeros below: rows grow
    be.ensure(st.spare_r, std::size_t(n2) * m);
    be.copy(lane_r, m, m, st.R(0, 0), st.ldr, st.spare_r.data(), n2);
    be.zero(lane_r, n2 - m, m, st.spare_r.data() + m, n2);
    st.adopt_r(n2);
  }
  st.n = n2;
  // The panels side by side in one (nb + p) x (npanels nb) array Z: block t holds R's diagonal
  // block t in its rows nb - jb .. nb (so that with the rows below it the panel is contiguous)
  // and U's columns of block t in rows nb .. nb + p. U is then one matrix (ld nb + p) that each
  // panel's reflectors update in place and the next panel is factored where it lies: no copies
  // between the panels.
  tp_workspace(st, m, p, nb);
  be.upload(lane_r, p, m, u, ldu, st.panels.data() + nb, nb + p);
  tp_retriangularize(st, m, p, nb, st.R(0, 0), st.ldr, st.nrhs > 0 ? st.D(0, 0) : nullptr, st.ldd, dnew, lddnew,
                     qc > 0 ? st.Q(0, 0) : nullptr, st.ldq, qc > 0 ? st.Q(0, qc) : nullptr, st.ldq);
  // Thin Q: the p extra columns were only needed during the update; Q' keeps cols columns.
  st.end();
}

#define TESSERA_INST(B, T) \
  template void insert_rows<B, T>(update_state<B, T>&, int, const T*, int, int, const T*, int, int);
TESSERA_UPDATE_INSTANTIATE(TESSERA_INST)

}  // namespace tessera::qr::detail
