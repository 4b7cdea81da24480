// Applying and forming Q (unmqr, ungqr) and least squares (gels), against explicit products and
// LAPACK references.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/kernels_cpu/blas.hpp"

#include "tessera/qr.hpp"
#include "tessera/sched.hpp"
#include "ls_checks.hpp"
#include "test_util.hpp"

using namespace tessera::qr;
using tessera::testing::invalid_message;
using tessera::testing::random_matrix;

namespace {

template <class T>
double eps() {
  return tessera::blas::lamch<T>('E');
}

// C := alpha op(A) B + beta C, column-major, op = A or A^T.
template <class T>
void gemm(bool trans_a, int m, int n, int k, T alpha, const T* a, int lda, const T* b, int ldb, T beta,
          T* c, int ldc) {
  tessera::blas::gemm(trans_a ? CblasTrans : CblasNoTrans, CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c,
                      ldc);
}

// max_j sum_i |x_ij - y_ij| (the 1-norm of the difference) of two m x n matrices with ld = m.
template <class T>
double diff_norm1(int m, int n, const T* x, const T* y) {
  double worst = 0;
  for (int c = 0; c < n; ++c) {
    double s = 0;
    for (int r = 0; r < m; ++r) s += std::abs(double(x[r + std::size_t(c) * m]) - double(y[r + std::size_t(c) * m]));
    worst = std::max(worst, s);
  }
  return worst;
}

template <class T>
double norm1(int m, int n, const T* x) {
  std::vector<T> zero(std::size_t(m) * n, T(0));
  return diff_norm1(m, n, x, zero.data());
}

struct shape {
  int m, n, nb, ib;
};
const shape shapes[] = {{1, 1, 4, 2},    {1, 9, 4, 2},    {9, 1, 4, 2},    {40, 40, 8, 4},
                        {70, 30, 16, 4}, {30, 70, 16, 8}, {45, 45, 64, 16}, {101, 57, 24, 8}};

}  // namespace

TEST_CASE_TEMPLATE("ungqr: thin and full Q are orthogonal, Q R = A, thin = leading columns of full", T, float, double) {
  tessera::runtime rt({.workers = 3});
  std::uint64_t salt = 0;
  for (const shape& s : shapes) {
    CAPTURE(s.m);
    CAPTURE(s.n);
    const int m = s.m, n = s.n, k = std::min(m, n);
    const std::vector<T> a = random_matrix<T>(m, n, m, ++salt);
    const qr_factors<T> f = geqrf(rt, m, n, a.data(), m, s.nb, s.ib);
    CHECK(q_columns(f, q_shape::thin) == k);
    CHECK(q_columns(f, q_shape::full) == m);
    std::vector<T> thin(std::size_t(m) * k), full(std::size_t(m) * m);
    ungqr(rt, f, q_shape::thin, thin.data(), m);
    ungqr(rt, f, q_shape::full, full.data(), m);

    for (auto [q, cols] : {std::pair{&thin, k}, std::pair{&full, m}}) {
      std::vector<T> e(std::size_t(cols) * cols, T(0));
      for (int i = 0; i < cols; ++i) e[i + std::size_t(i) * cols] = T(1);
      gemm<T>(true, cols, cols, m, T(-1), q->data(), m, q->data(), m, T(1), e.data(), cols);
      CHECK(norm1(cols, cols, e.data()) / (std::max(m, n) * eps<T>()) < 60);
    }
    CHECK(diff_norm1(m, k, thin.data(), full.data()) / (std::max(m, n) * eps<T>()) < 60);

    // Full Q times R (padded with zero rows) reproduces A.
    std::vector<T> r(std::size_t(m) * n, T(0));
    for (int c = 0; c < n; ++c)
      for (int i = 0; i <= std::min(c, k - 1); ++i) r[i + std::size_t(c) * m] = f.a()(i, c);
    std::vector<T> qr(std::size_t(m) * n, T(0));
    gemm<T>(false, m, n, m, T(1), full.data(), m, r.data(), m, T(0), qr.data(), m);
    CHECK(diff_norm1(m, n, qr.data(), a.data()) / (norm1(m, n, a.data()) * std::max(m, n) * eps<T>()) < 60);
  }
}

