// The hybrid tile QR (CPUs + GPU) and its "GPU-only" form (lookahead 1): residuals over shapes,
// both precisions, several lookaheads, both GPU task shapes. Skips where there is no CUDA device.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <atomic>
#include <random>
#include <vector>

#include "tessera/qr.hpp"
#include "tessera/sched.hpp"
#include "test_util.hpp"

namespace {
const bool skip_without_device = tessera::testing::skip_unless(tessera::qr::gpu_available());

template <class T>
void factor_and_check(int m, int n, int nb, int ib, unsigned workers, const tessera::qr::hybrid_options& options) {
  std::mt19937_64 rng(tessera::testing::seed() + std::uint64_t(m) * 131 + std::uint64_t(n));
  std::uniform_real_distribution<T> dist(T(-1), T(1));
  std::vector<T> a(std::size_t(m) * n);
  for (T& x : a) x = dist(rng);
  tessera::runtime rt(tessera::qr::gpu_runtime_options(workers));
  tessera::qr::qr_factors<T> f(rt, m, n, nb, ib, tessera::qr::pinned_allocator());
  tessera::qr::to_tiles_async(rt, a.data(), m, f.a(), f.ha(), "A");
  tessera::qr::geqrf_hybrid(rt, f, options);
  const auto res = tessera::qr::check_qr(rt, f, a.data(), m);
  CAPTURE(m);
  CAPTURE(n);
  CAPTURE(nb);
  CAPTURE(options.lookahead);
  CAPTURE(options.row_pipelined);
  CAPTURE(options.split_next);
  CAPTURE(options.gpu_rows);
  CHECK(res.qr < 60);
  CHECK(res.orth < 60);
  CHECK(rt.tasks_completed() == rt.tasks_submitted());  // what the tool's progress report counts on
  if (f.nt() > options.lookahead + 1) CHECK(rt.transfers().h2d_copies > 0);  // the GPU took part
}
}  // namespace

TEST_CASE("hybrid QR: shapes, precisions, lookaheads, GPU task shapes") {
  (void)skip_without_device;
  struct shape {
    int m, n, nb, ib;
  };
  for (const shape s : {shape{512, 512, 64, 16}, shape{700, 300, 64, 16}, shape{300, 700, 64, 32},
                        shape{1000, 1000, 128, 32}, shape{129, 257, 32, 8}, shape{64, 64, 64, 16}}) {
    for (int lookahead : {0, 1, 2, 5})
      for (int variant = 0; variant < 4; ++variant) {
        tessera::qr::hybrid_options o;
        o.lookahead = lookahead;
        o.row_pipelined = variant != 1;
        o.split_next = variant != 2;
        if (variant == 3) o.gpu_rows = 3;  // groups that leave a remainder; variant 0: the default
        factor_and_check<double>(s.m, s.n, s.nb, s.ib, 3, o);
        factor_and_check<float>(s.m, s.n, s.nb, s.ib, 2, o);
      }
  }
}

TEST_CASE("hybrid QR gives the same R as the CPU tile QR") {
  const int m = 600, n = 500, nb = 64, ib = 16;
  std::mt19937_64 rng(tessera::testing::seed());
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> a(std::size_t(m) * n);
  for (double& x : a) x = dist(rng);
  tessera::runtime cpu({.workers = 2});
  auto fc = tessera::qr::geqrf(cpu, m, n, a.data(), m, nb, ib);
  tessera::runtime rt({.workers = 2, .gpu_streams = 2});
  tessera::qr::qr_factors<double> fg(rt, m, n, nb, ib, tessera::qr::pinned_allocator());
  tessera::qr::to_tiles_async(rt, a.data(), m, fg.a(), fg.ha(), "A");
  tessera::qr::hybrid_options o;
  o.lookahead = 2;
  tessera::qr::geqrf_hybrid(rt, fg, o);
  double worst = 0;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i <= std::min(j, m - 1); ++i)
      worst = std::max(worst, std::abs(fc.a()(i, j) - fg.a()(i, j)) / (1 + std::abs(fc.a()(i, j))));
  CHECK(worst < 1e-10);
}
