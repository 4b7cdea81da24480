// Unit tests of the scheduler: one hazard kind or access mode at a time.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "tessera/sched.hpp"
#include "test_util.hpp"

using namespace std::chrono_literals;

namespace {
// The order in which task bodies ran, recorded thread-safely.
struct order_log {
  std::mutex m;
  std::vector<int> seen;
  void add(int x) {
    std::lock_guard l(m);
    seen.push_back(x);
  }
  std::size_t pos(int x) {
    for (std::size_t i = 0; i < seen.size(); ++i)
      if (seen[i] == x) return i;
    FAIL("task " << x << " never ran");
    return 0;
  }
};
}  // namespace

TEST_CASE("RAW: a reader waits for the writer, even when the writer is slow") {
  for (unsigned workers : {1u, 2u, 4u}) {
    tessera::runtime rt({.workers = workers});
    int x = 0, y = 0;
    auto hx = rt.register_data(&x, sizeof x), hy = rt.register_data(&y, sizeof y);
    rt.task([&] { std::this_thread::sleep_for(2ms); x = 41; }).write(hx).submit();
    rt.task([&] { y = x + 1; }).read(hx).write(hy).submit();
    rt.wait_all();
    CHECK(y == 42);
  }
}

TEST_CASE("WAR: a writer waits for every reader since the last write") {
  for (unsigned workers : {2u, 4u}) {
    tessera::runtime rt({.workers = workers});
    int x = 7;
    std::vector<int> got(8, -1);
    auto hx = rt.register_data(&x, sizeof x);
    for (int r = 0; r < 8; ++r)
      rt.task([&, r] { std::this_thread::sleep_for(std::chrono::microseconds(200 * (r % 3))); got[r] = x; })
          .read(hx)
          .submit();
    rt.task([&] { x = -1; }).write(hx).submit();
    rt.wait_all();
    for (int v : got) CHECK(v == 7);
    CHECK(x == -1);
  }
}

TEST_CASE("WAW: writes land in insertion order") {
  tessera::runtime rt({.workers = 4});
  int x = 0;
  auto hx = rt.register_data(&x, sizeof x);
  for (int i = 1; i <= 200; ++i)
    rt.task([&, i] {
        if (i % 7 == 0) std::this_thread::sleep_for(50us);
        x = i;
      })
        .write(hx)
        .submit();
  rt.wait_all();
  CHECK(x == 200);
}

TEST_CASE("read_write chains are serialised and readers between them see the right version") {
  tessera::runtime rt({.workers = 4});
  long x = 0;
  std::vector<long> seen(100, -1);
  auto hx = rt.register_data(&x, sizeof x);
  for (int i = 0; i < 100; ++i) {
    rt.task([&] { x = (x * 3 + 1) % 1000003; }).read_write(hx).submit();
    rt.task([&, i] { seen[i] = x; }).read(hx).submit();
  }
  rt.wait_all();
  long expect = 0;
  for (int i = 0; i < 100; ++i) {
    expect = (expect * 3 + 1) % 1000003;
    CHECK(seen[i] == expect);
  }
}

TEST_CASE("independent tasks run concurrently") {
  tessera::runtime rt({.workers = 4});
  std::atomic<int> running{0}, peak{0};
  std::vector<int> data(4);
  for (int i = 0; i < 4; ++i)
    rt.task([&] {
        int now = ++running;
        int p = peak.load();
        while (now > p && !peak.compare_exchange_weak(p, now)) {
        }
        std::this_thread::sleep_for(20ms);
        --running;
      })
        .write(rt.register_data(&data[i], sizeof(int)))
        .submit();
  rt.wait_all();
  CHECK(peak.load() >= 2);
}

TEST_CASE("accumulate: members of a group never overlap, the group orders against reads and writes") {
  for (unsigned workers : {1u, 3u}) {
    tessera::runtime rt({.workers = workers});
    long sum = 5;
    std::atomic<int> inside{0};
    std::atomic<bool> overlapped{false};
    long before = -1, after = -1;
    auto h = rt.register_data(&sum, sizeof sum);
    rt.task([&] { before = sum; }).read(h).submit();
    for (int i = 1; i <= 50; ++i)
      rt.task([&, i] {
          if (++inside > 1) overlapped = true;
          long v = sum;  // a non-atomic read-modify-write: only safe because members are exclusive
          std::this_thread::sleep_for(10us);
          sum = v + i;
          --inside;
        })
          .accumulate(h)
          .submit();
    rt.task([&] { after = sum; }).read(h).submit();
    rt.task([&] { sum = 0; }).write(h).submit();
    rt.task([&] { sum += 1000; }).accumulate(h).submit();
    rt.wait_all();
    CHECK_FALSE(overlapped.load());
    CHECK(before == 5);
    CHECK(after == 5 + 50 * 51 / 2);
    CHECK(sum == 1000);
  }
}

TEST_CASE("accumulate: members may run in any order but not before the previous writer") {
  tessera::runtime rt({.workers = 4});
  std::vector<int> log;
  std::mutex m;
  int x = 0;
  auto h = rt.register_data(&x, sizeof x);
  rt.task([&] { std::this_thread::sleep_for(5ms); std::lock_guard l(m); log.push_back(0); }).write(h).submit();
  for (int i = 1; i <= 10; ++i)
    rt.task([&, i] { std::lock_guard l(m); log.push_back(i); }).accumulate(h).submit();
  rt.wait_all();
  REQUIRE(log.size() == 11);
  CHECK(log.front() == 0);
}

