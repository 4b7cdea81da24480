// tessera_sched_bench: the runtime's cost per task beside OpenMP depend tasks (libgomp) and the
// oneTBB flow graph, on the same DAGs with empty task bodies (see workloads.hpp).
//
//   tessera_sched_bench [--workload all|independent|random3|aggregate|cholesky] [--tasks N]
//                       [--threads T] [--repeat R] [--json]
//                       [--runtime all|tessera|tessera_handoff|openmp|tbb_flow_graph]
// tessera_handoff is Tessera with its granularity control off (runtime_options::inline_below_ns = 0):
// what handing every empty task to a worker costs.
#include <oneapi/tbb/version.h>

#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../common/machine.hpp"
#include "workloads.hpp"

namespace {

using namespace tessera::bench;

// Other processes on the machine distort these timings (a preempted worker stalls a whole DAG).
std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return in ? one + " " + five + " " + fifteen : "unknown";
}

// CPU seconds: the whole machine's busy and total time, and this process's own (all threads).
struct cpu_times {
  double busy = 0, total = 0, self = 0;
};

cpu_times read_cpu_times() {
  cpu_times c;
  std::ifstream in("/proc/stat");
  std::string cpu;
  double v[8] = {};  // user nice system idle iowait irq softirq steal
  in >> cpu;
  for (double& x : v) in >> x;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  c.total = (v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7]) / tick;
  c.busy = c.total - (v[3] + v[4]) / tick;
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  c.self = static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
  return c;
}

// The share of the machine that other processes used between a and b, in percent.
double others_percent(const cpu_times& a, const cpu_times& b) {
  const double total = b.total - a.total;
  if (total <= 0) return 0;
  return std::max(0.0, 100.0 * ((b.busy - a.busy) - (b.self - a.self)) / total);
}

struct peer {
  const char* name;
  runner (*make)(const workload&, unsigned);
};

