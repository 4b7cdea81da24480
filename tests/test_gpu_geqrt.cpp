// gpu_geqrt (a tall panel's QR) and gpu_larfb (its Q^T applied) against LAPACK on the host, float
// and double: Q R = A and Q^T Q = I for the GPU's V and T, |diag R| against GEQRT, a zero column
// (tau = 0), nearly dependent columns (the Householder fallback), gpu_larfb against GEMQRT, padding untouched, argument errors. No device: exit 77.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <tessera/kernels_cpu/blas.hpp>
#include <tessera/kernels_gpu.hpp>

#include "gpu_test_util.hpp"
#include "test_util.hpp"

namespace {

using namespace tessera::kernels;


// Residual and orthogonality are scaled by m * eps, gpu_larfb's error by eps * sqrt(m).
constexpr double qr_threshold = 60.0, apply_threshold = 30.0;

using namespace tessera::testing::gpu;

// C := Q C (trans 'N') or Q^T C (trans 'T'), from the left.
template <class T>
int gemqrt(char trans, int m, int n, int k, int nb, const T* v, int ldv, const T* t, int ldt, T* c,
           int ldc) {
  return tessera::blas::gemqrt('L', trans, m, n, k, nb, v, ldv, t, ldt, c, ldc,
                               lapack_work<T>(nb, m, n).data());
}

// Factors A0 (its padding rows hold the sentinel) with gpu_geqrt, T with ldt = n + padT, and checks
// the factors; then gpu_larfb with them must take A0 to [R; 0]. compare_diag: |diag R| against
// LAPACK's (meaningless for ill-conditioned A, whose R moves by cond(A) eps under rounding). worst: residual, orthogonality,
// |diag R| error, larfb error, each over its threshold's scale.
template <class T>
void check_geqrt(const mat<T>& A0, int ib, int padT, int zero_col, double (&worst)[4], bool compare_diag = true) {
  const int m = A0.m, n = A0.n;
  const double eps = std::numeric_limits<T>::epsilon();
  blas b;
  dev<T> dA(A0);
  mat<T> Tf(n, n, padT);  // all sentinel: the kernel must write the zeros below T's diagonal
  dev<T> dT(Tf);
  const std::size_t lwork = gpu_geqrt_workspace_size(m, n, ib);
  dev<T> work(lwork);
  gpu_geqrt<T>(m, n, ib, dA.p, A0.ld, dT.p, Tf.ld, work.p, lwork, b.h);
  b.sync();
  mat<T> F = A0, Tg = Tf;
  dA.get(F);
  dT.get(Tg);

  bool finite = true, lower_zero = true;
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) finite = finite && std::isfinite(F(i, j));
    for (int i = 0; i < n; ++i) {
      finite = finite && std::isfinite(Tg(i, j));
      if (i > j && Tg(i, j) != T(0)) lower_zero = false;
    }
  }
  REQUIRE(finite);
  CHECK(lower_zero);
  CHECK(same_outside(F, A0, 0, m));  // padding rows of A and T untouched
  CHECK(same_outside(Tg, Tf, 0, n));
  if (zero_col >= 0) CHECK(Tg(zero_col, zero_col) == T(0));  // tau = 0

  // (a) Q [R; 0] = A0; (b) the thin Q = Q [I; 0] has ||I - Q^T Q||_F small.
  mat<T> R0(m, n), Q(m, n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      R0(i, j) = i <= j ? F(i, j) : T(0);
      Q(i, j) = T(i == j ? 1 : 0);
    }
  mat<T> QR = R0;
  REQUIRE(gemqrt('N', m, n, n, n, F.data(), F.ld, Tg.data(), Tg.ld, QR.data(), QR.ld) == 0);
  const double residual = rel_error(QR, A0) / (m * eps);
  CHECK(residual < qr_threshold);
  REQUIRE(gemqrt('N', m, n, n, n, F.data(), F.ld, Tg.data(), Tg.ld, Q.data(), Q.ld) == 0);
  double gram = 0;
  for (int c = 0; c < n; ++c)
    for (int r = 0; r <= c; ++r) {
      double s = r == c ? -1.0 : 0.0;
      for (int i = 0; i < m; ++i) s += double(Q(i, r)) * double(Q(i, c));
      gram += (r == c ? 1.0 : 2.0) * s * s;
    }
  const double orthogonality = std::sqrt(gram) / (m * eps);
  CHECK(orthogonality < qr_threshold);

  // (c) |R_jj| as LAPACK's, relative to the norm of A0's first j + 1 columns (R's errors are
  // normwise; a small R_jj of a square panel is only that accurate).
  mat<T> Ref = A0;
  const int nb = std::min(n, 32);
  mat<T> Tr(nb, n);
  REQUIRE(geqrt(m, n, nb, Ref.data(), Ref.ld, Tr.data(), Tr.ld) == 0);
  double diag = 0, lead = 0;
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) lead += double(A0(i, j)) * double(A0(i, j));
    const double ref = std::abs(double(Ref(j, j))), d = std::abs(std::abs(double(F(j, j))) - ref);
    const double scale = std::max(ref, std::sqrt(lead));
    diag = std::max(diag, scale > 0 ? d / scale : (d > 0 ? HUGE_VAL : 0.0));
  }
  if (compare_diag) CHECK(diag < (sizeof(T) == sizeof(double) ? 1e-10 : 1e-3));

  // (e) gpu_larfb with the GPU's factors: Q^T A0 = [R; 0].
  dev<T> dC(A0);
  const std::size_t lwork2 = gpu_larfb_workspace_size(m, n, n);
  dev<T> work2(lwork2);
  gpu_larfb<T>(m, n, n, dA.p, A0.ld, dT.p, Tf.ld, dC.p, A0.ld, work2.p, lwork2, b.h);
  b.sync();
  mat<T> G = A0;
  dC.get(G);
  const double pair = rel_error(G, R0) / (m * eps);
  CHECK(pair < qr_threshold);
  CHECK(same_outside(G, A0, 0, m));

  worst[0] = std::max(worst[0], residual);
  worst[1] = std::max(worst[1], orthogonality);
  worst[2] = std::max(worst[2], diag);
  worst[3] = std::max(worst[3], pair);
}

