// Misuse of the runtime is an error, not a hang or a race: GPU-only calls on a runtime without a
// GPU backend, waiting or inserting from a task body or from a second thread, absurd worker counts.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tessera/sched.hpp"

TEST_CASE("without a GPU backend: device-only data and device memory are refused, the runtime stays usable") {
  tessera::runtime rt({.workers = 2});
  REQUIRE_FALSE(rt.has_gpu());
  std::vector<double> fake(16);  // any address: the call is refused before it is looked at
  CHECK_THROWS_WITH_AS(rt.register_device_data(fake.data(), 8 * sizeof(double), 2, 8 * sizeof(double)),
                       doctest::Contains("no GPU backend"), std::logic_error);
  CHECK_THROWS_AS(rt.allocate_device(64), std::logic_error);
  CHECK_THROWS_AS(rt.allocate_pinned(64), std::logic_error);
  tessera::device_buffer empty;
  CHECK_FALSE(empty);
  CHECK(empty.get<double>() == nullptr);
  int x = 0;
  auto h = rt.register_data(&x, sizeof x);
  rt.task([&] { x = 3; }).write(h).submit();
  rt.wait_all();
  CHECK(x == 3);
}

TEST_CASE("wait_all and wait from inside a task body throw std::logic_error; the runtime stays usable") {
  for (unsigned workers : {1u, 3u}) {
    for (unsigned inline_ns : {0u, 100u}) {  // bodies on runners, or run at their own submission
      tessera::runtime rt({.workers = workers, .inline_below_ns = inline_ns});
      auto seq = rt.make_sequence();
      std::atomic<int> after{0};
      rt.task([&] { rt.wait_all(); }).in(seq).submit();
      for (int i = 0; i < 5; ++i) rt.task([&] { ++after; }).in(seq).submit();
      CHECK_THROWS_WITH_AS(rt.wait(seq), doctest::Contains("wait_all: called from inside a task body"), std::logic_error);
      rt.task([&] { rt.wait(seq); }).submit();
      CHECK_THROWS_WITH_AS(rt.wait_all(), doctest::Contains("a task cannot wait for tasks"), std::logic_error);
      int x = 0;
      auto h = rt.register_data(&x, sizeof x);
      for (int i = 0; i < 100; ++i) rt.task([&] { ++x; }).read_write(h).submit();
      rt.wait_all();
      CHECK(x == 100);
    }
  }
}

TEST_CASE("inserting or registering from inside a task body throws; the runtime stays usable") {
  for (unsigned workers : {1u, 2u, 4u}) {
    tessera::runtime rt({.workers = workers});
    int x = 0;
    auto h = rt.register_data(&x, sizeof x);
    std::atomic<int> inner_ran{0};
    rt.task([&] { rt.task([&] { ++inner_ran; }).submit(); }).read_write(h).submit();
    CHECK_THROWS_WITH_AS(rt.wait_all(), doctest::Contains("runtime::task: called from inside a task body"),
                         std::logic_error);
    rt.task([&] { (void)rt.register_data(&x, sizeof x); }).submit();
    CHECK_THROWS_WITH_AS(rt.wait_all(), doctest::Contains("register_data"), std::logic_error);
    rt.task([&] { (void)rt.make_sequence(); }).submit();
    CHECK_THROWS_AS(rt.wait_all(), std::logic_error);
    CHECK(inner_ran.load() == 0);
    for (int i = 0; i < 100; ++i) rt.task([&] { ++x; }).read_write(h).submit();
    rt.wait_all();
    CHECK(x == 100);
    CHECK(rt.tasks_completed() == rt.tasks_submitted());
  }
}

TEST_CASE("a second thread inserting at the same time is refused, and does not disturb the first") {
  tessera::runtime rt({.workers = 2});
  long x = 0;
  auto h = rt.register_data(&x, sizeof x);
  std::atomic<bool> go{false}, done{false};
  std::atomic<int> refused{0}, tries{0};
  std::thread other([&] {
    while (!go.load()) std::this_thread::yield();
    while (!done.load()) {
      ++tries;
      try {
        rt.task([] {}).submit();
      } catch (const std::logic_error& e) {
        if (std::string(e.what()).find("other than the runtime's inserting thread") != std::string::npos) ++refused;
      }
      try {
        rt.wait_all();
      } catch (const std::logic_error&) {
        ++refused;
      }
      try {
        (void)rt.register_key(7);
      } catch (const std::logic_error&) {
        ++refused;
      }
      (void)rt.tasks_completed();  // any thread may read progress
    }
  });
  go.store(true);
  while (tries.load() == 0) std::this_thread::yield();
  for (int i = 0; i < 20000; ++i) rt.task([&x, i] { x += i; }).read_write(h).submit();
  rt.wait_all();
  done.store(true);
  other.join();
  CHECK(x == 20000L * 19999 / 2);
  CHECK(refused.load() == 3 * tries.load());
  CHECK(rt.tasks_submitted() == 20000);
}

TEST_CASE("set_inserting_thread hands insertion over to another thread") {
  tessera::runtime rt({.workers = 2});
  int x = 0;
  auto h = rt.register_data(&x, sizeof x);
  rt.task([&] { x = 1; }).write(h).submit();
  rt.wait_all();
  std::string error;
  std::thread next([&] {
    try {
      rt.set_inserting_thread();
      for (int i = 0; i < 10; ++i) rt.task([&] { x *= 2; }).read_write(h).submit();
      rt.wait_all();
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  next.join();  // orders the new thread's calls before ours
  CHECK(error.empty());
  CHECK(x == 1024);
  CHECK_THROWS_WITH_AS(rt.task([] {}), doctest::Contains("inserting thread"), std::logic_error);
  CHECK_THROWS_AS(rt.wait_all(), std::logic_error);
  rt.set_inserting_thread();  // and back
  rt.task([&] { ++x; }).read_write(h).submit();
  rt.wait_all();
  CHECK(x == 1025);
  // Not while a task is being built.
  {
    auto b = rt.task([] {});
    CHECK_THROWS_AS(rt.set_inserting_thread(), std::logic_error);
  }
  rt.wait_all();
}

TEST_CASE("runtime_options::workers above the bound is refused at once, naming workers and the bound") {
  for (unsigned asked : {100000u, 4294967295u}) {
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH_AS(tessera::runtime({.workers = asked}), doctest::Contains("runtime_options::workers is"),
                         std::invalid_argument);
    try {
      tessera::runtime rt({.workers = asked});
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      CHECK(what.find(std::to_string(asked)) != std::string::npos);
      CHECK(what.find("above the bound of") != std::string::npos);
    }
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1));
  }
  // The bound itself is allowed (oversubscribed, but a valid request).
  const unsigned bound = std::max(64u, 4 * std::max(1u, std::thread::hardware_concurrency()));
  tessera::runtime rt({.workers = bound});
  CHECK(rt.workers() == bound);
  CHECK_THROWS_AS(tessera::runtime({.workers = bound + 1}), std::invalid_argument);
}
