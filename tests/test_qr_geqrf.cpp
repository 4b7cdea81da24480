// Tile QR: residuals over shapes, precisions and worker counts, R against LAPACK, determinism,
// the task graph it inserts, operation counts, and argument validation.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/kernels_cpu/blas.hpp"

#include "tessera/qr.hpp"
#include "tessera/sched.hpp"
#include "test_util.hpp"

using namespace tessera::qr;
using tessera::testing::invalid_message;
using tessera::testing::random_matrix;

namespace {

struct shape {
  int m, n, nb, ib;
};

// Edge cases first: 1 x 1, one row, one column, nb = 1, nb larger than m or n, ib == nb, then
// tall, wide and square with and without partial tiles.
const shape shapes[] = {
    {1, 1, 4, 2},    {1, 17, 4, 2},    {17, 1, 4, 2},   {5, 4, 1, 1},     {10, 30, 32, 8},
    {30, 10, 32, 8}, {64, 64, 16, 4},  {97, 97, 16, 8}, {150, 60, 32, 8}, {60, 150, 32, 8},
    {33, 70, 16, 16}, {200, 130, 48, 8}, {130, 130, 64, 32}, {129, 31, 32, 4}, {300, 257, 64, 16},
    {257, 300, 64, 32}, {1000, 40, 32, 8}};

}  // namespace

TEST_CASE_TEMPLATE("geqrf: residuals below 60 over shapes, workers and both precisions", T, float, double) {
  std::uint64_t salt = 0;
  // Two random matrices per shape and worker count.
  for (unsigned workers : {1u, 2u, 4u, 1u, 2u, 4u}) {
    tessera::runtime rt({.workers = workers});
    for (const shape& s : shapes) {
      CAPTURE(workers);
      CAPTURE(s.m);
      CAPTURE(s.n);
      CAPTURE(s.nb);
      CAPTURE(s.ib);
      const int lda = s.m + 2;
      const std::vector<T> a = random_matrix<T>(s.m, s.n, lda, ++salt);
      const qr_factors<T> f = geqrf(rt, s.m, s.n, a.data(), lda, s.nb, s.ib);
      CHECK(f.mt() == (s.m + s.nb - 1) / s.nb);
      const qr_residuals r = check_qr(rt, f, a.data(), lda);
      CHECK(r.qr < 60);
      CHECK(r.orth < 60);
      CHECK(r.passed());
    }
  }
}

TEST_CASE("geqrf: R equals LAPACK's R up to the signs of its rows (double)") {
  tessera::runtime rt({.workers = 3});
  std::uint64_t salt = 100;
  for (const shape& s : shapes) {
    CAPTURE(s.m);
    CAPTURE(s.n);
    const std::vector<double> a = random_matrix<double>(s.m, s.n, s.m, ++salt);
    const qr_factors<double> f = geqrf(rt, s.m, s.n, a.data(), s.m, s.nb, s.ib);
    std::vector<double> ref(a), tau(std::size_t(std::min(s.m, s.n)));
    REQUIRE(tessera::blas::geqrf(s.m, s.n, ref.data(), s.m, tau.data()) == 0);
    const int k = std::min(s.m, s.n);
    double worst = 0;
    for (int c = 0; c < s.n; ++c) {
      double col = 0;
      for (int i = 0; i <= std::min(c, k - 1); ++i) {
        const double sign = (f.a()(i, i) < 0) == (ref[i + std::size_t(i) * s.m] < 0) ? 1.0 : -1.0;
        col += std::abs(f.a()(i, c) - sign * ref[i + std::size_t(c) * s.m]);
      }
      worst = std::max(worst, col);
    }
    const double anorm = tessera::blas::lange('1', s.m, s.n, a.data(), s.m);
    CHECK(worst / anorm < 1e-8);
  }
}

