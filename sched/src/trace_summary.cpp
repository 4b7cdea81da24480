// The trace summary: busy and idle time per track, critical path, per-label durations.
#include "tessera/sched/trace_export.hpp"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <limits>
#include <map>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trace_common.hpp"

namespace tessera {

using namespace detail::trace_out;

namespace {

struct interval_union {
  double busy = 0;
  double longest_gap = 0;
};
interval_union unite(std::vector<std::pair<double, double>>& intervals) {
  interval_union u;
  std::sort(intervals.begin(), intervals.end());
  for (std::size_t i = 0; i < intervals.size();) {
    double lo = intervals[i].first, hi = intervals[i].second;
    for (++i; i < intervals.size() && intervals[i].first <= hi; ++i) hi = std::max(hi, intervals[i].second);
    u.busy += hi - lo;
    if (i < intervals.size()) u.longest_gap = std::max(u.longest_gap, intervals[i].first - hi);
  }
  return u;
}

}  // namespace

// =============================================================================================
// Summary

trace_summary summarize(const trace_data& trace) {
  const checked c = check(trace, "tessera::summarize");
  const std::size_t n = trace.tasks.size(), n_tracks = trace.tracks.size();
  trace_summary sum;
  sum.tasks = n;
  sum.edges = trace.edges.size();
  sum.busy_us.assign(n_tracks, 0);
  sum.idle_us.assign(n_tracks, 0);
  sum.longest_gap_us.assign(n_tracks, 0);
  if (n == 0) return sum;

  double t0 = std::numeric_limits<double>::infinity(), t1 = -t0;
  for (const trace_task& t : trace.tasks) t0 = std::min(t0, t.start_us), t1 = std::max(t1, t.end_us);
  sum.span_us = t1 - t0;

  // Per track, and the GPU as a whole (its streams overlap, so their busy times do not add up):
  // busy is the union of the tasks' intervals, gaps are the holes in that union.
  std::vector<std::vector<std::pair<double, double>>> per_track(n_tracks);
  std::vector<std::pair<double, double>> gpu;
  for (const trace_task& t : trace.tasks) {
    per_track[static_cast<std::size_t>(t.track)].emplace_back(t.start_us, t.end_us);
    if (t.where == device::gpu && !t.copy) gpu.emplace_back(t.start_us, t.end_us);
  }
  for (std::size_t k = 0; k < n_tracks; ++k) {
    const interval_union u = unite(per_track[k]);
    sum.busy_us[k] = u.busy;
    sum.longest_gap_us[k] = u.longest_gap;
    sum.idle_us[k] = std::max(0.0, sum.span_us - u.busy);
  }
  sum.gpu_busy_us = unite(gpu).busy;

  // Critical path: longest duration-weighted path, by Kahn's algorithm. The runtime's edges go
  // from lower to higher id, but any acyclic edge set works; a cycle is reported, not looped on.
  std::vector<std::size_t> first(n + 1, 0), succ(c.edges.size()), indeg(n, 0);
  for (const auto& [from, to] : c.edges) ++first[from + 1], ++indeg[to];
  for (std::size_t i = 0; i < n; ++i) first[i + 1] += first[i];
  {
    std::vector<std::size_t> fill(first.begin(), first.end() - 1);
    for (const auto& [from, to] : c.edges) succ[fill[from]++] = to;
  }
  std::vector<double> before(n, 0);  // longest chain ending just before task i starts
  std::vector<std::size_t> ready;
  for (std::size_t i = 0; i < n; ++i) {
    if (indeg[i] == 0) ready.push_back(i);
  }
  std::size_t done = 0;
  while (!ready.empty()) {
    const std::size_t u = ready.back();
    ready.pop_back();
    ++done;
    const double end = before[u] + (trace.tasks[u].end_us - trace.tasks[u].start_us);
    sum.critical_path_us = std::max(sum.critical_path_us, end);
    for (std::size_t k = first[u]; k < first[u + 1]; ++k) {
      const std::size_t v = succ[k];
      before[v] = std::max(before[v], end);
      if (--indeg[v] == 0) ready.push_back(v);
    }
  }
  if (done != n) {
    throw std::invalid_argument("tessera::summarize: the trace's edges form a cycle (" + integer(n - done) +
                                " tasks on or after it), so there is no critical path");
  }

  // Per label; a copy's label names the task it was for ("H2D for 12"): copies grouped as "H2D".
  std::map<std::string, std::vector<double>, std::less<>> by_label;
  for (const trace_task& t : trace.tasks) {
    const std::string_view label(t.label);
    by_label[std::string(t.copy ? label.substr(0, label.find(" for ")) : label)].push_back(t.end_us - t.start_us);
  }
  for (auto& [label, d] : by_label) {
    label_stats st;
    st.label = label;
    st.tasks = d.size();
    for (double x : d) st.total_us += x;
    auto mid = d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2);
    std::nth_element(d.begin(), mid, d.end());
    st.median_us = *mid;
    if (d.size() % 2 == 0) st.median_us = (st.median_us + *std::max_element(d.begin(), mid)) / 2;
    st.max_us = *std::max_element(d.begin(), d.end());
    sum.labels.push_back(std::move(st));
  }
  std::stable_sort(sum.labels.begin(), sum.labels.end(),
                   [](const label_stats& a, const label_stats& b) { return a.total_us > b.total_us; });
  return sum;
}

