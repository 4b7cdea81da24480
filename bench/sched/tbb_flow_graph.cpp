// oneTBB flow graph: one continue_node per task, one edge per dependency. A flow graph takes edges,
// not accesses, so they are inferred from the access lists (for_each_edge) inside the timed region:
// that inference and the graph's construction are this runtime's share of the cost. A flow graph is
// built whole and then started (a node whose predecessor already fired would wait forever), so
// insertion does not overlap execution here as it does for Tessera and OpenMP.
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/task_arena.h>

#include <chrono>
#include <deque>
#include <memory>
#include <vector>

#include "workloads.hpp"

namespace tessera::bench {
namespace {

using node = tbb::flow::continue_node<tbb::flow::continue_msg>;

template <class Body>
double run(const workload& w, tbb::task_arena& arena, const Body& body) {
  double seconds = 0;
  arena.execute([&] {
    const auto t0 = std::chrono::steady_clock::now();
    {
      tbb::flow::graph g;
      std::deque<node> nodes;  // continue_node does not move; a deque never moves its elements
      for (std::uint32_t t = 0; t < w.tasks(); ++t)
        nodes.emplace_back(g, [&body, t](const tbb::flow::continue_msg&) { body(t); });
      std::vector<bool> has_predecessor(w.tasks());
      for_each_edge(w, [&](std::uint32_t from, std::uint32_t to) {
        tbb::flow::make_edge(nodes[from], nodes[to]);
        has_predecessor[to] = true;
      });
      for (std::uint32_t t = 0; t < w.tasks(); ++t)
        if (!has_predecessor[t]) nodes[t].try_put(tbb::flow::continue_msg{});
      g.wait_for_all();
    }  // the nodes and the graph are freed inside the timed region, as the other runtimes free tasks
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
  return seconds;
}

}  // namespace

runner make_tbb_flow_graph(const workload& w, unsigned threads) {
  // The calling thread takes one of the arena's slots, as Tessera's inserting thread is a worker.
  auto arena = std::make_shared<tbb::task_arena>(static_cast<int>(threads));
  arena->initialize();
  order_check check(w.tasks());
  run(w, *arena, [&check](std::uint32_t t) { check.run(t); });
  check.verify(w, "tbb_flow_graph");
  return [&w, arena] { return run(w, *arena, [](std::uint32_t) {}); };
}

}  // namespace tessera::bench
