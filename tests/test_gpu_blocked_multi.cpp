// blocked_qr_multi_gpu (the blocked QR with the trailing matrix split by column blocks among the
// runtime's logical GPUs), float and double, on 2 and 3 logical GPUs (GPU i is CUDA device i mod the
// devices present: all device 0 on a one-GPU machine):
// residuals against LAPACK GEQRT's checks over shapes (n not a multiple of nb, one panel, more
// GPUs than column blocks), R equal to the one-GPU blocked QR's, the bytes copied between GPUs
// equal to multi_gpu_peer_bytes' plan, copies through the host, NaN input rejected with A and T
// untouched, the front door's options::gpus. Skips (exit 77) where there is no CUDA device.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "tessera/qr.hpp"
#include "tessera/sched.hpp"
#include "multi_gpu_util.hpp"
#include "test_util.hpp"

namespace {
const bool skip_without_device = tessera::testing::skip_unless(tessera::qr::gpu_available());

tessera::runtime_options logical_gpus(unsigned gpus, bool through_host = false) {
  return tessera::testing::logical_gpus(gpus, 4, through_host);
}

template <class T>
struct problem {
  int m, n, lda, nb;
  std::vector<T> a0, a, t;
  problem(int rows, int cols, int pad, int panel, std::uint64_t salt)
      : m(rows), n(cols), lda(rows + pad), nb(std::min(panel, cols)),
        a0(tessera::testing::random_matrix<T>(rows, cols, rows + pad, salt)), a(a0),
        t(std::size_t(std::max(nb, 1)) * std::size_t(std::max(cols, 1)), T(-777.25)) {}
  tessera::qr::blocked_options options(int lookahead = 1) const {
    tessera::qr::blocked_options o;
    o.nb = nb;
    o.ib = std::min(32, nb);
    o.lookahead = lookahead;
    return o;
  }
  tessera::qr::qr_residuals check() const {
    return tessera::qr::check_geqrt(m, n, nb, a.data(), lda, t.data(), nb, a0.data(), lda);
  }
};

std::uint64_t sum(const std::vector<std::uint64_t>& v) { return std::accumulate(v.begin(), v.end(), std::uint64_t(0)); }
}  // namespace

TEST_CASE_TEMPLATE("blocked_qr_multi_gpu on 2 and 3 logical GPUs: residuals, padding, peer bytes as planned", T, float,
                   double) {
  (void)skip_without_device;
  struct shape {
    int m, n, nb, pad, lookahead = 1;
  };
  std::uint64_t salt = 0;
  for (unsigned gpus : {2u, 3u}) {
    tessera::runtime rt(logical_gpus(gpus));
    REQUIRE(rt.gpus() == gpus);
    for (const shape s : {shape{1000, 1000, 128, 0}, shape{777, 500, 96, 3}, shape{1200, 700, 128, 0, 2},
                          shape{513, 129, 64, 3}, shape{300, 300, 300, 0}, shape{64, 1, 32, 3},
                          shape{2000, 1500, 128, 1, 3}, shape{900, 200, 64, 0}}) {
      CAPTURE(gpus);
      CAPTURE(s.m);
      CAPTURE(s.n);
      CAPTURE(s.nb);
      CAPTURE(s.lookahead);
      problem<T> p(s.m, s.n, s.pad, s.nb, ++salt);
      const auto before = rt.transfers();
      tessera::qr::blocked_qr_multi_gpu(rt, p.m, p.n, p.a.data(), p.lda, p.t.data(), p.nb, p.options(s.lookahead));
      const auto after = rt.transfers();
      const auto res = p.check();
      MESSAGE("multi-GPU " << gpus << ": " << s.m << " x " << s.n << " nb " << s.nb << ": qr " << res.qr << ", orth "
                           << res.orth);
      CHECK(res.passed());
      bool padding_unchanged = true;
      for (int j = 0; j < s.n; ++j)
        for (int i = s.m; i < p.lda; ++i)
          padding_unchanged &= std::memcmp(&p.a[i + std::size_t(j) * p.lda], &p.a0[i + std::size_t(j) * p.lda], sizeof(T)) == 0;
      CHECK(padding_unchanged);
      // Copies between GPUs: exactly each step's panel V and T to the other GPUs with trailing columns.
      const auto plan = tessera::qr::multi_gpu_peer_bytes(s.m, s.n, p.nb, gpus, sizeof(T));
      CHECK(after.peer_bytes - before.peer_bytes == sum(plan));
      CHECK(after.h2d_bytes - before.h2d_bytes == std::uint64_t(s.m) * s.n * sizeof(T));  // A in, once
    }
  }
}

