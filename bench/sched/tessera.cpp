// Tessera: the inserting thread creates each task empty, adds its accesses one by one (the runtime
// resolves each as it is added) and submits it; wait_all helps run what is left. The runtime and
// its handles (register_key, one per datum) are set up once, before timing.
#include <chrono>
#include <memory>
#include <vector>

#include "tessera/sched/runtime.hpp"
#include "workloads.hpp"

namespace tessera::bench {
namespace {

constexpr access to_access(mode m) noexcept {
  switch (m) {
    case mode::read: return access::read;
    case mode::write: return access::write;
    case mode::read_write: return access::read_write;
  }
  return access::read_write;
}

template <class Body>
double run(const workload& w, runtime& rt, const std::vector<handle>& handles, const Body& body) {
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint32_t t = 0; t < w.tasks(); ++t) {
    task_builder b = rt.task([&body, t] { body(t); });
    for (const access_item* a = w.begin(t); a != w.end(t); ++a) b.add(handles[a->handle], to_access(a->how));
    b.submit();
  }
  rt.wait_all();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

namespace {
runner make(const workload& w, runtime_options options) {
  auto rt = std::make_shared<runtime>(options);
  auto handles = std::make_shared<std::vector<handle>>();
  handles->reserve(w.handles);
  for (std::size_t h = 0; h < w.handles; ++h) handles->push_back(rt->register_key(h));
  order_check check(w.tasks());
  run(w, *rt, *handles, [&check](std::uint32_t t) { check.run(t); });
  check.verify(w, "tessera");
  return [&w, rt, handles] { return run(w, *rt, *handles, [](std::uint32_t) {}); };
}
}  // namespace

runner make_tessera(const workload& w, unsigned threads) { return make(w, {.workers = threads}); }

// Granularity control off: every task ready at submission is handed to a worker (or, past the
// throttle's backlog, run on the inserting thread), whatever its body's length.
runner make_tessera_handoff(const workload& w, unsigned threads) {
  return make(w, {.workers = threads, .inline_below_ns = 0});
}

}  // namespace tessera::bench
