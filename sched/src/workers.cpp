// Where ready tasks go and who runs them: the ready queues, the oneTBB runners and their polling
// loop, and the inserting thread's help loop.
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "runtime_impl.hpp"

namespace tessera::detail {

void runtime_impl::make_ready(task_node* t, bool by_inserter) {
  if (t->where == device::gpu || t->via_gpu_thread) {
    gpu->submit(t);
    return;
  }
  make_ready_cpu(t, by_inserter);
}

void runtime_impl::make_ready_cpu(task_node* t, bool by_inserter) {
  int hint = t->locality ? t->locality->last_worker.load(std::memory_order_relaxed) : -1;
  if (hint >= 0 && static_cast<unsigned>(hint) < workers) {
    worker_states[static_cast<unsigned>(hint)]->mailbox.push(t);
  } else if (by_inserter && t->priority == 0) {
    // Granularity control (runtime_options::inline_below_ns): bodies lately shorter than a
    // hand-off between cores run here at once.
    if (run_inline) {
      execute(t, 0, run_origin::inline_run);
      return;
    }
    // Throttling (as libgomp and LLVM's OpenMP do when a thread's task queue is long): with
    // help_backlog tasks already waiting in the ring, the runners are behind, so this one runs
    // here at once, still hot in this core's cache, and costs no hand-off.
    if (submitted_ready.backlog_at_least(help_backlog)) {
      spawn_runner();
      execute(t, 0, run_origin::throttled);
      return;
    }
    if (!submitted_ready.push(t)) ready.push(t);
  } else {
    ready.push(t);
  }
  spawn_runner();
}

void runtime_impl::runner_main() {
  // Pairs with the increment in spawn_runner: oneTBB's hand-off to a worker is invisible to TSan.
  (void)live_runners.load(std::memory_order_acquire);
  runner_loop();
  live_runners.fetch_sub(1, std::memory_order_acq_rel);  // the last touch of this runtime
}

void runtime_impl::spawn_runner() {
  if (!arena) return;
  unsigned active = active_runners.load(std::memory_order_acquire);
  while (active < max_runners) {
    if (active_runners.compare_exchange_weak(active, active + 1, std::memory_order_acq_rel)) {
      live_runners.fetch_add(1, std::memory_order_acq_rel);
      arena->enqueue(runner_entry{this});
      return;
    }
  }
}

unsigned runtime_impl::current_worker() const {
  const int slot = tbb::this_task_arena::current_thread_index();
  // Slot 0 is reserved for the inserting thread, which never enters the arena.
  return slot > 0 && static_cast<unsigned>(slot) < workers ? static_cast<unsigned>(slot) : 0u;
}

void runtime_impl::runner_loop() {
  const unsigned me = current_worker();
  const auto linger = std::chrono::microseconds(linger_us);
  constexpr std::size_t batch_max = 32;
  task_node* batch[batch_max];
  std::size_t have = 0, next = 0;
  // This runner's mailbox first, then a share of the ready queue, then other mailboxes.
  // A runner that has just run out of work takes tasks the inserting thread submits only several
  // at a time: taking each as it appears would pull the ring's tail line (and the task's lines)
  // across cores once per task, and on x86 every such pull stalls the inserting thread's later
  // stores (they commit in order). After ring_patience idle polls (1 + 2 + 4 + 8 pauses), any will
  // do: on the slow VM state 4 polls kept the gain of 16, and a lone ready task waits less.
  constexpr int ring_patience = 4;
  constexpr std::size_t ring_min_batch = 8;
  auto take = [&](int idle) -> task_node* {
    if (next < have) return batch[next++];
    if (task_node* t = worker_states[me]->mailbox.pop()) return t;
    next = 0;
    // Tasks released by completions (older, often on the critical path) before new insertions.
    const std::size_t ring_min = idle < ring_patience ? ring_min_batch : 1;
    have = ready.pop_batch(batch, batch_max, workers);
    if (!have) have = submitted_ready.pop(batch, batch_max, workers, ring_min);
    for (std::size_t i = 1; i < have; ++i) prefetch_node(batch[i]);  // written by the inserting thread
    if (have) return batch[next++];
    return pop_for(me, ring_min);
  };
  for (;;) {
    // Stay a little while idle before leaving: inserting code usually makes the next task ready
    // within microseconds, and waking a sleeping oneTBB worker costs tens of them.
    auto idle_since = std::chrono::steady_clock::now();
    for (int idle = 0;; ++idle) {
      if (task_node* t = take(idle)) {
        execute(t, me);
        idle = 0;
        continue;
      }
      // Back off between polls (up to ~64 pauses): each poll pulls the queue's lines from the
      // inserting thread, and a later poll finds more tasks to take at once. Past that, yield:
      // an idle runner must not keep a core from a thread with work (a task on a hyperthread
      // sibling, the GPU thread).
      if (idle < 32) {
        for (int i = 0, n = 1 << std::min(idle, 6); i < n; ++i) cpu_relax();
      } else {
        std::this_thread::yield();
      }
      if ((idle & 255) == 255) {
        const auto now = std::chrono::steady_clock::now();
        if (idle == 255) idle_since = now;
        else if (now - idle_since > linger) break;
      }
    }
    active_runners.fetch_sub(1, std::memory_order_acq_rel);
    // A task pushed after our last pop saw active_runners before the decrement; take it on.
    bool work = !ready.empty() || !submitted_ready.empty();
    for (unsigned w = 0; !work && w < workers; ++w) work = !worker_states[w]->mailbox.empty();
    if (!work) return;
    unsigned active = active_runners.load(std::memory_order_acquire);
    do {
      if (active >= max_runners) return;
    } while (!active_runners.compare_exchange_weak(active, active + 1, std::memory_order_acq_rel));
  }
}
task_node* runtime_impl::pop_for(unsigned worker, std::size_t ring_min) {
  if (task_node* t = worker_states[worker]->mailbox.pop()) return t;
  if (task_node* t = ready.pop()) return t;
  task_node* t = nullptr;
  if (submitted_ready.pop(&t, 1, workers, ring_min)) return t;
  for (unsigned w = 0; w < workers; ++w)  // steal what a busy worker was hinted
    if (w != worker)
      if (task_node* v = worker_states[w]->mailbox.pop()) return v;
  return nullptr;
}
bool runtime_impl::help_once() {
  if (task_node* t = pop_for(0)) {
    execute(t, 0);
    return true;
  }
  return false;
}

}  // namespace tessera::detail