void print_summary(const trace_data& trace, const trace_summary& summary, std::ostream& out) {
  const std::size_t n_tracks = trace.tracks.size();
  if (summary.busy_us.size() != n_tracks || summary.idle_us.size() != n_tracks ||
      summary.longest_gap_us.size() != n_tracks) {
    throw std::invalid_argument("tessera::print_summary: summary has per-track vectors of another size than "
                                "trace.tracks (" + integer(n_tracks) + "); pass summarize(trace)");
  }
  std::vector<std::size_t> count(n_tracks, 0);
  for (const trace_task& t : trace.tasks) {
    if (t.track >= 0 && static_cast<std::size_t>(t.track) < n_tracks) ++count[static_cast<std::size_t>(t.track)];
  }
  const time_unit u = unit_for(summary.span_us);
  const std::string unit = std::string("[") + u.name + "]";
  std::size_t name_w = 5;
  for (const std::string& name : trace.tracks) name_w = std::max(name_w, std::min<std::size_t>(name.size(), 32));

  std::string line;
  auto cell = [&](std::string text, std::size_t w, bool right_align) {
    std::size_t shown = 0;  // code points, so that "µs" pads like "ms"
    for (char ch : text) shown += (static_cast<unsigned char>(ch) & 0xC0u) != 0x80u;
    const std::size_t pad = shown < w ? w - shown : 0;
    if (right_align) line.append(pad, ' ');
    line += text;
    if (!right_align) line.append(pad, ' ');
  };
  auto pct = [](double part, double whole) { return whole > 0 ? fixed(100 * part / whole, 1) + "%" : "-"; };

  sink s(out);
  s << "tessera trace: " << integer(summary.tasks) << " tasks, " << integer(summary.edges) << " edges, "
    << integer(n_tracks) << " tracks\n";
  line.clear();
  cell("track", name_w, false);
  cell("tasks", 9, true);
  cell("busy " + unit, 14, true);
  cell("idle " + unit, 14, true);
  cell("busy", 8, true);
  cell("longest gap " + unit, 20, true);
  s << line << '\n';
  double total_busy = 0;
  for (std::size_t k = 0; k < n_tracks; ++k) {
    total_busy += summary.busy_us[k];
    line.clear();
    cell(trace.tracks[k], name_w, false);
    cell(integer(count[k]), 9, true);
    cell(fixed(summary.busy_us[k] / u.div, 3), 14, true);
    cell(fixed(summary.idle_us[k] / u.div, 3), 14, true);
    cell(pct(summary.busy_us[k], summary.span_us), 8, true);
    cell(fixed(summary.longest_gap_us[k] / u.div, 3), 20, true);
    s << line << '\n';
  }
  s << "span " << fixed(summary.span_us / u.div, 3) << ' ' << u.name << ", critical path "
    << fixed(summary.critical_path_us / u.div, 3) << ' ' << u.name << " ("
    << pct(summary.critical_path_us, summary.span_us) << " of span), average parallelism "
    << (summary.span_us > 0 ? fixed(total_busy / summary.span_us, 2) : std::string("-")) << " of "
    << integer(n_tracks) << " tracks\n";
  if (summary.gpu_busy_us > 0)
    s << "GPU (any stream) busy " << fixed(summary.gpu_busy_us / u.div, 3) << ' ' << u.name << " ("
      << pct(summary.gpu_busy_us, summary.span_us) << " of span; launch to completion)\n";
  if (summary.labels.empty()) return;
  std::size_t label_w = 5;
  for (const label_stats& l : summary.labels) label_w = std::max(label_w, std::min<std::size_t>(l.label.size(), 32));
  line.clear();
  cell("label", label_w, false);
  cell("tasks", 9, true);
  cell("total " + unit, 14, true);
  cell("median [µs]", 14, true);
  cell("max [µs]", 14, true);
  s << line << '\n';
  for (const label_stats& l : summary.labels) {
    line.clear();
    cell(l.label, label_w, false);
    cell(integer(l.tasks), 9, true);
    cell(fixed(l.total_us / u.div, 3), 14, true);
    cell(fixed(l.median_us, 1), 14, true);
    cell(fixed(l.max_us, 1), 14, true);
    s << line << '\n';
  }
}

}  // namespace tessera
