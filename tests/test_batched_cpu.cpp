// tessera::batched on the CPUs (LAPACK's algorithms per matrix, spread over the runtime's workers): every order
// 1..32, both precisions and layouts, singular and non-finite matrices, counts 0 and 1, and the
// argument checks. The same cases run on the GPU in test_gpu_batched.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include <stdexcept>
#include <type_traits>
#include <vector>

#include "batched_cases.hpp"

namespace tb = tessera::testing::batched;
namespace bt = tessera::batched;
using tessera::testing::invalid_message;

namespace {
tb::place cpu_place() {
  tb::place p;
  p.where = bt::memory::host;
  p.opts.on = bt::target::cpu;
  p.opts.threads = 2;
  p.name = "cpu";
  return p;
}
}  // namespace

TEST_CASE_TEMPLATE("batched LU, inverse and solve on the CPUs: every n, every layout", T, float, double) {
  const tb::place p = cpu_place();
  for (int n = 1; n <= bt::max_n; ++n)
    for (tb::layout lay : {tb::layout::strided, tb::layout::pointers, tb::layout::packed}) {
      // Not bit for bit LAPACK's rounding (GETF2 against OpenBLAS's recursive GETRF), so a near tie in
      // single precision may pivot the other way (compare_pivots).
      tb::lu_case<T>(p, lay, n, 37, false);
      tb::inverse_case<T>(p, lay, n, 21, lay != tb::layout::strided);
      tb::solve_case<T>(p, lay, n, 1 + n % 3, 13, false);
    }
}

TEST_CASE_TEMPLATE("batched solves on the CPUs: a last pivot below the safe minimum", T, float, double) {
  const tb::place p = cpu_place();
  for (int n : {1, 2, 5, 17, 32}) tb::solve_tiny_pivot_case<T>(p, n, 3, 9);
}

// Entries near the ends of the range: 2^+-1000 in double (2^+-100 in float), where 1 / pivot of a
// tiny matrix would overflow if formed carelessly; pivots as LAPACK's, residuals below threshold.
TEST_CASE_TEMPLATE("batched on the CPUs: matrices scaled near the ends of the range", T, float, double) {
  const tb::place p = cpu_place();
  const int e = std::is_same_v<T, double> ? 1000 : 100;
  for (int sign : {-1, 1})
    for (int n : {3, 17, 32}) {
      CAPTURE(sign);
      CAPTURE(n);
      const long long count = 40;
      auto a0 = tb::random_batch<T>(n, n, count, 4400u + std::uint64_t(n));
      for (T& x : a0) x = std::ldexp(x, sign * e);
      auto a = a0, x = a0;
      std::vector<int> piv(static_cast<std::size_t>(count * n)), info(static_cast<std::size_t>(count)),
          info2(static_cast<std::size_t>(count));
      bt::lu(bt::strided(a.data(), n, count), piv.data(), info.data(), p.opts);
      bt::inverse(bt::strided(x.data(), n, count), bt::strided(x.data(), n, count), info2.data(), p.opts);
      auto ref = a0;
      std::vector<int> rpiv, rinfo;
      tb::lapack_getrf(n, count, ref, rpiv, rinfo);
      tb::compare_pivots<T>(n, count, piv, rpiv, false);
      CHECK(info == rinfo);
      CHECK(info2 == rinfo);
      double worst_lu = 0, worst_inv = 0;
      for (long long b = 0; b < count; ++b) {
        const std::size_t at = std::size_t(b) * std::size_t(n * n);
        worst_lu = std::max(worst_lu, bt::lu_residual(n, a0.data() + at, n, a.data() + at, n, piv.data() + b * n));
        worst_inv = std::max(worst_inv, bt::inverse_residual(n, a0.data() + at, n, x.data() + at, n));
      }
      CHECK_MESSAGE(worst_lu < bt::threshold, "||PA-LU|| ratio ", worst_lu);
      CHECK_MESSAGE(worst_inv < bt::threshold, "||I-A*inv(A)|| ratio ", worst_inv);
    }
}

