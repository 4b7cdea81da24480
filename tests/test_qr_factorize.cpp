// The QR front door: every target (cpu; gpu and hybrid where there is a GPU), host and device
// matrices, both precisions: the factorization's residuals, Q applied both ways against the formed
// Q, least squares by the normal equations, R against LAPACK's, bad arguments, the policy.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "tessera/kernels_cpu/blas.hpp"
#include "tessera/qr/blocked_qr_gpu.hpp"
#include "tessera/qr/check.hpp"
#include "tessera/qr/factorize.hpp"
#include "tessera/qr/update.hpp"
#include "tessera/qr/gpu.hpp"
#include "tessera/sched/detail/testing.hpp"
#include "tessera/sched/memory.hpp"
#include "test_util.hpp"

namespace qr = tessera::qr;
using tessera::testing::random_matrix;

namespace {

template <class T>
double eps() {
  return tessera::blas::lamch<T>('E');
}

template <class T>
double norm1(int m, int n, const T* a, int lda) {
  return m > 0 && n > 0 ? tessera::blas::lange('1', m, n, a, lda) : 0.0;
}

// A host matrix that may live in device memory for the test: data() is where the library reads
// it, host() the host copy to check against.
template <class T>
struct operand {
  std::vector<T> h;
  tessera::device_buffer d;
  int m, n;
  qr::memory where;
  operand(std::vector<T> values, int rows, int cols, qr::memory w) : h(std::move(values)), m(rows), n(cols), where(w) {
    if (w == qr::memory::device) {
      static tessera::runtime allocator(qr::gpu_runtime_options(1));
      d = allocator.allocate_device(sizeof(T) * std::max<std::size_t>(h.size(), 1));
      qr::copy<T>(qr::host(h.data(), m, n, std::max(1, m)), ref());
    }
  }
  qr::matrix_ref<T> ref() {
    T* p = d ? d.template get<T>() : h.data();
    return {p, m, n, std::max(1, m), where};
  }
  std::vector<T>& host() {  // brings a device operand's values back
    if (d) qr::copy<T>(qr::matrix_ref<T>(ref()), qr::host(h.data(), m, n, std::max(1, m)));
    return h;
  }
};

struct path {
  qr::target on;
  qr::memory where;
  const char* name;
  qr::algorithm algo = qr::algorithm::automatic;
  int single_in_double = -1;  // qr::options::single_in_double
};

std::vector<path> paths() {
  std::vector<path> p{{qr::target::cpu, qr::memory::host, "cpu/host"},
                      {qr::target::cpu, qr::memory::host, "cpu blocked (LAPACK in place)/host", qr::algorithm::blocked}};
  if (qr::gpu_available())
    for (path x : {path{qr::target::cpu, qr::memory::device, "cpu/device"},
                   path{qr::target::cpu, qr::memory::device, "cpu blocked/device", qr::algorithm::blocked},
                   path{qr::target::gpu, qr::memory::host, "gpu/host"},
                   path{qr::target::gpu, qr::memory::device, "gpu/device"},
                   path{qr::target::gpu, qr::memory::device, "gpu/device in float", qr::algorithm::automatic, 0},
                   path{qr::target::gpu, qr::memory::device, "gpu/device in double", qr::algorithm::automatic, 1},
                   path{qr::target::gpu, qr::memory::host, "gpu/host in float", qr::algorithm::automatic, 0},
                   path{qr::target::gpu, qr::memory::host, "gpu/host in double", qr::algorithm::automatic, 1},
                   path{qr::target::hybrid, qr::memory::host, "hybrid/host"},
                   path{qr::target::hybrid, qr::memory::device, "hybrid/device"}})
      p.push_back(x);
  return p;
}

// Every operation of one factorization of an m x n random matrix, checked.
template <class T>
void check_everything(const path& p, int m, int n, std::uint64_t salt) {
  const std::string path_name = p.name;
  CAPTURE(path_name);
  CAPTURE(m);
  CAPTURE(n);
  const int ld = std::max(1, m);
  const std::vector<T> a0 = random_matrix<T>(m, n, ld, salt);
  operand<T> a(a0, m, n, p.where);
  qr::options o;
  o.on = p.on;
  o.algo = p.algo;
  o.nb = 64;
  o.threads = 2;
  o.single_in_double = p.single_in_double;
  qr::factorization<T> f = qr::factorize(a.ref(), o);
  if (p.single_in_double == 0 || !std::is_same_v<T, float> || p.on != qr::target::gpu) CHECK_FALSE(f.choice().in_double);
  if (p.single_in_double == 1 && std::is_same_v<T, float> && m > 0 && n > 0) CHECK(f.choice().in_double);
  CHECK(f.m() == m);
  CHECK(f.n() == n);
  CHECK(f.blocked() == (p.on == qr::target::gpu || p.algo == qr::algorithm::blocked));
  CHECK(f.choice().reason.find(qr::name(p.on)) != std::string::npos);

  const qr::qr_residuals r = qr::check(f, a0.data(), ld);
  CHECK(r.qr < 60);
  CHECK(r.orth < 60);

  // The full Q, orthogonal, and Q C / Q^T C against it.
  const int k = std::min(m, n), nrhs = 3;
  operand<T> q(std::vector<T>(std::size_t(m) * m), m, m, p.where);
  f.form_q(qr::q_shape::full, q.ref());
  const std::vector<T>& Q = q.host();
  std::vector<T> e(std::size_t(m) * m, T(0));
  for (int i = 0; i < m; ++i) e[i + std::size_t(i) * m] = T(1);
  tessera::blas::gemm(CblasTrans, CblasNoTrans, m, m, m, T(-1), Q.data(), m, Q.data(), m, T(1), e.data(), m);
  CHECK(norm1(m, m, e.data(), m) / (m * eps<T>()) < 60);

  const std::vector<T> c0 = random_matrix<T>(m, nrhs, m, salt + 1);
  for (qr::trans op : {qr::trans::no_trans, qr::trans::trans}) {
    operand<T> c(c0, m, nrhs, p.where);
    f.apply_q(op, c.ref());
    std::vector<T> want(std::size_t(m) * nrhs);
    tessera::blas::gemm(op == qr::trans::trans ? CblasTrans : CblasNoTrans, CblasNoTrans, m, nrhs, m, T(1), Q.data(),
                        m, c0.data(), m, T(0), want.data(), m);
    const std::vector<T>& got = c.host();
    for (std::size_t i = 0; i < want.size(); ++i) want[i] -= got[i];
    CHECK(norm1(m, nrhs, want.data(), m) / (norm1(m, nrhs, c0.data(), m) * m * eps<T>()) < 60);
  }

  // R against LAPACK GEQRF's, up to the signs of its rows.
  operand<T> rr(std::vector<T>(std::size_t(k) * n, T(-7)), k, n, p.where);
  f.copy_r(rr.ref());
  const std::vector<T>& R = rr.host();
  std::vector<T> ref = a0, tau(std::size_t(std::max(1, k)));
  REQUIRE(tessera::blas::geqrf(m, n, ref.data(), ld, tau.data()) == 0);
  double worst = 0;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < k; ++i) {
      const double want = i <= j ? std::abs(double(ref[i + std::size_t(j) * ld])) : 0.0;
      worst = std::max(worst, std::abs(std::abs(double(R[i + std::size_t(j) * std::max(1, k)])) - want));
    }
  CHECK(worst / ((norm1(m, n, a0.data(), ld) + 1e-300) * std::max(m, n) * eps<T>()) < 60);

