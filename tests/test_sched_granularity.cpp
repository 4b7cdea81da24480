// Granularity control (runtime_options::inline_below_ns): tasks whose bodies are shorter than the
// bound run at their own submission on the inserting thread; long bodies end that at once.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tessera/sched.hpp"

namespace {

// Counts the bodies that ran inside submit() on the inserting thread.
struct at_submission_counter {
  std::thread::id inserter = std::this_thread::get_id();
  bool in_submit = false;  // written and read by the inserting thread only
  std::atomic<int> count{0};

  void body_runs() {
    if (std::this_thread::get_id() == inserter && in_submit) ++count;
  }
  void submit(tessera::task_builder& b) {
    in_submit = true;
    b.submit();
    in_submit = false;
  }
};

}  // namespace

TEST_CASE("granularity control: short bodies run at submission, a long one hands tasks over again") {
  // Bounds far above a short body's time, and far below a long one's, even under sanitizers.
  constexpr unsigned bound_ns = 20'000;
  tessera::runtime rt({.workers = 2, .inline_below_ns = bound_ns});
  at_submission_counter inlined;
  constexpr int short_tasks = 4000;
  std::vector<int> ran(short_tasks, 0);
  for (int i = 0; i < short_tasks; ++i) {
    auto b = rt.task([&, i] {
      inlined.body_runs();
      ++ran[i];
    });
    b.write(rt.register_key(static_cast<std::uint64_t>(i % 512)));
    inlined.submit(b);
  }
  rt.wait_all();
  for (int i = 0; i < short_tasks; ++i) REQUIRE(ran[i] == 1);
  // Inline runs start once the runners' samples (one body in 16) show short bodies: within a few
  // hundred tasks. Without granularity control only the throttle runs tasks at submission, and
  // only while the runner is 128 tasks behind.
  INFO("short tasks run at submission: " << inlined.count.load() << " of " << short_tasks);
  CHECK(inlined.count.load() > short_tasks / 2);

  // One long body (30 bounds; the moving average weighs it 1/16) ends inline runs at once; the
  // runners' samples then keep them off. 100 tasks stay below the throttle's backlog of 128.
  inlined.count = 0;
  for (int i = 0; i < 100; ++i) {
    auto b = rt.task([&] {
      inlined.body_runs();
      std::this_thread::sleep_for(std::chrono::nanoseconds(30 * bound_ns));
    });
    b.write(rt.register_key(static_cast<std::uint64_t>(10'000 + i)));
    inlined.submit(b);
  }
  rt.wait_all();
  CHECK(inlined.count.load() <= 1);  // 1, unless an interrupt had ended inline runs already
}

TEST_CASE("granularity control: an error in a task run at submission cancels its sequence and reaches wait") {
  // A bound of 1 s: once on, inline runs stay on (ending them takes a 16 s body).
  tessera::runtime rt({.workers = 2, .inline_below_ns = 1'000'000'000});
  at_submission_counter inlined;
  // Short tasks until they run at submission.
  for (int i = 0; i < 4000 && inlined.count.load() < 100; ++i) {
    auto b = rt.task([&] { inlined.body_runs(); });
    b.write(rt.register_key(static_cast<std::uint64_t>(i % 64)));
    inlined.submit(b);
  }
  REQUIRE(inlined.count.load() == 100);
  const tessera::sequence failing = rt.make_sequence();
  std::atomic<int> after{0};
  auto h = rt.register_key(1'000'000);
  auto thrower = rt.task([&] {
    inlined.body_runs();
    throw std::runtime_error("thrown at submission");
  });
  thrower.write(h).in(failing);
  inlined.submit(thrower);
  CHECK(inlined.count.load() == 101);
  CHECK(failing.cancelled());
  for (int i = 0; i < 10; ++i) rt.task([&] { ++after; }).read_write(h).in(failing).submit();
  CHECK_THROWS_WITH_AS(rt.wait(failing), "thrown at submission", std::runtime_error);
  CHECK(after.load() == 0);
  rt.task([&] { ++after; }).read_write(h).submit();  // the runtime stays usable
  rt.wait_all();
  CHECK(after.load() == 1);
}