TEST_CASE_TEMPLATE("gpu_geqrt: Q R = A, Q orthogonal, |diag R| as GEQRT, padding untouched", T,
                   float, double) {
  struct shape { int m, n, ib, pad; };
  double worst[4] = {0, 0, 0, 0};
  for (const shape s : {shape{300, 64, 32, 0}, shape{1000, 96, 32, 0}, shape{257, 40, 16, 3},
                        shape{64, 64, 32, 0}, shape{5000, 256, 32, 0}, shape{129, 33, 32, 1},
                        shape{50, 1, 1, 0}, shape{300, 64, 32, 7}, shape{200, 50, 7, 2},
                        shape{70, 10, 32, 2}, shape{700, 224, 32, 0}, shape{400, 160, 32, 0},
                        // wider than one whole-block CholeskyQR2 (256): two or three blocks
                        shape{1200, 384, 32, 0}, shape{600, 300, 32, 1}, shape{2000, 512, 32, 0},
                        shape{520, 520, 32, 2}}) {
    INFO("m = " << s.m << ", n = " << s.n << ", ib = " << s.ib << ", pad = " << s.pad);
    mat<T> A(s.m, s.n, s.pad);
    A.randomize();
    check_geqrt(A, s.ib, s.pad, -1, worst);
  }
  MESSAGE("geqrt (x m eps): residual " << worst[0] << ", orthogonality " << worst[1]
                                       << ", larfb " << worst[3] << "; |diag R| " << worst[2]);
}

TEST_CASE_TEMPLATE("gpu_geqrt: a zero column gets tau = 0 and finite factors", T, float, double) {
  struct shape { int m, n, ib, zero_col; };
  double worst[4] = {0, 0, 0, 0};
  for (const shape s : {shape{100, 40, 16, 3}, shape{100, 40, 16, 0}, shape{300, 64, 32, 32},
                        shape{60, 20, 8, 19}}) {
    INFO("m = " << s.m << ", n = " << s.n << ", ib = " << s.ib << ", zero_col = " << s.zero_col);
    mat<T> A(s.m, s.n, 2);
    A.randomize();
    for (int i = 0; i < s.m; ++i) A(i, s.zero_col) = T(0);
    check_geqrt(A, s.ib, 1, s.zero_col, worst);
  }
  MESSAGE("geqrt, zero column: residual " << worst[0] << ", orthogonality " << worst[1]);
}