TEST_CASE("geqrf: bitwise identical factors whatever the workers and the diagonal split") {
  // Every tile sees the same kernels in the same order however the tasks are scheduled, so any
  // difference means a dependency the runtime was not told about.
  const int m = 190, n = 170, nb = 32, ib = 8;
  const std::vector<double> a = random_matrix<double>(m, n, m, 7);
  auto factor = [&](unsigned workers, bool split) {
    tessera::runtime rt({.workers = workers});
    qr_factors<double> f(rt, m, n, nb, ib);
    blas_threads single(1);
    to_tiles_async(rt, a.data(), m, f.a(), f.ha());
    geqrf_options o;
    o.split_diagonal = split;
    geqrf_async(rt, f, o);
    rt.wait_all();
    std::vector<double> out(f.a().data(), f.a().data() + f.a().size());
    out.insert(out.end(), f.t().data(), f.t().data() + f.t().size());
    return out;
  };
  const std::vector<double> reference = factor(1, false);
  for (unsigned workers : {1u, 2u, 4u})
    for (bool split : {false, true}) {
      CAPTURE(workers);
      CAPTURE(split);
      const std::vector<double> other = factor(workers, split);
      REQUIRE(other.size() == reference.size());
      CHECK(std::memcmp(other.data(), reference.data(), sizeof(double) * other.size()) == 0);
    }
}

TEST_CASE("geqrf: the task graph (counts, labels, the diagonal split breaks ORMQR -> TSQRT)") {
  const int m = 5 * 16 + 3, n = 4 * 16, nb = 16, ib = 4;   // 6 x 4 tiles
  const std::vector<double> a = random_matrix<double>(m, n, m, 8);
  for (bool split : {false, true}) {
    CAPTURE(split);
    tessera::runtime rt({.workers = 2});
    qr_factors<double> f(rt, m, n, nb, ib);
    blas_threads single(1);
    to_tiles_async(rt, a.data(), m, f.a(), f.ha());
    rt.wait_all();
    geqrf_options o;
    o.split_diagonal = split;
    rt.enable_trace(true);
    const std::uint64_t before = rt.tasks_completed();
    geqrf_async(rt, f, o);
    rt.wait_all();
    const tessera::trace_data& trace = rt.trace();
    const std::uint64_t tasks = 4 + (3 + 2 + 1) + (5 + 4 + 3 + 2) + (5 * 3 + 4 * 2 + 3 * 1);
    CHECK(rt.tasks_completed() - before == tasks);  // what a progress report counts
    CHECK(rt.tasks_submitted() == rt.tasks_completed());
    CHECK(trace.tasks.size() == tasks);
    std::map<std::uint64_t, std::string> label;
    std::map<std::string, int> count;
    for (const auto& t : trace.tasks) {
      label[t.id] = t.label;
      ++count[t.label];
    }
    CHECK(count["geqrt"] == 4);
    CHECK(count["ormqr"] == 3 + 2 + 1);
    CHECK(count["tsqrt"] == 5 + 4 + 3 + 2);
    CHECK(count["tsmqr"] == 5 * 3 + 4 * 2 + 3 * 1);
    int ormqr_to_tsqrt = 0;
    for (const auto& e : trace.edges)
      if (label[e.from] == "ormqr" && label[e.to] == "tsqrt") {
        ++ormqr_to_tsqrt;
        CHECK(e.kind == tessera::hazard::war);
      }
    if (split) CHECK(ormqr_to_tsqrt == 0);
    else CHECK(ormqr_to_tsqrt == 3 + 2 + 1);   // the first TSQRT of a step waits for its ORMQRs
  }
}

