// Tracing: per-worker records while on, merged with the GPU backend's into one trace_data.
#include <algorithm>
#include <string>

#include "runtime_impl.hpp"

namespace tessera::detail {

void runtime_impl::enable_trace(bool on) {
  if (on && !tracing.load()) {
    trace_edges.clear();
    for (auto& w : worker_states) w->trace.clear();
    trace_origin_ns = now_ns();
    merged_valid = false;
    if (gpu) gpu->start_trace();
  }
  tracing.store(on, std::memory_order_release);
}

const trace_data& runtime_impl::trace() {
  merged = trace_data{};
  merged.tracks.reserve(workers);
  for (unsigned w = 0; w < workers; ++w)
    merged.tracks.push_back(w == 0 ? std::string("worker 0 (inserting thread)") : "worker " + std::to_string(w));
  for (auto& w : worker_states) merged.tasks.insert(merged.tasks.end(), w->trace.begin(), w->trace.end());
  if (gpu) gpu->take_trace(merged.tasks, merged.tracks, static_cast<int>(workers), trace_origin_ns);
  std::sort(merged.tasks.begin(), merged.tasks.end(),
            [](const trace_task& a, const trace_task& b) { return a.id < b.id; });
  // A finished predecessor seen through several handles can be reported more than once.
  merged.edges = trace_edges;
  std::sort(merged.edges.begin(), merged.edges.end(), [](const trace_edge& a, const trace_edge& b) {
    return a.from != b.from ? a.from < b.from : a.to != b.to ? a.to < b.to : a.kind < b.kind;
  });
  merged.edges.erase(std::unique(merged.edges.begin(), merged.edges.end(),
                                 [](const trace_edge& a, const trace_edge& b) { return a.from == b.from && a.to == b.to; }),
                     merged.edges.end());
  return merged;
}

}  // namespace tessera::detail