// Nearly dependent columns put a block past CholeskyQR2's reach (cond(A) ~ 1 / delta): the
// whole-block path must decline it and the Householder kernel take over the 32-column block
// concerned, and only that one (the other blocks are random).
TEST_CASE_TEMPLATE("gpu_geqrt: ill-conditioned blocks are factored as accurately", T, float, double) {
  struct shape { int m, n, ib, first, last; };
  const double delta = sizeof(T) == sizeof(double) ? 1e-10 : 1e-5;
  double worst[4] = {0, 0, 0, 0};
  for (const shape s : {shape{2000, 64, 32, 0, 32}, shape{3000, 96, 32, 40, 64}, shape{500, 40, 16, 1, 40},
                        shape{300, 64, 32, 33, 34}, shape{2000, 256, 32, 100, 130},
                        shape{1500, 384, 32, 250, 300}}) {
    INFO("m = " << s.m << ", n = " << s.n << ", ib = " << s.ib << ", columns " << s.first << " .. " << s.last);
    mat<T> A(s.m, s.n, 1);
    A.randomize();
    mat<T> E(s.m, s.n);
    E.randomize();
    for (int j = s.first + 1; j < s.last; ++j)  // each column a small step from the block's first
      for (int i = 0; i < s.m; ++i) A(i, j) = A(i, s.first) + T(delta) * E(i, j);
    check_geqrt(A, s.ib, 0, -1, worst, false);
  }
  MESSAGE("geqrt, ill-conditioned: residual " << worst[0] << ", orthogonality " << worst[1]);
}

// gpu_geqrt's factors of A0: A overwritten (R and V) and T (n x n).
template <class T>
void factor_gpu(const mat<T>& A0, int ib, mat<T>& F, mat<T>& Tg) {
  const int m = A0.m, n = A0.n;
  blas b;
  dev<T> dA(A0);
  Tg = mat<T>(n, n);
  dev<T> dT(Tg);
  const std::size_t lwork = gpu_geqrt_workspace_size(m, n, ib);
  dev<T> work(lwork);
  gpu_geqrt<T>(m, n, ib, dA.p, A0.ld, dT.p, Tg.ld, work.p, lwork, b.h);
  b.sync();
  F = A0;
  dA.get(F);
  dT.get(Tg);
}

