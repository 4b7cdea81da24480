#pragma once
// Exporters for trace_data: Chrome/Perfetto JSON, Graphviz DOT, an SVG Gantt chart, a summary.
#include <iosfwd>
#include <string>
#include <vector>

#include "tessera/sched/trace.hpp"

namespace tessera {

// Chrome Trace Event format (opens in ui.perfetto.dev and chrome://tracing): one track per
// trace_data::tracks entry, complete ("X") events per task, flow arrows for edges.
void write_chrome_json(const trace_data& trace, std::ostream& out);

// The DAG in Graphviz DOT; edges labelled RAW/WAR/WAW/ACC.
void write_dot(const trace_data& trace, std::ostream& out);

// A Gantt chart: one row per track, one rectangle per task coloured by label, time axis.
void write_svg(const trace_data& trace, std::ostream& out);

// Task durations of one label (copies: "H2D"/"D2H", whatever task they were for).
struct label_stats {
  std::string label;
  std::size_t tasks = 0;
  double total_us = 0;
  double median_us = 0;
  double max_us = 0;
};

struct trace_summary {
  double span_us = 0;                 // first start to last end
  double critical_path_us = 0;        // longest chain of task durations through the edges
  std::vector<double> busy_us;        // per track
  std::vector<double> idle_us;        // per track: span minus busy
  std::vector<double> longest_gap_us; // per track: the longest idle gap between two of its tasks
  std::vector<label_stats> labels;    // by total time, largest first
  double gpu_busy_us = 0;             // time some GPU task (not a copy) was in flight, any stream
  std::size_t tasks = 0;
  std::size_t edges = 0;
};

trace_summary summarize(const trace_data& trace);

// A human-readable table of the summary: one line per track, span vs critical path, then one line
// per label (a kernel slowed by contention shows here, not in the busy times).
void print_summary(const trace_data& trace, const trace_summary& summary, std::ostream& out);

// Writes FILE by its extension: .json (Chrome), .dot, .svg; throws std::invalid_argument otherwise.
void write_trace_file(const trace_data& trace, const std::string& path);

}  // namespace tessera
