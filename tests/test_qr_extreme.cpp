// Extreme inputs (issue #16): the test-matrix generator (singular values by mode, scale, special
// kinds, argument errors), then every matrix class at scales across the floating-point range on
// the CPU tile QR (both precisions, two tile sizes) and on the GPU blocked QR (skipped, test case
// by test case, without a CUDA device, so the CPU part still runs), all with residuals below 60.
// TESSERA_SEED=<seed> replays a run (the seed is logged).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#ifndef LAPACK_COMPLEX_CPP
#define LAPACK_COMPLEX_CPP
#endif
#include <lapacke.h>

#include "tessera/qr.hpp"
#include "tessera/qr/gpu.hpp"
#include "tessera/qr/matgen.hpp"
#include "tessera/sched.hpp"
#include "test_util.hpp"

using namespace tessera::qr;

namespace {

template <class T>
std::vector<T> generated(const matrix_spec& s, int m, int n, int lda) {
  std::vector<T> a(std::size_t(lda) * std::size_t(std::max(n, 1)), T(-777.25));
  generate<T>(s, m, n, a.data(), lda);
  return a;
}

// Singular values, largest first (LAPACK GESVD, no vectors).
template <class T>
std::vector<double> singular_values(int m, int n, std::vector<T> a, int lda) {
  const int k = std::min(m, n);
  std::vector<T> s(static_cast<std::size_t>(k)), superb(static_cast<std::size_t>(std::max(k, 2)));
  int info = 0;
  if constexpr (std::is_same_v<T, float>)
    info = LAPACKE_sgesvd(LAPACK_COL_MAJOR, 'N', 'N', m, n, a.data(), lda, s.data(), nullptr, 1, nullptr, 1,
                          superb.data());
  else
    info = LAPACKE_dgesvd(LAPACK_COL_MAJOR, 'N', 'N', m, n, a.data(), lda, s.data(), nullptr, 1, nullptr, 1,
                          superb.data());
  REQUIRE(info == 0);
  return std::vector<double>(s.begin(), s.end());
}

template <class T>
double max_abs(int m, int n, const std::vector<T>& a, int lda) {
  double x = 0;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) x = std::max(x, double(std::abs(a[i + std::size_t(j) * lda])));
  return x;
}

template <class T>
std::string describe(const matrix_spec& s) {
  std::ostringstream o;
  o << (sizeof(T) == 4 ? "float " : "double ") << name(s.kind) << " cond " << s.cond << " scale " << s.scale
    << " seed " << s.seed;
  return o.str();
}

// The scales swept: both ends of T's range (the top kept below overflow of the column norms and of
// the residual's 1-norm for a few thousand rows), and in between.
template <class T>
std::vector<double> scales() {
  if constexpr (std::is_same_v<T, float>)
    return {1e-38, 1e-30, 1, 1e30};
  else
    return {1e-300, 1e-150, 1e-30, 1, 1e150, 1e300};
}

double cond_for(matrix_kind k) { return has_spectrum(k) || k == matrix_kind::graded_columns ? 1e16 : 1e4; }

}  // namespace

// --- the generator -----------------------------------------------------------------------------

TEST_CASE("matgen: names parse back, unknown names do not") {
  for (const matrix_kind k : all_matrix_kinds) {
    CAPTURE(name(k));
    REQUIRE(parse_matrix_kind(name(k)).has_value());
    CHECK(*parse_matrix_kind(name(k)) == k);
  }
  CHECK_FALSE(parse_matrix_kind("").has_value());
  CHECK_FALSE(parse_matrix_kind("Random").has_value());
  CHECK(std::string(name(matrix_kind::graded_columns)) == "graded");
  CHECK(std::string(name(matrix_kind::svd_log_uniform)) == "log-uniform");
}

TEST_CASE_TEMPLATE("matgen: singular values follow the mode and the condition number", T, float, double) {
  const double tol = std::is_same_v<T, float> ? 2e-5 : 1e-11;  // relative to sigma_max
  for (const auto& [m, n] : {std::pair{60, 40}, std::pair{40, 60}, std::pair{150, 150}, std::pair{300, 5}}) {
    for (const matrix_kind kind : all_matrix_kinds) {
      if (!has_spectrum(kind)) continue;
      for (const double cond : {1.0, 10.0, 1e3}) {
        const matrix_spec s{kind, cond, 1, tessera::testing::seed() + 7};
        CAPTURE(m);
        CAPTURE(n);
        INFO(describe<T>(s));
        const int lda = m + 1, k = std::min(m, n);
        const auto a = generated<T>(s, m, n, lda);
        std::vector<double> want = requested_singular_values(s, k), got = singular_values<T>(m, n, a, lda);
        REQUIRE(int(want.size()) == k);
        std::sort(want.rbegin(), want.rend());
        CHECK(want.front() == 1.0);
        CHECK(want.back() == doctest::Approx(1 / cond).epsilon(1e-12));
        // The generated matrix is the requested one times 2^e (max |a_ij| in [1/2, 1)).
        const double ratio = got.front() / want.front();
        double worst = 0;
        for (int i = 0; i < k; ++i) worst = std::max(worst, std::abs(got[std::size_t(i)] / ratio - want[std::size_t(i)]));
        CHECK(worst < tol);
        const double amax = max_abs(m, n, a, lda);
        CHECK(amax >= 0.5);
        CHECK(amax < 1.0);
      }
    }
  }
}

