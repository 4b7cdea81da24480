#pragma once
// The state of an updatable QR (tessera/qr/update.hpp) on one backend, and the pieces the update
// algorithms share: a block reflector applied from the left or the right to a matrix split in two
// parts, the structured re-triangularization of a band (the seed's (p + nb) x nb blocks; a band
// of one by a Givens sweep), the blocked Householder compression of a tall block, and Givens
// sweeps applied in blocks.
//
// Storage (column-major, in the backend's memory):
//   Q: rows x qcols(), ld ldq: qcols() = rows (full), cols (thin), 0 (none).
//   R: rrows() x cols, ld ldr, exact zeros below the diagonal: rrows() = rows (full), else cols.
//   D = Q^T B: drows() x nrhs, ld ldd: drows() = rows (full), else cols (what solve needs; the
//   residual's components are dropped in those modes).
#include <algorithm>
#include <cstddef>
#include <stdexcept>

#include "tessera/kernels_cpu/givens.hpp"
#include "tessera/qr/update.hpp"
#include "update_backend.hpp"

namespace tessera::qr::detail {

template <class B, class T>
struct update_state {
  using value_type = T;
  using buf = typename B::template buffer<T>;
  B be;
  q_mode mode = q_mode::full;
  int n = 0, m = 0, nrhs = 0, nb = 64;
  int nb_given = 0;  // update_options::nb (0: each update's default; deleting columns has its own)
  buf q, r, d;
  int ldq = 1, ldr = 1, ldd = 1;
  // Where Q(0, 0), R(0, 0), D(0, 0) lie in their buffers: deleting rows drops leading rows and
  // columns by moving these instead of copying the matrices.
  std::size_t q0 = 0, r0 = 0, d0 = 0;
  // This update's householder_compress calls and Givens groups so far: the first of each reuses
  // buffers that lanes Q and D last read in an earlier update (end() waited for them), the later
  // ones buffers that they may still be reading.
  int compressions = 0, givens_groups = 0;
  // Workspace kept between updates, so that a sequence of updates allocates only when it grows.
  buf spare_q, spare_r, spare_d, work_r, work_q, work_d, panels, tmats, pwork, xbuf, cs, cs_prev, S, in_u,
      in_v, in_b, cpanels, ctmats, qgram, qtmat;
  buf hcs;  // the Hessenberg sweep's rotations: lanes Q and D may still read cs's then

  update_state() = default;
  update_state(const update_state&) = delete;
  update_state& operator=(const update_state&) = delete;
  // The buffers go back (to the GPU backend's cache) only when no enqueued work uses them.
  ~update_state() {
    try {
      be.sync();
    } catch (...) {
    }
  }

  int qcols() const noexcept { return mode == q_mode::full ? n : mode == q_mode::thin ? m : 0; }
  int rrows() const noexcept { return mode == q_mode::full ? n : m; }
  int drows() const noexcept { return mode == q_mode::full ? n : m; }
  T* Q(int i, int j) noexcept { return q.data() + q0 + i + std::size_t(j) * ldq; }
  T* R(int i, int j) noexcept { return r.data() + r0 + i + std::size_t(j) * ldr; }
  T* D(int i, int j) noexcept { return d.data() + d0 + i + std::size_t(j) * ldd; }
  // The spare buffer (filled by the caller from its start, leading dimension ld) becomes Q, R or D.
  void adopt_q(int ld) noexcept { be.swap(q, spare_q), q0 = 0, ldq = ld; }
  void adopt_r(int ld) noexcept { be.swap(r, spare_r), r0 = 0, ldr = ld; }
  void adopt_d(int ld) noexcept { be.swap(d, spare_d), d0 = 0, ldd = ld; }

