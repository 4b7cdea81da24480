// A traced run of the real runtime: the trace agrees with what ran (every task once, on a real
// worker, in the order the dependencies demand; every edge the runtime made), and the exported
// Chrome JSON parses and holds the same tasks and arrows.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "tessera/sched.hpp"
#include "test_util.hpp"

TEST_CASE("a traced random program: tasks, workers, edges and times agree with the run") {
  const auto seed = tessera::testing::seed();
  std::mt19937_64 rng(seed);
  tessera::runtime rt({.workers = 3, .trace = true});
  constexpr int data = 12, tasks = 400;
  std::vector<long> v(data, 0);
  std::vector<tessera::handle> h(data);
  for (int i = 0; i < data; ++i) h[i] = rt.register_data(&v[i], sizeof(long));
  std::mutex m;
  std::map<std::uint64_t, unsigned> ran_on;  // task id -> worker, as the bodies saw it
  for (int t = 0; t < tasks; ++t) {
    auto b = rt.task([&](tessera::task_context& ctx) {
      if (ctx.task_id() % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
      std::lock_guard l(m);
      ran_on[ctx.task_id()] = ctx.worker();
    });
    const int n = 1 + static_cast<int>(rng() % 3);
    for (int a = 0; a < n; ++a) b.add(h[rng() % data], rng() % 3 == 0 ? tessera::access::read : tessera::access::read_write);
    b.label(t % 2 ? "odd" : "even").submit();
  }
  rt.wait_all();
  const tessera::trace_data& tr = rt.trace();

  REQUIRE(tr.tasks.size() == static_cast<std::size_t>(tasks));
  REQUIRE(ran_on.size() == static_cast<std::size_t>(tasks));
  CHECK(tr.tracks.size() == 3);
  std::map<std::uint64_t, const tessera::trace_task*> by_id;
  for (const auto& t : tr.tasks) {
    by_id[t.id] = &t;
    REQUIRE(ran_on.count(t.id) == 1);
    CHECK(t.track == static_cast<int>(ran_on[t.id]));  // the worker it really ran on
    CHECK(t.end_us >= t.start_us);
    CHECK(t.label == (t.id % 2 ? "odd" : "even"));
  }
  // Every edge joins two traced tasks, goes forward in insertion order, and the successor started
  // only after the predecessor ended.
  CHECK(!tr.edges.empty());
  for (const auto& e : tr.edges) {
    REQUIRE(by_id.count(e.from) == 1);
    REQUIRE(by_id.count(e.to) == 1);
    CHECK(e.from < e.to);
    CHECK(by_id[e.from]->end_us <= by_id[e.to]->start_us);
  }
  // Tasks on one worker never overlap.
  std::map<int, std::vector<std::pair<double, double>>> per_track;
  for (const auto& t : tr.tasks) per_track[t.track].push_back({t.start_us, t.end_us});
  for (auto& [track, spans] : per_track) {
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i) CHECK(spans[i - 1].second <= spans[i].first);
  }

  // The exported JSON holds one complete event per task and a flow pair per edge.
  const auto file = std::filesystem::temp_directory_path() / ("tessera_trace_" + std::to_string(seed % 1000000) + ".json");
  tessera::write_trace_file(tr, file.string());
  const std::string cmd = "python3 -c \"import json,sys; d=json.load(open(sys.argv[1])); e=d['traceEvents']; "
                          "x=sum(1 for v in e if v.get('ph')=='X'); s=sum(1 for v in e if v.get('ph')=='s'); "
                          "f=sum(1 for v in e if v.get('ph')=='f'); "
                          "sys.exit(0 if (x, s, f) == (int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[3])) else 1)\" '" +
                          file.string() + "' " + std::to_string(tr.tasks.size()) + " " + std::to_string(tr.edges.size());
  CHECK(std::system(cmd.c_str()) == 0);
  std::filesystem::remove(file);
  // The summary's busy time per track is the sum of its tasks' durations.
  const auto summary = tessera::summarize(tr);
  for (auto& [track, spans] : per_track) {
    double busy = 0;
    for (auto& [a, b] : spans) busy += b - a;
    CHECK(summary.busy_us[static_cast<std::size_t>(track)] == doctest::Approx(busy).epsilon(1e-6));
  }
  CHECK(summary.critical_path_us <= summary.span_us * (1 + 1e-9));
}

TEST_CASE("tracing off records nothing; tasks made before enabling are left out with their edges") {
  tessera::runtime rt({.workers = 2});
  int x = 0;
  auto h = rt.register_data(&x, sizeof x);
  rt.task([&] { x = 1; }).write(h).submit();
  rt.wait_all();
  CHECK(rt.trace().tasks.empty());
  rt.enable_trace(true);
  rt.task([&] { x += 1; }).read_write(h).submit();  // its predecessor is not traced
  rt.task([&] { x += 1; }).read_write(h).submit();
  rt.wait_all();
  const auto& tr = rt.trace();
  CHECK(tr.tasks.size() == 2);
  REQUIRE(tr.edges.size() == 1);
  CHECK(tr.edges[0].kind == tessera::hazard::raw);
  CHECK(x == 3);
}
