// blocked_qr_gpu (blocked QR in LAPACK GEQRT form, the panels on the GPU, as tasks on the runtime), float
// and double: residuals over shapes (one panel, ragged last panels, ib not dividing nb, bulk updates
// split, padding rows untouched), |diag R| and the full R against LAPACK's GEQRT, NaN/Inf input
// rejected with A and T untouched and the runtime still usable, argument errors, and
// the runtime's task counts. Skips (exit 77) where there is no CUDA device.
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "tessera/qr.hpp"
#include "tessera/sched.hpp"
#include "test_util.hpp"

#include "tessera/kernels_cpu/blas.hpp"

namespace {
const bool skip_without_device = tessera::testing::skip_unless(tessera::qr::gpu_available());

// LAPACK GEQRT, the reference the blocked QR must match.
template <class T>
int lapack_geqrt(int m, int n, int nb, T* a, int lda, T* t, int ldt) {
  std::vector<T> work(std::size_t(std::max(nb, 1)) * std::size_t(std::max(n, 1)));
  return tessera::blas::geqrt(m, n, nb, a, lda, t, ldt, work.data());
}

template <class T>
constexpr T t_sentinel = T(-777.25);

// A random m x n matrix (lda = m + pad, the padding random too), its copy, and T (nb x n) filled
// with a sentinel.
template <class T>
struct problem {
  int m, n, lda, nb;
  std::vector<T> a0, a, t;
  problem(int rows, int cols, int pad, int panel, std::uint64_t salt)
      : m(rows), n(cols), lda(rows + pad), nb(panel),
        a0(tessera::testing::random_matrix<T>(rows, cols, rows + pad, salt)), a(a0),
        t(std::size_t(panel) * std::size_t(cols), t_sentinel<T>) {}
  void factor(tessera::runtime& rt, const tessera::qr::blocked_options& o) {
    tessera::qr::blocked_qr_gpu(rt, m, n, a.data(), lda, t.data(), nb, o);
  }
  tessera::qr::qr_residuals check() const {
    return tessera::qr::check_geqrt(m, n, nb, a.data(), lda, t.data(), nb, a0.data(), lda);
  }
  T at(const std::vector<T>& x, int i, int j) const { return x[i + std::size_t(j) * std::size_t(lda)]; }
};

tessera::qr::blocked_options blocked(int nb, int ib, int bulk_columns = 0, int lookahead = 1) {
  tessera::qr::blocked_options o;
  o.nb = nb;
  o.ib = ib;
  o.lookahead = lookahead;
  o.bulk_columns = bulk_columns;
  o.chunked_steps = bulk_columns > 0 ? 3 : 0;  // the first steps' bulk updates split, the rest whole
  return o;
}

template <class T>
bool bitwise_equal(const std::vector<T>& x, const std::vector<T>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), sizeof(T) * x.size()) == 0;
}
}  // namespace

TEST_CASE_TEMPLATE("blocked_qr_gpu: residuals, padding and |diag R| against LAPACK GEQRT over shapes", T, float,
                   double) {
  (void)skip_without_device;
  struct shape {
    int m, n, nb, ib, bulk_columns, pad, lookahead = 1;
  };
  tessera::runtime rt(tessera::qr::gpu_runtime_options(4));
  std::uint64_t salt = 0;
  // Lookahead 0 is the default (deep); 2-3 with bulk updates split or whole; 9 covers every column.
  for (const shape s : {shape{1000, 1000, 128, 32, 0, 0}, shape{777, 500, 96, 32, 0, 3},
                        shape{1200, 700, 128, 16, 2, 0}, shape{2048, 2048, 256, 32, 1, 3},
                        shape{300, 300, 300, 32, 0, 0}, shape{513, 129, 64, 7, 0, 3},
                        shape{64, 1, 32, 32, 0, 3}, shape{3000, 257, 128, 32, 0, 3},
                        shape{1500, 1400, 128, 32, 0, 0, 0}, shape{1100, 1024, 96, 32, 2, 1, 2},
                        shape{2000, 1600, 128, 16, 3, 0, 3}, shape{900, 800, 128, 32, 0, 2, 9}}) {
    CAPTURE(s.m);
    CAPTURE(s.n);
    CAPTURE(s.nb);
    CAPTURE(s.ib);
    CAPTURE(s.bulk_columns);
    CAPTURE(s.pad);
    CAPTURE(s.lookahead);
    problem<T> p(s.m, s.n, s.pad, s.nb, ++salt);
    p.factor(rt, blocked(s.nb, s.ib, s.bulk_columns, s.lookahead));
    const auto res = p.check();
    MESSAGE("blocked_qr_gpu " << s.m << " x " << s.n << " nb " << s.nb << " ib " << s.ib << ": qr residual "
                         << res.qr << ", orthogonality " << res.orth);
    CHECK(res.passed());

    bool padding_unchanged = true;
    for (int j = 0; j < s.n; ++j)
      for (int i = s.m; i < p.lda; ++i) padding_unchanged &= std::memcmp(&p.a[i + std::size_t(j) * p.lda],
                                                                        &p.a0[i + std::size_t(j) * p.lda],
                                                                        sizeof(T)) == 0;
    CHECK(padding_unchanged);

    // |R(i, i)| against LAPACK, relative to max(|R_ref(i, i)|, ||A(:, 0:i+1)||_F).
    const int nb_ref = std::min(s.nb, s.n);
    std::vector<T> ref = p.a0, t_ref(std::size_t(nb_ref) * std::size_t(s.n));
    REQUIRE(lapack_geqrt(s.m, s.n, nb_ref, ref.data(), p.lda, t_ref.data(), nb_ref) == 0);
    double worst = 0, columns_sq = 0;
    for (int i = 0; i < s.n; ++i) {
      for (int r = 0; r < s.m; ++r) columns_sq += double(p.at(p.a0, r, i)) * double(p.at(p.a0, r, i));
      const double r_ref = std::abs(double(p.at(ref, i, i))), r_gpu = std::abs(double(p.at(p.a, i, i)));
      worst = std::max(worst, std::abs(r_gpu - r_ref) / std::max(r_ref, std::sqrt(columns_sq)));
    }
    CHECK(worst < (sizeof(T) == sizeof(double) ? 1e-8 : 1e-2));
  }
}