// The peers Tessera's ratios are taken against (not Tessera's own variants).
bool is_vendor(const peer& p) { return std::string(p.name).rfind("tessera", 0) != 0; }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Scheduler overhead: Tessera beside OpenMP depend tasks and the oneTBB flow graph"};
  std::string which = "all", only = "all";
  std::size_t tasks = 100000;
  unsigned threads = 2, repeat = 5;
  std::uint64_t seed = 2024;
  bool json = false;
  app.add_option("--workload", which, "Workload")
      ->check(CLI::IsMember({"all", "independent", "random3", "aggregate", "cholesky"}))
      ->capture_default_str();
  auto* tasks_opt = app.add_option("--tasks", tasks,
                                   "Tasks (cholesky: the first tile grid with at least this many; "
                                   "aggregate: d, default the sweep 1e3, 1e4, 1e5)")
                        ->check(CLI::Range(std::size_t{1}, std::size_t{100'000'000}))
                        ->capture_default_str();
  app.add_option("--threads", threads, "Threads per runtime, the inserting thread included")
      ->check(CLI::Range(1u, 1024u))
      ->capture_default_str();
  app.add_option("--repeat", repeat, "Timed repetitions (the median is reported)")
      ->check(CLI::Range(1u, 10000u))
      ->capture_default_str();
  app.add_option("--seed", seed, "Seed of the random3 access lists")->capture_default_str();
  app.add_option("--runtime", only, "Runtime(s) to time")
      ->check(CLI::IsMember({"all", "tessera", "tessera_handoff", "openmp", "tbb_flow_graph"}))
      ->capture_default_str();
  app.add_flag("--json", json, "One JSON object per line instead of the table");
  CLI11_PARSE(app, argc, argv);

  std::vector<workload> workloads;
  const bool all = which == "all";
  if (all || which == "independent") workloads.push_back(make_independent(tasks));
  if (all || which == "random3") workloads.push_back(make_random3(tasks, seed));
  if (all || which == "aggregate") {
    if (tasks_opt->count() > 0 && !all) {
      workloads.push_back(make_aggregate(tasks));
    } else {
      for (std::size_t d : {1000, 10000, 100000}) workloads.push_back(make_aggregate(d));
    }
  }
  if (all || which == "cholesky") workloads.push_back(make_cholesky(tasks));

  std::vector<peer> peers;
  for (peer p : {peer{"tessera", make_tessera}, peer{"tessera_handoff", make_tessera_handoff},
                 peer{"openmp", make_openmp}, peer{"tbb_flow_graph", make_tbb_flow_graph}})
    if (only == "all" || only == p.name) peers.push_back(p);

  const std::string cpu = cpu_model();
  if (!json) {
    std::printf("tessera_sched_bench: scheduler cost with empty task bodies, same DAG on every runtime\n");
    std::printf("CPU: %s, %u hardware threads; threads per runtime: %u; load average: %s\n", cpu.c_str(),
                std::thread::hardware_concurrency(), threads, load_average().c_str());
    std::printf("time: median of %u back-to-back runs of the whole build + dependency inference + insert +\n"
                "  run + wait, after one untimed warm-up run per runtime that verifies the execution order\n", repeat);
    std::printf("  tessera: runtime({.workers = %u}) built and one handle per datum registered (register_key)\n"
                "    before timing: random3 1,024, independent N, aggregate d, cholesky one per lower tile;\n"
                "    tessera_handoff: the same with .inline_below_ns = 0 (no granularity control)\n",
                threads);
    const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
    std::printf("  openmp: libgomp (g++ %s), parallel num_threads(%u) + single inserting thread, depend\n"
                "    clauses (aggregate: depend(iterator(...), in: ...)); handle bytes allocated before timing;\n"
                "    OMP_WAIT_POLICY %s\n",
                __VERSION__, threads, wait_policy ? wait_policy : "unset (libgomp's default)");
    std::printf("  tbb_flow_graph: oneTBB %d.%d, task_arena(%u) made before timing; inside timing: edges\n"
                "    inferred from the access lists (last writer / readers since), graph built, then run\n",
                TBB_VERSION_MAJOR, TBB_VERSION_MINOR, threads);
    std::printf("us per task (aggregate: per dependency, producers included: total / d); ratio < 1: Tessera faster;\n"
                "others%%: most of the machine's CPU that other processes used while one runtime of the row was timed\n\n");
    std::printf("%-12s %9s %9s %7s %5s", "workload", "tasks", "deps", "threads", "per");
    for (const peer& p : peers) std::printf(" %15s", p.name);
    for (std::size_t i = 1; i < peers.size() && peers[0].name == std::string("tessera"); ++i)
      if (is_vendor(peers[i])) std::printf(" %8s", ("t/" + std::string(peers[i].name).substr(0, 6)).c_str());
    std::printf(" %7s\n", "others%");
    std::fflush(stdout);
  }

  int status = 0;
  for (const workload& w : workloads) {
    const double units = static_cast<double>(w.per_dependency ? w.deps : w.tasks());
    // Each runtime in turn: a pause (the previous runtime's threads stop spinning), the untimed
    // verified warm-up, then its timed runs back to back, as a program that inserts DAG after DAG.
    // (Interleaving the runtimes' runs would time libgomp's team waking from sleep each time.)
    std::vector<std::vector<double>> seconds(peers.size());
    std::vector<double> others(peers.size(), 0.0);
    for (std::size_t i = 0; i < peers.size(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      try {
        runner run = peers[i].make(w, threads);
        const cpu_times before = read_cpu_times();
        for (unsigned r = 0; r < repeat; ++r) seconds[i].push_back(run());
        others[i] = others_percent(before, read_cpu_times());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        status = 1;
      }
    }
    std::vector<std::optional<double>> us;
    for (std::size_t i = 0; i < peers.size(); ++i) {
      if (seconds[i].empty()) {
        us.push_back(std::nullopt);
        continue;
      }
      const double s = median(seconds[i]);
      us.push_back(s * 1e6 / units);
      if (json)
        std::printf("{\"runtime\":\"%s\",\"workload\":\"%s\",\"tasks\":%zu,\"deps\":%zu,\"threads\":%u,"
                    "\"us_per_task\":%.5f,\"us_per_dep\":%.5f,\"min_us_per_task\":%.5f,\"repeat\":%u,"
                    "\"others_cpu_percent\":%.0f,\"cpu\":\"%s\"}\n",
                    peers[i].name, w.name.c_str(), w.tasks(), w.deps, threads,
                    s * 1e6 / static_cast<double>(w.tasks()),
                    w.deps ? s * 1e6 / static_cast<double>(w.deps) : 0.0,
                    *std::min_element(seconds[i].begin(), seconds[i].end()) * 1e6 / static_cast<double>(w.tasks()),
                    repeat, others[i], cpu.c_str());
    }
    if (!json) {
      std::printf("%-12s %9zu %9zu %7u %5s", w.name.c_str(), w.tasks(), w.deps, threads,
                  w.per_dependency ? "dep" : "task");
      for (const auto& u : us)
        u ? std::printf(" %15.4f", *u) : std::printf(" %15s", "failed");
      for (std::size_t i = 1; i < us.size() && peers[0].name == std::string("tessera"); ++i)
        if (is_vendor(peers[i])) us[0] && us[i] ? std::printf(" %8.2f", *us[0] / *us[i]) : std::printf(" %8s", "-");
      std::printf(" %7.0f\n", *std::max_element(others.begin(), others.end()));
    }
    std::fflush(stdout);
  }
  return status;
}
