#pragma once
// The scheduler benchmark's workloads: task graphs given as access lists (which handle, which mode),
// so every runtime builds the same DAG from the same data. Task bodies are empty: what is measured
// is the runtime's cost per task (creation, dependency inference, scheduling, completion).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::bench {

enum class mode : std::uint8_t { read, write, read_write };

struct access_item {
  std::uint32_t handle;
  mode how;
};

struct workload {
  std::string name;
  std::size_t handles = 0;                 // handles 0 .. handles-1, set up before timing
  std::vector<std::uint32_t> offsets{0};   // task t's accesses: [offsets[t], offsets[t+1])
  std::vector<access_item> accesses{};
  bool per_dependency = false;             // report time / deps instead of time / tasks
  std::size_t deps = 0;                    // edges of the DAG (see for_each_edge)

  std::size_t tasks() const noexcept { return offsets.size() - 1; }
  const access_item* begin(std::size_t t) const noexcept { return accesses.data() + offsets[t]; }
  const access_item* end(std::size_t t) const noexcept { return accesses.data() + offsets[t + 1]; }
  std::size_t size(std::size_t t) const noexcept { return offsets[t + 1] - offsets[t]; }

  void add(std::uint32_t h, mode m) { accesses.push_back({h, m}); }
  void end_task() { offsets.push_back(static_cast<std::uint32_t>(accesses.size())); }
};

// The DAG's edges, inferred from the access lists in insertion order, calling edge(from, to) once
// per distinct pair: a read depends on the last writer (RAW); a write depends on every reader since
// the last write (WAR), or on the last writer when there was none (WAW; with readers it is implied).
// The TBB flow graph side calls this inside its timed region: it is that runtime's inference.
template <class Edge>
void for_each_edge(const workload& w, Edge&& edge) {
  constexpr std::uint32_t none = UINT32_MAX;
  std::vector<std::uint32_t> last_writer(w.handles, none);
  std::vector<std::vector<std::uint32_t>> readers(w.handles);
  std::vector<std::uint32_t> seen(w.tasks(), none);  // seen[p] == t: edge p -> t already made
  auto link = [&](std::uint32_t from, std::uint32_t to) {
    if (from == none || from == to || seen[from] == to) return;
    seen[from] = to;
    edge(from, to);
  };
  for (std::uint32_t t = 0; t < w.tasks(); ++t) {
    for (const access_item* a = w.begin(t); a != w.end(t); ++a) {
      if (a->how == mode::read) {
        link(last_writer[a->handle], t);
        readers[a->handle].push_back(t);
      } else {
        auto& rs = readers[a->handle];
        if (rs.empty()) link(last_writer[a->handle], t);
        for (std::uint32_t r : rs) link(r, t);
        rs.clear();
        last_writer[a->handle] = t;
      }
    }
  }
}

inline std::size_t count_edges(const workload& w) {
  std::size_t n = 0;
  for_each_edge(w, [&](std::uint32_t, std::uint32_t) { ++n; });
  return n;
}

// N tasks, each one read-write on its own handle: no edges at all.
inline workload make_independent(std::size_t n) {
  workload w{.name = "independent", .handles = n};
  w.accesses.reserve(n);
  w.offsets.reserve(n + 1);
  for (std::size_t i = 0; i < n; ++i) {
    w.add(static_cast<std::uint32_t>(i), mode::read_write);
    w.end_task();
  }
  w.deps = count_edges(w);
  return w;
}

// N tasks, each one read-write and two reads on three distinct random handles among 1,024.
inline workload make_random3(std::size_t n, std::uint64_t seed) {
  constexpr std::uint32_t handles = 1024;
  workload w{.name = "random3", .handles = handles};
  w.accesses.reserve(3 * n);
  w.offsets.reserve(n + 1);
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<std::uint32_t> pick(0, handles - 1);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t a = pick(gen), b = pick(gen), c = pick(gen);
    while (b == a) b = pick(gen);
    while (c == a || c == b) c = pick(gen);
    w.add(a, mode::read_write);
    w.add(b, mode::read);
    w.add(c, mode::read);
    w.end_task();
  }
  w.deps = count_edges(w);
  return w;
}