TEST_CASE("blocked_qr_gpu gives LAPACK GEQRT's R (rows' signs fixed)") {
  const int m = 600, n = 400, nb = 128, ib = 32;
  tessera::runtime rt(tessera::qr::gpu_runtime_options(4));
  problem<double> p(m, n, 0, nb, 100);
  p.factor(rt, blocked(nb, ib));
  std::vector<double> ref = p.a0, t_ref(std::size_t(nb) * n);
  REQUIRE(lapack_geqrt(m, n, nb, ref.data(), m, t_ref.data(), nb) == 0);
  double diff = 0, norm = 0;
  for (int i = 0; i < n; ++i) {
    const double s_gpu = p.at(p.a, i, i) < 0 ? -1 : 1, s_ref = p.at(ref, i, i) < 0 ? -1 : 1;
    for (int j = i; j < n; ++j) {
      const double r_ref = s_ref * p.at(ref, i, j), r_gpu = s_gpu * p.at(p.a, i, j);
      diff += (r_gpu - r_ref) * (r_gpu - r_ref);
      norm += r_ref * r_ref;
    }
  }
  const double rel = std::sqrt(diff / norm);
  MESSAGE("||R_gpu - R_lapack||_F / ||R_lapack||_F = " << rel);
  CHECK(rel < 1e-10);
}

TEST_CASE_TEMPLATE("blocked_qr_gpu: NaN and Inf input are rejected, A and T untouched, the runtime usable", T,
                   float, double) {
  const int m = 500, n = 400, nb = 128, ib = 32;
  tessera::runtime rt(tessera::qr::gpu_runtime_options(4));
  problem<T> p(m, n, 3, nb, 200);
  std::string where;
  SUBCASE("NaN inside the third column block") {
    p.a[17 + std::size_t(300) * p.lda] = std::numeric_limits<T>::quiet_NaN();
    where = "A(17, 300) is NaN";
  }
  SUBCASE("+Inf in the last row of the last column") {
    p.a[(m - 1) + std::size_t(n - 1) * p.lda] = std::numeric_limits<T>::infinity();
    where = "A(499, 399) is Inf";
  }
  const std::vector<T> a_before = p.a, t_before = p.t;
  const std::string message = tessera::testing::invalid_message([&] { p.factor(rt, blocked(nb, ib)); });
  CHECK_MESSAGE(message.find(where) != std::string::npos, message);
  CHECK_MESSAGE(message.find("the input matrix must be finite") != std::string::npos, message);
  CHECK(bitwise_equal(p.a, a_before));
  CHECK(bitwise_equal(p.t, t_before));

  problem<T> fresh(m, n, 0, nb, 201);  // the same runtime still factors
  fresh.factor(rt, blocked(nb, ib));
  const auto res = fresh.check();
  MESSAGE("after the rejected input: qr residual " << res.qr << ", orthogonality " << res.orth);
  CHECK(res.passed());
}

