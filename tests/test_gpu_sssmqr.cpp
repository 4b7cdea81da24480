// The GPU SSSMQR kernels (kernels_gpu/) against LAPACK on the host, float and double:
// the full T against LARFT, gpu_tsmqr (also through gpu_sssmqr), gpu_tsmqr_blocked and gpu_tsmqr_fused
// against TPMQRT, gpu_larfb_fused and gpu_larfb_small (both sides) against GEMQRT,
// gpu_sssmqr against a loop of TPMQRT over a panel factored by a chain of TPQRT (partial last
// tile row, kk not a multiple of ib, odd column counts, both T layouts, prepared factors reused
// over column ranges, A1 with its own leading dimension),
// gpu_ormqr against GEMQRT, gpu_tpqrt_chain against TPQRT and TPMQRT (also with a rank-k update's prologue, against its
// steps on the host first), gpu_shift_upper against a copy, gpu_tp_apply_right against
// the panels' block reflectors formed on the host, plus argument errors. Rows of A1's tile row beyond kk and the padding
// of every device matrix must come back untouched. Without a CUDA device: exit 77 (skipped).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <tessera/kernels_cpu/blas.hpp>
#include <tessera/kernels_gpu.hpp>
#include <tessera/kernels_gpu/gpu_fill.hpp>

#include "gpu_test_util.hpp"
#include "test_util.hpp"