TEST_CASE("blocked_qr_multi_gpu gives the one-GPU blocked QR's R and T; copies through the host too") {
  const int m = 900, n = 650, nb = 128;
  problem<double> one(m, n, 0, nb, 7);
  {
    tessera::runtime rt(tessera::qr::gpu_runtime_options(4));
    tessera::qr::blocked_qr_gpu(rt, m, n, one.a.data(), m, one.t.data(), nb, one.options());
  }
  for (bool through_host : {false, true}) {
    CAPTURE(through_host);
    problem<double> two(m, n, 0, nb, 7);
    tessera::runtime rt(logical_gpus(2, through_host));
    tessera::qr::blocked_qr_multi_gpu(rt, m, n, two.a.data(), m, two.t.data(), nb, two.options());
    CHECK(two.check().passed());
    // The same kernels on the same columns in the same order: the same numbers up to rounding.
    double diff = 0, norm = 0;
    for (std::size_t i = 0; i < one.a.size(); ++i) {
      diff = std::max(diff, std::abs(one.a[i] - two.a[i]));
      norm = std::max(norm, std::abs(one.a[i]));
    }
    CHECK(diff <= 1e-9 * norm);
    const auto st = rt.transfers();
    const auto plan = sum(tessera::qr::multi_gpu_peer_bytes(m, n, nb, 2, sizeof(double)));
    // Through the host a receiver may take V from the host copy fetched home meanwhile instead.
    CHECK(st.peer_bytes + st.h2d_bytes == plan + std::uint64_t(m) * n * sizeof(double));
    if (through_host) CHECK(st.staged_peer_copies == st.peer_copies);
    else if (tessera::qr::gpu_count() == 1) CHECK(st.staged_peer_copies == 0);  // one device: always direct
  }
}

TEST_CASE("blocked_qr_multi_gpu: NaN in A is refused with A and T untouched; arguments checked") {
  const int m = 500, n = 400, nb = 64;
  tessera::runtime rt(logical_gpus(2));
  problem<float> p(m, n, 0, nb, 11);
  p.a0[7 + std::size_t(333) * m] = std::numeric_limits<float>::quiet_NaN();  // on GPU 1 (column block 5)
  p.a = p.a0;
  const auto t0 = p.t;
  CHECK_THROWS_WITH_AS(tessera::qr::blocked_qr_multi_gpu(rt, m, n, p.a.data(), m, p.t.data(), nb, p.options()),
                       doctest::Contains("A(7, 333) is NaN"), std::invalid_argument);
  CHECK(std::memcmp(p.a.data(), p.a0.data(), sizeof(float) * p.a.size()) == 0);
  CHECK(std::memcmp(p.t.data(), t0.data(), sizeof(float) * p.t.size()) == 0);
  tessera::qr::blocked_options o = p.options();
  o.device_matrix = true;
  CHECK_THROWS_AS(tessera::qr::blocked_qr_multi_gpu(rt, m, n, p.a.data(), m, p.t.data(), nb, o), std::invalid_argument);
  CHECK_THROWS_AS(tessera::qr::blocked_qr_multi_gpu(rt, n - 1, n, p.a.data(), m, p.t.data(), nb, p.options()),
                  std::invalid_argument);
  // Usable afterwards.
  problem<float> q(m, n, 0, nb, 12);
  tessera::qr::blocked_qr_multi_gpu(rt, m, n, q.a.data(), m, q.t.data(), nb, q.options());
  CHECK(q.check().passed());
}

TEST_CASE("the front door: options::gpus on one device, and refused beyond the CUDA devices present") {
  const int m = 800, n = 600;
  std::vector<double> a0 = tessera::testing::random_matrix<double>(m, n, m, 21), a = a0;
  tessera::qr::options o;
  o.gpus = 2;
  o.gpus_on_one_device = true;
  o.nb = 128;
  const auto c = tessera::qr::choose(m, n, o);
  CHECK(c.gpus == 2);
  CHECK(c.reason.find("on 2 GPUs") != std::string::npos);
  CHECK(tessera::qr::runtime_options_for(c).gpus == std::vector<int>{0, 0});
  auto f = tessera::qr::factorize(tessera::qr::host(a.data(), m, n, m), o);
  CHECK(f.owner().gpus() == 2);
  CHECK(f.owner().transfers().peer_bytes > 0);
  CHECK(tessera::qr::check(f, a0.data(), m).passed());
  std::vector<double> b(m, 1.0);
  f.solve(tessera::qr::host(b.data(), m, 1, m));  // the factors work as the one-GPU ones do
  const int present = tessera::qr::gpu_count();
  tessera::qr::options too_many;
  too_many.gpus = static_cast<unsigned>(present + 1);
  CHECK_THROWS_WITH_AS(tessera::qr::choose(m, n, too_many), doctest::Contains("CUDA device"), std::invalid_argument);
  tessera::qr::options on_cpu = o;
  on_cpu.on = tessera::qr::target::cpu;
  CHECK_THROWS_AS(tessera::qr::choose(m, n, on_cpu), std::invalid_argument);
}
