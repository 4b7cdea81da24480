// The tile hybrid QR with its GPU columns shared among 2 and 3 logical GPUs (GPU i is CUDA device
// i mod the devices present: all device 0 on a one-GPU machine), float and double: residuals over
// shapes and lookaheads, R equal to the one-GPU hybrid's, the bytes copied between GPUs equal to
// hybrid_peer_bytes' plan (directly and through the host), the front door's options::gpus with
// target hybrid, and too many GPUs refused. Skips (exit 77) where there is no CUDA device.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "tessera/qr.hpp"
#include "tessera/sched.hpp"
#include "multi_gpu_util.hpp"
#include "test_util.hpp"

namespace {
const bool skip_without_device = tessera::testing::skip_unless(tessera::qr::gpu_available());

tessera::runtime_options logical_gpus(unsigned gpus, bool through_host = false) {
  return tessera::testing::logical_gpus(gpus, 3, through_host);
}

std::uint64_t sum(const std::vector<std::uint64_t>& v) { return std::accumulate(v.begin(), v.end(), std::uint64_t(0)); }

template <class T>
std::vector<T> random_a(int m, int n, std::uint64_t salt) {
  std::mt19937_64 rng(tessera::testing::seed() + salt);
  std::uniform_real_distribution<T> dist(T(-1), T(1));
  std::vector<T> a(std::size_t(m) * n);
  for (T& x : a) x = dist(rng);
  return a;
}

// Factors A (m x n) with the hybrid on rt's first `gpus` GPUs; the factors, on the host.
template <class T>
tessera::qr::qr_factors<T> hybrid(tessera::runtime& rt, const std::vector<T>& a, int m, int n, int nb, int ib,
                                  tessera::qr::hybrid_options o) {
  tessera::qr::qr_factors<T> f(rt, m, n, nb, ib, tessera::qr::pinned_allocator());
  tessera::qr::to_tiles_async(rt, a.data(), m, f.a(), f.ha(), "A");
  tessera::qr::geqrf_hybrid(rt, f, o);
  return f;
}
}  // namespace

TEST_CASE_TEMPLATE("hybrid QR on 2 and 3 logical GPUs: residuals, peer bytes as planned", T, float, double) {
  (void)skip_without_device;
  struct shape {
    int m, n, nb, ib, lookahead;
  };
  std::uint64_t salt = 0;
  for (unsigned gpus : {2u, 3u}) {
    tessera::runtime rt(logical_gpus(gpus));
    REQUIRE(rt.gpus() == gpus);
    for (const shape s : {shape{1000, 1000, 128, 32, 0}, shape{700, 300, 64, 16, 1}, shape{300, 700, 64, 32, 0},
                          shape{900, 900, 64, 16, 2}, shape{129, 257, 32, 8, 0}, shape{200, 200, 128, 32, 0},
                          shape{1500, 640, 64, 16, 0}}) {
      CAPTURE(gpus);
      CAPTURE(s.m);
      CAPTURE(s.n);
      CAPTURE(s.nb);
      CAPTURE(s.lookahead);
      const std::vector<T> a = random_a<T>(s.m, s.n, ++salt);
      tessera::qr::hybrid_options o;
      o.lookahead = s.lookahead;
      o.gpus = gpus;
      const auto before = rt.transfers();
      auto f = hybrid(rt, a, s.m, s.n, s.nb, s.ib, o);
      const auto after = rt.transfers();
      const auto res = tessera::qr::check_qr(rt, f, a.data(), s.m);
      MESSAGE("hybrid on " << gpus << " GPUs: " << s.m << " x " << s.n << " nb " << s.nb << ": qr " << res.qr << ", orth "
                           << res.orth);
      CHECK(res.qr < 60);
      CHECK(res.orth < 60);
      CHECK(after.peer_bytes - before.peer_bytes ==
            sum(tessera::qr::hybrid_peer_bytes(s.m, s.n, s.nb, s.ib, s.lookahead, gpus, sizeof(T))));
    }
  }
}

TEST_CASE("hybrid QR on 2 GPUs gives the one-GPU hybrid's R; copies through the host too") {
  const int m = 800, n = 700, nb = 64, ib = 16;
  const std::vector<double> a = random_a<double>(m, n, 99);
  tessera::runtime one_rt(tessera::qr::gpu_runtime_options(3));
  auto one = hybrid(one_rt, a, m, n, nb, ib, {});
  const std::uint64_t plan = sum(tessera::qr::hybrid_peer_bytes(m, n, nb, ib, 0, 2, sizeof(double)));
  CHECK(plan > 0);
  std::uint64_t direct_in = 0;  // bytes into the GPUs with direct copies: the same through the host
  for (bool through_host : {false, true}) {
    CAPTURE(through_host);
    tessera::runtime rt(logical_gpus(2, through_host));
    tessera::qr::hybrid_options o;
    o.gpus = 2;
    auto two = hybrid(rt, a, m, n, nb, ib, o);
    // The same kernels on the same tiles in the same order, in other groupings: R equal up to rounding.
    double worst = 0;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i <= std::min(j, m - 1); ++i)
        worst = std::max(worst, std::abs(one.a()(i, j) - two.a()(i, j)) / (1 + std::abs(one.a()(i, j))));
    CHECK(worst < 1e-10);
    const auto st = rt.transfers();
    if (!through_host) {
      CHECK(st.peer_bytes == plan);
      direct_in = st.peer_bytes + st.h2d_bytes;
    } else {  // the panel from the host to both GPUs; only the columns that move go between them
      CHECK(st.staged_peer_copies == st.peer_copies);
      CHECK(st.peer_bytes < plan);
      CHECK(st.peer_bytes + st.h2d_bytes == direct_in);
    }
  }
}

TEST_CASE("the front door: options::gpus with target hybrid; more GPUs than the runtime refused") {
  const int m = 600, n = 900;  // m < n: the automatic target is the hybrid
  const std::vector<double> a = random_a<double>(m, n, 5);
  tessera::qr::options o;
  o.gpus = 2;
  o.gpus_on_one_device = true;
  o.nb = 64;
  const auto c = tessera::qr::choose(m, n, o);
  CHECK(c.on == tessera::qr::target::hybrid);
  CHECK(c.gpus == 2);
  std::vector<double> copy = a;
  auto f = tessera::qr::factorize(tessera::qr::host(copy.data(), m, n, m), o);
  CHECK(f.owner().gpus() == 2);
  CHECK(f.owner().transfers().peer_bytes > 0);
  CHECK(tessera::qr::check(f, a.data(), m).passed());
  // A runtime with one GPU cannot run two (refused before any task).
  tessera::runtime rt(tessera::qr::gpu_runtime_options(2));
  tessera::qr::qr_factors<double> g(rt, m, n, 64, 16, tessera::qr::pinned_allocator());
  tessera::qr::hybrid_options two;
  two.gpus = 2;
  CHECK_THROWS_WITH_AS(tessera::qr::geqrf_hybrid(rt, g, two), doctest::Contains("gpus = 2"), std::invalid_argument);
}