  // Least squares: A^T (B - A X) = 0 (LAPACK's xQRT17 scaling), for m >= n.
  if (m >= n && n > 0) {
    operand<T> b(c0, m, nrhs, p.where);
    f.solve(b.ref());
    const std::vector<T>& x = b.host();
    std::vector<T> res = c0;
    tessera::blas::gemm(CblasNoTrans, CblasNoTrans, m, nrhs, n, T(-1), a0.data(), ld, x.data(), m, T(1), res.data(), m);
    std::vector<T> atr(std::size_t(n) * nrhs);
    tessera::blas::gemm(CblasTrans, CblasNoTrans, n, nrhs, m, T(1), a0.data(), ld, res.data(), m, T(0), atr.data(), n);
    const double an = norm1(m, n, a0.data(), ld), xn = norm1(n, nrhs, x.data(), m), bn = norm1(m, nrhs, c0.data(), m);
    CHECK(norm1(n, nrhs, atr.data(), n) / (an * (an * xn + bn) * std::max(m, n) * eps<T>()) < 60);
  }
}

}  // namespace

TEST_CASE_TEMPLATE("factorize: every path, every operation, several shapes", T, float, double) {
  std::uint64_t salt = 10;
  for (const path& p : paths())
    for (auto [m, n] : {std::pair{300, 200}, std::pair{257, 257}, std::pair{130, 200}, std::pair{1, 1}}) {
      if (p.on == qr::target::gpu && m < n) continue;  // the blocked QR on the GPU needs m >= n (below)
      check_everything<T>(p, m, n, salt += 2);
    }
}