// Every entry below the safe minimum / 8 (1 / pivot overflows): LAPACK's GETF2 divides.
TEST_CASE_TEMPLATE("batched on the CPUs: pivots below the safe minimum", T, float, double) {
  const tb::place p = cpu_place();
  for (int n : {2, 5, 12, 17, 32}) tb::lu_case<T>(p, tb::layout::strided, n, 37, false, std::numeric_limits<T>::min() / 8);
}

TEST_CASE_TEMPLATE("batched on the CPUs: singular matrices get LAPACK's info, the batch goes on", T, float, double) {
  const tb::place p = cpu_place();
  for (int n : {1, 2, 3, 8, 17, 32}) tb::singular_case<T>(p, n);
}

TEST_CASE_TEMPLATE("batched on the CPUs: NaN and Inf finish and stay in their matrix", T, float, double) {
  const tb::place p = cpu_place();
  for (int n : {1, 4, 13, 32}) tb::non_finite_case<T>(p, n);
}

TEST_CASE_TEMPLATE("batched residual checks fail on a NaN anywhere in the results", T, float, double) {
  // A 3 x 3 LU, inverse and solve that pass, then one NaN in each: the check must not pass it.
  const int n = 3;
  auto a = tb::random_batch<T>(n, n, 1, 4242u);
  auto lu = a;
  std::vector<int> piv, inf;
  tb::lapack_getrf(n, 1, lu, piv, inf);
  REQUIRE(inf[0] == 0);
  CHECK(bt::lu_residual(n, a.data(), n, lu.data(), n, piv.data()) < bt::threshold);
  for (std::size_t e = 0; e < lu.size(); ++e) {
    auto bad = lu;
    bad[e] = std::numeric_limits<T>::quiet_NaN();
    CAPTURE(e);
    CHECK_FALSE(bt::lu_residual(n, a.data(), n, bad.data(), n, piv.data()) < bt::threshold);
  }
  std::vector<T> x(std::size_t(n * n), T(0));
  for (int i = 0; i < n; ++i) x[std::size_t(i * n + i)] = T(1);
  std::vector<T> nan_x = x;
  nan_x[1] = std::numeric_limits<T>::quiet_NaN();
  CHECK_FALSE(bt::inverse_residual(n, a.data(), n, nan_x.data(), n) < bt::threshold);
  CHECK_FALSE(bt::solve_residual(n, n, a.data(), n, nan_x.data(), n, x.data(), n) < bt::threshold);
}

TEST_CASE("batched on the CPUs: counts 0 and 1, and a batch split over many tasks") {
  const tb::place p = cpu_place();
  tb::lu_case<double>(p, tb::layout::strided, 5, 0, true);
  tb::lu_case<double>(p, tb::layout::pointers, 5, 1, true);
  tb::inverse_case<float>(p, tb::layout::strided, 9, 1, false);
  tb::lu_case<double>(p, tb::layout::strided, 4, 3001, true);  // > 64 per task, several tasks
}