TEST_CASE("scratch: each task gets aligned per-worker workspace of the size it asked for") {
  tessera::runtime rt({.workers = 3});
  std::atomic<int> bad{0};
  std::vector<int> dummy(64);
  for (int i = 0; i < 64; ++i)
    rt.task([&, i](tessera::task_context& ctx) {
        auto* a = static_cast<unsigned char*>(ctx.scratch(0));
        auto* b = static_cast<double*>(ctx.scratch(1));
        if (reinterpret_cast<std::uintptr_t>(a) % 64 || reinterpret_cast<std::uintptr_t>(b) % 64) ++bad;
        for (int k = 0; k < 1000 + i; ++k) a[k] = static_cast<unsigned char>(k);
        for (int k = 0; k < 100; ++k) b[k] = k;
        for (int k = 0; k < 1000 + i; ++k)
          if (a[k] != static_cast<unsigned char>(k)) ++bad;  // b must not overlap a
        if (ctx.worker() >= 3) ++bad;
      })
        .scratch(1000 + static_cast<std::size_t>(i))
        .scratch(100 * sizeof(double))
        .write(rt.register_data(&dummy[i], sizeof(int)))
        .submit();
  rt.wait_all();
  CHECK(bad.load() == 0);
}

TEST_CASE("value: arguments are copied at insertion") {
  tessera::runtime rt({.workers = 2});
  struct arg { int a; double b; };
  std::vector<double> out(10);
  for (int i = 0; i < 10; ++i) {
    arg v{i, i * 0.5};
    rt.task([&out](tessera::task_context& ctx) {
        const auto& p = ctx.value<arg>(0);
        out[p.a] = p.b + ctx.value<int>(1);
      })
        .value(v)
        .value(100 * i)
        .write(rt.register_key(static_cast<std::uint64_t>(i)))
        .submit();
    v.a = -1;  // changing the original after insertion must not matter
  }
  rt.wait_all();
  for (int i = 0; i < 10; ++i) CHECK(out[i] == doctest::Approx(i * 0.5 + 100 * i));
}

TEST_CASE("priorities: among ready tasks the higher priority runs first") {
  // One worker: everything runs in the waiting thread, in the order the ready queue gives.
  tessera::runtime rt({.workers = 1});
  order_log log;
  int gate = 0;
  auto g = rt.register_data(&gate, sizeof gate);
  rt.task([] {}).write(g).submit();
  for (int i = 0; i < 5; ++i) rt.task([&, i] { log.add(i); }).read(g).priority(i == 3 ? 10 : 0).submit();
  rt.wait_all();
  REQUIRE(log.seen.size() == 5);
  CHECK(log.seen.front() == 3);
  CHECK(log.pos(0) < log.pos(1));  // equal priorities keep insertion order
}

TEST_CASE("locality hint and labels do not change results") {
  tessera::runtime rt({.workers = 4, .trace = true});
  std::vector<long> v(16, 0);
  std::vector<tessera::handle> h;
  for (auto& x : v) h.push_back(rt.register_data(&x, sizeof x));
  for (int round = 0; round < 20; ++round)
    for (int i = 0; i < 16; ++i)
      rt.task([&, i] { v[i] += i; }).read_write(h[i]).locality(h[i]).label("upd").color(0x336699).submit();
  rt.wait_all();
  for (int i = 0; i < 16; ++i) CHECK(v[i] == 20L * i);
  const auto& tr = rt.trace();
  CHECK(tr.tasks.size() == 320);
  for (const auto& t : tr.tasks) {
    CHECK(t.label == "upd");
    CHECK(t.color == 0x336699u);
  }
}

TEST_CASE("key handles order tasks without touching memory") {
  tessera::runtime rt({.workers = 2});
  int x = 0;
  auto k = rt.register_key(12345);
  CHECK(k.data() == nullptr);
  CHECK(k.key() == 12345u);
  rt.task([&] { std::this_thread::sleep_for(1ms); x = 1; }).write(k).submit();
  rt.task([&] { x *= 10; }).read_write(k).submit();
  rt.wait_all();
  CHECK(x == 10);
}

TEST_CASE("misuse is reported, not hung") {
  tessera::runtime rt({.workers = 2});
  int x = 0;
  auto h = rt.register_data(&x, sizeof x);
  CHECK_THROWS_AS(rt.register_data(nullptr, 8), std::invalid_argument);
  CHECK_THROWS_AS(rt.task([] {}).read(tessera::handle{}), std::invalid_argument);  // builder submits on unwinding
  {
    auto b = rt.task([&] { x = 1; });
    b.write(h);
    CHECK_THROWS_AS(rt.task([] {}), std::logic_error);  // another task inserted while one is open
    CHECK_THROWS_AS(rt.wait_all(), std::logic_error);
    b.submit();
    CHECK_THROWS_AS(b.submit(), std::logic_error);
  }
  rt.wait_all();
  CHECK(x == 1);
  {
    auto b = rt.task([&] { x = 2; });
    b.write(h);
  }  // not submitted: the destructor submits it, nothing waits forever
  rt.wait_all();
  CHECK(x == 2);
}
