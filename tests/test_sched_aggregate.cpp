// Task aggregation: one task created empty inherits many dependencies added in a loop.
#include <doctest/doctest.h>

#include <atomic>
#include <numeric>
#include <random>
#include <vector>

#include "tessera/sched.hpp"
#include "test_util.hpp"

TEST_CASE("an aggregated task with 100,000 read dependencies runs after every producer") {
  constexpr int d = 100000;
  tessera::runtime rt({.workers = 4});
  std::vector<int> x(d, 0);
  std::vector<tessera::handle> h(d);
  for (int i = 0; i < d; ++i) h[i] = rt.register_data(&x[i], sizeof(int));
  for (int i = 0; i < d; ++i) rt.task([&x, i] { x[i] = i + 1; }).write(h[i]).submit();
  long long sum = -1;
  auto agg = rt.task([&] { sum = std::accumulate(x.begin(), x.end(), 0LL); });
  for (int i = 0; i < d; ++i) agg.read(h[i]);
  agg.submit();
  // Writers after the aggregate must wait for it (WAR on every datum it read).
  for (int i = 0; i < d; i += 997) rt.task([&x, i] { x[i] = -1; }).write(h[i]).submit();
  rt.wait_all();
  CHECK(sum == static_cast<long long>(d) * (d + 1) / 2);
  CHECK(x[0] == -1);
}

TEST_CASE("an aggregated task writing many tiles is ordered before later readers (GPU-update shape)") {
  // The seed's Figure 5b: CPU tasks write tiles, one aggregated task updates them all, CPU tasks read.
  const auto seed = tessera::testing::seed();
  std::mt19937_64 rng(seed);
  for (unsigned workers : {1u, 2u, 4u}) {
    tessera::runtime rt({.workers = workers, .window = 64});
    constexpr int n = 3000;
    std::vector<long> v(n, 0);
    std::vector<tessera::handle> h(n);
    for (int i = 0; i < n; ++i) h[i] = rt.register_data(&v[i], sizeof(long));
    for (int i = 0; i < n; ++i) rt.task([&v, i] { v[i] = i; }).write(h[i]).submit();
    auto agg = rt.task([&] { for (auto& e : v) e = 2 * e + 1; });
    agg.label("aggregate");
    for (int i = 0; i < n; ++i) agg.read_write(h[i]);
    agg.submit();
    std::vector<long> seen(n, -1);
    for (int i = 0; i < n; ++i)
      if (rng() % 3 == 0) rt.task([&, i] { seen[i] = v[i]; }).read(h[i]).submit();
    rt.wait_all();
    for (int i = 0; i < n; ++i) {
      CHECK(v[i] == 2 * i + 1);
      if (seen[i] != -1) CHECK(seen[i] == 2 * i + 1);
    }
  }
}

TEST_CASE("repeated accesses to one datum inside an aggregated task create one edge") {
  tessera::runtime rt({.workers = 2, .trace = true});
  int x = 0;
  auto h = rt.register_data(&x, sizeof x);
  rt.task([&] { x = 1; }).write(h).submit();
  auto agg = rt.task([&] { x += 1; });
  for (int i = 0; i < 1000; ++i) agg.read(h);
  agg.read_write(h).submit();
  rt.wait_all();
  CHECK(x == 2);
  CHECK(rt.trace().edges.size() == 1);
}