// Blocks of at most 576 rows (double; float 768) take the one-thread-block Householder kernel
// (householder_short.cu): its boundary on both sides, row counts that are not a multiple of 32,
// the QR updates' (32 + p) x 32 panels, checked as every block is. Then the same A with its
// columns scaled by powers of two far apart, near overflow and near underflow (squares of 2^960
// overflow, of 2^-960 vanish; float: 2^100): the blocks are equilibrated, so V and T must come out the same
// bits and R scaled column by column, to rounding where its entries are subnormal.
TEST_CASE_TEMPLATE("gpu_geqrt: short blocks in one thread block, at their boundary and any scale", T, float,
                   double) {
  struct shape { int m, n, ib; };
  const bool dbl = sizeof(T) == sizeof(double);
  const int edge = dbl ? 576 : 768, far = dbl ? 960 : 100;
  const double eps = std::numeric_limits<T>::epsilon();
  double worst[4] = {0, 0, 0, 0};
  for (const shape s : {shape{edge, 32, 32}, shape{edge + 1, 32, 32}, shape{edge, 64, 32}, shape{edge + 1, 96, 32},
                        shape{532, 32, 32}, shape{564, 64, 32}, shape{512, 32, 32}, shape{513, 40, 32},
                        shape{33, 33, 32}, shape{97, 5, 32},
                        shape{1, 1, 1}, shape{31, 17, 16}}) {
    INFO("m = " << s.m << ", n = " << s.n << ", ib = " << s.ib);
    mat<T> A(s.m, s.n, 1);
    A.randomize();
    check_geqrt(A, s.ib, 0, -1, worst);
    if (s.m > edge) continue;  // CholeskyQR's blocks: checked above
    mat<T> F0 = A, T0(s.n, s.n);
    factor_gpu(A, s.ib, F0, T0);
    for (int scaling = 1; scaling <= 2; ++scaling) {
      INFO("scaling " << scaling << " (1: columns 2^" << far << " and 2^-" << far << " in turn; 2: all 2^" << far << ")");
      std::vector<int> k(s.n);
      mat<T> As = A;
      for (int j = 0; j < s.n; ++j) {
        k[j] = scaling == 2 || j % 2 ? far : -far;
        for (int i = 0; i < s.m; ++i) As(i, j) = std::ldexp(A(i, j), k[j]);
      }
      mat<T> F = As, Tg(s.n, s.n);
      factor_gpu(As, s.ib, F, Tg);
      bool v_same = true, t_same = true, r_close = true;
      for (int j = 0; j < s.n; ++j) {
        double rmax = 0;
        for (int i = 0; i <= std::min(j, s.m - 1); ++i) rmax = std::max(rmax, std::abs(double(F0(i, j))));
        const double tol = std::ldexp(4 * eps * rmax, k[j]);
        for (int i = 0; i < s.m; ++i) {
          if (i > j) v_same = v_same && F(i, j) == F0(i, j);
          else r_close = r_close && std::abs(double(F(i, j)) - std::ldexp(double(F0(i, j)), k[j])) <= tol;
        }
        for (int i = 0; i < s.n; ++i) t_same = t_same && Tg(i, j) == T0(i, j);
      }
      CHECK(v_same);
      CHECK(t_same);
      CHECK(r_close);
    }
  }
  MESSAGE("geqrt, short blocks: residual " << worst[0] << ", orthogonality " << worst[1] << ", larfb " << worst[3]);
}

TEST_CASE_TEMPLATE("gpu_larfb equals LAPACK GEMQRT (Q^T C and Q C)", T, float, double) {
  struct shape { int m, n, k; };
  double worst = 0;
  // k >= 256 takes the out-of-place T W (gpu_larfb.cpp).
  for (const char trans : {'T', 'N'})
  for (const shape s : {shape{500, 300, 64}, shape{1000, 17, 128}, shape{64, 64, 64},
                        shape{300, 1, 8}, shape{800, 200, 288}, shape{512, 700, 512}}) {
    INFO("op = " << trans << ", m = " << s.m << ", n = " << s.n << ", k = " << s.k);
    // V keeps R above its diagonal (gpu_larfb must read only below it); T's lower part is zeroed.
    mat<T> V(s.m, s.k, 1), Tk(s.k, s.k, 2);
    V.randomize();
    std::fill(Tk.a.begin(), Tk.a.end(), T(0));
    REQUIRE(geqrt(s.m, s.k, s.k, V.data(), V.ld, Tk.data(), Tk.ld) == 0);
    mat<T> C(s.m, s.n, 3);
    C.randomize();
    mat<T> Ref = C;
    REQUIRE(gemqrt(trans, s.m, s.n, s.k, s.k, V.data(), V.ld, Tk.data(), Tk.ld, Ref.data(),
                   Ref.ld) == 0);

    blas b;
    dev<T> dV(V), dT(Tk), dC(C);
    const std::size_t lwork = gpu_larfb_workspace_size(s.m, s.n, s.k);
    dev<T> work(lwork);
    gpu_larfb<T>(trans == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N, s.m, s.n, s.k, dV.p, V.ld, dT.p, Tk.ld, dC.p, C.ld,
                 work.p, lwork, b.h);
    b.sync();
    mat<T> G = C, VG = V, TG = Tk;
    dC.get(G);
    dV.get(VG);
    dT.get(TG);
    const double err = rel_error(G, Ref);
    worst = std::max(worst, err);
    CHECK(err <= apply_threshold * std::numeric_limits<T>::epsilon() * std::sqrt(double(s.m)));
    CHECK(same_outside(G, C, 0, s.m));
    CHECK(VG.a == V.a);  // the inputs are const
    CHECK(TG.a == Tk.a);
  }
  MESSAGE("larfb: largest relative error " << worst);
}