// d producers, each writing its own handle, then one task reading all d: d edges into one node.
inline workload make_aggregate(std::size_t d) {
  workload w{.name = "aggregate", .handles = d, .per_dependency = true};
  w.accesses.reserve(2 * d);
  w.offsets.reserve(d + 2);
  for (std::size_t i = 0; i < d; ++i) {
    w.add(static_cast<std::uint32_t>(i), mode::write);
    w.end_task();
  }
  for (std::size_t i = 0; i < d; ++i) w.add(static_cast<std::uint32_t>(i), mode::read);
  w.end_task();
  w.deps = count_edges(w);
  return w;
}

// Tasks of a right-looking tile Cholesky on an nt x nt grid (lower triangle, one handle per tile).
inline std::size_t cholesky_tasks(std::size_t nt) {
  return nt + nt * (nt - 1) + nt * (nt - 1) * (nt - 2) / 6;
}

// The tile-Cholesky DAG whose task count is the first at or above n: POTRF(k) rw A[k][k];
// TRSM(m,k) r A[k][k], rw A[m][k]; SYRK(n,k) r A[n][k], rw A[n][n]; GEMM(m,n,k) r A[m][k], r A[n][k],
// rw A[m][n].
inline workload make_cholesky(std::size_t n) {
  std::size_t nt = 1;
  while (cholesky_tasks(nt) < n) ++nt;
  workload w{.name = "cholesky", .handles = nt * (nt + 1) / 2};
  w.accesses.reserve(3 * cholesky_tasks(nt));
  w.offsets.reserve(cholesky_tasks(nt) + 1);
  auto tile = [](std::size_t m, std::size_t k) { return static_cast<std::uint32_t>(m * (m + 1) / 2 + k); };
  for (std::size_t k = 0; k < nt; ++k) {
    w.add(tile(k, k), mode::read_write);
    w.end_task();
    for (std::size_t m = k + 1; m < nt; ++m) {
      w.add(tile(k, k), mode::read);
      w.add(tile(m, k), mode::read_write);
      w.end_task();
    }
    for (std::size_t j = k + 1; j < nt; ++j) {
      w.add(tile(j, k), mode::read);
      w.add(tile(j, j), mode::read_write);
      w.end_task();
      for (std::size_t m = j + 1; m < nt; ++m) {
        w.add(tile(m, k), mode::read);
        w.add(tile(j, k), mode::read);
        w.add(tile(m, j), mode::read_write);
        w.end_task();
      }
    }
  }
  w.deps = count_edges(w);
  return w;
}

// Checks that a runtime ran the DAG: each task once, each edge's source finished before its target
// started. The untimed warm-up run of every runtime uses these bodies; the timed runs use empty ones.
class order_check {
 public:
  explicit order_check(std::size_t tasks) : _start(tasks), _end(tasks) {}
  void run(std::uint32_t t) noexcept {
    _start[t].store(_clock.fetch_add(1), std::memory_order_relaxed);
    _end[t].store(_clock.fetch_add(1), std::memory_order_relaxed);
  }
  // Throws std::runtime_error naming the runtime and the first violation.
  void verify(const workload& w, const std::string& runtime) const {
    for (std::size_t t = 0; t < w.tasks(); ++t)
      if (_start[t].load() == 0)
        throw std::runtime_error(runtime + ": " + w.name + " task " + std::to_string(t) + " never ran");
    for_each_edge(w, [&](std::uint32_t from, std::uint32_t to) {
      if (_end[from].load() >= _start[to].load())
        throw std::runtime_error(runtime + ": " + w.name + " task " + std::to_string(to) +
                                 " started before its predecessor " + std::to_string(from) + " ended");
    });
  }

 private:
  std::vector<std::atomic<std::uint64_t>> _start, _end;  // 0: not run
  std::atomic<std::uint64_t> _clock{1};
};

// One runtime's side of the benchmark for one workload. make_<runtime> does the one-time setup
// (untimed) and one warm-up run with order_check bodies (untimed, verified: throws on a wrong order);
// each call of the returned runner then times one run with empty bodies and returns its seconds:
// everything from the first task's creation to the end of the final wait.
using runner = std::function<double()>;
runner make_tessera(const workload& w, unsigned threads);
runner make_tessera_handoff(const workload& w, unsigned threads);  // inline_below_ns = 0
runner make_openmp(const workload& w, unsigned threads);
runner make_tbb_flow_graph(const workload& w, unsigned threads);

}  // namespace tessera::bench
