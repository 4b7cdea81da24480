// Granularity control (runtime_options::inline_below_ns): runners time a sample of task bodies and
// the inserting thread decides from them whether tasks ready at submission run at once on it.
#include <chrono>

#include "runtime_impl.hpp"

namespace tessera::detail {

namespace {

// The inserting thread looks at the samples every look_every submissions and decides once it has
// at least min_samples new ones (runners time one body in sample_every, see runtime_impl.hpp).
constexpr std::size_t look_every = 64;
constexpr std::uint64_t min_samples = 4;
constexpr double inline_weight = 16;   // of one body in the moving average of inline runs
constexpr double trial_factor = 8;    // workers' sampled mean below this times the bound: try inline runs

}  // namespace

double ticks_per_ns() {
#if defined(__x86_64__) || defined(__i386__)
  static const double rate = [] {
    const auto c0 = std::chrono::steady_clock::now();
    const std::uint64_t r0 = ticks();
    auto c1 = c0;
    while (c1 - c0 < std::chrono::microseconds(200)) c1 = std::chrono::steady_clock::now();
    const std::uint64_t r1 = ticks();
    return static_cast<double>(r1 - r0) / static_cast<double>(std::chrono::duration<double, std::nano>(c1 - c0).count());
  }();
  return rate;
#else
  return 1.0;
#endif
}
void runtime_impl::sample_body(worker_state& ws, std::uint64_t body_ticks, bool inline_run) {
  ws.bodies_to_sample = 0;
  // One writer per worker state: plain read-modify-write, atomic only for the inserting thread's reads.
  ws.sampled_ticks.store(ws.sampled_ticks.load(std::memory_order_relaxed) + body_ticks, std::memory_order_relaxed);
  ws.sampled_bodies.store(ws.sampled_bodies.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (!inline_run) return;
  // A moving average: the odd slow body (1-3% of empty bodies take 0.3-0.6 us on the VM) does not
  // end inline runs; a run of longer bodies does, and so does one body 16 times the bound (or, an
  // interrupt of tens of us: inline runs resume at the next look, see look_at_samples).
  const double bound = static_cast<double>(inline_below_ticks);
  inline_average += (static_cast<double>(body_ticks) - inline_average) / inline_weight;
  if (inline_average <= bound) return;
  run_inline = false;
  next_look = next_id + look_every;
  // The next decision weighs only bodies from now on, not the short ones run inline until now.
  sum_samples(looked_ticks, looked_bodies);
  if (log_debug) log->debug("task bodies run inline took {:.0f} ticks lately: tasks are handed over again", inline_average);
}

void runtime_impl::sum_samples(std::uint64_t& sum_ticks, std::uint64_t& bodies) const {
  sum_ticks = bodies = 0;
  for (unsigned w = 0; w < workers; ++w) {  // CPU workers; the GPU thread's bodies are launches
    sum_ticks += worker_states[w]->sampled_ticks.load(std::memory_order_relaxed);
    bodies += worker_states[w]->sampled_bodies.load(std::memory_order_relaxed);
  }
}

void runtime_impl::look_at_samples() {
  next_look = next_id + look_every;
  std::uint64_t sum_ticks, bodies;
  sum_samples(sum_ticks, bodies);
  if (bodies - looked_bodies < min_samples) return;
  const double mean = static_cast<double>(sum_ticks - looked_ticks) / static_cast<double>(bodies - looked_bodies);
  looked_ticks = sum_ticks;
  looked_bodies = bodies;
  // A worker's body time includes pulling the task's lines from the inserting thread's core (0.2 us
  // and more on the slow VM state), so it cannot say whether a body is shorter than the bound; it
  // can say that bodies are long. Not long: a trial of inline runs, their average starting at half
  // the bound, so that a body of 8.5 times the bound ends the trial at once.
  const double bound = static_cast<double>(inline_below_ticks);
  if (mean >= trial_factor * bound) return;
  run_inline = true;
  inline_average = bound / 2;
  if (log_debug) log->debug("task bodies may be shorter than a hand-off: ready tasks run at insertion");
}

}  // namespace tessera::detail
