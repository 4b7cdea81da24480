// Progress counters: runtime::tasks_submitted and tasks_completed.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tessera/sched.hpp"
#include "test_util.hpp"

TEST_CASE("progress: counts are equal after wait_all for random programs") {
  std::mt19937_64 gen(tessera::testing::seed());
  for (unsigned workers : {1u, 2u, 4u}) {
    for (unsigned inline_ns : {0u, 100u}) {
      tessera::runtime rt({.workers = workers, .inline_below_ns = inline_ns});
      CHECK(rt.tasks_submitted() == 0);
      CHECK(rt.tasks_completed() == 0);
      std::vector<long> data(16, 0);
      std::vector<tessera::handle> hs;
      for (auto& d : data) hs.push_back(rt.register_data(&d, sizeof d));
      std::atomic<long> ran{0};  // the bodies touch no datum: the accesses are random
      std::uint64_t inserted = 0;
      for (int round = 0; round < 3; ++round) {
        const int n = 200 + static_cast<int>(gen() % 800);
        for (int i = 0; i < n; ++i) {
          auto b = rt.task([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
          const int accesses = 1 + static_cast<int>(gen() % 3);
          for (int a = 0; a < accesses; ++a)
            b.add(hs[gen() % hs.size()], static_cast<tessera::access>(gen() % 4));
          b.submit();
          ++inserted;
        }
        rt.wait_all();
        CHECK(rt.tasks_submitted() == inserted);
        CHECK(rt.tasks_completed() == inserted);
        CHECK(static_cast<std::uint64_t>(ran.load()) == inserted);
      }
    }
  }
}

TEST_CASE("progress: cancelled tasks count as completed") {
  for (unsigned workers : {1u, 3u}) {
    tessera::runtime rt({.workers = workers});
    int x = 0;
    auto h = rt.register_data(&x, sizeof x);
    rt.task([] { throw std::runtime_error("boom"); }).write(h).submit();
    for (int i = 0; i < 40; ++i) rt.task([&] { ++x; }).read_write(h).submit();
    CHECK_THROWS_AS(rt.wait_all(), std::runtime_error);
    CHECK(x == 0);
    CHECK(rt.tasks_submitted() == 41);
    CHECK(rt.tasks_completed() == 41);
  }
}

TEST_CASE("progress: monotone during a run, completed never ahead of submitted") {
  for (unsigned workers : {2u, 4u}) {
    tessera::runtime rt({.workers = workers, .window = 64});
    std::atomic<bool> stop{false};
    std::atomic<bool> ok{true};
    std::atomic<std::uint64_t> looks{0};
    // Another thread watches, as a progress bar would.
    std::thread watcher([&] {
      std::uint64_t last_c = 0, last_s = 0;
      while (!stop.load(std::memory_order_acquire)) {
        const std::uint64_t c = rt.tasks_completed();
        const std::uint64_t s = rt.tasks_submitted();
        if (c < last_c || s < last_s || c > s) ok.store(false);
        last_c = c;
        last_s = s;
        looks.fetch_add(1, std::memory_order_relaxed);
      }
    });
    while (looks.load() == 0) std::this_thread::yield();  // watching before the run starts
    std::vector<long> data(8, 0);
    std::vector<tessera::handle> hs;
    for (auto& d : data) hs.push_back(rt.register_data(&d, sizeof d));
    std::uint64_t seen_in_body = 0;  // written by the chain's bodies, one at a time
    bool body_monotone = true;
    for (int i = 0; i < 5000; ++i) {
      if (i % 10 == 0) {
        // A chain on data[0]: its bodies run one after another, so what they see must not shrink.
        rt.task([&] {
              const std::uint64_t c = rt.tasks_completed();
              if (c < seen_in_body) body_monotone = false;
              seen_in_body = c;
            })
            .read_write(hs[0])
            .submit();
      } else {
        rt.task([&data, i] { data[1 + static_cast<std::size_t>(i) % 7] += i; }).read_write(hs[1 + i % 7]).submit();
      }
      const std::uint64_t c = rt.tasks_completed();
      CHECK(c <= rt.tasks_submitted());
    }
    rt.wait_all();
    stop.store(true, std::memory_order_release);
    watcher.join();
    CHECK(ok.load());
    CHECK(body_monotone);
    CHECK(looks.load() > 0);
    CHECK(rt.tasks_submitted() == 5000);
    CHECK(rt.tasks_completed() == 5000);
  }
}