namespace {

using namespace tessera::kernels;


// Relative errors are scaled by eps and the square root of the order (LAPACK-style threshold).
constexpr double threshold = 30.0;

template <class T>
double tolerance(int order) {
  return threshold * std::numeric_limits<T>::epsilon() * std::sqrt(static_cast<double>(order));
}

using namespace tessera::testing::gpu;

// LAPACK references (tessera::blas) with the shapes used here: l = 0, Q^T from the left.
template <class T>
int tpqrt(int m, int n, int nb, T* a, int lda, T* b, int ldb, T* t, int ldt) {
  return tessera::blas::tpqrt(m, n, 0, nb, a, lda, b, ldb, t, ldt, lapack_work<T>(nb, m, n).data());
}
template <class T>
int tpmqrt(int m, int n, int k, int nb, const T* v, int ldv, const T* t, int ldt, T* a, int lda,
           T* b, int ldb) {
  return tessera::blas::tpmqrt('L', 'T', m, n, k, 0, nb, v, ldv, t, ldt, a, lda, b, ldb,
                               lapack_work<T>(nb, m, n).data());
}
template <class T>
int larft(int n, int k, const T* v, int ldv, const T* tau, T* t, int ldt) {
  return tessera::blas::larft('F', 'C', n, k, v, ldv, tau, t, ldt);
}
template <class T>
int gemqrt(int m, int n, int k, int nb, const T* v, int ldv, const T* t, int ldt, T* c, int ldc) {
  return tessera::blas::gemqrt('L', 'T', m, n, k, nb, v, ldv, t, ldt, c, ldc,
                               lapack_work<T>(nb, m, n).data());
}

// One TSQRT of a random [R; A2] (R kk x kk upper, A2 m x kk): V (m x kk, ldv = m + 2) and the
// blocked T (ib x kk). LAPACK wants its block size <= kk; ib > kk means one block of kk.
template <class T>
struct tsqrt_factors {
  mat<T> V, Tb;
  int ib;
  tsqrt_factors(int m, int kk, int ib_)
      : V(m, kk, 2), Tb(std::min(ib_, kk), kk), ib(std::min(ib_, kk)) {
    mat<T> R(kk, kk);
    R.randomize();
    V.randomize();
    REQUIRE(tpqrt(m, kk, ib, R.data(), R.ld, V.data(), V.ld, Tb.data(), Tb.ld) == 0);
  }
};

// The device pair [A1; A2] against LAPACK's [R1; R2]: relative errors within tol, A1's rows
// beyond kk and every padding untouched. Returns the larger error.
template <class T>
double check_pair(const dev<T>& dA1, const dev<T>& dA2, const mat<T>& A1, const mat<T>& A2, const mat<T>& R1,
                  const mat<T>& R2, int kk, int m, double tol) {
  mat<T> G1 = A1, G2 = A2;
  dA1.get(G1);
  dA2.get(G2);
  const double e1 = rel_error(G1, R1, 0, kk), e2 = rel_error(G2, R2);
  CHECK(e1 <= tol);
  CHECK(e2 <= tol);
  CHECK(same_outside(G1, A1, 0, kk));
  CHECK(same_outside(G2, A2, 0, m));
  return std::max(e1, e2);
}

TEST_CASE_TEMPLATE("gpu_tsqrt_full_t equals LAPACK LARFT on [I; V2]", T, float, double) {
  struct shape { int m, kk, ib; };
  double worst = 0;
  for (const shape s : {shape{64, 64, 16}, shape{40, 64, 16}, shape{100, 70, 32},
                        shape{33, 20, 32}, shape{256, 256, 32}, shape{7, 5, 2}}) {
    CAPTURE(s.m);
    CAPTURE(s.kk);
    CAPTURE(s.ib);
    tsqrt_factors<T> f(s.m, s.kk, s.ib);
    // Reference: LARFT on the explicit V = [I; V2] with tau = the diagonal of each T block.
    const int kk = s.kk;
    mat<T> Vfull(kk + s.m, kk);
    std::vector<T> tau(kk);
    for (int j = 0; j < kk; ++j) {
      for (int i = 0; i < kk; ++i) Vfull(i, j) = T(i == j ? 1 : 0);
      for (int i = 0; i < s.m; ++i) Vfull(kk + i, j) = f.V(i, j);
      tau[j] = f.Tb(j % f.ib, j);
    }
    mat<T> Tref(kk, kk);
    for (auto& x : Tref.a) x = T(0);
    REQUIRE(larft(kk + s.m, kk, Vfull.data(), Vfull.ld, tau.data(), Tref.data(), Tref.ld) == 0);
    for (int j = 0; j < kk; ++j)
      for (int i = j + 1; i < kk; ++i) Tref(i, j) = T(0);  // LARFT leaves the lower part alone

    blas b;
    dev<T> dV(f.V), dTb(f.Tb);
    mat<T> Tf(kk, kk, 3);
    dev<T> dTf(Tf);
    dev<T> work(gpu_tsqrt_full_t_workspace_size(kk));
    gpu_tsqrt_full_t<T>(s.m, kk, s.ib, dV.p, f.V.ld, dTb.p, f.Tb.ld, dTf.p, Tf.ld, work.p, work.n,
                        b.h);
    b.sync();
    mat<T> got = Tf;
    dTf.get(got);
    const double err = rel_error(got, Tref);
    worst = std::max(worst, err);
    CHECK(err <= tolerance<T>(kk + s.m));
    CHECK(same_outside(got, Tf, 0, kk));  // padding rows untouched
  }
  MESSAGE("full T: largest relative error " << worst);
}

TEST_CASE_TEMPLATE("gpu_tsmqr (also as gpu_sssmqr) and gpu_tsmqr_blocked equal LAPACK TPMQRT", T, float, double) {
  struct shape { int m, n, kk, ib; };
  double worst = 0;
  for (const shape s : {shape{64, 77, 64, 16}, shape{37, 129, 64, 16}, shape{100, 33, 70, 32},
                        shape{20, 45, 48, 16}, shape{256, 301, 256, 32}, shape{5, 1, 3, 8}}) {
    CAPTURE(s.m);
    CAPTURE(s.n);
    CAPTURE(s.kk);
    CAPTURE(s.ib);
    tsqrt_factors<T> f(s.m, s.kk, s.ib);
    // A1 is the first kk rows of a taller tile row (kk + 4 rows, ld + 3): the rest must not move.
    mat<T> A1(s.kk + 4, s.n, 3), A2(s.m, s.n, 5);
    A1.randomize();
    A2.randomize();
    mat<T> R1 = A1, R2 = A2;
    REQUIRE(tpmqrt(s.m, s.n, s.kk, f.ib, f.V.data(), f.V.ld, f.Tb.data(), f.Tb.ld, R1.data(),
                   R1.ld, R2.data(), R2.ld) == 0);

    blas b;
    dev<T> dV(f.V), dTb(f.Tb);
    const double tol = tolerance<T>(s.m + s.kk);
    for (int variant = 0; variant < 3; ++variant) {
      CAPTURE(variant);
      dev<T> dA1(A1), dA2(A2);
      if (variant == 0) {
        dev<T> work(gpu_tsmqr_workspace_size(s.m, s.n, s.kk));
        gpu_tsmqr<T>(s.m, s.n, s.kk, s.ib, dA1.p, A1.ld, dA2.p, A2.ld, dV.p, f.V.ld, dTb.p,
                     f.Tb.ld, work.p, work.n, b.h);
      } else if (variant == 1) {
        // The same through gpu_sssmqr with one tile row.
        dev<T> work(gpu_sssmqr_workspace_size(1, s.m, s.kk, s.n));
        gpu_sssmqr<T>(1, s.m, s.m, s.n, s.kk, s.ib, dA1.p, A1.ld, dA2.p, A2.ld, dV.p, f.V.ld,
                      dTb.p, f.Tb.ld, 0, work.p, work.n, b.h);
      } else {
        dev<T> work(gpu_tsmqr_blocked_workspace_size(s.kk, s.ib, s.n));
        gpu_tsmqr_blocked<T>(s.m, s.n, s.kk, s.ib, dA1.p, A1.ld, dA2.p, A2.ld, dV.p, f.V.ld,
                             dTb.p, f.Tb.ld, work.p, work.n, b.h);
      }
      b.sync();
      worst = std::max(worst, check_pair(dA1, dA2, A1, A2, R1, R2, s.kk, s.m, tol));
    }
  }
  MESSAGE("tsmqr: largest relative error " << worst);
}

// Shapes for the one-kernel applies (m rows of V2 or C, n columns, k reflectors): several
// 16-column blocks and a partial one, rows past a 64-row tile, k below 32, one row.
struct fused_shape {
  int m, n, k;
};
constexpr fused_shape fused_shapes[] = {{532, 301, 32}, {37, 129, 32}, {100, 33, 20}, {5, 1, 3},
                                        {64, 16, 32},   {1, 40, 1},    {130, 47, 31}};

// T (k x k) with its strict lower triangle NaN: the one-kernel applies must not read it.
template <class T>
mat<T> nan_below(mat<T> t, int k) {
  for (int j = 0; j < k; ++j)
    for (int i = j + 1; i < k; ++i) t(i, j) = std::numeric_limits<T>::quiet_NaN();
  return t;
}

TEST_CASE_TEMPLATE("gpu_tsmqr_fused and gpu_larfb_fused equal LAPACK TPMQRT and GEMQRT (k <= 32, full T)", T, float,
                   double) {
  double worst_tsmqr = 0, worst_larfb = 0;
  for (const fused_shape s : fused_shapes) {
    CAPTURE(s.m);
    CAPTURE(s.n);
    CAPTURE(s.k);
    blas b;
    {  // TPMQRT: [A1; A2] with V = [I; V2] from a TPQRT
      tsqrt_factors<T> f(s.m, s.k, s.k);  // one block: Tb is the full T
      mat<T> A1(s.k + 4, s.n, 3), A2(s.m, s.n, 5);
      A1.randomize();
      A2.randomize();
      mat<T> R1 = A1, R2 = A2;
      REQUIRE(tpmqrt(s.m, s.n, s.k, s.k, f.V.data(), f.V.ld, f.Tb.data(), f.Tb.ld, R1.data(), R1.ld,
                     R2.data(), R2.ld) == 0);
      const mat<T> Tn = nan_below(f.Tb, s.k);
      dev<T> dV(f.V), dT(Tn), dA1(A1), dA2(A2);
      gpu_tsmqr_fused<T>(s.m, s.n, s.k, dA1.p, A1.ld, dA2.p, A2.ld, dV.p, f.V.ld, dT.p, Tn.ld, b.s);
      b.sync();
      worst_tsmqr = std::max(worst_tsmqr, check_pair(dA1, dA2, A1, A2, R1, R2, s.k, s.m, tolerance<T>(s.m + s.k)));
    }
    {  // GEMQRT: C with the V of a GEQRT panel (one block: its T is the full T), made explicit
      mat<T> P(s.m, s.k, 2), Tb(s.k, s.k);
      P.randomize();
      REQUIRE(geqrt(s.m, s.k, s.k, P.data(), P.ld, Tb.data(), Tb.ld) == 0);
      mat<T> V = P;
      for (int j = 0; j < s.k; ++j)
        for (int i = 0; i <= j; ++i) V(i, j) = T(i == j ? 1 : 0);
      const mat<T> Tn = nan_below(Tb, s.k);
      mat<T> C(s.m, s.n, 3);
      C.randomize();
      mat<T> R = C;
      REQUIRE(gemqrt(s.m, s.n, s.k, s.k, P.data(), P.ld, Tb.data(), Tb.ld, R.data(), R.ld) == 0);
      dev<T> dV(V), dT(Tn), dC(C);
      gpu_larfb_fused<T>(s.m, s.n, s.k, dV.p, V.ld, dT.p, Tn.ld, dC.p, C.ld, b.s);
      b.sync();
      mat<T> G = C;
      dC.get(G);
      const double e = rel_error(G, R), tol = tolerance<T>(s.m);
      worst_larfb = std::max(worst_larfb, e);
      CHECK(e <= tol);
      CHECK(same_outside(G, C, 0, s.m));
    }
  }
  MESSAGE("tsmqr_fused: largest relative error " << worst_tsmqr << ", larfb_fused: " << worst_larfb);
}

// gpu_larfb_small (band panels: h <= 96 rows, k <= 64 reflectors) against LAPACK GEMQRT from the
// left (C := Q^T C, C h x n) and from the right (C := C Q, C n x h), V from a GEQRT of a random
// panel, T's strict lower triangle NaN; C's padding must come back untouched.
struct small_shape {
  int h, n, k;
};
constexpr small_shape small_shapes[] = {{96, 1000, 64}, {80, 2936, 64}, {80, 333, 56}, {96, 17, 33},
                                        {64, 16, 64},   {33, 40, 32},   {17, 15, 16},  {1, 5, 1},
                                        {96, 1, 1},     {70, 129, 20}};

TEST_CASE_TEMPLATE("gpu_larfb_small equals LAPACK GEMQRT from both sides (h <= 96, k <= 64)", T, float, double) {
  double worst = 0;
  blas b;
  for (const small_shape s : small_shapes) {
    CAPTURE(s.h);
    CAPTURE(s.n);
    CAPTURE(s.k);
    mat<T> P(s.h, s.k, 3), Tb(s.k, s.k);
    P.randomize();
    REQUIRE(geqrt(s.h, s.k, s.k, P.data(), P.ld, Tb.data(), Tb.ld) == 0);
    mat<T> V = P;  // explicit: unit diagonal, zeros above it
    for (int j = 0; j < s.k; ++j)
      for (int i = 0; i <= j; ++i) V(i, j) = T(i == j ? 1 : 0);
    const mat<T> Tn = nan_below(Tb, s.k);
    dev<T> dV(V), dT(Tn);
    for (const char side : {'L', 'R'}) {
      CAPTURE(side);
      const int rows = side == 'L' ? s.h : s.n, cols = side == 'L' ? s.n : s.h;
      mat<T> C(rows, cols, 5);
      C.randomize();
      mat<T> R = C;
      REQUIRE(tessera::blas::gemqrt(side, side == 'L' ? 'T' : 'N', rows, cols, s.k, s.k, P.data(), P.ld, Tb.data(),
                                    Tb.ld, R.data(), R.ld, lapack_work<T>(s.k, rows, cols).data()) == 0);
      for (const int max_blocks : {0, 2}) {  // a block a slab; two blocks taking every other slab
        CAPTURE(max_blocks);
        dev<T> dC(C);
        REQUIRE(gpu_larfb_small<T>(side, s.h, s.n, s.k, dV.p, V.ld, dT.p, Tn.ld, dC.p, C.ld, b.s, max_blocks));
        b.sync();
        mat<T> G = C;
        dC.get(G);
        const double e = rel_error(G, R);
        worst = std::max(worst, e);
        CHECK(e <= tolerance<T>(s.h));
        CHECK(same_outside(G, C, 0, rows));
      }
    }
  }
  MESSAGE("larfb_small: largest relative error " << worst);
}

// gpu_tpqrt_chain's factors against LAPACK's: R's upper triangles (zeros below in both), U, and
// each panel's T on and above its diagonal (zeroed below here); U's padding untouched. The largest
// relative error.
template <class T>
double check_chain_factors(const mat<T>& Rg, const mat<T>& Rr, const mat<T>& Ug, const mat<T>& Ur, const mat<T>& U0,
                           mat<T>& Tg, mat<T>& Tr, int p, double tol) {
  for (int j = 0; j < Tr.n; ++j)
    for (int i = j % 32 + 1; i < 32; ++i) Tr(i, j) = Tg(i, j) = T(0);
  const double eR = rel_error(Rg, Rr), eU = rel_error(Ug, Ur), eT = rel_error(Tg, Tr);
  CHECK(eR <= tol);
  CHECK(eU <= tol);
  CHECK(eT <= tol);
  CHECK(same_outside(Ug, U0, 0, p));
  return std::max({eR, eU, eT});
}

// The right-hand sides [C1; C2] against TPMQRT's: the larger relative error.
template <class T>
double check_chain_rhs(const mat<T>& C1g, const mat<T>& C1r, const mat<T>& C2g, const mat<T>& C2r, double tol) {
  const double e1 = rel_error(C1g, C1r), e2 = rel_error(C2g, C2r);
  CHECK(e1 <= tol);
  CHECK(e2 <= tol);
  return std::max(e1, e2);
}

// The persistent [R; U] QR of the added rows (kernels::gpu_tpqrt_chain) against LAPACK TPQRT with
// nb = 32 (the same panels, so the same R, V and T up to rounding) and TPMQRT on the right-hand
// sides; with several chains against TPQRT and TPMQRT on U's row blocks in turn. max_grid forces
// several slabs a thread block (the waits on later panels and on the block above), and the flags
// are cleared (epoch 0) or taken as they are (epoch > 0). R's strict lower part and every padding
// must come back untouched.
TEST_CASE_TEMPLATE("gpu_tpqrt_chain equals LAPACK TPQRT (nb 32) and TPMQRT", T, float, double) {
  struct shape { int m, p, nrhs, max_grid, chains; };
  double worst = 0;
  int shape_no = 0;
  for (const shape s : {shape{1, 1, 0, 0, 1}, shape{5, 3, 1, 0, 1}, shape{32, 40, 2, 0, 1}, shape{70, 128, 3, 0, 1},
                        shape{70, 129, 0, 0, 1}, shape{97, 17, 5, 2, 1}, shape{200, 500, 33, 3, 1},
                        shape{100, 512, 1, 1, 1}, shape{257, 64, 64, 0, 1}, shape{90, 256, 2, 0, 1},
                        shape{65, 257, 1, 2, 1}, shape{200, 500, 33, 0, 4}, shape{130, 300, 3, 5, 2},
                        shape{97, 5, 2, 0, 4}, shape{64, 3, 1, 1, 8}, shape{161, 1000, 40, 0, 2},
                        shape{33, 257, 0, 3, 3}}) {
    CAPTURE(s.m);
    CAPTURE(s.p);
    CAPTURE(s.nrhs);
    CAPTURE(s.max_grid);
    CAPTURE(s.chains);
    mat<T> R(s.m, s.m, 3), U(s.p, s.m, 2), C1(s.m, std::max(s.nrhs, 1), 1), C2(s.p, std::max(s.nrhs, 1), 4);
    R.randomize();
    for (int j = 0; j < s.m; ++j) {  // well conditioned, so that R's entries compare normwise
      R(j, j) = T(double(R(j, j)) + (R(j, j) < 0 ? -2.0 : 2.0));
      for (int i = j + 1; i < s.m; ++i) R(i, j) = T(0.5 * i);  // must stay as it is
    }
    U.randomize();
    C1.randomize();
    C2.randomize();
    // The row blocks as the kernel forms them: ceil(p / chains) rows each, the last the rest.
    const int rows = (s.p + std::min(s.chains, s.p) - 1) / std::min(s.chains, s.p),
              chains = (s.p + rows - 1) / rows, npanels = (s.m + 31) / 32;
    mat<T> Rr = R, Ur = U, C1r = C1, C2r = C2, Tr(32, 32 * npanels * chains);
    for (auto& x : Tr.a) x = T(0);
    for (int c = 0; c < chains; ++c) {
      const int r0 = c * rows, pc = std::min(rows, s.p - r0);
      T* Tc = Tr.data() + std::size_t(32) * 32 * npanels * c;
      REQUIRE(tpqrt(pc, s.m, std::min(32, s.m), Rr.data(), Rr.ld, Ur.data() + r0, Ur.ld, Tc, Tr.ld) == 0);
      if (s.nrhs > 0)
        REQUIRE(tpmqrt(pc, s.nrhs, s.m, std::min(32, s.m), Ur.data() + r0, Ur.ld, Tc, Tr.ld, C1r.data(), C1r.ld,
                       C2r.data() + r0, C2r.ld) == 0);
    }
    mat<T> Tg(32, 32 * npanels * chains);
    for (auto& x : Tg.a) x = T(0);
    blas b;
    dev<T> dR(R), dU(U), dC1(C1), dC2(C2), dT(Tg);
    // The flags: every other shape with epoch 0 over stale "done" flags (the kernel must clear
    // them), the others with epoch 7 over flags below it (it must not); after, each flag is the
    // epoch. The progress counters behind them start stale too (the kernel clears them).
    const std::size_t lwork = gpu_tpqrt_chain_workspace(s.m, s.nrhs, s.chains);
    const int nflags = int(lwork / sizeof(int)), epoch = ++shape_no % 2 ? 0 : 7;
    dev<int> work{static_cast<std::size_t>(nflags)};
    std::vector<int> flags(std::size_t(nflags), epoch == 0 ? 1 : 6);
    cuda_ok(cudaMemcpy(work.p, flags.data(), sizeof(int) * flags.size(), cudaMemcpyHostToDevice));
    cuda_ok(cudaDeviceSynchronize());  // as dev::put: the kernel's stream is non-blocking
    REQUIRE(gpu_tpqrt_chain<T>(s.m, s.p, s.nrhs, dR.p, R.ld, dU.p, U.ld, dC1.p, C1.ld, dC2.p, C2.ld, dT.p, work.p,
                               lwork, b.s, s.max_grid, epoch, s.chains));
    b.sync();
    cuda_ok(cudaMemcpy(flags.data(), work.p, sizeof(int) * flags.size(), cudaMemcpyDeviceToHost));
    // The workspace (gpu_tpqrt.hpp): the panel flags, then 4 group flags a panel (set where the
    // chain has a next panel), then the progress counters and the groups' data, 0 again (a later
    // call's flags may lie there).
    const int cp = npanels * chains, set = epoch == 0 ? 1 : epoch;
    CHECK(std::count(flags.begin(), flags.begin() + cp, set) == cp);
    int groups_set = 0;
    for (int c = 0; c < chains; ++c)
      for (int t = 0; t + 1 < npanels; ++t)
        for (int g = 0; g < 4; ++g) groups_set += flags[std::size_t(cp + 4 * (c * npanels + t) + g)] == set;
    CHECK(groups_set == 4 * chains * (npanels - 1));
    const int used = int(gpu_tpqrt_chain_workspace(s.m, s.nrhs, chains) / sizeof(int));  // chains as it forms them
    CHECK(std::count(flags.begin() + 5 * cp, flags.begin() + used, 0) == used - 5 * cp);
    mat<T> Rg = R, Ug = U, C1g = C1, C2g = C2;
    dR.get(Rg);
    dU.get(Ug);
    dC1.get(C1g);
    dC2.get(C2g);
    dT.get(Tg);
    const double tol = tolerance<T>(s.m + s.p);
    // R: upper triangles compared; the strict lower part as it was.
    mat<T> Ru = Rr, Rgu = Rg;
    bool lower_kept = true;
    for (int j = 0; j < s.m; ++j)
      for (int i = j + 1; i < R.ld; ++i) {
        lower_kept = lower_kept && Rg(i, j) == R(i, j);
        Ru(i, j) = Rgu(i, j) = T(0);
      }
    CHECK(lower_kept);
    worst = std::max(worst, check_chain_factors(Rgu, Ru, Ug, Ur, U, Tg, Tr, s.p, tol));
    if (s.nrhs > 0) {
      worst = std::max(worst, check_chain_rhs(C1g, C1r, C2g, C2r, tol));
      CHECK(same_outside(C1g, C1, 0, s.m));
      CHECK(same_outside(C2g, C2, 0, s.p));
    }
  }
  MESSAGE("gpu_tpqrt_chain: largest relative error " << worst);
}

// gpu_tpqrt_chain with a rank-k update's prologue (rank_band_steps) against the same steps on
// the host, then LAPACK TPQRT and TPMQRT: R's array holds an m x m triangle over p zero rows, p
// Givens sweeps (from a strip as the updates leave it, made and gathered into blocks on the CPUs)
// give it p subdiagonals, R's top p rows += W V^T, then the p dense rows go to U and the triangle
// up; C1's array likewise (its top p rows to C2). max_grid forces several slabs a thread block.
// Below the diagonal R must come back zero to row m + p; every padding untouched.
TEST_CASE_TEMPLATE("gpu_tpqrt_chain's rank-k prologue equals its steps on the host, then TPQRT", T, float, double) {
  struct shape { int m, p, nrhs, max_grid; };
  double worst = 0;
  for (const shape s : {shape{40, 20, 1, 0}, shape{97, 33, 2, 2}, shape{200, 64, 1, 3}, shape{130, 50, 0, 1},
                        shape{300, 64, 3, 0}, shape{33, 2, 1, 0}}) {
    CAPTURE(s.m);
    CAPTURE(s.p);
    CAPTURE(s.nrhs);
    CAPTURE(s.max_grid);
    const int L = s.m + s.p, nc = std::max(s.nrhs, 1), npanels = (s.m + 31) / 32;
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    mat<T> Rf(L, s.m, 3), Cf(L, nc, 1), W(s.p, s.p, 1), V(s.m, s.p, 2);
    for (int j = 0; j < s.m; ++j)
      for (int i = 0; i < L; ++i) Rf(i, j) = i < j ? T(u(rng())) : i == j ? T(u(rng()) + 3) : T(0);
    Cf.randomize();
    V.randomize();
    for (int j = 0; j < s.p; ++j)
      for (int i = 0; i < s.p; ++i) W(i, j) = i <= j ? T(u(rng())) : T(0);
    givens_plan plan;
    plan.L = L;
    plan.p = s.p;
    plan.base = s.m;
    plan.w = 64;
    std::vector<T> X(std::size_t(L) * s.p, T(0)), cs(plan.cs_size());
    for (int j = 0; j < s.p; ++j)
      for (int i = 0; i <= std::min(L - 1, s.m + j); ++i) X[i + std::size_t(j) * L] = T(u(rng()));
    givens_generate(plan, X.data(), L, cs.data());
    const int bw = plan.bw();
    mat<T> S(int(std::max<std::size_t>(plan.blocks_size(), 1)), 1);
    givens_blocks(plan, cs.data(), S.data(), 1);
    // On the host: block t takes rows row0(t) .. of columns from row0(t) + cshift on (R: -p).
    const auto blocks = [&](mat<T>& M, int cols, int cshift) {
      std::vector<double> col(bw);
      for (int t = 0; t < plan.blocks(); ++t) {
        const int g = plan.row0(t), rt = plan.rows(t);
        for (int j = std::max(0, g + cshift); j < cols; ++j) {
          for (int i = 0; i < rt; ++i) {
            double acc = 0;
            for (int k = 0; k < rt; ++k) acc += double(S.a[std::size_t(t) * bw * bw + k + std::size_t(i) * bw]) * double(M(g + k, j));
            col[i] = acc;
          }
          for (int i = 0; i < rt; ++i) M(g + i, j) = T(col[i]);
        }
      }
    };
    mat<T> Rh = Rf, Ch = Cf;
    blocks(Rh, s.m, -s.p);
    if (s.nrhs > 0) blocks(Ch, s.nrhs, -(1 << 30));
    for (int j = 0; j < s.m; ++j)
      for (int i = 0; i < s.p; ++i) {
        double acc = double(Rh(i, j));
        for (int l = i; l < s.p; ++l) acc += double(W(i, l)) * double(V(j, l));
        Rh(i, j) = T(acc);
      }
    mat<T> Rr(s.m, s.m, 3), Ur(s.p, s.m, 2), C1r(s.m, nc, 1), C2r(s.p, nc, 4), Tr(32, 32 * npanels);
    for (auto& x : Tr.a) x = T(0);
    for (int j = 0; j < s.m; ++j) {
      for (int i = 0; i < s.m; ++i) Rr(i, j) = i <= j ? Rh(s.p + i, j) : T(0);
      for (int i = 0; i < s.p; ++i) Ur(i, j) = Rh(i, j);
    }
    for (int j = 0; j < nc; ++j) {
      for (int i = 0; i < s.m; ++i) C1r(i, j) = Ch(s.p + i, j);
      for (int i = 0; i < s.p; ++i) C2r(i, j) = Ch(i, j);
    }
    REQUIRE(tpqrt(s.p, s.m, std::min(32, s.m), Rr.data(), Rr.ld, Ur.data(), Ur.ld, Tr.data(), Tr.ld) == 0);
    if (s.nrhs > 0)
      REQUIRE(tpmqrt(s.p, s.nrhs, s.m, std::min(32, s.m), Ur.data(), Ur.ld, Tr.data(), Tr.ld, C1r.data(), C1r.ld,
                     C2r.data(), C2r.ld) == 0);
    // On the GPU: U and C2 start as the sentinel; the prologue fills them.
    mat<T> U0(s.p, s.m, 2), C20(s.p, nc, 4), Tg(32, 32 * npanels);
    for (auto& x : Tg.a) x = T(0);
    blas b;
    dev<T> dR(Rf), dC(Cf), dU(U0), dC2(C20), dT(Tg), dS(S), dW(W), dV(V);
    const std::size_t lwork = gpu_tpqrt_chain_workspace(s.m, s.nrhs, 1);
    dev<int> work{lwork / sizeof(int)};
    rank_band_steps<T> pro;
    pro.plan = plan;
    pro.S = dS.p;
    pro.roff = 0;
    pro.cshift = -s.p;
    pro.W = dW.p;
    pro.ldw = W.ld;
    pro.rw = s.p;
    pro.V = dV.p;
    pro.ldv = V.ld;
    pro.k = s.p;
    REQUIRE(gpu_tpqrt_chain<T>(s.m, s.p, s.nrhs, dR.p, Rf.ld, dU.p, U0.ld, dC.p, Cf.ld, dC2.p, C20.ld, dT.p, work.p,
                               lwork, b.s, s.max_grid, 0, 1, &pro));
    b.sync();
    mat<T> Rg = Rf, Ug = U0, Cg = Cf, C2g = C20;
    dR.get(Rg);
    dU.get(Ug);
    dC.get(Cg);
    dC2.get(C2g);
    dT.get(Tg);
    const double tol = tolerance<T>(s.m + s.p);
    mat<T> Rgu(s.m, s.m, 3), C1g(s.m, nc, 1);
    bool zeros_below = true;
    for (int j = 0; j < s.m; ++j) {
      for (int i = 0; i < s.m; ++i) {
        Rgu(i, j) = i <= j ? Rg(i, j) : T(0);
        if (i > j) Rr(i, j) = T(0);
      }
      for (int i = j + 1; i < L; ++i) zeros_below = zeros_below && Rg(i, j) == T(0);
    }
    for (int j = 0; j < nc; ++j)
      for (int i = 0; i < s.m; ++i) C1g(i, j) = Cg(i, j);
    CHECK(zeros_below);
    CHECK(same_outside(Rg, Rf, 0, L));
    worst = std::max(worst, check_chain_factors(Rgu, Rr, Ug, Ur, U0, Tg, Tr, s.p, tol));
    if (s.nrhs > 0) {
      worst = std::max(worst, check_chain_rhs(C1g, C1r, C2g, C2r, tol));
      CHECK(same_outside(Cg, Cf, 0, L));
      CHECK(same_outside(C2g, C20, 0, s.p));
    }
  }
  MESSAGE("gpu_tpqrt_chain with the prologue: largest relative error " << worst);
}

// The merged T of consecutive TPQRT panels (kernels::gpu_tp_merge_t) against LAPACK TPQRT with
// one block as wide as all of them (its T is the compound reflector's), from the panels' own T
// (TPQRT with nb) and S = U^T U; below the diagonal zeros.
TEST_CASE_TEMPLATE("gpu_tp_merge_t equals LAPACK TPQRT's T of the whole block", T, float, double) {
  struct shape { int p, n, nb; };
  double worst = 0;
  for (const shape s : {shape{40, 128, 32}, shape{500, 100, 32}, shape{7, 64, 16}, shape{300, 96, 32},
                        shape{1, 33, 32}, shape{64, 128, 8}, shape{20, 5, 2}, shape{9, 20, 32}}) {
    CAPTURE(s.p);
    CAPTURE(s.n);
    CAPTURE(s.nb);
    mat<T> R(s.n, s.n, 1), U(s.p, s.n, 2);
    R.randomize();
    for (int j = 0; j < s.n; ++j) {
      R(j, j) = T(double(R(j, j)) + (R(j, j) < 0 ? -2.0 : 2.0));
      for (int i = j + 1; i < s.n; ++i) R(i, j) = T(0);
    }
    U.randomize();
    mat<T> R1 = R, U1 = U, T1(s.nb, s.n), R2 = R, U2 = U, T2(s.n, s.n);
    for (auto& x : T1.a) x = T(0);
    for (auto& x : T2.a) x = T(0);
    REQUIRE(tpqrt(s.p, s.n, std::min(s.nb, s.n), R1.data(), R1.ld, U1.data(), U1.ld, T1.data(), T1.ld) == 0);
    REQUIRE(tpqrt(s.p, s.n, s.n, R2.data(), R2.ld, U2.data(), U2.ld, T2.data(), T2.ld) == 0);
    // The panels' T as the QR updates keep them: panel i's nb x nb block at nb nb i, ld nb.
    std::vector<T> Tm(std::size_t(s.nb) * s.nb * ((s.n + s.nb - 1) / s.nb), T(0));
    for (int j = 0; j < s.n; ++j)
      for (int i = 0; i <= j % s.nb; ++i) Tm[std::size_t(j / s.nb) * s.nb * s.nb + i + std::size_t(j % s.nb) * s.nb] = T1(i, j);
    mat<T> S(s.n, s.n, 0);
    for (int j = 0; j < s.n; ++j)
      for (int i = 0; i < s.n; ++i) {
        double acc = 0;
        for (int r = 0; r < s.p; ++r) acc += double(U1(r, i)) * double(U1(r, j));
        S(i, j) = T(acc);
      }
    mat<T> Tb(s.n, s.n, 3);
    dev<T> dS(S), dTb(Tb), dTm{Tm.size()};
    cuda_ok(cudaMemcpy(dTm.p, Tm.data(), sizeof(T) * Tm.size(), cudaMemcpyHostToDevice));
    cuda_ok(cudaDeviceSynchronize());
    blas b;
    gpu_tp_merge_t<T>(s.n, s.nb, dTm.p, dS.p, S.ld, dTb.p, Tb.ld, b.s);
    b.sync();
    mat<T> Tg = Tb;
    dTb.get(Tg);
    bool zeros_below = true;
    for (int j = 0; j < s.n; ++j)
      for (int i = j + 1; i < s.n; ++i) zeros_below = zeros_below && Tg(i, j) == T(0);
    CHECK(zeros_below);
    CHECK(same_outside(Tg, Tb, 0, s.n));
    mat<T> Tu = T2;  // LAPACK's T: its upper triangle
    for (int j = 0; j < s.n; ++j)
      for (int i = j + 1; i < s.n; ++i) Tu(i, j) = T(0);
    const double e = rel_error(Tg, Tu);
    CHECK(e <= tolerance<T>(s.n + s.p));
    worst = std::max(worst, e);
  }
  CHECK(gpu_tp_merge_t_runs<T>(64, 32));  // the QR updates' pairs of panels, on any recent GPU
  CHECK_FALSE(gpu_tp_merge_t_runs<T>(129, 32));
  blas b;
  double* p = nullptr;
  CHECK_THROWS_WITH(gpu_tp_merge_t<double>(129, 32, p, p, 129, p, 129, b.s), doctest::Contains("gpu_tp_merge_t: n = 129"));
  CHECK_THROWS_WITH(gpu_tp_merge_t<double>(64, 33, p, p, 64, p, 64, b.s), doctest::Contains("gpu_tp_merge_t: nb = 33"));
  MESSAGE("gpu_tp_merge_t: largest relative error " << worst);
}

// A tile column of step k as the hybrid QR sees it: the panel factored by a chain of TSQRTs
// (R carried down), the trailing tile rows updated by a loop of TPMQRT on the host.
TEST_CASE_TEMPLATE("gpu_sssmqr equals a loop of LAPACK TPMQRT down a panel", T, float, double) {
  struct shape { int count, nb, m_last, kk, ib, n; bool packed_t; };
  double worst = 0;
  for (const shape s : {shape{5, 48, 48, 48, 16, 131, true}, shape{4, 64, 23, 64, 16, 97, false},
                        shape{3, 40, 40, 30, 16, 64, true}, shape{1, 32, 17, 32, 8, 5, false},
                        shape{6, 64, 64, 64, 64, 300, false}, shape{2, 16, 3, 16, 4, 1, true}}) {
    CAPTURE(s.count);
    CAPTURE(s.nb);
    CAPTURE(s.m_last);
    CAPTURE(s.kk);
    CAPTURE(s.ib);
    CAPTURE(s.n);
    CAPTURE(s.packed_t);
    const int rows = (s.count - 1) * s.nb + s.m_last;
    const int ibl = std::min(s.ib, s.kk);
    // The panel below tile (k, k) and its T factors: packed ib x kk tiles, or a column-major
    // matrix with ib rows per tile row.
    mat<T> P(rows, s.kk, 3);
    P.randomize();
    const int ldt = s.packed_t ? ibl : s.count * ibl + 1;
    const std::ptrdiff_t strideT = s.packed_t ? std::ptrdiff_t(ibl) * s.kk : ibl;
    mat<T> Tall(s.packed_t ? ibl : ldt, s.packed_t ? s.kk * s.count : s.kk);
    for (auto& x : Tall.a) x = T(0);
    mat<T> R(s.kk, s.kk);
    R.randomize();
    for (int i = 0; i < s.count; ++i) {
      const int mi = i + 1 < s.count ? s.nb : s.m_last;
      REQUIRE(tpqrt(mi, s.kk, ibl, R.data(), R.ld, &P(i * s.nb, 0), P.ld,
                    Tall.data() + i * strideT, ldt) == 0);
    }
    // Trailing matrix: tile row k (nb rows, A1 = its first kk) then the count tile rows, one ld.
    mat<T> B(s.nb + rows, s.n, 2);
    B.randomize();
    mat<T> Ref = B;
    for (int i = 0; i < s.count; ++i) {
      const int mi = i + 1 < s.count ? s.nb : s.m_last;
      REQUIRE(tpmqrt(mi, s.n, s.kk, ibl, &P(i * s.nb, 0), P.ld, Tall.data() + i * strideT, ldt,
                     Ref.data(), Ref.ld, &Ref(s.nb + i * s.nb, 0), Ref.ld) == 0);
    }

    blas b;
    dev<T> dP(P), dT(Tall);
    const double tol = tolerance<T>(rows + s.kk) * std::sqrt(double(s.count));
    for (int variant = 0; variant < 5; ++variant) {
      CAPTURE(variant);
      dev<T> dB(B);
      T* A1 = dB.p;
      T* A2 = dB.p + s.nb;
      if (variant == 0 || variant == 4) {
        // Variant 0: room to batch all rows; 4: two rows per batch (a remainder of 1 when odd).
        const std::size_t lwork =
            variant == 0 ? gpu_sssmqr_workspace_size(s.count, s.nb, s.kk, s.n)
                         : gpu_sssmqr_factors_size(s.count, s.nb, s.kk) +
                               std::max(gpu_sssmqr_prepare_workspace_size(s.count, s.kk),
                                        gpu_sssmqr_apply_workspace_size(2, s.kk, s.n));
        dev<T> work(lwork);
        gpu_sssmqr<T>(s.count, s.nb, s.m_last, s.n, s.kk, s.ib, A1, B.ld, A2, B.ld, dP.p, P.ld, dT.p,
                      ldt, strideT, work.p, lwork, b.h);
      } else if (variant <= 2) {
        // Prepared factors reused over two column ranges; variant 1 batches the rows, variant 2
        // has room for one row, and its second range's A1 is a copy of tile row k with another
        // leading dimension (the path without the batch of two).
        dev<T> factors(gpu_sssmqr_factors_size(s.count, s.nb, s.kk));
        dev<T> pw(gpu_sssmqr_prepare_workspace_size(s.count, s.kk));
        dev<T> work(gpu_sssmqr_apply_workspace_size(variant == 1 ? s.count : 1, s.kk, s.n));
        gpu_sssmqr_prepare<T>(s.count, s.nb, s.m_last, s.kk, s.ib, dP.p, P.ld, dT.p, ldt, strideT,
                              factors.p, pw.p, pw.n, b.h);
        const int n1 = s.n / 2;
        gpu_sssmqr_apply<T>(s.count, s.nb, s.m_last, n1, s.kk, A1, B.ld, A2, B.ld, dP.p, P.ld,
                            factors.p, work.p, work.n, b.h);
        T* A1r = A1 + std::size_t(n1) * B.ld;
        T* A2r = A2 + std::size_t(n1) * B.ld;
        const int n2 = s.n - n1;
        if (variant == 1) {
          gpu_sssmqr_apply<T>(s.count, s.nb, s.m_last, n2, s.kk, A1r, B.ld, A2r, B.ld, dP.p, P.ld,
                              factors.p, work.p, work.n, b.h);
        } else {
          const int ld1 = s.kk + 5;
          dev<T> top(std::size_t(ld1) * std::max(n2, 1));
          // On the kernels' stream: a device-to-device cudaMemcpy2D does not wait for the host, and
          // on another stream it would race with the apply that reads top.
          cuda_ok(cudaMemcpy2DAsync(top.p, sizeof(T) * ld1, A1r, sizeof(T) * B.ld, sizeof(T) * s.kk, n2,
                                    cudaMemcpyDeviceToDevice, b.s));
          gpu_sssmqr_apply<T>(s.count, s.nb, s.m_last, n2, s.kk, top.p, ld1, A2r, B.ld, dP.p, P.ld,
                              factors.p, work.p, work.n, b.h);
          cuda_ok(cudaMemcpy2DAsync(A1r, sizeof(T) * B.ld, top.p, sizeof(T) * ld1, sizeof(T) * s.kk,
                                    n2, cudaMemcpyDeviceToDevice, b.s));
          b.sync();
        }
      } else {
        dev<T> work(gpu_sssmqr_blocked_workspace_size(s.kk, s.ib, s.n));
        gpu_sssmqr_blocked<T>(s.count, s.nb, s.m_last, s.n, s.kk, s.ib, A1, B.ld, A2, B.ld, dP.p,
                              P.ld, dT.p, ldt, strideT, work.p, work.n, b.h);
      }
      b.sync();
      mat<T> G = B;
      dB.get(G);
      const double e1 = rel_error(G, Ref, 0, s.kk), e2 = rel_error(G, Ref, s.nb, rows);
      worst = std::max({worst, e1, e2});
      CHECK(e1 <= tol);
      CHECK(e2 <= tol);
      // Rows kk..nb of tile row k and the padding rows are not the kernel's to write.
      bool untouched = true;
      for (int j = 0; j < s.n; ++j)
        for (int i = s.kk; i < B.ld; ++i)
          if ((i < s.nb || i >= s.nb + rows) && G(i, j) != B(i, j)) untouched = false;
      CHECK(untouched);
    }
  }
  MESSAGE("sssmqr: largest relative error " << worst);
}

TEST_CASE_TEMPLATE("gpu_ormqr equals LAPACK GEMQRT", T, float, double) {
  struct shape { int m, tile_n, ib, n; };
  double worst = 0;
  for (const shape s : {shape{64, 64, 16, 100}, shape{80, 48, 16, 33}, shape{40, 64, 16, 17},
                        shape{256, 256, 32, 257}, shape{9, 9, 4, 1}}) {
    CAPTURE(s.m);
    CAPTURE(s.tile_n);
    CAPTURE(s.ib);
    CAPTURE(s.n);
    const int k = std::min(s.m, s.tile_n), ibl = std::min(s.ib, k);
    mat<T> A(s.m, s.tile_n, 1);
    A.randomize();
    mat<T> Tb(ibl, k);
    REQUIRE(geqrt(s.m, s.tile_n, ibl, A.data(), A.ld, Tb.data(), Tb.ld) == 0);
    mat<T> C(s.m, s.n, 4);
    C.randomize();
    mat<T> Ref = C;
    REQUIRE(gemqrt(s.m, s.n, k, ibl, A.data(), A.ld, Tb.data(), Tb.ld, Ref.data(), Ref.ld) == 0);

    blas b;
    dev<T> dA(A), dT(Tb), dC(C);
    dev<T> work(gpu_ormqr_workspace_size(s.m, s.n, k));
    gpu_ormqr<T>(s.m, s.n, k, s.ib, dA.p, A.ld, dT.p, Tb.ld, dC.p, C.ld, work.p, work.n, b.h);
    b.sync();
    mat<T> G = C;
    dC.get(G);
    const double err = rel_error(G, Ref);
    worst = std::max(worst, err);
    CHECK(err <= tolerance<T>(s.m + k));
    CHECK(same_outside(G, C, 0, s.m));
  }
  MESSAGE("ormqr: largest relative error " << worst);
}

// gpu_tp_apply_right against [C1 C2] H_0 H_1 ..., H_i = I - V_i T_i V_i^T, V_i = [I; U_i], formed on
// the host in double panel by panel: W = C1_i + C2 U_i, Y = W T_i, C1_i - Y, C2 - Y U_i^T. Row counts
// around the kernel's 8-row warps and 32-row blocks, p around its 8-column tiles up to the largest
// it takes (0: C1 - C1 T), groups of one to four panels with a partial last one; T's lower parts
// and the slots beyond a partial panel hold 1e30 (never read), padded leading dimensions of U and C
// must come back untouched.
TEST_CASE_TEMPLATE("gpu_tp_apply_right equals the panels' block reflectors from the right", T, float, double) {
  struct shape { int n, p, w; };
  constexpr int nb = 32;
  blas b;
  double worst = 0;
  for (const shape c : {shape{1, 1, 32}, shape{63, 0, 32}, shape{8, 31, 64}, shape{33, 32, 17}, shape{200, 33, 96},
                        shape{130, 100, 64}, shape{257, 128, 120}, shape{71, 256, 45}, shape{90, 200, 64},
                        shape{33, 129, 32}, shape{300, 64, 128},
                        shape{40, 5, 1}}) {
    CAPTURE(c.n);
    CAPTURE(c.p);
    CAPTURE(c.w);
    const int npan = (c.w + nb - 1) / nb;
    mat<T> U(std::max(c.p, 1), c.w, 3), Tm(nb, nb * npan), C1(c.n, c.w, 2), C2(c.n, std::max(c.p, 1), 1);
    U.randomize();
    C1.randomize();
    C2.randomize();
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (int t = 0; t < npan; ++t) {
      const int jb = std::min(nb, c.w - t * nb);
      for (int j = 0; j < nb; ++j)
        for (int i = 0; i < nb; ++i) Tm(i, t * nb + j) = i <= j && j < jb ? T(u(rng())) : T(1e30);
    }
    // The reference in double, panel by panel.
    std::vector<double> c1(std::size_t(c.n) * c.w), c2(std::size_t(c.n) * std::max(c.p, 1));
    for (int j = 0; j < c.w; ++j)
      for (int i = 0; i < c.n; ++i) c1[i + std::size_t(j) * c.n] = C1(i, j);
    for (int j = 0; j < c.p; ++j)
      for (int i = 0; i < c.n; ++i) c2[i + std::size_t(j) * c.n] = C2(i, j);
    for (int t = 0; t < npan; ++t) {
      const int c0 = t * nb, jb = std::min(nb, c.w - c0);
      std::vector<double> W(std::size_t(c.n) * jb), Y(std::size_t(c.n) * jb, 0.0);
      for (int j = 0; j < jb; ++j)
        for (int i = 0; i < c.n; ++i) {
          double w = c1[i + std::size_t(c0 + j) * c.n];
          for (int k = 0; k < c.p; ++k) w += c2[i + std::size_t(k) * c.n] * double(U(k, c0 + j));
          W[i + std::size_t(j) * c.n] = w;
        }
      for (int j = 0; j < jb; ++j)
        for (int l = 0; l <= j; ++l)
          for (int i = 0; i < c.n; ++i)
            Y[i + std::size_t(j) * c.n] += W[i + std::size_t(l) * c.n] * double(Tm(l, c0 + j));
      for (int j = 0; j < jb; ++j)
        for (int i = 0; i < c.n; ++i) c1[i + std::size_t(c0 + j) * c.n] -= Y[i + std::size_t(j) * c.n];
      for (int k = 0; k < c.p; ++k)
        for (int j = 0; j < jb; ++j)
          for (int i = 0; i < c.n; ++i)
            c2[i + std::size_t(k) * c.n] -= Y[i + std::size_t(j) * c.n] * double(U(k, c0 + j));
    }
    mat<T> want1 = C1, want2 = C2;
    for (int j = 0; j < c.w; ++j)
      for (int i = 0; i < c.n; ++i) want1(i, j) = T(c1[i + std::size_t(j) * c.n]);
    for (int j = 0; j < c.p; ++j)
      for (int i = 0; i < c.n; ++i) want2(i, j) = T(c2[i + std::size_t(j) * c.n]);
    dev<T> dU(U), dT(Tm), dC1(C1), dC2(C2);
    REQUIRE(gpu_tp_apply_right<T>(c.n, c.w, c.p, dU.p, U.ld, dT.p, dC1.p, C1.ld, dC2.p, C2.ld, b.s));
    b.sync();
    mat<T> got1 = C1, got2 = C2;
    dC1.get(got1);
    dC2.get(got2);
    const double tol = tolerance<T>(nb * npan + c.p), e1 = rel_error(got1, want1), e2 = rel_error(got2, want2);
    CHECK(e1 <= tol);
    CHECK(e2 <= tol);
    CHECK(same_outside(got1, C1, 0, c.n));
    CHECK(same_outside(got2, C2, 0, c.n));
    worst = std::max({worst, e1, e2});
  }
  MESSAGE("gpu_tp_apply_right: largest relative error " << worst);
  dev<double> any(1);  // not touched: p is beyond what the kernel takes
  CHECK_FALSE(gpu_tp_apply_right<double>(8, 32, gpu_tp_apply_right_max_p + 1, any.p, 300, any.p, any.p, 8, any.p, 8,
                                         b.s));
  CHECK_THROWS_WITH_AS(gpu_tp_apply_right<double>(8, 32, 4, nullptr, 3, nullptr, nullptr, 8, nullptr, 8, b.s),
                       doctest::Contains("ldu = 3"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(gpu_tp_apply_right<double>(8, -1, 4, nullptr, 4, nullptr, nullptr, 8, nullptr, 8, b.s),
                       doctest::Contains("w = -1"), std::invalid_argument);
}

// gpu_shift_upper against the same move done entry by entry from a copy (no overlap there): the
// upper triangle of order s takes the entries (dr, dc) away, everything else (the strict lower
// part, the sources beyond s, the padding) comes back as it was. Chains of 1 to about 60 entries,
// several batches of 8 among them, dc = dr (deleting columns) and dc = 0.
TEST_CASE_TEMPLATE("gpu_shift_upper moves a triangle in place as a copy would", T, float, double) {
  struct shape { int s, dr, dc; };
  blas b;
  for (const shape c : {shape{1, 1, 1}, shape{5, 1, 1}, shape{40, 3, 3}, shape{97, 8, 8}, shape{130, 2, 2},
                        shape{300, 100, 100}, shape{257, 17, 0}, shape{64, 64, 64}, shape{33, 5, 0}}) {
    CAPTURE(c.s);
    CAPTURE(c.dr);
    CAPTURE(c.dc);
    mat<T> A(c.s + c.dr, c.s + c.dc, 3);
    A.randomize();
    mat<T> want = A;
    for (int j = 0; j < c.s; ++j)
      for (int i = 0; i <= j; ++i) want(i, j) = A(i + c.dr, j + c.dc);
    dev<T> dA(A);
    gpu_shift_upper<T>(c.s, c.dr, c.dc, dA.p, A.ld, b.s);
    b.sync();
    mat<T> got = A;
    dA.get(got);
    CHECK(got.a == want.a);
  }
  CHECK_THROWS_WITH_AS(gpu_shift_upper<double>(4, 2, 3, nullptr, 8, b.s), doctest::Contains("dr = 2"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(gpu_shift_upper<double>(4, 2, 2, nullptr, 5, b.s), doctest::Contains("lda = 5"),
                       std::invalid_argument);
}

TEST_CASE("bad arguments are rejected by name, the handle's pointer mode is kept") {
  blas b;
  dev<double> buf(1 << 16);
  double* p = buf.p;
  const auto message = [](auto&& call) -> std::string {
    try {
      call();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no exception";
  };
  CHECK(message([&] {
          gpu_tsmqr<double>(8, -1, 8, 4, p, 8, p, 8, p, 8, p, 4, p, buf.n, b.h);
        }).find("gpu_tsmqr: n = -1") != std::string::npos);
  CHECK(message([&] {
          gpu_tsmqr<double>(8, 8, 8, 4, p, 8, p, 7, p, 8, p, 4, p, buf.n, b.h);
        }).find("lda2") != std::string::npos);
  CHECK(message([&] {
          gpu_tsmqr_fused<double>(8, 8, 33, p, 33, p, 8, p, 8, p, 33, b.s);
        }).find("gpu_tsmqr_fused: kk = 33") != std::string::npos);
  CHECK(message([&] {
          gpu_tsmqr_fused<double>(8, 8, 4, p, 4, p, 7, p, 8, p, 4, b.s);
        }).find("lda2") != std::string::npos);
  CHECK(message([&] {
          gpu_larfb_fused<double>(8, 8, 9, p, 8, p, 9, p, 8, b.s);
        }).find("gpu_larfb_fused: k = 9") != std::string::npos);
  CHECK(message([&] {
          gpu_larfb_small<double>('L', 97, 8, 8, p, 97, p, 8, p, 97, b.s);
        }).find("gpu_larfb_small: h = 97") != std::string::npos);
  CHECK(message([&] {
          gpu_larfb_small<double>('L', 96, 8, 65, p, 96, p, 65, p, 96, b.s);
        }).find("gpu_larfb_small: k = 65") != std::string::npos);
  CHECK(message([&] {
          gpu_larfb_small<double>('R', 16, 40, 8, p, 16, p, 8, p, 39, b.s);
        }).find("ldc") != std::string::npos);
  CHECK(message([&] {
          gpu_larfb_small<double>('X', 16, 40, 8, p, 16, p, 8, p, 40, b.s);
        }).find("side") != std::string::npos);
  CHECK(message([&] {
          gpu_sssmqr<double>(2, 8, 9, 8, 8, 4, p, 20, p, 20, p, 20, p, 4, 32, p, buf.n, b.h);
        }).find("m_last") != std::string::npos);
  CHECK(message([&] {
          gpu_sssmqr<double>(2, 8, 8, 8, 8, 4, p, 20, p, 20, p, 20, p, 4, 32, p, 10, b.h);
        }).find("lwork") != std::string::npos);
  CHECK(message([&] {
          gpu_ormqr<double>(8, 8, 9, 4, p, 8, p, 4, p, 8, p, buf.n, b.h);
        }).find("gpu_ormqr: k = 9") != std::string::npos);
  {  // the prologue: one chain, and R's array holding the p rows over the m
    rank_band_steps<double> pro;
    CHECK(message([&] {
            gpu_tpqrt_chain<double>(8, 4, 0, p, 12, p, 4, nullptr, 1, nullptr, 1, p, p, buf.n, b.s, 0, 0, 2, &pro);
          }).find("chains") != std::string::npos);
    CHECK(message([&] {
            gpu_tpqrt_chain<double>(8, 4, 0, p, 11, p, 4, nullptr, 1, nullptr, 1, p, p, buf.n, b.s, 0, 0, 1, &pro);
          }).find("ldr") != std::string::npos);
  }
  CHECK(message([&] {
          gpu_tpqrt_chain<double>(8, 4, 0, p, 8, p, 3, nullptr, 1, nullptr, 1, p, p, buf.n, b.s);
        }).find("gpu_tpqrt_chain: ldu = 3") != std::string::npos);
  CHECK(message([&] {
          gpu_tpqrt_chain<double>(64, 4, 0, p, 64, p, 4, nullptr, 1, nullptr, 1, p, p, 2, b.s);
        }).find("lwork") != std::string::npos);
  CHECK(message([&] {
          gpu_tpqrt_chain<double>(8, 4, 1, p, 8, p, 4, p, 7, p, 4, p, p, buf.n, b.s);
        }).find("ldc1") != std::string::npos);
  CHECK(message([&] {
          gpu_tpqrt_chain<double>(8, 4, 0, p, 8, p, 4, nullptr, 1, nullptr, 1, p, p, buf.n, b.s, 0, -1);
        }).find("epoch = -1") != std::string::npos);
  // Too many rows for a thread block's registers: false, nothing done.
  CHECK_FALSE(gpu_tpqrt_chain<double>(8, gpu_tpqrt_chain_max_rows + 1, 0, p, 8, p, gpu_tpqrt_chain_max_rows + 1,
                                      nullptr, 1, nullptr, 1, p, p, buf.n * sizeof(double), b.s));
  CHECK(message([&] {
          gpu_sssmqr_apply<double>(2, 8, 8, 8, 8, p, 8, p, 16, p, 16, nullptr, p, buf.n, b.h);
        }).find("factors") != std::string::npos);

  // A handle left in device pointer mode gets it back after a kernel.
  cublas_ok(cublasSetPointerMode(b.h, CUBLAS_POINTER_MODE_DEVICE));
  cuda_ok(cudaMemset(p, 0, buf.n * sizeof(double)));
  gpu_tsmqr<double>(8, 8, 8, 4, p, 8, p + 64, 8, p + 128, 8, p + 192, 4, p + 256, 1024, b.h);
  b.sync();
  cublasPointerMode_t mode{};
  cublas_ok(cublasGetPointerMode(b.h, &mode));
  CHECK(mode == CUBLAS_POINTER_MODE_DEVICE);
}

}  // namespace