TEST_CASE("matgen: a mixed matrix is dense, not diagonal plus a little") {
  // Every entry of U and V depends on every row: no entry of A is (nearly) zero, and no column is
  // dominated by one entry the way I + low rank would be.
  const int m = 700, n = 300;
  const auto a = generated<double>({matrix_kind::svd_one_small, 10, 1, 3}, m, n, m);
  int tiny = 0;
  double worst_share = 0;
  for (int j = 0; j < n; ++j) {
    double sq = 0, top = 0;
    for (int i = 0; i < m; ++i) {
      const double x = a[i + std::size_t(j) * m];
      tiny += std::abs(x) < 1e-12;
      sq += x * x;
      top = std::max(top, x * x);
    }
    worst_share = std::max(worst_share, top / sq);
  }
  CHECK(tiny == 0);
  CHECK(worst_share < 0.1);
}

TEST_CASE_TEMPLATE("matgen: scale puts max |a_ij| in [scale/2, scale]", T, float, double) {
  const int m = 70, n = 50;
  for (const double scale : scales<T>()) {
    for (const matrix_kind kind : all_matrix_kinds) {
      if (kind == matrix_kind::zero) continue;
      const matrix_spec s{kind, cond_for(kind), scale, 11};
      INFO(describe<T>(s));
      const double amax = max_abs(m, n, generated<T>(s, m, n, m), m);
      const double eps = std::numeric_limits<T>::epsilon();
      CHECK(amax >= scale / 2 * (1 - eps));
      CHECK(amax <= scale * (1 + eps));
    }
  }
  // Scaling commutes with the construction: the same entries up to one rounding.
  const auto one = generated<T>({matrix_kind::svd_geometric, 1e6, 1, 5}, m, n, m);
  const double small = std::is_same_v<T, float> ? 1e-30 : 1e-300;
  const auto tiny = generated<T>({matrix_kind::svd_geometric, 1e6, small, 5}, m, n, m);
  double worst = 0;
  for (std::size_t e = 0; e < one.size(); ++e)
    worst = std::max(worst, std::abs(double(tiny[e]) / small - double(one[e])));
  CHECK(worst < 4 * std::numeric_limits<T>::epsilon());
}

TEST_CASE_TEMPLATE("matgen: special kinds have their structure", T, float, double) {
  const int m = 40, n = 13, lda = 43;
  const auto zero = generated<T>({matrix_kind::zero, 1e4, 1, 1}, m, n, lda);
  CHECK(max_abs(m, n, zero, lda) == 0);
  CHECK(zero[m] == T(-777.25));  // rows past m untouched

  const auto zc = generated<T>({matrix_kind::zero_columns, 1e4, 1e-20, 1}, m, n, lda);
  for (int j = 0; j < n; ++j) {
    double x = 0;
    for (int i = 0; i < m; ++i) x = std::max(x, double(std::abs(zc[i + std::size_t(j) * lda])));
    CAPTURE(j);
    CHECK((j % 3 == 0) == (x == 0));
  }

  const auto rep = generated<T>({matrix_kind::repeated_columns, 1e4, 1, 1}, m, n, lda);
  for (int j = 1; j < n; j += 2)
    for (int i = 0; i < m; ++i) CHECK(rep[i + std::size_t(j) * lda] == rep[i + std::size_t(j - 1) * lda]);
  CHECK(rep[0] != rep[std::size_t(2) * lda]);

  const double cond = 1e6;
  const auto gr = generated<T>({matrix_kind::graded_columns, cond, 1, 1}, m, n, lda);
  const auto base = generated<T>({matrix_kind::random_uniform, cond, 1, 1}, m, n, lda);
  for (int j = 0; j < n; ++j) {
    const double g = std::pow(cond, -double(j) / (n - 1));
    for (int i = 0; i < m; i += 7) {
      const double b = double(base[i + std::size_t(j) * lda]);
      CHECK(std::abs(double(gr[i + std::size_t(j) * lda]) - b * g) <=
            4 * std::numeric_limits<T>::epsilon() * std::abs(b) * g + 1e-300);
    }
  }
}

