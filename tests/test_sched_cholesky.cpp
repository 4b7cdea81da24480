// The scheduler is independent of QR: a tile Cholesky factorization written only against the
// public API (tessera/sched.hpp), with CBLAS/LAPACKE as the kernels, checked against LAPACK's
// DPOTRF on the same matrix. This test links Tessera::sched and BLAS/LAPACK, nothing else.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <cblas.h>
#define LAPACK_COMPLEX_CPP
#include <lapacke.h>

#include "tessera/sched.hpp"
#include "test_util.hpp"

extern "C" void openblas_set_num_threads(int);

namespace {

// An n x n matrix in nb x nb tiles, each tile contiguous (ld nb; n a multiple of nb).
struct tiled {
  int n, nb, nt;
  std::vector<double> data;
  tiled(int size, int tile) : n(size), nb(tile), nt(size / tile), data(std::size_t(size) * size) {}
  double* tile(int i, int j) { return data.data() + (std::size_t(i) + std::size_t(j) * nt) * nb * nb; }
  double& at(int r, int c) { return tile(r / nb, c / nb)[r % nb + std::size_t(c % nb) * nb]; }
};

// Right-looking tile Cholesky, lower: POTRF on the diagonal, TRSM below, SYRK and GEMM on the
// trailing matrix; the runtime infers every dependency from the access modes.
void tile_cholesky(tessera::runtime& rt, tiled& a) {
  std::vector<tessera::handle> h;
  for (int j = 0; j < a.nt; ++j)
    for (int i = 0; i < a.nt; ++i) h.push_back(rt.register_data(a.tile(i, j), sizeof(double) * a.nb * a.nb));
  auto H = [&](int i, int j) { return h[std::size_t(i) + std::size_t(j) * a.nt]; };
  const int nb = a.nb;
  for (int k = 0; k < a.nt; ++k) {
    double* akk = a.tile(k, k);
    rt.task([=] {
        if (LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', nb, akk, nb) != 0) throw std::runtime_error("not positive definite");
      })
        .read_write(H(k, k))
        .priority(3)
        .label("potrf")
        .submit();
    for (int i = k + 1; i < a.nt; ++i) {
      double* aik = a.tile(i, k);
      rt.task([=] {
          cblas_dtrsm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, nb, nb, 1.0, akk, nb, aik, nb);
        })
          .read(H(k, k))
          .read_write(H(i, k))
          .priority(2)
          .label("trsm")
          .submit();
    }
    for (int i = k + 1; i < a.nt; ++i) {
      const double* aik = a.tile(i, k);
      double* aii = a.tile(i, i);
      rt.task([=] { cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, nb, nb, -1.0, aik, nb, 1.0, aii, nb); })
          .read(H(i, k))
          .read_write(H(i, i))
          .priority(1)
          .label("syrk")
          .submit();
      for (int j = k + 1; j < i; ++j) {
        const double* ajk = a.tile(j, k);
        double* aij = a.tile(i, j);
        rt.task([=] {
            cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, nb, nb, nb, -1.0, aik, nb, ajk, nb, 1.0, aij, nb);
          })
            .read(H(i, k))
            .read(H(j, k))
            .read_write(H(i, j))
            .label("gemm")
            .submit();
      }
    }
  }
  rt.wait_all();
}

}  // namespace

TEST_CASE("a tile Cholesky on the public scheduler API equals LAPACK's DPOTRF") {
  openblas_set_num_threads(1);  // BLAS inside task bodies runs single-threaded
  for (auto [n, nb, workers] : {std::tuple{256, 32, 2u}, std::tuple{384, 64, 3u}, std::tuple{64, 64, 1u}}) {
    CAPTURE(n);
    CAPTURE(nb);
    std::mt19937_64 gen(tessera::testing::seed() + std::uint64_t(n));
    std::normal_distribution<double> dist;
    std::vector<double> b(std::size_t(n) * n), spd(std::size_t(n) * n);
    for (double& x : b) x = dist(gen);
    // A = B B^T + n I: symmetric positive definite, well conditioned.
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, n, n, n, 1.0, b.data(), n, b.data(), n, 0.0, spd.data(), n);
    for (int i = 0; i < n; ++i) spd[i + std::size_t(i) * n] += n;

    tiled a(n, nb);
    for (int c = 0; c < n; ++c)
      for (int r = 0; r < n; ++r) a.at(r, c) = spd[r + std::size_t(c) * n];
    tessera::runtime rt({.workers = workers});
    tile_cholesky(rt, a);

    std::vector<double> ref = spd;
    REQUIRE(LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', n, ref.data(), n) == 0);
    double diff = 0;
    for (int c = 0; c < n; ++c)
      for (int r = c; r < n; ++r) diff = std::max(diff, std::abs(a.at(r, c) - ref[r + std::size_t(c) * n]));
    const double anorm = LAPACKE_dlange(LAPACK_COL_MAJOR, '1', n, n, spd.data(), n);
    const double eps = LAPACKE_dlamch('E');
    CHECK(diff / (std::sqrt(anorm) * n * eps) < 60);
  }
}

TEST_CASE("a tile Cholesky of a matrix that is not positive definite reports the error") {
  const int n = 128, nb = 32;
  tiled a(n, nb);
  for (int c = 0; c < n; ++c)
    for (int r = 0; r < n; ++r) a.at(r, c) = r == c ? (r == 100 ? -1.0 : 2.0) : 0.0;
  tessera::runtime rt({.workers = 2});
  CHECK_THROWS_WITH_AS(tile_cholesky(rt, a), "not positive definite", std::runtime_error);
  // The runtime stays usable.
  int x = 0;
  rt.task([&] { x = 1; }).submit();
  rt.wait_all();
  CHECK(x == 1);
}