TEST_CASE_TEMPLATE("blocked_qr_gpu: argument errors name the argument", T, float, double) {
  namespace qr = tessera::qr;
  using tessera::testing::invalid_message;
  const int m = 64, n = 64, nb = 32;
  tessera::runtime rt(qr::gpu_runtime_options(2));
  std::vector<T> a(std::size_t(m) * n, T(1)), t(std::size_t(nb) * n, T(0));
  auto message = [&](int rows, int cols, T* pa, int lda, int ldt, const qr::blocked_options& o) {
    return invalid_message([&] { qr::blocked_qr_gpu(rt, rows, cols, pa, lda, t.data(), ldt, o); });
  };
  const auto contains = [](const std::string& s, const char* what) { return s.find(what) != std::string::npos; };
  std::string e;
  CHECK_MESSAGE(contains(e = message(32, n, a.data(), m, nb, blocked(nb, 32)), "m = 32"), e);
  CHECK_MESSAGE(contains(e = message(m, n, a.data(), m, nb, blocked(nb, 0)), "ib = 0"), e);
  CHECK_MESSAGE(contains(e = message(m, n, a.data(), m, nb, blocked(nb, 33)), "ib = 33"), e);
  CHECK_MESSAGE(contains(e = message(m, n, a.data(), m - 1, nb, blocked(nb, 32)), "lda"), e);
  CHECK_MESSAGE(contains(e = message(m, n, a.data(), m, nb - 1, blocked(nb, 32)), "ldt"), e);
  CHECK_MESSAGE(contains(e = message(m, n, a.data(), m, nb, blocked(nb, 32, -2)), "bulk_columns = -2"), e);
  CHECK_MESSAGE(contains(e = message(m, n, a.data(), m, nb, blocked(nb, 32, 0, -2)), "lookahead = -2"), e);
  CHECK_MESSAGE(contains(e = message(m, n, nullptr, m, nb, blocked(nb, 32)), "A is null"), e);
  CHECK(bitwise_equal(a, std::vector<T>(std::size_t(m) * n, T(1))));

  tessera::runtime cpu({.workers = 2});  // no GPU streams
  e = invalid_message([&] { qr::blocked_qr_gpu(cpu, m, n, a.data(), m, t.data(), nb, blocked(nb, 32)); });
  CHECK_MESSAGE(contains(e, "no GPU"), e);
}

TEST_CASE("blocked_qr_gpu: the runtime counts every task it inserted as done") {
  struct shape {
    int m, n, nb, bulk_columns, lookahead;
  };
  tessera::runtime rt(tessera::qr::gpu_runtime_options(4));
  std::uint64_t salt = 300;
  for (const shape s : {shape{700, 500, 128, 0, 1}, shape{1000, 900, 96, 2, 1}, shape{900, 640, 0, 0, 0},
                        shape{1000, 900, 96, 2, 3}, shape{600, 600, 128, 0, 7}}) {
    CAPTURE(s.m);
    CAPTURE(s.n);
    CAPTURE(s.nb);
    CAPTURE(s.bulk_columns);
    CAPTURE(s.lookahead);
    auto o = blocked(s.nb, 32, s.bulk_columns, s.lookahead);
    const std::uint64_t before = rt.tasks_submitted();
    const int nb = s.nb > 0 ? s.nb : tessera::qr::default_blocked_nb(s.n);
    problem<double> p(s.m, s.n, 0, nb, ++salt);
    p.factor(rt, o);
    CHECK(rt.tasks_submitted() > before);
    CHECK(rt.tasks_completed() == rt.tasks_submitted());
    CHECK(p.check().passed());
  }
}

TEST_CASE_TEMPLATE("factorize from host memory: pageable A page-locked only while it is factored, pinned A left so",
                   T, float, double) {
  namespace qr = tessera::qr;
  const int m = 900, n = 700, ld = 905;
  const std::vector<T> a0 = tessera::testing::random_matrix<T>(m, n, ld, 400);
  qr::options o;
  o.on = qr::target::gpu;
  o.nb = 128;
  o.threads = 2;
  auto attribute = [](const void* p) {
    cudaPointerAttributes attr{};
    REQUIRE(cudaPointerGetAttributes(&attr, p) == cudaSuccess);
    return attr.type;
  };
  tessera::runtime rt(qr::gpu_runtime_options(2));
  {
    std::vector<T> a = a0;  // pageable: registered for the factorization, unregistered after
    REQUIRE(attribute(a.data()) == cudaMemoryTypeUnregistered);
    qr::factorization<T> f = qr::factorize(rt, qr::host(a.data(), m, n, ld), o);
    CHECK(attribute(a.data()) == cudaMemoryTypeUnregistered);
    CHECK(attribute(a.data() + std::size_t(ld) * (n - 1) + m - 1) == cudaMemoryTypeUnregistered);
    const qr::qr_residuals r = qr::check(f, a0.data(), ld);
    CHECK(r.qr < 60);
    CHECK(r.orth < 60);
  }
  {
    tessera::pinned_buffer buffer = rt.allocate_pinned(sizeof(T) * a0.size());
    T* a = buffer.get<T>();
    std::copy(a0.begin(), a0.end(), a);
    qr::factorization<T> f = qr::factorize(rt, qr::host(a, m, n, ld), o);
    CHECK(attribute(a) == cudaMemoryTypeHost);  // the caller's page-locking is left alone
    const qr::qr_residuals r = qr::check(f, a0.data(), ld);
    CHECK(r.qr < 60);
    CHECK(r.orth < 60);
  }
}