TEST_CASE("factorize: empty matrices give an empty factorization, Q the identity") {
  for (auto [m, n] : {std::pair{0, 4}, std::pair{5, 0}, std::pair{0, 0}}) {
    CAPTURE(m);
    CAPTURE(n);
    std::vector<double> a(std::size_t(m) * n);
    auto f = qr::factorize(qr::host(a.data(), m, n, std::max(1, m)), {.on = qr::target::cpu});
    std::vector<double> q(std::size_t(m) * m, 5.0);
    f.form_q(qr::q_shape::full, qr::host(q.data(), m, m, std::max(1, m)));
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < m; ++j) CHECK(q[i + std::size_t(j) * m] == (i == j ? 1.0 : 0.0));
  }
}

TEST_CASE("factorize: a rank-deficient A makes solve throw, naming R's zero, and leaves B alone") {
  const int m = 50, n = 20;
  std::vector<double> a = random_matrix<double>(m, n, m, 3);
  std::fill_n(a.begin(), m, 0.0);  // column 0 zero: R(0, 0) = 0
  auto f = qr::factorize(qr::host(a.data(), m, n, m), {.on = qr::target::cpu, .nb = 16});
  std::vector<double> b = random_matrix<double>(m, 1, m, 4);
  const std::vector<double> b0 = b;
  try {
    f.solve(qr::host(b.data(), m, 1, m));
    FAIL("no error");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("R(0, 0) = 0") != std::string::npos);
  }
  CHECK(b == b0);
}

TEST_CASE("factorize: bad arguments name the argument") {
  using tessera::testing::invalid_message;
  std::vector<double> a(100, 1.0), c(100, 1.0);
  CHECK(invalid_message([&] { qr::factorize(qr::host(a.data(), 10, 5, 9)); }).find("A.ld = 9") != std::string::npos);
  CHECK(invalid_message([&] { qr::factorize(qr::host(a.data(), -1, 5, 9)); }).find("A.m = -1") != std::string::npos);
  CHECK(invalid_message([&] { qr::factorize(qr::host<double>(nullptr, 4, 4, 4)); }).find("A is null") !=
        std::string::npos);
  a[7] = std::nan("");
  CHECK(invalid_message([&] { qr::factorize(qr::host(a.data(), 10, 5, 10), {.on = qr::target::cpu}); })
            .find("NaN") != std::string::npos);
  a[7] = 1.0;
  auto f = qr::factorize(qr::host(a.data(), 10, 5, 10), {.on = qr::target::cpu, .nb = 4});
  CHECK(invalid_message([&] { f.apply_q(qr::trans::trans, qr::host(c.data(), 9, 2, 9)); }).find("C.m = 9") !=
        std::string::npos);
  CHECK(invalid_message([&] { f.form_q(qr::q_shape::thin, qr::host(c.data(), 10, 10, 10)); }).find("Q.n = 10") !=
        std::string::npos);
  auto wide = qr::factorize(qr::host(a.data(), 5, 10, 5), {.on = qr::target::cpu, .nb = 4});
  CHECK(invalid_message([&] { wide.solve(qr::host(c.data(), 5, 1, 5)); }).find("least squares needs m >= n") !=
        std::string::npos);
  CHECK(invalid_message([&] { qr::choose(10, 5, {.on = qr::target::hybrid, .algo = qr::algorithm::blocked}); })
            .find("(target gpu) or, by LAPACK, on the CPUs (target cpu)") != std::string::npos);
  if (qr::gpu_available())
    CHECK(invalid_message([&] { qr::choose(5, 10, {.on = qr::target::gpu}); }).find("needs m >= n") !=
          std::string::npos);
  CHECK(invalid_message([&] { qr::choose(10, 10, {.on = qr::target::cpu, .nb = 64, .ib = 24}); })
            .find("does not divide") != std::string::npos);
  CHECK(invalid_message([&] { qr::choose(10, 10, {.single_in_double = 2}); }).find("single_in_double = 2") !=
        std::string::npos);
}