  // The lanes start an update in order and end it joined, so that buffers swapped or reused by
  // the next update are free on both.
  void begin() {
    be.dep(lane_r, lane_q);
    be.dep(lane_r, lane_d);
    compressions = givens_groups = 0;
  }
  void end() {
    be.dep(lane_q, lane_r);
    be.dep(lane_d, lane_r);
  }
};

// Moves a block toward its buffer's start by `shift` rows (rows: len rows of `extent` columns) or
// columns (len columns of `extent` rows): its source is dst + shift rows or columns. In pieces of
// at most `shift` from the start, so that no piece's source and destination overlap; on the GPU
// through tmp where that would take more than `pieces` of them (each piece is a call; the round
// trip moves the block twice). The CPUs always go in pieces: a call costs them nothing, and tmp
// (as large as the block) cost a first update there more than its work (a rank-8 update of
// 4000 x 1500 on the 2-core VM: 0.36-0.38 s against 0.07-0.08 s for the next one).
template <class B, class T>
void move_back(B& be, int lane, bool rows, int len, int extent, int shift, T* dst, int ld,
               typename B::template buffer<T>& tmp, int pieces = 4) {
  if (len <= 0 || extent <= 0) return;
  const std::size_t step = rows ? 1 : std::size_t(ld);  // one row or one column
  const T* src = dst + step * shift;
  if (!B::on_gpu || static_cast<long long>(len) <= static_cast<long long>(pieces) * shift) {
    for (int c = 0; c < len; c += shift) {
      const int w = std::min(shift, len - c);
      const std::size_t o = step * c;
      if (rows) be.copy(lane, w, extent, src + o, ld, dst + o, ld);
      else be.copy(lane, extent, w, src + o, ld, dst + o, ld);
    }
    return;
  }
  // Many narrow pieces would cost more than a round trip through a buffer.
  be.ensure(tmp, std::size_t(len) * extent);
  if (rows) {
    be.copy(lane, len, extent, src, ld, tmp.data(), len);
    be.copy(lane, len, extent, tmp.data(), len, dst, ld);
  } else {
    be.copy(lane, extent, len, src, ld, tmp.data(), extent);
    be.copy(lane, extent, len, tmp.data(), extent, dst, ld);
  }
}

// The columns (side 'L') or rows (side 'R') of C that the applies below take per piece on the
// CPUs (B::split); each piece needs its own slice of the workspace, which the pieces' sizes sum to.
inline constexpr int apply_grain = 64;

// [Ctop; Cbot] := H^T [Ctop; Cbot] on `lane`, H = I - V T V^T from a GEQRT panel: V (nb + hb
// rows, ldv) unit lower trapezoidal (its upper triangle ignored), T (nb x nb, ldt). Ctop nb x
// ncols, Cbot hb x ncols. W: nb x ncols workspace. top_identity: V's top nb x nb block is the
// identity (not read), which saves two TRMMs.
template <class B, class T>
void apply_left(B& be, int lane, int nb, int hb, int ncols, const T* V, int ldv, const T* Tm,
                int ldt, T* Ctop, int ldct, T* Cbot, int ldcb, T* W, bool top_identity = false) {
  if (ncols <= 0 || nb <= 0) return;
  be.split(ncols, apply_grain, [&](int c0, int cn) {  // columns of C, W's columns c0.. (ld nb)
    T* Wc = W + std::size_t(nb) * c0;
    T* Ct = Ctop + std::size_t(c0) * ldct;
    T* Cb = Cbot + std::size_t(c0) * ldcb;
    be.copy(lane, nb, cn, Ct, ldct, Wc, nb);
    if (!top_identity) be.trmm(lane, 'L', 'L', 'T', 'U', nb, cn, T(1), V, ldv, Wc, nb);
    if (hb > 0) be.gemm(lane, 'T', 'N', nb, cn, hb, T(1), V + nb, ldv, Cb, ldcb, T(1), Wc, nb);
    be.trmm(lane, 'L', 'U', 'T', 'N', nb, cn, T(1), Tm, ldt, Wc, nb);
    if (hb > 0) be.gemm(lane, 'N', 'N', hb, cn, nb, T(-1), V + nb, ldv, Wc, nb, T(1), Cb, ldcb);
    if (!top_identity) be.trmm(lane, 'L', 'L', 'N', 'U', nb, cn, T(1), V, ldv, Wc, nb);
    be.sub(lane, nb, cn, Wc, nb, Ct, ldct);
  });
}

// apply_left with V = [I; v] (P: the panel, v = P + nb): one call where the backend has it
// (B::tp_apply), apply_left's otherwise.
template <class B, class T>
void apply_left_tp(B& be, int lane, int nb, int p, int ncols, const T* P, int ldp, const T* Tm, int ldt,
                   T* Ctop, int ldct, T* Cbot, int ldcb, T* W) {
  if (ncols <= 0 || nb <= 0) return;
  if (be.tp_apply(lane, nb, p, ncols, P + nb, ldp, Tm, ldt, Ctop, ldct, Cbot, ldcb)) return;
  apply_left(be, lane, nb, p, ncols, P, ldp, Tm, ldt, Ctop, ldct, Cbot, ldcb, W, true);
}

// With V (h x nb, ldv) explicit, its unit diagonal and the zeros above it stored (as split_panel
// leaves it), and C in one piece: side 'L', C (h x other, ldc) := H^T C; side 'R', C (other x h)
// := C H. Two GEMMs and a product with T (LAPACK's LARFB) instead of apply_left's or
// apply_right's seven calls; side 'L' in one call where the backend has one (B::explicit_apply).
// W: nb * other workspace, twice that for nb >= B::t_mult_x_from.
template <class B, class T>
void apply_explicit(B& be, int lane, char side, int h, int nb, int other, const T* V, int ldv, const T* Tm, int ldt,
                    T* C, int ldc, T* W) {
  if (other <= 0 || nb <= 0) return;
  if (be.explicit_apply(lane, side, h, nb, other, V, ldv, Tm, ldt, C, ldc)) return;
  T* X = nb >= B::t_mult_x_from ? W + std::size_t(nb) * other : nullptr;
  // A piece of `cn` columns or rows of C owns W's (and X's) elements nb * c0 .. nb * (c0 + cn).
  be.split(other, apply_grain, [&](int c0, int cn) {
    T* Wc = W + std::size_t(nb) * c0;
    T* Xc = X ? X + std::size_t(nb) * c0 : nullptr;
    if (side == 'L') {  // W = V^T C, W = T^T W, C -= V W
      T* Cc = C + std::size_t(c0) * ldc;
      be.gemm(lane, 'T', 'N', nb, cn, h, T(1), V, ldv, Cc, ldc, T(0), Wc, nb);
      const T* TW = be.t_mult(lane, 'L', 'T', nb, cn, Tm, ldt, Wc, Xc);
      be.gemm(lane, 'N', 'N', h, cn, nb, T(-1), V, ldv, TW, nb, T(1), Cc, ldc);
    } else {  // W = C V, W = W T, C -= W V^T
      T* Cc = C + c0;
      be.gemm(lane, 'N', 'N', cn, nb, h, T(1), Cc, ldc, V, ldv, T(0), Wc, cn);
      const T* WT = be.t_mult(lane, 'R', 'N', cn, nb, Tm, ldt, Wc, Xc);
      be.gemm(lane, 'N', 'T', cn, h, nb, T(-1), WT, cn, V, ldv, T(1), Cc, ldc);
    }
  });
}

// [Ctop Cbot] := [Ctop Cbot] H, H = I - V T V^T with V = [I; Vb] (Vb hb x nb, ldv; the seed's
// [I; 0; v] reflectors of adding rows), Ctop nrows x nb, Cbot nrows x hb. W: nrows x nb workspace;
// X: as much again or null (null: T's product is a TRMM in place; else B::t_mult decides).
template <class B, class T>
void apply_right_tp(B& be, int lane, int nrows, int nb, int hb, const T* Vb, int ldv, const T* Tm, int ldt, T* Ctop,
                    int ldct, T* Cbot, int ldcb, T* W, T* X) {
  if (nrows <= 0 || nb <= 0) return;
  be.split(nrows, apply_grain, [&](int r0, int rn) {  // rows of C, W's (X's) elements nb * r0.. (ld rn)
    T* Wc = W + std::size_t(nb) * r0;
    T* Xc = X ? X + std::size_t(nb) * r0 : nullptr;
    T* Ct = Ctop + r0;
    T* Cb = Cbot + r0;
    be.copy(lane, rn, nb, Ct, ldct, Wc, rn);
    if (hb > 0) be.gemm(lane, 'N', 'N', rn, nb, hb, T(1), Cb, ldcb, Vb, ldv, T(1), Wc, rn);
    const T* WT = be.t_mult(lane, 'R', 'N', rn, nb, Tm, ldt, Wc, Xc);
    if (hb > 0) be.gemm(lane, 'N', 'T', rn, hb, nb, T(-1), WT, rn, Vb, ldv, T(1), Cb, ldcb);
    be.sub(lane, rn, nb, WT, rn, Ct, ldct);
  });
}

// R's columns [j_first, m) upper Hessenberg within rows [0, L) (a band of one: a rank-1 update,
// one column deleted) made triangular by one sweep of Givens rotations, as qrupdate does: on lane
// R a chain of single rotations (kernels::hessenberg_rotations), where band panels chain a
// kernel and an apply per 64 columns; then D and Q take the sweep on their lanes.
template <class B, class T>
void hessenberg_retriangularize(update_state<B, T>& st, int j_first, int L) {
  auto& be = st.be;
  const int rows = L - j_first, k = std::min(st.m - j_first, rows - 1);
  if (k <= 0) return;
  be.ensure(st.hcs, 2 * std::size_t(k));
  be.hessenberg_rotations(lane_r, rows, st.m - j_first, st.R(j_first, j_first), st.ldr, st.hcs.data());
  if (st.nrhs > 0) {
    be.dep(lane_r, lane_d);
    be.rotations_left(lane_d, k, st.nrhs, st.hcs.data(), st.D(j_first, 0), st.ldd);
  }
  if (st.qcols() > 0) {
    be.dep(lane_r, lane_q);
    be.rotations_right(lane_q, st.n, k, st.hcs.data(), st.Q(0, j_first), st.ldq);
  }
}

// R's columns [j_first, m) hold an upper triangle plus `band` subdiagonals within rows [0, L)
// (columns left of j_first are upper triangular already): make R upper triangular again with
// Householder panels of (nb + band) x nb (nb: the caller's panel width), the seed's Figure 7
// (LAPACK TPQRT's structure), applied to R's trailing columns (lane R), D (lane D) and Q's columns
// (lane Q, one panel behind); a band of one by Givens rotations.
template <class B, class T>
void band_retriangularize(update_state<B, T>& st, int j_first, int L, int band, int nb) {
  auto& be = st.be;
  const int m = st.m;
  if (j_first >= m || band <= 0) return;
  if (band == 1) {
    hessenberg_retriangularize(st, j_first, L);
    return;
  }
  const int npanels = (m - j_first + nb - 1) / nb, ldp = nb + band;
  be.ensure(st.panels, std::size_t(npanels) * ldp * nb);
  be.ensure(st.tmats, std::size_t(npanels) * nb * nb);
  be.ensure(st.pwork, be.template panel_work_size<T>(ldp, nb));
  const std::size_t wx = nb >= B::t_mult_x_from ? 2 : 1;  // apply_explicit's W, and X if used
  be.ensure(st.work_r, wx * nb * std::max(m, 1));
  if (st.nrhs > 0) be.ensure(st.work_d, wx * nb * st.nrhs);
  if (st.qcols() > 0) be.ensure(st.work_q, wx * nb * std::max(st.n, 1));
  for (int t = 0; t < npanels; ++t) {
    const int j0 = j_first + t * nb, jb = std::min(nb, m - j0);
    const int h = std::min(jb + band, L - j0), hb = h - jb;
    T* P = st.panels.data() + std::size_t(t) * ldp * nb;
    T* Tm = st.tmats.data() + std::size_t(t) * nb * nb;
    // Factored in place; its V goes to P, made explicit: R's rows j0..j0+h (and D's, Q's columns)
    // are contiguous, so the reflectors go on as two GEMMs and a product with T.
    if (!be.panel_split(lane_r, h, jb, band, st.R(j0, j0), st.ldr, P, ldp, Tm, nb)) {
      be.panel_qr(lane_r, h, jb, st.R(j0, j0), st.ldr, Tm, nb, st.pwork.data(), st.pwork.size());
      be.split_panel(lane_r, jb, hb, st.R(j0, j0), st.ldr, P, ldp);
    }
    apply_explicit(be, lane_r, 'L', h, jb, m - j0 - jb, P, ldp, Tm, nb, st.R(j0, j0 + jb), st.ldr,
                   st.work_r.data());
    if (st.nrhs > 0) {
      be.dep(lane_r, lane_d);
      apply_explicit(be, lane_d, 'L', h, jb, st.nrhs, P, ldp, Tm, nb, st.D(j0, 0), st.ldd, st.work_d.data());
    }
    if (st.qcols() > 0) {
      be.dep(lane_r, lane_q);
      apply_explicit(be, lane_q, 'R', h, jb, st.n, P, ldp, Tm, nb, st.Q(0, j0), st.ldq, st.work_q.data());
    }
  }
}

// X (rows x c, ldx, in st.xbuf or elsewhere not touched by the lanes' other work) := its R factor
// (upper trapezoidal, exact zeros below), by blocked Householder QR; the reflectors are applied to
// D(d_row0 : d_row0 + rows, :) (lane D) and to Q(:, q_col0 : q_col0 + rows) (lane Q). The rows
// of R that these Q columns belong to must be zero (they are: rows >= cols), so R is untouched.
// Each panel's V is split off X into a buffer of its own (cpanels, with T in ctmats), which lanes
// Q and D read: lane R goes on with X without waiting for them (on the H100 it had waited for Q's
// update of its n - m last columns). The callers make one call an update; a second one would wait
// for lanes Q and D first.
template <class B, class T>
void householder_compress(update_state<B, T>& st, int rows, int c, T* X, int ldx, int q_col0,
                          int d_row0) {
  auto& be = st.be;
  const int nb = st.nb, kmax = std::min(rows, c);
  if (kmax <= 0) return;
  const int npanels = (kmax + nb - 1) / nb;
  // The buffers below were last read by lanes Q and D in an earlier update (end() waited for
  // them), or by this update's earlier compression, which they must finish first.
  if (st.compressions++ > 0) {
    be.dep(lane_q, lane_r);
    be.dep(lane_d, lane_r);
  }
  be.ensure(st.cpanels, std::size_t(npanels) * nb * rows);
  be.ensure(st.ctmats, std::size_t(npanels) * nb * nb);
  be.ensure(st.pwork, be.template panel_work_size<T>(rows, nb));
  const std::size_t wx = nb >= B::t_mult_x_from ? 2 : 1;  // apply_explicit's W, and X if used
  be.ensure(st.work_r, wx * nb * std::max(c, 1));
  if (st.nrhs > 0) be.ensure(st.work_d, wx * nb * st.nrhs);
  if (st.qcols() > 0) be.ensure(st.work_q, wx * nb * std::max(st.n, 1));
  for (int t = 0; t < npanels; ++t) {
    const int j0 = t * nb, jb = std::min(nb, kmax - j0), h = rows - j0, hb = h - jb;
    T* P = X + j0 + std::size_t(j0) * ldx;
    T* V = st.cpanels.data() + std::size_t(t) * nb * rows;  // h x jb, ld h
    T* Tm = st.ctmats.data() + std::size_t(t) * nb * nb;
    be.panel_qr(lane_r, h, jb, P, ldx, Tm, nb, st.pwork.data(), st.pwork.size());
    be.split_panel(lane_r, jb, hb, P, ldx, V, h);
    apply_explicit(be, lane_r, 'L', h, jb, c - j0 - jb, V, h, Tm, nb, P + std::size_t(jb) * ldx, ldx,
                   st.work_r.data());
    if (st.nrhs > 0) {
      be.dep(lane_r, lane_d);
      apply_explicit(be, lane_d, 'L', h, jb, st.nrhs, V, h, Tm, nb, st.D(d_row0 + j0, 0), st.ldd,
                     st.work_d.data());
    }
    if (st.qcols() > 0) {
      be.dep(lane_r, lane_q);
      apply_explicit(be, lane_q, 'R', h, jb, st.n, V, h, Tm, nb, st.Q(0, q_col0 + j0), st.ldq,
                     st.work_q.data());
    }
  }
}

// [Rs; U] := its R factor by Householder panels of nb columns whose vectors are [I; 0; v] (the
// seed's structure, LAPACK TPQRT with l = 0): Rs (m x m, ldr) upper triangular, U (p x m) the
// dense rows below it, each panel touching nb rows of Rs and the p rows of U only. The same
// reflectors go to [D1; D2] (m and p rows of nrhs columns) and, from the right, to [Q1 Q2] (st.n
// rows, m and p columns; Q1 null: no Q). Z is st.panels, (nb + p) x (npanels nb), filled by the
// caller: U in rows nb .. nb + p (ld nb + p), where each panel's reflectors are left. D is done
// on lane R (the GPU's kernel) or lane D. Inserting rows uses it as it stands; deleting columns
// after moving the rows and columns into this form.
//
// The caller first allocates its buffers (Z too) with tp_workspace, before it enqueues work.
// q_first() enqueues the caller's own work on Q's columns (lane Q) that must precede the
// reflectors': it runs once R's chain is enqueued, so that the chain does not wait for the host to
// enqueue Q's calls first.
//
// Without Q the GPU's kernel takes U's rows in blocks of tp_chain_rows, its chains pipelined (its
// V and T then serve only R and D, which it updates itself; lane Q would need one apply a block).
// On the H100 500 rows in blocks of 64 took 0.59-0.70 of one chain's time (adding them to
// 14000 x 3000, deleting 500 columns of 6000 x 3000 at k = 0 .. 2000), blocks of 128 about the
// same, 256 0.72-0.82 (docs/results/2026-11-27-tpqrt-chains-h100.md).
inline constexpr int tp_chain_rows = 64;
// Beyond 256 rows, blocks of 128. On the H200 (500 rows, R only, both precisions, since each
// chain's next slab takes a panel by its groups) they were 2-10% faster adding them to 8000 x 3000
// (single 3.07-3.10 -> 2.77-2.78 ms) and 14000 x 3000, and as fast or 5% faster deleting 500
// columns of 6000 x 3000 at k = 0 (docs/results/2026-11-29-chain-groups-h200.md). Likely: with
// one thread block an SM, a block that takes a later slab first applies every earlier panel of
// its chain, and with 8 chains those applies reach the front; 4 chains leave it twice the slack.
inline constexpr int tp_chain_rows_large = 128;
// The most rows that adding rows without Q gives the kernel (in blocks; beyond, 64-column panels):
// on the H100, adding 1000 rows to 14000 x 3000 took 15.7-16.4 ms in blocks against 22.8-23.5 by
// panels in double (single 12.9-13.3 against 17.5-19.5), 2000 rows 38.7-41.0 against 30.3-31.6
// (docs/results/2026-11-27-lane-q-h100.md).
inline constexpr int tp_chain_p_max = 1024;
template <class B, class T>
int tp_chains(const update_state<B, T>& st, int p) {
  const int rows = p > 256 ? tp_chain_rows_large : tp_chain_rows;
  return st.qcols() > 0 ? 1 : (p + rows - 1) / rows;
}
// With Q, lane Q takes the GPU kernel's panels several at a time as one block reflector
// (kernels::gpu_tp_merge_t, wider groups merged by halves): Q's p new columns, n x p, are read and
// written once a group instead of once a panel. Pairs, and 8 panels where those columns pass
// tp_q_large_bytes. On the H100, with the full Q: 500 rows to 14000 x 3000 in double (58 MB)
// 11.2-11.5 ms with 8 against 12.6-13.0 with pairs (pairs against one panel at a time, an earlier
// call: 13.5 against 16.1-16.3); in single (29 MB), 200 rows to 8000 x 3000 and the deletions as
// rows (up to 24 MB) pairs were faster than 4, 8 or 16, the merge's wait and the group's tail
// costing more than the traffic saved (docs/results/2026-11-27-lane-q-h100.md).
inline constexpr int tp_q_group = 2, tp_q_group_large = 8;
inline constexpr std::size_t tp_q_large_bytes = std::size_t(32) << 20;
// Where the backend applies a group of panels in one kernel (B::tp_apply_right_fits), 8 a launch
// (H200, the kernel's first version: rank 64 of 8000 x 3000 in single 5.31-5.90 ms against
// 5.66-6.03 with 4, the rest within the spread; 2 slower; docs/results/2026-11-29-tp-apply-right-mma-h200.md).
inline constexpr int tp_q_group_kernel = 8;
// The panels lane Q takes at a time in tp_retriangularize (the GPU's kernel: nb = 32) for p new
// columns of Q, which tp_workspace allocates for.
template <class B, class T>
int tp_q_panels(const update_state<B, T>& st, int nb, int p) {
  if (!B::on_gpu || nb != 32) return 1;
  if (B::tp_apply_right_fits(nb, p)) return tp_q_group_kernel;
  return std::size_t(st.n) * p * sizeof(T) >= tp_q_large_bytes ? tp_q_group_large : tp_q_group;
}
// Of those, the panels merged into one block reflector, for which lane Q's W and X are as wide: 1
// where the backend's kernel takes the group (where the device refuses it, panel by panel).
template <class B, class T>
int tp_q_merged(const update_state<B, T>& st, int nb, int p) {
  return B::tp_apply_right_fits(nb, p) ? 1 : tp_q_panels(st, nb, p);
}
template <class B, class T>
void tp_workspace(update_state<B, T>& st, int m, int p, int nb) {
  auto& be = st.be;
  const int npanels = (m + nb - 1) / nb, ldp = nb + p;
  be.ensure(st.panels, std::size_t(npanels) * ldp * nb);
  be.ensure(st.tmats, std::size_t(npanels) * nb * nb * tp_chains(st, p));
  be.ensure(st.pwork, be.template panel_work_size<T>(ldp, nb));
  be.ensure(st.work_r, std::size_t(nb) * std::max(m, 1));
  if (st.nrhs > 0) be.ensure(st.work_d, std::size_t(nb) * st.nrhs);
  if (st.qcols() > 0) {
    const int w = std::min(m, tp_q_merged(st, nb, p) * nb);
    be.ensure(st.work_q, 2 * std::size_t(w) * st.n);  // W, and X where the backend's t_mult uses it
    if (w > nb) be.ensure(st.qgram, 2 * std::size_t(w) * w), be.ensure(st.qtmat, std::size_t(w) * w);
  }
}
struct no_q_first {
  void operator()() const noexcept {}
};
// pro: the chain's prologue (a rank-k update's last steps, kernels::rank_band_steps), which only the GPU's
// chain runs; the caller asks B::tp_chain_prologue_runs first.
template <class B, class T, class F = no_q_first>
void tp_retriangularize(update_state<B, T>& st, int m, int p, int nb, T* Rs, int ldr, T* D1, int ldd1, T* D2,
                        int ldd2, T* Q1, int ldq1, T* Q2, int ldq2, F q_first = {},
                        const kernels::rank_band_steps<T>* pro = nullptr) {
  auto& be = st.be;
  const int n = st.n, npanels = (m + nb - 1) / nb, ldp = nb + p;
  T* Z = st.panels.data();
  T* U = Z + nb;
  // Panels t0 .. t1 - 1's block of Q1, and Q2, take their reflectors (lane Q): in one call where
  // the backend has one, as one block reflector where it merges their T, else panel by panel.
  const int merged = tp_q_merged(st, nb, p);
  auto q_take = [&](int t0, int t1) {
    const int j0 = t0 * nb, w = std::min(m, t1 * nb) - j0;
    T* X = st.work_q.data() + std::size_t(std::min(m, merged * nb)) * n;  // after W
    const T* Vb = U + std::size_t(j0) * ldp;
    if (be.tp_apply_right(lane_q, n, nb, w, p, Vb, ldp, st.tmats.data() + std::size_t(t0) * nb * nb,
                          Q1 + std::size_t(j0) * ldq1, ldq1, Q2, ldq2))
      return;
    if (t1 - t0 > 1 && merged > 1 &&
        be.tp_merge_t(lane_q, w, nb, p, Vb, ldp, st.tmats.data() + std::size_t(t0) * nb * nb, st.qgram.data(),
                      st.qtmat.data())) {
      apply_right_tp(be, lane_q, n, w, p, Vb, ldp, st.qtmat.data(), w, Q1 + std::size_t(j0) * ldq1, ldq1, Q2, ldq2,
                     st.work_q.data(), X);
      return;
    }
    for (int t = t0; t < t1; ++t) {
      const int jt = t * nb, jb = std::min(nb, m - jt);
      apply_right_tp(be, lane_q, n, jb, p, U + std::size_t(jt) * ldp, ldp, st.tmats.data() + std::size_t(t) * nb * nb,
                     nb, Q1 + std::size_t(jt) * ldq1, ldq1, Q2, ldq2, st.work_q.data(), X);
    }
  };
  // Every panel, Rs's blocks where they lie and D with them, in one call where the backend has one
  // (the GPU's persistent kernel); Q's columns take each panel's reflectors as soon as it is out.
  const bool chain = nb == 32 && be.tp_chain(lane_r, m, p, st.nrhs, Rs, ldr, U, ldp, D1, ldd1, D2, ldd2,
                                             st.tmats.data(), Q1 || pro ? 1 : tp_chains(st, p), pro);
  if (pro && !chain)  // tp_chain_prologue_runs said it would: the same checks
    throw std::logic_error("tessera::qr update: the chain with the rank-k prologue was refused");
  if (chain) {
    q_first();
    const int group = tp_q_panels(st, nb, p);
    for (int t0 = 0; t0 < npanels && Q1; t0 += group) {
      const int t1 = std::min(npanels, t0 + group);
      be.tp_chain_wait(lane_q, t1 - 1);  // the panels are done in order
      q_take(t0, t1);
    }
    return;
  }
  q_first();
  for (int t = 0; t < npanels; ++t) {
    const int j0 = t * nb, jb = std::min(nb, m - j0);
    be.copy(lane_r, jb, jb, Rs + j0 + std::size_t(j0) * ldr, ldr, Z + std::size_t(j0) * ldp + (nb - jb), ldp);
  }
  for (int t = 0; t < npanels; ++t) {
    const int j0 = t * nb, jb = std::min(nb, m - j0);
    T* P = Z + std::size_t(j0) * ldp + (nb - jb);
    T* Tm = st.tmats.data() + std::size_t(t) * nb * nb;
    be.panel_qr(lane_r, jb + p, jb, P, ldp, Tm, nb, st.pwork.data(), st.pwork.size());
    // Lane D reads only the panel (its R home, its reflectors), which no later step touches.
    be.dep(lane_r, lane_d);
    // V's top block is the identity, exactly: Rs's block is triangular, so each reflector is zero
    // in the Rs rows below its own (the seed's [I; 0; v]).
    apply_left_tp(be, lane_r, jb, p, m - j0 - jb, P, ldp, Tm, nb, Rs + j0 + std::size_t(j0 + jb) * ldr, ldr,
                  U + std::size_t(j0 + jb) * ldp, ldp, st.work_r.data());
    // Rs's block goes home from lane D, off the panels' path.
    be.triu_copy(lane_d, jb, 0, P, ldp, Rs + j0 + std::size_t(j0) * ldr, ldr);
    if (st.nrhs > 0)
      apply_left_tp(be, lane_d, jb, p, st.nrhs, P, ldp, Tm, nb, D1 + j0, ldd1, D2, ldd2, st.work_d.data());
    // Lane Q's large products wait for R's trailing update, on the panels' path, and overlap the
    // next panel instead (H100, double, 500 rows to 11000 x 3000 with full Q: 0.0239-0.0241 s when
    // they started with the update, 0.0214-0.0221 s after it).
    if (Q1) {
      be.dep(lane_r, lane_q);
      q_take(t, t + 1);
    }
  }
}

// A Givens group whose rotations a matrix has yet to take (givens_update with q_rest or rd_rest):
// Q's, which the caller applies with apply_givens_q before any other work on Q's columns, after
// work on R that should not wait for the host to enqueue Q's calls (the rank-k update's chain);
// R's and D's, which the chain's prologue applies. Its blocks stay in st.S until then.
struct givens_rest {
  bool pending = false;
  kernels::givens_plan sub;
  int roff = 0;
};
template <class B, class T>
void apply_givens_q(update_state<B, T>& st, givens_rest& rest);

// R(k:k+p, k:k+s) dense over R(k+p:k+p+s, k:k+s) upper triangular (R's columns left of k
// triangular already, none right of k + s = cols): made triangular again as [triangle; p rows],
// which tp_retriangularize factors as adding rows does. The dense rows go to its panels' U, the
// triangle up into their place (zeros below it), D's rows and Q's columns in the same order; with
// the full Q, the set-aside rows' and columns' images follow the triangle's (in thin and Q-less
// modes they are residual components, no longer kept). Deleting columns leaves this shape, and so
// does a rank-r update's band once its r sweeps and the product are done (k = 0, p = r). The flops
// are the band's panels'; on the GPU one persistent kernel takes every panel of R instead of a
// launch or more a panel.
//
// dc = p: R's columns right of k are still p to the right (deleting columns, which then moves
// only R's rows above k itself): the dense rows come from there and the triangle moves up and
// left at once, in place, one read and one write an entry (B::shift_upper), where moving the
// columns and then the rows went through a buffer twice each.
//
// Q's columns move (and take `q_rest`, a Givens group's rotations the caller left for them) once
// R's chain is enqueued: they are lane Q's alone, and enqueued first they held the chain back by
// the host's time for their calls.
//
// pro (k = 0, dc = 0, nb = 32): R's and D's moves are left to the chain's prologue, with the last
// Givens group's products on them and R's rank product (a rank-k update: rank_update).
template <class B, class T>
void rows_retriangularize(update_state<B, T>& st, int k, int s, int p, int nb, int dc = 0,
                          givens_rest* q_rest = nullptr, const kernels::rank_band_steps<T>* pro = nullptr) {
  auto& be = st.be;
  // Lane D may still be applying this update's earlier rotations to D (a rank-k update's Givens
  // stage), whose rows lane R moves below, or to R (several groups of sweeps).
  be.dep(lane_d, lane_r);
  tp_workspace(st, s, p, nb);
  if (!pro) {
    be.copy(lane_r, p, s, st.R(k, k + dc), st.ldr, st.panels.data() + nb, nb + p);
    if (dc > 0) be.shift_upper(lane_r, s, p, dc, st.R(k, k), st.ldr);
    else move_back(be, lane_r, true, s, s, p, st.R(k, k), st.ldr, st.spare_r);
    be.zero(lane_r, p, s, st.R(k + s, k), st.ldr);
  }
  T *d2 = nullptr, *q2 = nullptr;
  if (st.nrhs > 0) {
    be.ensure(st.spare_d, std::size_t(p) * st.nrhs);
    d2 = st.spare_d.data();
    if (!pro) {
      be.copy(lane_r, p, st.nrhs, st.D(k, 0), st.ldd, d2, p);
      move_back(be, lane_r, true, s, st.nrhs, p, st.D(k, 0), st.ldd, st.in_b);
    }
  }
  const bool q = st.mode != q_mode::none;
  if (q) {
    be.ensure(st.spare_q, std::size_t(st.n) * p);
    q2 = st.spare_q.data();
  }
  const auto q_first = [&] {
    if (q_rest) apply_givens_q(st, *q_rest);
    if (!q) return;
    be.copy(lane_q, st.n, p, st.Q(0, k), st.ldq, q2, st.n);
    // Q's columns are the most data here (rows x s): moved once, in pieces of p columns, through
    // work_q, which only lane Q uses (xbuf holds a rank-k update's W, which lane R may still read).
    move_back(be, lane_q, false, s, st.n, p, st.Q(0, k), st.ldq, st.work_q, 64);
  };
  tp_retriangularize(st, s, p, nb, st.R(k, k), st.ldr, d2 ? st.D(k, 0) : nullptr, st.ldd, d2, p,
                     q ? st.Q(0, k) : nullptr, st.ldq, q2, st.n, q_first, pro);
  if (st.mode == q_mode::full) {
    if (d2) {
      be.dep(lane_r, lane_d);  // D is done on lane R or lane D
      be.copy(lane_d, p, st.nrhs, d2, p, st.D(k + s, 0), st.ldd);
    }
    be.copy(lane_q, st.n, p, q2, st.n, st.Q(0, k + s), st.ldq);
  }
}

// Where the rotations of a strip go: rows [off, off + L) of R (columns from col_lo(row) to
// col_end) and of D, columns [off, off + L) of Q.
struct givens_targets {
  int off = 0;
  int col_min = 0, col_end = 0;
  int col_shift = 0;  // R's rows from global row s have nonzeros from column s - p + col_shift
};

// The sweeps of one group of columns [j0, j0 + g) of the strip: a strip of its own (rows from j0,
// the same base), whose rotations then go to the strip's later columns as well as to R, D and Q.
inline kernels::givens_plan givens_group(const kernels::givens_plan& plan, int j0, int g) {
  kernels::givens_plan sub = plan;
  sub.L = plan.L - j0;
  sub.p = g;
  sub.w = std::max(plan.w, 64);  // g <= 64: a block of 64 + g rows still fits shared memory
  return sub;
}

// Sweeps per group: a group's wavefront works in the GPU's shared memory (its window is
// (2g + 2) x g), and the later columns take the group's rotations as GEMMs like R does.
inline constexpr int givens_group_width = 64;

// A group's rotations applied block by block to M: rows [roff + row0(t), + rows(t)) from the left
// (side 'L', columns from max(jbeg, that row + cshift) to jend) or those columns from the right
// ('R', rows [jbeg, jend)). From the left in one call with the rotations cs where the backend has
// it (`direct`, kernels::gpu_givens_apply), else with the blocks S: from the left in one call
// where the backend has it (kernels::gpu_givens_blocks_apply), else a GEMM and a copy a block
// through `work` (bw x the columns from the left, the rows x bw from the right, ld their count);
// on the CPUs Q's rows in pieces, each product and its copy back together.
inline constexpr int no_cshift = -(1 << 30);
template <class B, class T>
void apply_givens(B& be, int lane, const kernels::givens_plan& sub, bool direct, const T* cs, const T* S, char side,
                  T* M, int ldm, int roff, int jbeg, int jend, int cshift, T* work) {
  if (direct && side == 'L') {
    be.givens_apply(lane, sub, cs, M, ldm, roff, jbeg, jend, cshift);
    return;
  }
  if (side == 'L' && be.template givens_blocks_apply_fits<T>(sub)) {
    be.givens_blocks_apply(lane, sub, S, M, ldm, roff, jbeg, jend, cshift);
    return;
  }
  const int bw = sub.bw();
  for (int t = 0; t < sub.blocks(); ++t) {
    const int g = roff + sub.row0(t), rt = sub.rows(t);
    const T* St = S + std::size_t(t) * bw * bw;
    if (side == 'L') {
      const int c0 = std::max(jbeg, g + cshift), nc = jend - c0;
      if (nc <= 0) continue;
      T* Mt = M + g + std::size_t(c0) * ldm;
      be.gemm(lane, 'T', 'N', rt, nc, rt, T(1), St, bw, Mt, ldm, T(0), work, bw);
      be.copy(lane, rt, nc, work, bw, Mt, ldm);
    } else {
      const int nr = jend - jbeg;
      be.split(nr, apply_grain, [&](int r0, int rn) {
        T* Mt = M + jbeg + r0 + std::size_t(g) * ldm;
        be.gemm(lane, 'N', 'N', rn, rt, rt, T(1), Mt, ldm, St, bw, T(0), work + r0, nr);
        be.copy(lane, rn, rt, work + r0, nr, Mt, ldm);
      });
    }
  }
}

// Brings the strip X (plan.L x plan.p, ldx; in R or a buffer) to upper triangular form by the
// plan's sweeps, and applies the same rotations to R, D and Q as `tg` says, in blocks (GEMMs).
// Wide strips go in groups of sweeps (the sweeps' own order: group by group).
// One sweep (p = 1: a rank-1 update, one column added, one row deleted): its rotations go to R's
// columns [col_min, col_end), D and Q as line sweeps, a call each, where its blocks took a GEMM
// and a copy per block and matrix (each GEMM costs the host about as long as the GPU). Rotations
// that reach a column of R only through zeros leave them zero.
template <class B, class T>
void givens_single_sweep(update_state<B, T>& st, const kernels::givens_plan& plan, T* X, int ldx,
                         const givens_targets& tg) {
  auto& be = st.be;
  const int top = plan.umax(0);  // rotations on rows (i - 1, i), i = top .. 1, at cs[2 i]
  be.ensure(st.cs, plan.cs_size());
  be.givens_generate(lane_r, plan, X, ldx, st.cs.data());
  const T* cs = st.cs.data();
  if (st.nrhs > 0) {
    be.dep(lane_r, lane_d);
    be.sweep_up_left(lane_d, top, st.nrhs, cs, st.D(tg.off, 0), st.ldd);
  }
  if (st.qcols() > 0) {
    be.dep(lane_r, lane_q);
    be.sweep_up_right(lane_q, st.n, top, cs, st.Q(0, tg.off), st.ldq);
  }
  if (tg.col_end > tg.col_min)
    be.sweep_up_left(lane_r, top, tg.col_end - tg.col_min, cs, st.R(tg.off, tg.col_min), st.ldr);
}

// q_rest: the last group's products on Q are left to the caller (struct givens_rest). rd_rest:
// so are its products on R and D where they go by blocks from lane R (more than the backend's
// direct apply takes), the group's plan and row offset then set in it (pending).
template <class B, class T>
void givens_update(update_state<B, T>& st, const kernels::givens_plan& plan, T* X, int ldx,
                   const givens_targets& tg, givens_rest* q_rest = nullptr, givens_rest* rd_rest = nullptr) {
  auto& be = st.be;
  if (plan.L <= 1 || plan.p <= 0 || plan.umax_all() <= 0) return;
  if (plan.p == 1) {
    givens_single_sweep(st, plan, X, ldx, tg);
    return;
  }
  const int G = givens_group_width;
  const int ngroups = (plan.p + G - 1) / G;
  for (int grp = 0; grp < ngroups; ++grp) {
    const int j0 = grp * G, g = std::min(G, plan.p - j0);
    const kernels::givens_plan sub = givens_group(plan, j0, g);
    if (sub.L <= 1 || sub.umax_all() <= 0) continue;
    // R, D and the strip's later columns take the rotations themselves where the backend applies
    // them in one call (`direct`), else the blocks made from them, with GEMMs through the work
    // buffers; Q takes the blocks either way (made on lane Q where only Q needs them). Groups
    // alternate between two buffers of rotations: a direct group's are read on lanes D and Q while
    // the next group's are made.
    const bool direct = be.template givens_apply_fits<T>(sub), q_kept = st.qcols() > 0;
    if (st.givens_groups > 0) be.swap(st.cs, st.cs_prev);
    be.ensure(st.cs, sub.cs_size());
    const int bw = sub.bw(), rest = plan.p - j0 - g;
    // R's products go on lane D while a later group's sweeps follow on lane R (which then need
    // only the strip's later columns), else on lane R beside D's.
    const int lane_rr = rest > 0 ? lane_d : lane_r;
    const int r_on_r = lane_rr == lane_r ? tg.col_end : 0, r_on_d = lane_rr == lane_d ? tg.col_end : 0;
    if (!direct || q_kept) be.ensure(st.S, sub.blocks_size());
    if (!direct && !be.template givens_blocks_apply_fits<T>(sub)) {
      be.ensure(st.work_r, std::size_t(bw) * std::max({rest, r_on_r, 1}));
      if (st.nrhs > 0 || r_on_d > 0) be.ensure(st.work_d, std::size_t(bw) * std::max({r_on_d, st.nrhs, 1}));
    }
    if (q_kept) be.ensure(st.work_q, std::size_t(bw) * std::max(st.n, 1));
    T* Xg = X + j0 + std::size_t(j0) * ldx;
    be.givens_generate(lane_r, sub, Xg, ldx, st.cs.data());
    // The blocks (and the buffer of rotations two groups back) are new buffers' worth: lanes Q and
    // D may still read the last group's (this update's first group's were last read in an earlier
    // update). The rotations are not, so the group's sweeps overlap the last group's products on
    // those lanes.
    if (st.givens_groups++ > 0) {
      be.dep(lane_q, lane_r);
      be.dep(lane_d, lane_r);
    }
    if (!direct) be.givens_blocks(lane_r, sub, st.cs.data(), st.S.data());
    if (q_kept) be.dep(lane_r, lane_q);
    if (st.nrhs > 0 || r_on_d > 0) be.dep(lane_r, lane_d);
    if (direct && q_kept) be.givens_blocks(lane_q, sub, st.cs.data(), st.S.data());
    T* const work_rr = lane_rr == lane_d ? st.work_d.data() : st.work_r.data();
    const T *cs = st.cs.data(), *S = st.S.data();
    const int roff = tg.off + j0;  // row (R, D) or column (Q) of the group's strip row 0
    // The strip's later columns on lane R (the next group's sweeps wait for them), R's (columns
    // from row g's col_shift - p on, not the strip's) on lane_rr, D's on lane D; Q's columns
    // likewise from the right on lane Q, so that Q R stays A.
    if (rest > 0)
      apply_givens(be, lane_r, sub, direct, cs, S, 'L', X + std::size_t(j0 + g) * ldx, ldx, j0, 0, rest, no_cshift,
                   st.work_r.data());
    if (rd_rest && grp == ngroups - 1 && !direct && lane_rr == lane_r && be.template givens_blocks_apply_fits<T>(sub)) {
      *rd_rest = givens_rest{true, sub, roff};
    } else {
      if (tg.col_end > tg.col_min)
        apply_givens(be, lane_rr, sub, direct, cs, S, 'L', st.R(0, 0), st.ldr, roff, tg.col_min, tg.col_end,
                     tg.col_shift - plan.p, work_rr);
      if (st.nrhs > 0)
        apply_givens(be, lane_d, sub, direct, cs, S, 'L', st.D(0, 0), st.ldd, roff, 0, st.nrhs, no_cshift,
                     st.work_d.data());
    }
    if (q_kept) {
      givens_rest q{true, sub, roff};
      if (q_rest && grp == ngroups - 1) *q_rest = q;
      else apply_givens_q(st, q);
    }
  }
  if (ngroups > 1) be.dep(lane_d, lane_r);  // what follows on lane R reads R
}

template <class B, class T>
void apply_givens_q(update_state<B, T>& st, givens_rest& rest) {
  if (!rest.pending) return;
  rest.pending = false;
  st.be.ensure(st.work_q, std::size_t(rest.sub.bw()) * std::max(st.n, 1));
  apply_givens(st.be, lane_q, rest.sub, false, st.cs.data(), st.S.data(), 'R', st.Q(0, 0), st.ldq, rest.roff, 0,
               st.n, no_cshift, st.work_q.data());
}

// The width of a Givens block: wide enough that the blocks are few (each costs a GEMM per matrix)
// and their GEMMs efficient, narrow enough that their extra flops ((w + p)^2 / (3 w p) of the
// rotations') stay small and a block's (w + p)^2 matrix is built in the GPU's shared memory. On
// the GPU each block's GEMM and copy per matrix cost more host time than GPU time when p is small:
// 128 there for p <= 32 (H100: faster than 64 in every case measured, rank-1 and rank-16 updates
// of 8000 x 3000 and deleting 20 rows of 12000 x 6000, both precisions; 192 slower at rank 16 in
// double and at 20 rows, 256 at both; docs/results/2026-11-27-band-apply-h100.md).
template <class B>
int givens_block_width(int p) {
  return B::on_gpu && p <= 32 ? 128 : p <= 128 ? 64 : 32;
}

// Which form re-triangularizes p dense rows over a triangle (deleting p columns,
// update_delete_columns.cpp; a rank-p update's band, update_rank_k.cpp): rows_retriangularize from
// 2 rows without Q and from 33 with Q, up to rows_form_max; else the band's panels, one row by a
// Givens sweep. Measured on deletions, on the H100 (6000 x 3000, double and single, k = 0 .. 2500):
// the rows form was 1.1-2.1x faster in those ranges, and slower with Q up to 32 columns (the
// band's panels are then one kernel each on R, D and Q: 1.1-1.7x at k >= 2000) and beyond 512
// (1.1-1.2x in double) (docs/results/2026-11-27-delete-columns-as-rows-h100.md); one column: the
// sweep (docs/results/2026-11-28-hessenberg-sweep-h200.md).
inline constexpr int rows_form_max = 512;  // kernels::gpu_tpqrt_chain_max_rows: its persistent kernel
inline bool retriangularize_as_rows(int p, bool q_kept) { return p > 1 && p <= rows_form_max && (!q_kept || p > 32); }
// A rank-r update of an n x m R (full Q): its band is r dense rows over an m x m triangle when
// n - m >= r, and rows_retriangularize then was as fast as the band's panels or faster at every
// rank measured from 2 to 256 (H200, 8000 x 3000, both precisions: rank 64 in double 10.9-11.0
// -> 7.1-7.3 ms, rank 24 6.9 -> 6.1-6.2, rank 8 5.6 either way;
// docs/results/2026-11-29-rank-k-as-rows-h200.md); on the 2-core VM's CPUs (4000 x 1500) as fast
// or faster from the second update on (a first one up to 8% slower at rank 128).
// Rank 1 keeps the Givens sweep.
inline bool rank_band_as_rows(int r, int n, int m) { return r > 1 && r <= rows_form_max && r <= n - m; }
// Whether deleting p columns as rows moves R's triangle of order s in place (rows_retriangularize's
// dc = p): its chains are about s / p entries, each a thread's on the GPU (kernels::gpu_shift_upper).
// H200, 6000 x 3000 without Q, k = 0: 100 columns 2.66 -> 2.35 ms, 500 2.68-2.71 -> 2.43-2.44
// (docs/results/2026-11-29-chain-groups-h200.md).
inline bool shift_in_place(int s, int p) { return s <= 64 * p; }

// The algorithms, one per file (qr/src/update_*.cpp); arguments checked by the caller.
template <class B, class T> void delete_columns(update_state<B, T>&, int k, int p, int nb, bool as_rows);
template <class B, class T> void insert_columns(update_state<B, T>&, int k, const T* u, int ldu, int p);
template <class B, class T> void insert_rows(update_state<B, T>&, int k, const T* u, int ldu, int p,
                                             const T* bu, int ldbu, int nb);
template <class B, class T> void delete_rows(update_state<B, T>&, int k, int p);
template <class B, class T> void rank_update(update_state<B, T>&, const T* u, int ldu, const T* v,
                                             int ldv, int r, bool as_rows, int nb_rows);

}  // namespace tessera::qr::detail

// Explicit instantiations of one algorithm for both backends and precisions.
#if TESSERA_QR_CUDA
#define TESSERA_UPDATE_INSTANTIATE(F)                                           \
  F(tessera::qr::detail::host_backend, float)                                   \
  F(tessera::qr::detail::host_backend, double)                                  \
  F(tessera::qr::detail::gpu_backend, float)                                    \
  F(tessera::qr::detail::gpu_backend, double)
#else
#define TESSERA_UPDATE_INSTANTIATE(F)                                           \
  F(tessera::qr::detail::host_backend, float)                                   \
  F(tessera::qr::detail::host_backend, double)
#endif