// gpu_small_panel_qr (the QR updates' band panels in shared memory): A (h x n) with `band`
// subdiagonals (band < 0: dense), on a device matrix with padding rows; returns R (A's rows), V, T.
template <class T>
void small_panel_gpu(const mat<T>& A0, int band, mat<T>& F, mat<T>& V, mat<T>& Tg) {
  const int h = A0.m, n = A0.n;
  blas b;
  dev<T> dA(A0);
  V = mat<T>(h, n, 2);
  Tg = mat<T>(n, n, 1);
  dev<T> dV(V), dT(Tg);
  REQUIRE(gpu_small_panel_qr<T>(h, n, band, dA.p, A0.ld, dV.p, V.ld, dT.p, Tg.ld, b.s));
  b.sync();
  F = A0;
  dA.get(F);
  dV.get(V);
  dT.get(Tg);
}

template <class T>
mat<T> band_matrix(int h, int n, int band) {
  mat<T> A(h, n, 3);
  A.randomize();
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < h; ++i)
      if (band >= 0 && i > j + band) A(i, j) = T(0);
  return A;
}

// Against LAPACK GEQRT (nb = n) on the same matrix: V, T and R to rounding (the reflectors'
// convention is LAPACK's: beta = -sign(alpha) ||.||), the exact structure (R zero below its
// diagonal, V's unit diagonal and zeros above, T zero below), Q R = A and Q^T Q = I from the GPU's
// own V and T, padding untouched; then the columns scaled by far-apart powers of two give the same
// V and T bits and R scaled column by column; a zero column gets tau = 0.
TEST_CASE_TEMPLATE("gpu_small_panel_qr: band and dense panels as LAPACK GEQRT, at any scale", T, float, double) {
  struct shape { int h, n, band; };
  const bool dbl = sizeof(T) == sizeof(double);
  const double eps = std::numeric_limits<T>::epsilon(), tol = dbl ? 1e-11 : 1e-4;
  const int far = dbl ? 960 : 100;
  double worst[4] = {0, 0, 0, 0};
  for (const shape s : {shape{80, 64, 16}, shape{65, 64, 1}, shape{64, 64, 16}, shape{64, 32, 32}, shape{96, 64, 32},
                        shape{81, 64, 17}, shape{33, 32, 1}, shape{1, 1, -1}, shape{17, 5, -1}, shape{33, 33, -1},
                        shape{300, 64, 32}, shape{700, 32, 20}, shape{40, 33, 7}, shape{70, 64, 0}}) {
    INFO("h = " << s.h << ", n = " << s.n << ", band = " << s.band);
    const mat<T> A = band_matrix<T>(s.h, s.n, s.band);
    mat<T> F(1, 1), V(1, 1), Tg(1, 1);
    const int band = s.band < 0 ? s.h : s.band;
    small_panel_gpu(A, band, F, V, Tg);
    mat<T> Ref = A, Tr(s.n, s.n);
    REQUIRE(geqrt(s.h, s.n, s.n, Ref.data(), Ref.ld, Tr.data(), Tr.ld) == 0);
    bool structure = true;
    double dv = 0, dt = 0, dr = 0, rnorm = 0, tnorm = 1;
    for (int j = 0; j < s.n; ++j)
      for (int i = 0; i < s.h; ++i) {
        if (i > j) structure = structure && F(i, j) == T(0);
        if (i <= j) rnorm = std::max(rnorm, std::abs(double(Ref(i, j))));
        const double vref = i < j ? 0.0 : i == j ? 1.0 : double(Ref(i, j));
        if (i <= j) structure = structure && V(i, j) == T(i == j ? 1 : 0);
        dv = std::max(dv, std::abs(double(V(i, j)) - vref));
        if (i <= j) dr = std::max(dr, std::abs(double(F(i, j)) - double(Ref(i, j))));
      }
    for (int j = 0; j < s.n; ++j)
      for (int i = 0; i < s.n; ++i) {
        if (i > j) structure = structure && Tg(i, j) == T(0);
        tnorm = std::max(tnorm, std::abs(double(Tr(i, j))) * (i <= j));
        dt = std::max(dt, std::abs(double(Tg(i, j)) - (i <= j ? double(Tr(i, j)) : 0.0)));
      }
    CHECK(structure);
    CHECK(dv < tol);
    CHECK(dt < tol * tnorm);
    CHECK(dr < tol * std::max(rnorm, 1.0));
    CHECK(same_outside(F, A, 0, s.h));
    // Q [R; 0] = A and ||I - Q^T Q|| from the GPU's V and T.
    mat<T> QR(s.h, s.n), Q(s.h, s.n);
    for (int j = 0; j < s.n; ++j)
      for (int i = 0; i < s.h; ++i) QR(i, j) = i <= j ? F(i, j) : T(0), Q(i, j) = T(i == j ? 1 : 0);
    REQUIRE(gemqrt('N', s.h, s.n, s.n, s.n, V.data(), V.ld, Tg.data(), Tg.ld, QR.data(), QR.ld) == 0);
    const double residual = rel_error(QR, A) / (s.h * eps);
    CHECK(residual < qr_threshold);
    REQUIRE(gemqrt('N', s.h, s.n, s.n, s.n, V.data(), V.ld, Tg.data(), Tg.ld, Q.data(), Q.ld) == 0);
    double gram = 0;
    for (int c = 0; c < s.n; ++c)
      for (int r = 0; r <= c; ++r) {
        double x = r == c ? -1.0 : 0.0;
        for (int i = 0; i < s.h; ++i) x += double(Q(i, r)) * double(Q(i, c));
        gram += (r == c ? 1.0 : 2.0) * x * x;
      }
    const double orthogonality = std::sqrt(gram) / (s.h * eps);
    CHECK(orthogonality < qr_threshold);
    worst[0] = std::max(worst[0], residual);
    worst[1] = std::max(worst[1], orthogonality);
    worst[2] = std::max({worst[2], dv, dt});
    // Far-apart column scales: the same V and T, R scaled.
    mat<T> As = A;
    std::vector<int> k(s.n);
    for (int j = 0; j < s.n; ++j) {
      k[j] = j % 2 ? far : -far;
      for (int i = 0; i < s.h; ++i) As(i, j) = std::ldexp(A(i, j), k[j]);
    }
    mat<T> Fs(1, 1), Vs(1, 1), Ts(1, 1);
    small_panel_gpu(As, band, Fs, Vs, Ts);
    bool same_vt = Vs.a == V.a && Ts.a == Tg.a, r_scaled = true;
    for (int j = 0; j < s.n; ++j) {
      double rmax = 0;
      for (int i = 0; i <= j && i < s.h; ++i) rmax = std::max(rmax, std::abs(double(F(i, j))));
      for (int i = 0; i <= j && i < s.h; ++i)
        r_scaled = r_scaled && std::abs(double(Fs(i, j)) - std::ldexp(double(F(i, j)), k[j])) <=
                                   std::ldexp(4 * eps * rmax, k[j]);
    }
    CHECK(same_vt);
    CHECK(r_scaled);
    // Entries below the band are not read: NaN there changes nothing.
    if (band < s.h - 1) {
      mat<T> An = A;
      for (int j = 0; j < s.n; ++j)
        for (int i = j + band + 1; i < s.h; ++i) An(i, j) = std::numeric_limits<T>::quiet_NaN();
      mat<T> Fn(1, 1), Vn(1, 1), Tn(1, 1);
      small_panel_gpu(An, band, Fn, Vn, Tn);
      CHECK((Fn.a == F.a && Vn.a == V.a && Tn.a == Tg.a));
    }
  }
  // A zero column (its remaining part zero: tau = 0, LAPACK's convention) and finite factors.
  mat<T> Z = band_matrix<T>(80, 64, 16);
  for (int i = 0; i < Z.m; ++i) Z(i, 5) = T(0);
  mat<T> F(1, 1), V(1, 1), Tg(1, 1);
  small_panel_gpu(Z, 16, F, V, Tg);
  CHECK(Tg(5, 5) == T(0));
  bool finite = true;
  for (const T x : F.a) finite = finite && std::isfinite(x);
  for (const T x : Tg.a) finite = finite && std::isfinite(x);
  CHECK(finite);
  // Panels that do not fit are declined, untouched.
  blas b;
  dev<T> d(std::size_t(1) << 16);  // no call below reads or writes it
  CHECK_FALSE(gpu_small_panel_qr<T>(100, gpu_small_panel_max_cols + 1, 99, d.p, 100, d.p, 100, d.p, 100, b.s));
  CHECK_FALSE(gpu_small_panel_qr<T>(200, 64, gpu_small_panel_max_band + 1, d.p, 200, d.p, 200, d.p, 64, b.s));
  CHECK_FALSE(gpu_small_panel_qr<T>(60000, 64, 30, d.p, 60000, d.p, 60000, d.p, 64, b.s));
  CHECK(tessera::testing::invalid_message([&] { gpu_small_panel_qr<T>(10, 11, 9, d.p, 10, d.p, 10, d.p, 11, b.s); })
            .find("gpu_small_panel_qr") != std::string::npos);
  CHECK(tessera::testing::invalid_message([&] { gpu_small_panel_qr<T>(10, 4, 9, d.p, 9, d.p, 10, d.p, 4, b.s); })
            .find("lda") != std::string::npos);
  MESSAGE("small panel: residual " << worst[0] << ", orthogonality " << worst[1] << ", |V - V_LAPACK|, |T - T_LAPACK| "
                                   << worst[2]);
}