TEST_CASE("flops: LAWN 41 GEQRF counts") {
  for (double n : {1.0, 2.0, 10.0, 1000.0, 4096.0}) {
    CAPTURE(n);
    const double expected = 4.0 / 3 * n * n * n + 2 * n * n + 14.0 / 3 * n;
    CHECK(geqrf_flops(n, n) == doctest::Approx(expected).epsilon(1e-12));
  }
  // Tall (m > n): 2 m n^2 - 2/3 n^3 + n^2 + m n + 14/3 n; wide (m < n): 2 n m^2 - 2/3 m^3 - m^2
  // + 3 m n + 14/3 m. Both have the leading term 2 (long side) (short side)^2 - 2/3 (short side)^3.
  const double m = 1e5, n = 1e3;
  CHECK(geqrf_flops(m, n) == doctest::Approx(2 * m * n * n - 2.0 / 3 * n * n * n + n * n + m * n + 14.0 / 3 * n));
  CHECK(geqrf_flops(n, m) == doctest::Approx(2 * m * n * n - 2.0 / 3 * n * n * n - n * n + 3 * m * n + 14.0 / 3 * n));
  CHECK(geqrf_flops(m, n) == doctest::Approx(2 * m * n * n - 2.0 / 3 * n * n * n).epsilon(1e-3));
  // Exact small value, m = 3, n = 2 (m > n branch): muls 2(2(0.5 - 2/3 + 3) + 3 + 23/6), adds 2(2(...) + 5/6).
  CHECK(geqrf_muls(3, 2) == doctest::Approx(2 * (2 * (0.5 - 2.0 / 3 + 3) + 3 + 23.0 / 6)));
  CHECK(geqrf_adds(3, 2) == doctest::Approx(2 * (2 * (0.5 - 2.0 / 3 + 3) + 5.0 / 6)));
}

TEST_CASE("geqrf: bad arguments are std::invalid_argument naming the argument") {
  tessera::runtime rt({.workers = 2});
  std::vector<double> a = random_matrix<double>(40, 30, 40, 9);
  auto msg = [&](int m, int n, int lda, int nb, int ib, const double* p) {
    return invalid_message([&] { geqrf(rt, m, n, p, lda, nb, ib); });
  };
  CHECK(msg(0, 30, 40, 16, 4, a.data()).find("m = 0") != std::string::npos);
  CHECK(msg(40, 0, 40, 16, 4, a.data()).find("n = 0") != std::string::npos);
  CHECK(msg(40, 30, 39, 16, 4, a.data()).find("lda = 39") != std::string::npos);
  CHECK(msg(40, 30, 40, 0, 4, a.data()).find("nb = 0") != std::string::npos);
  CHECK(msg(40, 30, 40, 16, 0, a.data()).find("ib = 0") != std::string::npos);
  CHECK(msg(40, 30, 40, 16, 6, a.data()).find("ib = 6 does not divide nb = 16") != std::string::npos);
  CHECK(msg(40, 30, 40, 16, 4, nullptr).find("null") != std::string::npos);
  CHECK(invalid_message([&] { qr_factors<float>(rt, 10, 10, 8, 3); }).find("does not divide") != std::string::npos);

  a[17 + 23 * 40] = std::numeric_limits<double>::quiet_NaN();
  std::string m = msg(40, 30, 40, 16, 4, a.data());
  CHECK(m.find("A(17, 23)") != std::string::npos);
  CHECK(m.find("NaN") != std::string::npos);
  a[17 + 23 * 40] = std::numeric_limits<double>::infinity();
  CHECK(msg(40, 30, 40, 16, 4, a.data()).find("Inf") != std::string::npos);

  // Tiles filled directly (not through to_tiles) are checked by the factorization itself.
  qr_factors<double> f(rt, 40, 30, 16, 4);
  std::fill_n(f.a().data(), f.a().size(), 1.0);
  f.a()(33, 20) = -std::numeric_limits<double>::infinity();
  m = invalid_message([&] {
    geqrf_async(rt, f);
    rt.wait_all();
  });
  CHECK(m.find("A(33, 20)") != std::string::npos);

  tessera::runtime other({.workers = 1});
  CHECK(invalid_message([&] { geqrf_async(other, f); }).find("another runtime") != std::string::npos);
}
