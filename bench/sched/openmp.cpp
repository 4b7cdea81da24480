// OpenMP `depend` tasks (libgomp): one thread of a parallel region inserts the tasks, the team runs
// them; libgomp infers the dependences from the depend clauses' addresses. One byte per handle.
#include <omp.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "workloads.hpp"

namespace tessera::bench {
namespace {

// One task with the workload's accesses of task t. A depend clause's list is fixed at compile time,
// so the shapes the workloads use get their own clauses: one write or read-write with up to two
// reads in any order, or any number of reads (the aggregated task) through an OpenMP 5.0 iterator.
// Whether spawn can spell every task of w (checked before the parallel region: nothing may throw
// out of one).
void check_shapes(const workload& w) {
  for (std::size_t t = 0; t < w.tasks(); ++t) {
    std::size_t writes = 0;
    for (const access_item* a = w.begin(t); a != w.end(t); ++a) writes += a->how != mode::read;
    if (writes > 1 || (writes == 1 && w.size(t) > 3) || w.size(t) == 0)
      throw std::invalid_argument("openmp: task " + std::to_string(t) + " of " + w.name +
                                  " has an access shape this benchmark does not spell");
  }
}

template <class Body>
void spawn(const workload& w, std::uint32_t t, char* x, const Body& body) {
  const access_item* a = w.begin(t);
  const std::size_t n = w.size(t);
  std::size_t writes = 0, wi = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (a[i].how != mode::read) ++writes, wi = i;
  if (writes == 0) {
    const int count = static_cast<int>(n);
#pragma omp task firstprivate(t) depend(iterator(it = 0 : count), in : x[a[it].handle])
    body(t);
    return;
  }
  char* o = x + a[wi].handle;
  char* r[2] = {nullptr, nullptr};
  for (std::size_t i = 0, k = 0; i < n; ++i)
    if (i != wi) r[k++] = x + a[i].handle;
  char* r0 = r[0];
  char* r1 = r[1];
  const bool inout = a[wi].how == mode::read_write;
  switch (n) {
    case 1:
      if (inout) {
#pragma omp task firstprivate(t) depend(inout : o[0])
        body(t);
      } else {
#pragma omp task firstprivate(t) depend(out : o[0])
        body(t);
      }
      break;
    case 2:
      if (inout) {
#pragma omp task firstprivate(t) depend(inout : o[0]) depend(in : r0[0])
        body(t);
      } else {
#pragma omp task firstprivate(t) depend(out : o[0]) depend(in : r0[0])
        body(t);
      }
      break;
    default:
      if (inout) {
#pragma omp task firstprivate(t) depend(inout : o[0]) depend(in : r0[0], r1[0])
        body(t);
      } else {
#pragma omp task firstprivate(t) depend(out : o[0]) depend(in : r0[0], r1[0])
        body(t);
      }
      break;
  }
}

template <class Body>
double run(const workload& w, unsigned threads, char* x, const Body& body) {
  const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
#pragma omp single
  for (std::uint32_t t = 0; t < w.tasks(); ++t) spawn(w, t, x, body);
  // The barrier ending the region waited for every task.
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

runner make_openmp(const workload& w, unsigned threads) {
  check_shapes(w);
  auto x = std::make_shared<std::vector<char>>(w.handles);  // the addresses the depend clauses name
  order_check check(w.tasks());
  run(w, threads, x->data(), [&check](std::uint32_t t) { check.run(t); });
  check.verify(w, "openmp");
  return [&w, threads, x] { return run(w, threads, x->data(), [](std::uint32_t) {}); };
}

}  // namespace tessera::bench