TEST_CASE("gpu_geqrt and gpu_larfb reject bad arguments by name") {
  using tessera::testing::invalid_message;
  blas b;
  const std::size_t elems = std::max({std::size_t(1) << 16, gpu_geqrt_workspace_size(64, 32, 16),
                                      gpu_larfb_workspace_size(16, 8, 8)}) + 4096;
  dev<double> buf(elems);
  cuda_ok(cudaMemset(buf.p, 0, buf.n * sizeof(double)));
  double* p = buf.p;
  const auto geqrt_msg = [&](int m, int n, int ib, int lda, int ldt, std::size_t lwork) {
    return invalid_message([&] { gpu_geqrt<double>(m, n, ib, p, lda, p, ldt, p, lwork, b.h); });
  };
  const auto larfb_msg = [&](int m, int n, int k, int ldv, int ldt, int ldc, std::size_t lwork) {
    return invalid_message(
        [&] { gpu_larfb<double>(m, n, k, p, ldv, p, ldt, p, ldc, p, lwork, b.h); });
  };
  const auto has = [](const std::string& msg, const char* what) {
    return msg.find(what) != std::string::npos;
  };
  // Each message must name the kernel and one of the two strings.
  struct expect { std::string msg; const char *kernel, *a, *b; };
  for (const expect& e : {
           expect{geqrt_msg(8, 16, 8, 16, 16, elems), "gpu_geqrt", "n = 16", "m = 8"},
           expect{geqrt_msg(64, 32, 0, 64, 32, elems), "gpu_geqrt", "ib", "ib"},
           expect{geqrt_msg(64, 32, gpu_geqrt_max_ib + 1, 64, 32, elems), "gpu_geqrt", "ib", "ib"},
           expect{geqrt_msg(64, 32, 16, 63, 32, elems), "gpu_geqrt", "lda", "lda"},
           expect{geqrt_msg(64, 32, 16, 64, 31, elems), "gpu_geqrt", "ldt", "ldt"},
           expect{geqrt_msg(64, 32, 16, 64, 32, gpu_geqrt_workspace_size(64, 32, 16) - 1),
                  "gpu_geqrt", "lwork", "lwork"},
           expect{larfb_msg(8, 8, 9, 8, 9, 8, elems), "gpu_larfb", "k = 9", "m = 8"},
           expect{larfb_msg(16, 8, 8, 15, 8, 16, elems), "gpu_larfb", "ldv", "ldv"},
           expect{larfb_msg(16, 8, 8, 16, 7, 16, elems), "gpu_larfb", "ldt", "ldt"},
           expect{larfb_msg(16, 8, 8, 16, 8, 15, elems), "gpu_larfb", "ldc", "ldc"},
           expect{larfb_msg(16, 8, 8, 16, 8, 16, gpu_larfb_workspace_size(16, 8, 8) - 1),
                  "gpu_larfb", "lwork", "lwork"}}) {
    CHECK_MESSAGE((has(e.msg, e.kernel) && (has(e.msg, e.a) || has(e.msg, e.b))), e.msg);
  }
}

}  // namespace