TEST_CASE("matgen: the same spec gives the same matrix, another seed another") {
  const matrix_spec s{matrix_kind::svd_log_uniform, 1e8, 1, 42};
  const auto a = generated<double>(s, 130, 90, 130), b = generated<double>(s, 130, 90, 130);
  CHECK(a == b);
  matrix_spec t = s;
  t.seed = 43;
  CHECK(a != generated<double>(t, 130, 90, 130));
}

TEST_CASE("matgen: bad cond, scale and sizes are rejected, naming the option") {
  using tessera::testing::invalid_message;
  std::vector<float> f(100);
  std::vector<double> d(100);
  auto gen_f = [&](matrix_spec s) { return invalid_message([&] { generate<float>(s, 10, 10, f.data(), 10); }); };
  auto gen_d = [&](matrix_spec s) { return invalid_message([&] { generate<double>(s, 10, 10, d.data(), 10); }); };
  CHECK(gen_f({matrix_kind::random_uniform, 1e4, 1e300, 1}).find("--scale") != std::string::npos);  // overflow
  CHECK(gen_f({matrix_kind::svd_geometric, 1e4, 1e39, 1}).find("--scale") != std::string::npos);
  CHECK(gen_f({matrix_kind::random_uniform, 1e4, 1e-50, 1}).find("--scale") != std::string::npos);  // all zero
  CHECK(gen_d({matrix_kind::random_uniform, 1e4, 0, 1}).find("--scale") != std::string::npos);
  CHECK(gen_d({matrix_kind::random_uniform, 1e4, -1, 1}).find("--scale") != std::string::npos);
  CHECK(gen_d({matrix_kind::random_uniform, 1e4, std::numeric_limits<double>::infinity(), 1}).find("--scale") !=
        std::string::npos);
  CHECK(gen_d({matrix_kind::svd_geometric, 0.5, 1, 1}).find("--cond") != std::string::npos);
  CHECK(gen_d({matrix_kind::svd_geometric, std::nan(""), 1, 1}).find("--cond") != std::string::npos);
  CHECK(invalid_message([&] { generate<double>({}, 10, 10, d.data(), 9); }).find("lda") != std::string::npos);
  CHECK(invalid_message([&] { generate<double>({}, -1, 10, d.data(), 10); }).find("m and n") != std::string::npos);
  // Subnormal but not all zero: allowed.
  CHECK(gen_f({matrix_kind::random_uniform, 1e4, 1e-40, 1}) == "(no std::invalid_argument)");
  CHECK(gen_d({matrix_kind::zero, 1e4, 1e300, 1}) == "(no std::invalid_argument)");
  generate<double>({}, 0, 5, nullptr, 1);  // empty: nothing to do, no pointer needed
}

// --- the CPU tile QR ---------------------------------------------------------------------------

TEST_CASE_TEMPLATE("tile QR: every matrix class at every scale, residuals below 60", T, float, double) {
  tessera::runtime rt({.workers = 2});
  struct shape {
    int m, n;
  };
  struct tiles {
    int nb, ib;
  };
  int failures = 0;
  double worst = 0;
  for (const shape sh : {shape{300, 200}, shape{256, 256}, shape{200, 300}}) {
    for (const tiles tl : {tiles{64, 16}, tiles{128, 32}}) {
      for (const matrix_kind kind : all_matrix_kinds) {
        for (const double scale : scales<T>()) {
          const matrix_spec s{kind, cond_for(kind), scale, tessera::testing::seed() + std::uint64_t(kind)};
          const int lda = sh.m + 1;
          const auto a = generated<T>(s, sh.m, sh.n, lda);
          const qr_factors<T> f = geqrf(rt, sh.m, sh.n, a.data(), lda, tl.nb, tl.ib);
          const qr_residuals r = check_qr(rt, f, a.data(), lda);
          INFO(describe<T>(s) << ", " << sh.m << " x " << sh.n << " nb " << tl.nb << " ib " << tl.ib
                              << ": qr residual " << r.qr << ", orthogonality " << r.orth);
          CHECK(r.passed());
          failures += !r.passed();
          worst = std::max({worst, r.qr, r.orth});
        }
      }
    }
  }
  MESSAGE(std::string(sizeof(T) == 4 ? "float" : "double") << " tile QR: " << failures
                                                            << " failing cases, worst residual " << worst);
}