TEST_CASE("ungqr: thin Q equals LAPACK's ORGQR Q up to column signs (double)") {
  tessera::runtime rt({.workers = 2});
  std::uint64_t salt = 50;
  for (const shape& s : shapes) {
    CAPTURE(s.m);
    CAPTURE(s.n);
    const int m = s.m, n = s.n, k = std::min(m, n);
    const std::vector<double> a = random_matrix<double>(m, n, m, ++salt);
    const qr_factors<double> f = geqrf(rt, m, n, a.data(), m, s.nb, s.ib);
    std::vector<double> q(std::size_t(m) * k);
    ungqr(rt, f, q_shape::thin, q.data(), m);
    std::vector<double> ref(a), tau(static_cast<std::size_t>(k));
    REQUIRE(tessera::blas::geqrf(m, n, ref.data(), m, tau.data()) == 0);
    REQUIRE(tessera::blas::orgqr(m, k, k, ref.data(), m, tau.data()) == 0);
    double worst = 0;
    for (int c = 0; c < k; ++c) {
      // Column signs follow R's diagonal signs; pick them from the largest entry.
      int big = 0;
      for (int r = 0; r < m; ++r)
        if (std::abs(ref[r + std::size_t(c) * m]) > std::abs(ref[big + std::size_t(c) * m])) big = r;
      const double sign = (q[big + std::size_t(c) * m] < 0) == (ref[big + std::size_t(c) * m] < 0) ? 1 : -1;
      double col = 0;
      for (int r = 0; r < m; ++r) col += std::abs(q[r + std::size_t(c) * m] - sign * ref[r + std::size_t(c) * m]);
      worst = std::max(worst, col);
    }
    CHECK(worst < 1e-8);
  }
}

TEST_CASE_TEMPLATE("unmqr: Q^T C and Q C match products with the explicit Q; Q (Q^T C) = C", T, float, double) {
  tessera::runtime rt({.workers = 4});
  std::uint64_t salt = 200;
  for (const shape& s : shapes) {
    for (int nrhs : {1, 7, 40}) {
      CAPTURE(s.m);
      CAPTURE(s.n);
      CAPTURE(nrhs);
      const int m = s.m, n = s.n;
      const std::vector<T> a = random_matrix<T>(m, n, m, ++salt);
      const std::vector<T> c0 = random_matrix<T>(m, nrhs, m, ++salt);
      const qr_factors<T> f = geqrf(rt, m, n, a.data(), m, s.nb, s.ib);
      std::vector<T> q(std::size_t(m) * m);
      ungqr(rt, f, q_shape::full, q.data(), m);
      const double scale = norm1(m, nrhs, c0.data()) * m * eps<T>();

      std::vector<T> qtc(c0), expected(c0.size());
      unmqr(rt, trans::trans, f, nrhs, qtc.data(), m);
      gemm<T>(true, m, nrhs, m, T(1), q.data(), m, c0.data(), m, T(0), expected.data(), m);
      CHECK(diff_norm1(m, nrhs, qtc.data(), expected.data()) / scale < 60);

      std::vector<T> qc(c0);
      unmqr(rt, trans::no_trans, f, nrhs, qc.data(), m);
      gemm<T>(false, m, nrhs, m, T(1), q.data(), m, c0.data(), m, T(0), expected.data(), m);
      CHECK(diff_norm1(m, nrhs, qc.data(), expected.data()) / scale < 60);

      unmqr(rt, trans::no_trans, f, nrhs, qtc.data(), m);
      CHECK(diff_norm1(m, nrhs, qtc.data(), c0.data()) / scale < 60);
    }
  }
}

TEST_CASE("unmqr: C tiled with another column width, async on tiles") {
  tessera::runtime rt({.workers = 2});
  const int m = 77, n = 50, nb = 16, ib = 4, nrhs = 45;
  const std::vector<double> a = random_matrix<double>(m, n, m, 300);
  const std::vector<double> c0 = random_matrix<double>(m, nrhs, m, 301);
  const qr_factors<double> f = geqrf(rt, m, n, a.data(), m, nb, ib);
  tile_matrix<double> c(m, nrhs, nb, 24);   // rows tiled like A, 24 columns per tile
  const tile_handles hc = register_tiles(rt, c);
  to_tiles_async(rt, c0.data(), m, c, hc);
  unmqr_async(rt, trans::trans, f, c, hc);
  std::vector<double> got(c0.size()), expected(c0);
  to_lapack_async(rt, c, hc, got.data(), m);
  rt.wait_all();
  unmqr(rt, trans::trans, f, nrhs, expected.data(), m);
  CHECK(diff_norm1(m, nrhs, got.data(), expected.data()) / (norm1(m, nrhs, c0.data()) * m * eps<double>()) < 60);

  tile_matrix<double> wrong_rows(m + 1, nrhs, nb);
  const tile_handles hw = register_tiles(rt, wrong_rows);
  CHECK(invalid_message([&] { unmqr_async(rt, trans::trans, f, wrong_rows, hw); }).find("rows") != std::string::npos);
  tile_matrix<double> wrong_tiles(m, nrhs, nb / 2);
  const tile_handles ht = register_tiles(rt, wrong_tiles);
  CHECK(invalid_message([&] { unmqr_async(rt, trans::trans, f, wrong_tiles, ht); }).find("tiles") != std::string::npos);
  CHECK(invalid_message([&] { unmqr(rt, trans::trans, f, 0, expected.data(), m); }).find("nrhs = 0") != std::string::npos);
  CHECK(invalid_message([&] { unmqr(rt, trans::trans, f, nrhs, expected.data(), m - 1); }).find("ldc") != std::string::npos);
}