TEST_CASE("single precision in double: A with ld > m, with and without the full T; the rows past m untouched") {
  if (!qr::gpu_available()) return;
  const int m = 333, n = 200, ld = 341;
  const std::vector<float> a0 = random_matrix<float>(m, n, ld, 93);  // entries past m in each column too
  for (const bool full_t : {false, true})
    for (const int mode : {0, 1}) {
      CAPTURE(full_t);
      CAPTURE(mode);
      std::vector<float> h = a0;
      static tessera::runtime rt(qr::gpu_runtime_options(2));
      tessera::device_buffer d = rt.allocate_device(sizeof(float) * h.size());
      qr::copy<float>(qr::host(h.data(), ld, n, ld), qr::device(d.get<float>(), ld, n, ld));
      auto f = qr::factorize(rt, qr::device(d.get<float>(), m, n, ld),
                             {.on = qr::target::gpu, .nb = 64, .full_t = full_t, .single_in_double = mode});
      CHECK(f.choice().in_double == (mode == 1));
      std::vector<float> back(h.size());
      qr::copy<float>(qr::device(d.get<float>(), ld, n, ld), qr::host(back.data(), ld, n, ld));
      bool padding = true;
      for (int j = 0; j < n; ++j)
        for (int i = m; i < ld; ++i) padding = padding && back[i + std::size_t(j) * ld] == a0[i + std::size_t(j) * ld];
      CHECK(padding);
      std::vector<float> compact(std::size_t(m) * n);
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) compact[i + std::size_t(j) * m] = a0[i + std::size_t(j) * ld];
      const qr::qr_residuals r = qr::check(f, compact.data(), m);
      CHECK(r.qr < 60);
      CHECK(r.orth < 60);
    }
}

TEST_CASE("single precision in double: a NaN in a host A is named, with its place, and A is left as it was") {
  if (!qr::gpu_available()) return;
  const int m = 300, n = 200;
  for (const int at : {5, m * 150 + 17}) {
    CAPTURE(at);
    std::vector<float> a0 = random_matrix<float>(m, n, m, 92);
    a0[std::size_t(at)] = std::nanf("");
    for (const bool full_t : {false, true}) {
      std::vector<float> a = a0;
      const std::string what = tessera::testing::invalid_message([&] {
        qr::factorize(qr::host(a.data(), m, n, m), {.on = qr::target::gpu, .nb = 64, .full_t = full_t, .single_in_double = 1});
      });
      CAPTURE(what);
      CHECK(what.find("NaN") != std::string::npos);
      char place[48];
      std::snprintf(place, sizeof place, "A(%d, %d)", at % m, at / m);
      CHECK(what.find(place) != std::string::npos);
      bool same = true;
      for (std::size_t i = 0; i < a0.size(); ++i) same = same && (std::isnan(a0[i]) ? std::isnan(a[i]) : a[i] == a0[i]);
      CHECK(same);
    }
  }
}

