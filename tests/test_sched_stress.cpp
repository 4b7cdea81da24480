// Randomised programs against sequential execution: random task counts, data, access modes,
// aggregated tasks and sleeps, on several workers. Every task records what it read; the records and
// the final data must equal those of running the same program one task after another.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "tessera/sched.hpp"
#include "test_util.hpp"

namespace {

struct access_spec {
  int datum;
  tessera::access mode;
};

struct task_spec {
  std::vector<access_spec> accesses;
  int sleep_us = 0;
};

struct program {
  int data = 0;
  std::vector<task_spec> tasks;
};

program random_program(std::mt19937_64& rng) {
  program p;
  p.data = 1 + static_cast<int>(rng() % 24);
  const int ntasks = 1 + static_cast<int>(rng() % 120);
  for (int t = 0; t < ntasks; ++t) {
    task_spec ts;
    const bool aggregated = rng() % 40 == 0;
    const int nacc = aggregated ? 20 + static_cast<int>(rng() % 200) : static_cast<int>(rng() % 4);
    for (int a = 0; a < nacc; ++a) {
      const auto r = rng() % 10;
      const auto mode = r < 4 ? tessera::access::read
                      : r < 6 ? tessera::access::write
                      : r < 8 ? tessera::access::read_write
                              : tessera::access::accumulate;
      ts.accesses.push_back({static_cast<int>(rng() % static_cast<unsigned>(p.data)), mode});
    }
    if (rng() % 8 == 0) ts.sleep_us = static_cast<int>(rng() % 50);
    p.tasks.push_back(std::move(ts));
  }
  return p;
}

std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  std::uint64_t x = a * 0x9E3779B97F4A7C15ull ^ (b + 0x7F4A7C159E3779B9ull + (a << 6) + (a >> 2));
  x ^= x >> 31;
  return x * 0xBF58476D1CE4E5B9ull;
}

// One task's effect. Reads fold the data into a digest (recorded); writes store a value derived
// from the task and the digest; accumulates add a task-specific constant (commutative, so any
// order within a group gives the sequential result).
void run_task(std::size_t id, const task_spec& ts, std::vector<std::uint64_t>& data, std::uint64_t& record) {
  std::uint64_t digest = id;
  for (const auto& a : ts.accesses)
    if (a.mode == tessera::access::read || a.mode == tessera::access::read_write)
      digest = mix(digest, data[a.datum] + static_cast<std::uint64_t>(a.datum));
  record = digest;
  for (const auto& a : ts.accesses) {
    auto& d = data[a.datum];
    switch (a.mode) {
      case tessera::access::write: d = mix(digest, 1); break;
      case tessera::access::read_write: d = mix(digest, d); break;
      case tessera::access::accumulate: d += mix(id, static_cast<std::uint64_t>(a.datum)) | 1; break;
      case tessera::access::read: break;
    }
  }
}

}  // namespace

TEST_CASE("random programs equal sequential execution") {
  const auto seed = tessera::testing::seed();
  std::mt19937_64 rng(seed);
  const int programs = 2000;
  // Granularity control at its default (short bodies run at submission), off, and with a bound of
  // 1 s, so that every task ready at submission runs there (sleeping ones included), beside the
  // workers running those that were not.
  tessera::runtime rts[] = {tessera::runtime({.workers = 2}), tessera::runtime({.workers = 3, .window = 16}),
                            tessera::runtime({.workers = 4}),
                            tessera::runtime({.workers = 2, .inline_below_ns = 0}),
                            tessera::runtime({.workers = 3, .inline_below_ns = 1'000'000'000})};
  constexpr int configs = sizeof rts / sizeof rts[0];
  for (int pi = 0; pi < programs; ++pi) {
    const program p = random_program(rng);
    // Sequential reference.
    std::vector<std::uint64_t> ref(p.data), ref_records(p.tasks.size());
    for (int i = 0; i < p.data; ++i) ref[i] = static_cast<std::uint64_t>(i) * 1000003u;
    for (std::size_t t = 0; t < p.tasks.size(); ++t) run_task(t, p.tasks[t], ref, ref_records[t]);
    // Runtime.
    auto& rt = rts[pi % configs];
    std::vector<std::uint64_t> data(p.data), records(p.tasks.size(), 0);
    for (int i = 0; i < p.data; ++i) data[i] = static_cast<std::uint64_t>(i) * 1000003u;
    std::vector<tessera::handle> h(p.data);
    for (int i = 0; i < p.data; ++i) h[i] = rt.register_data(&data[i], sizeof(std::uint64_t));
    for (std::size_t t = 0; t < p.tasks.size(); ++t) {
      const task_spec* ts = &p.tasks[t];
      // A task's accesses to one datum combine, as the runtime sees them: it must not run the
      // accumulate part concurrently with itself, and plain accesses dominate accumulates.
      auto b = rt.task([&data, &records, ts, t] {
        if (ts->sleep_us) std::this_thread::sleep_for(std::chrono::microseconds(ts->sleep_us));
        run_task(t, *ts, data, records[t]);
      });
      for (const auto& a : ts->accesses) b.add(h[a.datum], a.mode);
      b.submit();
    }
    rt.wait_all();
    CHECK_MESSAGE((data == ref && records == ref_records),
                  "program " << pi << " (runtime " << pi % configs
                             << ") differs from sequential execution (TESSERA_SEED=" << seed << ", "
                             << p.tasks.size() << " tasks, " << p.data << " data)");
  }
}