// --- the GPU blocked QR --------------------------------------------------------------------------

namespace {
template <class T>
void gpu_sweep(int m, int n, int nb, const std::vector<matrix_kind>& kinds, const std::vector<double>& scale_list) {
  if (!gpu_available()) {
    MESSAGE("skipped: no CUDA device");
    return;
  }
  tessera::runtime rt(gpu_runtime_options());
  blocked_options o;
  o.nb = nb;
  o.ib = 32;
  for (const matrix_kind kind : kinds) {
    for (const double scale : scale_list) {
      const matrix_spec s{kind, cond_for(kind), scale, tessera::testing::seed() + 100 + std::uint64_t(kind)};
      const int lda = m;
      const auto a0 = generated<T>(s, m, n, lda);
      std::vector<T> a = a0, t(std::size_t(nb) * std::size_t(n));
      blocked_qr_gpu(rt, m, n, a.data(), lda, t.data(), nb, o);
      const qr_residuals r = check_geqrt(m, n, nb, a.data(), lda, t.data(), nb, a0.data(), lda);
      INFO(describe<T>(s) << ", " << m << " x " << n << " nb " << nb << ": qr residual " << r.qr << ", orthogonality "
                          << r.orth);
      CHECK(r.passed());
      if (kind == matrix_kind::zero_columns || kind == matrix_kind::zero) {
        // LAPACK's convention for a column that is zero where the reflector starts: tau = 0 (so a
        // zero T column) and the column below R's diagonal zero. Columns 0, 3, ... of the first
        // panel are zero from the start.
        bool lapack_form = true;
        for (int j = 0; j < std::min(n, nb); j += 3) {
          for (int i = j + 1; i < m; ++i) lapack_form &= a[i + std::size_t(j) * lda] == T(0);
          lapack_form &= t[std::size_t(j) + std::size_t(j) * nb] == T(0);
        }
        CHECK(lapack_form);
      }
    }
  }
}

std::vector<matrix_kind> every_kind() { return {std::begin(all_matrix_kinds), std::end(all_matrix_kinds)}; }
}  // namespace

TEST_CASE_TEMPLATE("GPU blocked QR: 4096 x 2048, every matrix class at every scale (issue #16)", T, float, double) {
  gpu_sweep<T>(4096, 2048, 256, every_kind(), scales<T>());
}

TEST_CASE_TEMPLATE("GPU blocked QR: smaller shapes and panel widths at the range's ends", T, float, double) {
  const std::vector<double> ends = std::is_same_v<T, float> ? std::vector<double>{1e-38, 1e-20, 1e30}
                                                              : std::vector<double>{1e-300, 1e-200, 1e300};
  gpu_sweep<T>(1000, 600, 128, every_kind(), ends);
  gpu_sweep<T>(520, 520, 256, every_kind(), ends);
  gpu_sweep<T>(777, 333, 128, every_kind(), {1.0});
}

// The other GPU paths through the front door: the tile hybrid (panels on the CPUs, updates on the
// GPU) and the blocked QR on a matrix already in device memory.
TEST_CASE_TEMPLATE("front door: tile hybrid and device-resident blocked QR at the range's ends", T, float, double) {
  if (!gpu_available()) {
    MESSAGE("skipped: no CUDA device");
    return;
  }
  const std::vector<double> ends = std::is_same_v<T, float> ? std::vector<double>{1e-38, 1.0, 1e30}
                                                              : std::vector<double>{1e-300, 1.0, 1e300};
  tessera::runtime rt(gpu_runtime_options());
  const int m = 600, n = 400;
  tessera::device_buffer d = rt.allocate_device(sizeof(T) * std::size_t(m) * n);
  for (const matrix_kind kind : every_kind())
    for (const double scale : ends)
      for (const memory where : {memory::host, memory::device}) {
        const matrix_spec s{kind, cond_for(kind), scale, tessera::testing::seed() + 300 + std::uint64_t(kind)};
        const auto a0 = generated<T>(s, m, n, m);
        std::vector<T> a = a0;
        matrix_ref<T> ref = host(a.data(), m, n, m);
        if (where == memory::device) {
          ref = device(d.template get<T>(), m, n, m);
          copy<T>(host(a0.data(), m, n, m), ref);
        }
        options o;
        o.on = where == memory::device ? target::gpu : target::hybrid;
        o.nb = 128;
        auto f = factorize(rt, ref, o);
        const qr_residuals r = check(f, a0.data(), m);
        INFO(describe<T>(s) << ", " << name(o.on) << " on " << name(where) << " memory: qr residual " << r.qr
                            << ", orthogonality " << r.orth);
        CHECK(r.passed());
      }
}