TEST_CASE("single precision in double: a NaN in a device A is named and A, T are left as they were") {
  if (!qr::gpu_available()) return;  // the GPU path only; the CPU paths' NaN checks are above
  const int m = 300, n = 200;
  for (const int at : {5, m * 150 + 17}) {  // in the first panel, and in a later one
    CAPTURE(at);
    std::vector<float> a0 = random_matrix<float>(m, n, m, 91);
    a0[std::size_t(at)] = std::nanf("");
    operand<float> a(a0, m, n, qr::memory::device);
    for (const bool full_t : {false, true}) {
      const std::string what = tessera::testing::invalid_message(
          [&] { qr::factorize(a.ref(), {.on = qr::target::gpu, .nb = 64, .full_t = full_t, .single_in_double = 1}); });
      CHECK(what.find("NaN") != std::string::npos);
      const std::vector<float>& after = a.host();
      bool same = true;
      for (std::size_t i = 0; i < a0.size(); ++i)
        same = same && (std::isnan(a0[i]) ? std::isnan(after[i]) : after[i] == a0[i]);
      CHECK(same);
    }
  }
}

TEST_CASE("choose: the policy follows the measured rules and says why") {
  if (!qr::gpu_available()) {
    const qr::choice c = qr::choose(4096, 4096);
    CHECK(c.on == qr::target::cpu);
    CHECK(c.algo == qr::algorithm::tile);
    CHECK(c.reason.find("no CUDA device") != std::string::npos);
    for (qr::target t : {qr::target::gpu, qr::target::hybrid})
      CHECK(tessera::testing::invalid_message([&] { qr::choose(100, 100, {.on = t}); }).find("no CUDA device") !=
            std::string::npos);
    std::vector<double> a(16, 1.0);
    CHECK(tessera::testing::invalid_message([&] { qr::factorize(qr::device(a.data(), 4, 4, 4)); })
              .find("device memory") != std::string::npos);
  } else {
    const qr::choice c = qr::choose(32768, 32768);
    CHECK(c.on == qr::target::gpu);
    CHECK(c.algo == qr::algorithm::blocked);
    CHECK(c.nb == qr::default_blocked_nb(32768));
    CHECK(c.lookahead == qr::default_blocked_lookahead(32768));
    const qr::choice wide = qr::choose(1000, 2000);
    CHECK(wide.on == qr::target::hybrid);
    CHECK(wide.reason.find("m < n") != std::string::npos);
  }
  const qr::choice cpu = qr::choose(1000, 1000, {.on = qr::target::cpu, .nb = 100});
  CHECK(cpu.ib == 25);  // the largest divisor of nb up to 32
}

TEST_CASE("factorize on a GPU: an injected CUDA failure reaches the caller, and the next factorization works") {
  if (!qr::gpu_available()) return;  // the CPU paths are above; the hooks act on the GPU backend only
  const int m = 600, n = 400;
  const std::vector<double> a0 = random_matrix<double>(m, n, m, 77);
  tessera::runtime rt(qr::gpu_runtime_options(2));
  struct fault {
    const char* what;
    void (*inject)(unsigned) noexcept;
  };
  for (const fault fl : {fault{"launch", tessera::detail::testing::fail_gpu_launches},
                         fault{"allocation", tessera::detail::testing::fail_allocations}})
    for (qr::target t : {qr::target::gpu, qr::target::hybrid}) {
      const std::string what = std::string(fl.what) + " failure, target " + qr::name(t);
      CAPTURE(what);
      std::vector<double> a = a0;
      fl.inject(1);
      try {
        qr::factorize(rt, qr::host(a.data(), m, n, m), {.on = t, .nb = 128});
        FAIL("no error");
      } catch (const std::exception& e) {
        const std::string message = what + ": " + e.what();
        MESSAGE(message);
        CHECK(std::string(e.what()).size() > 10);
        // A resource error keeps its type through the runtime, so tools can tell it apart (exit 3).
        if (std::string(fl.what) == "allocation") CHECK(dynamic_cast<const tessera::out_of_memory*>(&e) != nullptr);
      }
      fl.inject(0);
      a = a0;
      auto f = qr::factorize(rt, qr::host(a.data(), m, n, m), {.on = t, .nb = 128});
      const qr::qr_residuals r = qr::check(f, a0.data(), m);
      CHECK(r.qr < 60);
      CHECK(r.orth < 60);
    }
}