TEST_CASE_TEMPLATE("gels: solutions and residual rows match LAPACK GELS", T, float, double) {
  struct ls_shape {
    int m, n, nrhs, nb, ib;
  };
  const ls_shape cases[] = {{1, 1, 1, 4, 2},     {9, 1, 3, 4, 2},     {40, 40, 5, 8, 4},
                            {120, 50, 3, 16, 4}, {100, 37, 20, 32, 8}, {64, 64, 1, 64, 16},
                            {33, 20, 2, 48, 8}};
  tessera::runtime rt({.workers = 3});
  std::uint64_t salt = 400;
  for (const ls_shape& s : cases) {
    CAPTURE(s.m);
    CAPTURE(s.n);
    CAPTURE(s.nrhs);
    const int ldb = s.m + 1;
    std::vector<T> a = random_matrix<T>(s.m, s.n, s.m, ++salt);
    // Diagonally heavier so the square cases are well conditioned and X compares tightly.
    for (int i = 0; i < s.n; ++i) a[i + std::size_t(i) * s.m] += T(4);
    const std::vector<T> a0(a);
    const std::vector<T> b0 = random_matrix<T>(s.m, s.nrhs, ldb, ++salt);
    std::vector<T> x(b0), ref(b0), aref(a);
    gels(rt, s.m, s.n, s.nrhs, a.data(), s.m, x.data(), ldb, s.nb, s.ib);
    const int info = tessera::blas::gels('N', s.m, s.n, s.nrhs, aref.data(), s.m, ref.data(), ldb);
    REQUIRE(info == 0);
    // The solutions agree to a small multiple of n eps times the problem's sensitivity (ls_checks.hpp;
    // a fixed 1e-4 had failed in single precision for a 64 x 64 A, seed 2720314864691689282).
    const double eps = std::numeric_limits<T>::epsilon();
    double a_norm = 0;
    for (int j = 0; j < s.n; ++j)
      for (int i = 0; i < s.m; ++i) a_norm += double(a0[i + std::size_t(j) * s.m]) * double(a0[i + std::size_t(j) * s.m]);
    a_norm = std::sqrt(a_norm);
    const double kappa = tessera::testing::kappa_f(s.n, aref.data(), s.m);
    for (int c = 0; c < s.nrhs; ++c) {
      double dx = 0, nx = 0, res = 0, res_ref = 0;
      for (int i = 0; i < s.n; ++i) {
        dx = std::max(dx, std::abs(double(x[i + std::size_t(c) * ldb]) - double(ref[i + std::size_t(c) * ldb])));
        nx = std::max(nx, std::abs(double(ref[i + std::size_t(c) * ldb])));
      }
      for (int i = s.n; i < s.m; ++i) {
        res += double(x[i + std::size_t(c) * ldb]) * double(x[i + std::size_t(c) * ldb]);
        res_ref += double(ref[i + std::size_t(c) * ldb]) * double(ref[i + std::size_t(c) * ldb]);
      }
      const double sens = tessera::testing::ls_sensitivity(kappa, std::sqrt(res_ref), a_norm, nx);
      CHECK_MESSAGE(dx <= 60 * s.n * eps * sens * std::max(nx, 1.0), "difference to GELS ", dx, ", sensitivity ", sens);
      CHECK(std::sqrt(res) == doctest::Approx(std::sqrt(res_ref)).epsilon(std::is_same_v<T, float> ? 1e-3 : 1e-10));
      CHECK(x[s.m + std::size_t(c) * ldb] == b0[s.m + std::size_t(c) * ldb]);   // padding row untouched
    }
  }
}

TEST_CASE("gels: bad arguments and rank deficiency") {
  tessera::runtime rt({.workers = 2});
  std::vector<double> a = random_matrix<double>(30, 20, 30, 500);
  std::vector<double> b = random_matrix<double>(30, 2, 30, 501);
  auto msg = [&](int m, int n, int nrhs, int lda, int ldb, int nb, int ib) {
    return invalid_message([&] { gels(rt, m, n, nrhs, a.data(), lda, b.data(), ldb, nb, ib); });
  };
  CHECK(msg(20, 30, 2, 30, 30, 8, 4).find("m = 20 < n = 30") != std::string::npos);
  CHECK(msg(30, 20, 0, 30, 30, 8, 4).find("nrhs = 0") != std::string::npos);
  CHECK(msg(30, 20, 2, 29, 30, 8, 4).find("lda = 29") != std::string::npos);
  CHECK(msg(30, 20, 2, 30, 29, 8, 4).find("ldb = 29") != std::string::npos);
  CHECK(msg(30, 20, 2, 30, 30, 8, 3).find("ib = 3") != std::string::npos);

  // A zero first column gives R(0, 0) == 0 exactly: no unique solution, b left as it was.
  for (int i = 0; i < 30; ++i) a[i] = 0;
  const std::vector<double> b_before(b);
  CHECK_THROWS_AS(gels(rt, 30, 20, 2, a.data(), 30, b.data(), 30, 8, 4), std::runtime_error);
  CHECK(b == b_before);
}
