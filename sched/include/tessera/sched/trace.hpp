#pragma once
// What a traced run leaves behind: one record per task, one per dependency edge.
// Plain data so that exporters (trace_export.hpp) and users can read it without the runtime.
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/sched/access.hpp"

namespace tessera {

struct trace_task {
  std::uint64_t id = 0;      // insertion order, from 0
  std::string label;         // task_builder::label, or "task"
  std::uint32_t color = 0;   // 0xRRGGBB; 0 = pick from the label
  int track = 0;             // index into trace_data::tracks (a CPU worker, later a stream)
  double start_us = 0;       // microseconds since trace_data's origin
  double end_us = 0;
  int priority = 0;
  device where = device::cpu;
  bool skipped = false;      // cancelled by an earlier exception in its sequence
  bool copy = false;         // a host/device copy the runtime made (not a task of the program)
};

struct trace_edge {
  std::uint64_t from = 0;    // trace_task::id of the predecessor
  std::uint64_t to = 0;      // ... of the successor
  hazard kind = hazard::raw;
};

struct trace_data {
  std::vector<std::string> tracks;   // names: "worker 0" ... (later "stream 0", "H2D", "D2H")
  std::vector<trace_task> tasks;     // sorted by id
  std::vector<trace_edge> edges;     // every edge the runtime created, deduplicated per task pair
};

}  // namespace tessera
