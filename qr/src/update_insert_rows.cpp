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
    be.zero(lane_q, n2, qc + p, q2, n2);
    be.copy(lane_q, k, qc, st.Q(0, 0), st.ldq, q2, n2);
    be.copy(lane_q, n - k, qc, st.Q(k, 0), st.ldq, q2 + k + p, n2);
    be.identity(lane_q, p, q2 + k + std::size_t(qc) * n2, n2);
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
    be.zero(lane_r, n2, m, st.spare_r.data(), n2);
    be.copy(lane_r, m, m, st.R(0, 0), st.ldr, st.spare_r.data(), n2);
    st.adopt_r(n2);
  }
  st.n = n2;
  // The panels side by side in one (nb + p) x (npanels nb) array Z: block t holds R's diagonal
  // block t in its rows nb - jb .. nb (so that with the rows below it the panel is contiguous)
  // and U's columns of block t in rows nb .. nb + p. U is then one matrix (ld nb + p) that each
  // panel's reflectors update in place and the next panel is factored where it lies: no copies
  // between the panels.
  const int npanels = (m + nb - 1) / nb, ldp = nb + p;
  be.ensure(st.panels, std::size_t(npanels) * ldp * nb);
  be.ensure(st.tmats, std::size_t(npanels) * nb * nb);
  be.ensure(st.pwork, be.template panel_work_size<T>(ldp, nb));
  be.ensure(st.work_r, std::size_t(nb) * std::max(m, 1));
  if (st.nrhs > 0) be.ensure(st.work_d, std::size_t(nb) * st.nrhs);
  if (qc > 0) be.ensure(st.work_q, std::size_t(nb) * n2);
  T* Z = st.panels.data();
  T* U = Z + nb;
  be.upload(lane_r, p, m, u, ldu, U, ldp);
  // Panel t's block of Q and its p extra columns take the panel's reflectors (lane Q).
  auto q_take = [&](int t) {
    const int j0 = t * nb, jb = std::min(nb, m - j0);
    const T* P = Z + std::size_t(j0) * ldp + (nb - jb);
    apply_right(be, lane_q, n2, jb, p, P, ldp, st.tmats.data() + std::size_t(t) * nb * nb, nb, st.Q(0, j0),
                st.ldq, st.Q(0, qc), st.ldq, st.work_q.data(), true);
  };
  // Every panel, R's blocks where they lie and D with them, in one call where the backend has one
  // (the GPU's persistent kernel); Q's columns take each panel's reflectors as soon as it is out.
  if (nb == 32 && be.tp_chain(lane_r, m, p, st.nrhs, st.R(0, 0), st.ldr, U, ldp, st.nrhs > 0 ? st.D(0, 0) : nullptr,
                              st.ldd, dnew, lddnew, st.tmats.data())) {
    for (int t = 0; t < npanels && qc > 0; ++t) {
      be.tp_chain_wait(lane_q, t);
      q_take(t);
    }
    st.end();
    return;
  }
  for (int t = 0; t < npanels; ++t) {
    const int j0 = t * nb, jb = std::min(nb, m - j0);
    be.copy(lane_r, jb, jb, st.R(j0, j0), st.ldr, Z + std::size_t(j0) * ldp + (nb - jb), ldp);
  }
  for (int t = 0; t < npanels; ++t) {
    const int j0 = t * nb, jb = std::min(nb, m - j0);
    T* P = Z + std::size_t(j0) * ldp + (nb - jb);
    T* Tm = st.tmats.data() + std::size_t(t) * nb * nb;
    be.panel_qr(lane_r, jb + p, jb, P, ldp, Tm, nb, st.pwork.data(), st.pwork.size());
    // Lane D reads only the panel (its R home, its reflectors), which no later step touches.
    be.dep(lane_r, lane_d);
    // V's top block is the identity, exactly: R's block is triangular, so each reflector is zero
    // in the R rows below its own (the seed's [I; 0; v]).
    apply_left_tp(be, lane_r, jb, p, m - j0 - jb, P, ldp, Tm, nb, st.R(j0, j0 + jb), st.ldr,
                  U + std::size_t(j0 + jb) * ldp, ldp, st.work_r.data());
    // R's block goes home from lane D, off the panels' path.
    be.triu_copy(lane_d, jb, 0, P, ldp, st.R(j0, j0), st.ldr);
    if (st.nrhs > 0)
      apply_left_tp(be, lane_d, jb, p, st.nrhs, P, ldp, Tm, nb, st.D(j0, 0), st.ldd, dnew, lddnew,
                    st.work_d.data());
    // Lane Q's large products wait for R's trailing update, on the panels' path, and overlap the
    // next panel instead (H100, double, 500 rows to 11000 x 3000 with full Q: 0.0239-0.0241 s when
    // they started with the update, 0.0214-0.0221 s after it).
    if (qc > 0) {
      be.dep(lane_r, lane_q);
      q_take(t);
    }
  }
  // Thin Q: the p extra columns were only needed during the update; Q' keeps cols columns.
  st.end();
}

#define TESSERA_INST(B, T) \
  template void insert_rows<B, T>(update_state<B, T>&, int, const T*, int, int, const T*, int, int);
TESSERA_UPDATE_INSTANTIATE(TESSERA_INST)

}  // namespace tessera::qr::detail
