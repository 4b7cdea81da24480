// tessera_core_latency: the round trip of one cache line between two CPUs, the floor under any
// hand-off of a task from the inserting thread to a worker. On a VM it can change while the
// machine runs (the host moves the vCPUs); print it beside scheduler figures taken there.
//
//   tessera_core_latency [--cpus 0,1] [--trips 200000]
#include <pthread.h>
#include <sched.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
    throw std::runtime_error("--cpus: cannot run on CPU " + std::to_string(cpu));
}

// Nanoseconds per round trip: each side waits for the other's value, then answers.
double round_trip_ns(int cpu_a, int cpu_b, long trips) {
  pin(cpu_a);  // before the other side exists: a failure here leaves nothing waiting
  alignas(64) std::atomic<long> flag{0};
  std::exception_ptr error;
  std::thread other([&] {
    try {
      pin(cpu_b);
    } catch (...) {
      error = std::current_exception();
      flag.store(-1, std::memory_order_release);  // tells the other side to stop
      return;
    }
    for (long i = 0; i < trips; ++i) {
      while (flag.load(std::memory_order_acquire) != 2 * i + 1) {
      }
      flag.store(2 * i + 2, std::memory_order_release);
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < trips; ++i) {
    long expected = 2 * i;  // fails only when the other side gave up (-1)
    if (!flag.compare_exchange_strong(expected, 2 * i + 1, std::memory_order_acq_rel)) break;
    for (long seen = 0; (seen = flag.load(std::memory_order_acquire)) != 2 * i + 2;)
      if (seen < 0) break;
  }
  const auto t1 = std::chrono::steady_clock::now();
  other.join();
  if (error) std::rethrow_exception(error);
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(trips);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Round trip of a cache line between two CPUs (median of 5)"};
  std::vector<int> cpus{0, 1};
  long trips = 200000;
  app.add_option("--cpus", cpus, "the two CPUs")->delimiter(',')->expected(2)->check(CLI::NonNegativeNumber);
  app.add_option("--trips", trips, "round trips per measurement")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  if (cpus.size() != 2 || cpus[0] == cpus[1]) {
    std::fprintf(stderr, "tessera_core_latency: --cpus needs two different CPUs\n");
    return 2;
  }
  try {
    std::vector<double> ns;
    for (int r = 0; r < 5; ++r) ns.push_back(round_trip_ns(cpus[0], cpus[1], trips));
    std::sort(ns.begin(), ns.end());
    std::printf("CPU %d <-> CPU %d: %.0f ns per round trip (median of 5; %.0f..%.0f)\n", cpus[0], cpus[1], ns[2],
                ns.front(), ns.back());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera_core_latency: %s\n", e.what());
    return 1;
  }
  return 0;
}
