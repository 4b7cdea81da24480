// Exceptions, sequences, the insertion window, throttling.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tessera/sched.hpp"

using namespace std::chrono_literals;

TEST_CASE("a throwing task cancels the rest of its sequence; the error reaches wait_all") {
  for (unsigned workers : {1u, 2u, 4u}) {
    tessera::runtime rt({.workers = workers});
    int x = 0;
    std::atomic<int> ran_after{0};
    auto h = rt.register_data(&x, sizeof x);
    rt.task([&] { x = 1; }).write(h).submit();
    rt.task([] { throw std::runtime_error("boom"); }).read_write(h).submit();
    for (int i = 0; i < 50; ++i) rt.task([&] { ++ran_after; }).read_write(h).submit();
    CHECK_THROWS_WITH_AS(rt.wait_all(), "boom", std::runtime_error);
    CHECK(ran_after.load() == 0);
    CHECK(x == 1);
    // The runtime stays usable and the sequence is no longer cancelled.
    rt.task([&] { x = 5; }).read_write(h).submit();
    rt.wait_all();
    CHECK(x == 5);
  }
}

TEST_CASE("an error in one sequence leaves other sequences running") {
  tessera::runtime rt({.workers = 3});
  auto bad = rt.make_sequence(), good = rt.make_sequence();
  std::atomic<int> good_ran{0}, bad_ran{0};
  std::vector<int> data(2);
  auto hb = rt.register_data(&data[0], sizeof(int)), hg = rt.register_data(&data[1], sizeof(int));
  rt.task([] { throw std::invalid_argument("bad input"); }).write(hb).in(bad).submit();
  for (int i = 0; i < 20; ++i) {
    rt.task([&] { ++bad_ran; }).read_write(hb).in(bad).submit();
    rt.task([&] { std::this_thread::sleep_for(100us); ++good_ran; }).read_write(hg).in(good).submit();
  }
  CHECK_NOTHROW(rt.wait(good));
  CHECK(good_ran.load() == 20);
  CHECK_THROWS_AS(rt.wait(bad), std::invalid_argument);
  CHECK(bad_ran.load() == 0);
  CHECK_FALSE(bad.cancelled());
  CHECK_NOTHROW(rt.wait_all());  // already reported through wait(bad)
}

TEST_CASE("tasks that depend across sequences still complete when one is cancelled") {
  tessera::runtime rt({.workers = 2});
  auto a = rt.make_sequence(), b = rt.make_sequence();
  int x = 0;
  auto h = rt.register_data(&x, sizeof x);
  rt.task([] { throw std::runtime_error("first"); }).write(h).in(a).submit();
  rt.task([&] { x = 9; }).read_write(h).in(b).submit();  // its predecessor failed but it belongs to b
  CHECK_THROWS_AS(rt.wait_all(), std::runtime_error);
  CHECK(x == 9);
}

TEST_CASE("several failures: wait_all reports the first, and later waits are clean") {
  tessera::runtime rt({.workers = 1});
  auto s1 = rt.make_sequence(), s2 = rt.make_sequence();
  rt.task([] { throw std::runtime_error("one"); }).write(rt.register_key(1)).in(s1).submit();
  rt.task([] { throw std::runtime_error("two"); }).write(rt.register_key(2)).in(s2).submit();
  CHECK_THROWS_WITH(rt.wait_all(), "one");
  CHECK_NOTHROW(rt.wait_all());
}

TEST_CASE("the window bounds the tasks in flight; the inserting thread helps") {
  for (std::size_t window : {1u, 4u, 32u}) {
    tessera::runtime rt({.workers = 2, .window = window});
    std::atomic<long> inserted{0}, finished{0};
    long worst = 0;
    std::vector<long> v(256);
    for (int i = 0; i < 2000; ++i) {
      rt.task([&] { std::this_thread::sleep_for(5us); ++finished; })
          .read_write(rt.register_data(&v[i % 256], sizeof(long)))
          .submit();
      ++inserted;
      worst = std::max(worst, inserted.load() - finished.load());
    }
    rt.wait_all();
    CHECK(finished.load() == 2000);
    CHECK(worst <= static_cast<long>(window));
  }
}

TEST_CASE("throttling: with the runners behind, the inserting thread runs ready tasks itself, errors included") {
  // The only runner is held by the first task, so ready tasks pile up; past 64 per worker, an
  // insertion runs its own task at once instead of queueing it.
  tessera::runtime rt({.workers = 2});
  const auto inserter = std::this_thread::get_id();
  std::atomic<bool> started{false}, release{false};
  rt.task([&] {
      started = true;
      while (!release) std::this_thread::yield();
    })
      .write(rt.register_key(0))
      .submit();
  while (!started) std::this_thread::yield();

  constexpr int tasks = 1000;
  std::vector<int> ran(tasks, 0);
  std::atomic<int> inline_runs{0};
  const tessera::sequence failing = rt.make_sequence();  // its error cancels nothing queued
  for (int i = 0; i < tasks; ++i) {
    auto b = rt.task([&, i] {
      ++ran[i];
      if (std::this_thread::get_id() == inserter) ++inline_runs;
      if (i == tasks - 1) throw std::runtime_error("thrown by a throttled task");
    });
    if (i == tasks - 1) b.in(failing);
    b.read_write(rt.register_key(static_cast<std::uint64_t>(i + 1))).submit();
  }
  // All but the 128 queued ones ran during insertion, on this thread (the runner is still held).
  CHECK(inline_runs.load() == tasks - 2 * 64);
  release = true;
  CHECK_THROWS_WITH_AS(rt.wait_all(), "thrown by a throttled task", std::runtime_error);
  for (int i = 0; i < tasks; ++i) CHECK(ran[i] == 1);
  rt.task([] {}).write(rt.register_key(0)).submit();  // still usable
  rt.wait_all();
}

TEST_CASE("destroying a runtime with unreported errors and tasks in flight neither throws nor hangs") {
  std::atomic<int> ran{0};
  {
    tessera::runtime rt({.workers = 2});
    for (int i = 0; i < 100; ++i)
      rt.task([&, i] {
          ++ran;
          if (i == 3) throw std::runtime_error("late");
        })
          .write(rt.register_key(static_cast<std::uint64_t>(i)))
          .submit();
  }
  CHECK(ran.load() >= 4);
}