namespace {

// A pivot of R below 1 / the largest number: column k of A scaled by 2^-1040 (float: 2^-130) and
// alone in its rows (row k and the last ones), so that the problem splits and no reflector mixes
// its tiny entries with others; X is then A's solution to the data's precision. Triangular solves
// that multiply by 1 / R(k, k) (OpenBLAS's TRSM) overflow to Inf there; LAPACK's TRSM divides.
// Every path of the front door and of the updatable factorization.
template <class T>
void tiny_pivot_least_squares(std::uint64_t salt) {
  const int m = 60, n = 20, k = 5, nrhs = 2, tail = 45;  // column k lives in rows k and tail..m-1
  const T s = sizeof(T) == sizeof(float) ? T(0x1p-130f) : T(0x1p-1040);
  std::vector<T> a = random_matrix<T>(m, n, m, salt);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      const bool tiny_row = i == k || i >= tail;
      if (tiny_row != (j == k)) a[i + std::size_t(j) * m] = T(0);
      else if (j == k) a[i + std::size_t(j) * m] *= s;
    }
  const std::vector<T> x0 = random_matrix<T>(n, nrhs, n, salt + 1);
  std::vector<T> b0(std::size_t(m) * nrhs, T(0));
  for (int c = 0; c < nrhs; ++c)
    for (int i = 0; i < m; ++i) {
      double v = 0;
      for (int j = 0; j < n; ++j) v += double(a[i + std::size_t(j) * m]) * double(x0[j + std::size_t(c) * n]);
      b0[i + std::size_t(c) * m] = T(v);
    }
  // The answer to the precision the data has: column k's entries keep about 34 (float: 19) bits.
  const double tol = sizeof(T) == sizeof(float) ? 1e-3 : 1e-8;
  auto check_x = [&](const std::string& where, const T* x, int ldx) {
    CAPTURE(where);
    double worst = 0;
    for (int c = 0; c < nrhs; ++c)
      for (int j = 0; j < n; ++j) {
        const double got = double(x[j + std::size_t(c) * ldx]), want = double(x0[j + std::size_t(c) * n]);
        REQUIRE(std::isfinite(got));
        worst = std::max(worst, std::abs(got - want) / (1 + std::abs(want)));
      }
    CHECK_MESSAGE(worst < tol, "largest error ", worst);
  };
  for (const path& p : paths()) {
    operand<T> ad(a, m, n, p.where), bd(b0, m, nrhs, p.where);
    qr::options o;
    o.on = p.on;
    o.algo = p.algo;
    o.nb = 16;
    o.threads = 2;
    auto f = qr::factorize(ad.ref(), o);
    f.solve(bd.ref());
    check_x(p.name, bd.host().data(), m);
  }
  for (qr::target t : {qr::target::cpu, qr::target::gpu}) {
    if (t == qr::target::gpu && !qr::gpu_available()) break;
    for (qr::q_mode q : {qr::q_mode::none, qr::q_mode::full}) {
      auto u = qr::updatable<T>::from_matrix(qr::host<const T>(a.data(), m, n, m),
                                             qr::host<const T>(b0.data(), m, nrhs, m), {.on = t, .q = q});
      std::vector<T> x(std::size_t(n) * nrhs);
      u.solve(qr::host(x.data(), n, nrhs, n));
      check_x(std::string("updatable ") + qr::name(t) + " " + qr::name(q), x.data(), n);
    }
  }
}

}  // namespace

TEST_CASE_TEMPLATE("least squares with a pivot below 1 / the largest number: LAPACK's quotient, not Inf", T, float,
                   double) {
  tiny_pivot_least_squares<T>(40);
}