TEST_CASE("batched: bad arguments name the argument") {
  std::vector<double> a(64 * 64), b(64);
  std::vector<int> ipiv(64), info(2);
  const bt::options cpu{.on = bt::target::cpu};
  CHECK(invalid_message([&] { bt::lu(bt::strided(a.data(), 40, 1), ipiv.data(), info.data(), cpu); }) ==
        "tessera::batched::lu: n = 40: must be <= 32");
  CHECK(invalid_message([&] { bt::lu(bt::strided(a.data(), 0, 1), ipiv.data(), info.data(), cpu); }) ==
        "tessera::batched::lu: n = 0: must be >= 1");
  CHECK(invalid_message([&] { bt::lu(bt::strided(a.data(), 4, -1), ipiv.data(), info.data(), cpu); }) ==
        "tessera::batched::lu: count = -1: must be >= 0");
  CHECK(invalid_message([&] {
          bt::lu(bt::strided(a.data(), 4, 4, 3, 16, 2), ipiv.data(), info.data(), cpu);
        }) == "tessera::batched::lu: a.ld = 3: must be >= n (= 4)");
  CHECK(invalid_message([&] {
          bt::lu(bt::strided(a.data(), 4, 4, 4, 15, 2), ipiv.data(), info.data(), cpu);
        }) == "tessera::batched::lu: a.stride = 15: must be >= ld * columns (= 16)");
  CHECK(invalid_message([&] { bt::lu(bt::strided(a.data(), 4, 3, 4, 16, 2), ipiv.data(), info.data(), cpu); }) ==
        "tessera::batched::lu: a.cols = 3: must be == n (= 4)");
  CHECK(invalid_message([&] { bt::lu(bt::strided<double>(nullptr, 4, 2), ipiv.data(), info.data(), cpu); }) ==
        "tessera::batched::lu: a.data is null");
  CHECK(invalid_message([&] { bt::lu(bt::strided(a.data(), 4, 2), nullptr, info.data(), cpu); }) ==
        "tessera::batched::lu: ipiv is null");
  CHECK(invalid_message([&] { bt::inverse(bt::strided(a.data(), 4, 2), bt::strided(b.data(), 4, 1), info.data(), cpu); }) ==
        "tessera::batched::inverse: ainv.count = 1: must be == a.count (= 2)");
  CHECK(invalid_message([&] {
          bt::gesv(bt::strided(a.data(), 4, 2), ipiv.data(), bt::strided(b.data(), 3, 1, 3, 3, 2), info.data(), cpu);
        }) == "tessera::batched::gesv: b.rows = 3: must be == n (= 4)");
  CHECK(invalid_message([&] {
          bt::lu(bt::strided(a.data(), 4, 2, bt::memory::device), ipiv.data(), info.data(), cpu);
        }) == "tessera::batched::lu: the batch is in device memory: it cannot run on the CPUs (target cpu)");
  CHECK(invalid_message([&] {
          bt::lu(bt::strided(a.data(), 4, 2), ipiv.data(), info.data(), {.on = bt::target::cpu, .depth = 1});
        }) == "tessera::batched::lu: options.depth = 1: must be >= 2");
  CHECK(invalid_message([&] {
          bt::lu(bt::strided(a.data(), 4, 2), ipiv.data(), info.data(), {.on = bt::target::cpu, .cpu_share = 1.5});
        }) == "tessera::batched::lu: options.cpu_share = 1.5: must be <= 1 (negative: measured)");
  CHECK(invalid_message([&] {
          bt::lu(bt::strided(a.data(), 4, 2), ipiv.data(), info.data(), {.cpu_share = std::nan("")});
        }) == "tessera::batched::lu: options.cpu_share = nan: must be <= 1 (negative: measured)");
  if (!bt::gpu_available()) {
    CHECK(invalid_message([&] {
            bt::lu(bt::strided(a.data(), 4, 2), ipiv.data(), info.data(), {.on = bt::target::gpu});
          }) == "tessera::batched::lu: target gpu: no CUDA device (or a build without CUDA)");
  }
}

TEST_CASE("batched on the CPUs: a caller's runtime is used and stays usable") {
  tessera::runtime rt({.workers = 2});
  tb::place p = cpu_place();
  p.opts.rt = &rt;
  tb::lu_case<double>(p, tb::layout::strided, 6, 500, true);
  const auto before = rt.tasks_completed();
  tb::inverse_case<float>(p, tb::layout::pointers, 12, 300, false);
  CHECK(rt.tasks_completed() > before);  // the ranges ran as tasks on this runtime
  rt.task([] {}).submit();
  rt.wait_all();
}
