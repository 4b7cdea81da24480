#include "tessera/sched/runtime.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <stdexcept>
#include <string>
#include <thread>

#include "detail.hpp"
#include "runtime_impl.hpp"

namespace tessera {
namespace detail {

namespace {

std::shared_ptr<spdlog::logger> make_logger() {
  if (auto existing = spdlog::get("tessera")) return existing;
  auto logger = spdlog::stderr_color_mt("tessera");
  // Quiet by default; TESSERA_LOG=debug shows insertions and hazards.
  logger->set_level(spdlog::level::warn);
  if (const char* env = std::getenv("TESSERA_LOG")) logger->set_level(spdlog::level::from_str(env));
  return logger;
}

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

// oneTBB caps its pool at the hardware concurrency and takes the minimum of all active
// global_control objects, so one process-wide control that only grows lets a runtime ask for more
// workers than cores (tests, oversubscribed GPU-feeding threads).
void allow_parallelism(unsigned threads) {
  static std::mutex mutex;
  static std::unique_ptr<tbb::global_control> control;
  std::lock_guard lock(mutex);
  const auto current = tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism);
  if (current >= threads) return;
  auto larger = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, threads);
  control = std::move(larger);
}

constexpr std::size_t scratch_align = 64;

// How far ahead the inserting thread prefetches the nodes it will reuse: enough transfers in
// flight to cover a slow core-to-core round trip (about 0.4 us in one state of the 2-core VM).
constexpr std::size_t prefetch_distance = 8;

std::size_t align_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

// Granularity control: a runner times one body in sample_every; the inserting thread looks at
// the samples every look_every submissions and decides once it has at least min_samples new ones.
constexpr unsigned sample_every = 16;
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

runtime_impl::runtime_impl(const runtime_options& options)
    : workers(options.workers ? options.workers : std::max(1u, std::thread::hardware_concurrency())),
      window(options.window ? options.window : 1),
      log(make_logger()),
      log_debug(log->should_log(spdlog::level::debug)),
      help_backlog(64 * std::size_t(workers)),
      max_runners(workers - 1) {
  // The inserting thread is worker 0 and helps when it waits; oneTBB supplies workers - 1 threads.
  if (workers > 1) {
    allow_parallelism(workers);
    arena = std::make_unique<tbb::task_arena>(static_cast<int>(workers), 1);
    arena->initialize();
  }
  if (options.inline_below_ns)
    inline_below_ticks = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(options.inline_below_ns * ticks_per_ns()));
  if (const char* env = std::getenv("TESSERA_LINGER_US")) linger_us = static_cast<unsigned>(std::strtoul(env, nullptr, 10));
  if (options.gpu_streams > 0) gpu = gpu_backend::create(*this, options);
  // One more worker state for the GPU thread, which runs GPU task bodies.
  for (unsigned w = 0; w < workers + (gpu ? 1 : 0); ++w) worker_states.push_back(std::make_unique<worker_state>());
  if (options.trace) enable_trace(true);
  log->debug("runtime: {} workers, window {}", workers, window);
}

runtime_impl::~runtime_impl() {
  try {
    if (open_builder) submit(open_builder);
    help_until([&] { return in_flight() == 0; });
  } catch (...) {
  }
  gpu.reset();
  // Runners spin a little after the last task; none may touch this state once it is gone.
  while (live_runners.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  if (arena) arena->terminate();
  std::lock_guard lock(errors_mutex);
  for (auto* s : failed) {
    try {
      std::rethrow_exception(s->error);
    } catch (const std::exception& e) {
      log->error("runtime destroyed with an unreported task error: {}", e.what());
    } catch (...) {
      log->error("runtime destroyed with an unreported task error");
    }
  }
}

task_node* runtime_impl::new_task() {
  if (open_builder)
    throw std::logic_error("tessera::runtime::task: another task is still being built; submit() it first");
  if (pool_local.empty()) {
    {
      std::lock_guard lock(pool_lock);
      pool_local.swap(pool_shared);
    }
    // Mostly nodes that workers finished, their lines in other cores' caches.
    for (std::size_t i = 1; i <= std::min(pool_local.size(), prefetch_distance); ++i)
      prefetch_node(pool_local[pool_local.size() - i]);
  }
  task_node* t;
  if (!pool_local.empty()) {
    t = pool_local.back();
    pool_local.pop_back();
    if (pool_local.size() >= prefetch_distance) prefetch_node(pool_local[pool_local.size() - prefetch_distance]);
  } else {
    all_nodes.push_back(std::make_unique<task_node>());
    t = all_nodes.back().get();
  }
  t->reset();
  t->id = next_id++;
  t->seq = default_sequence.get();
  t->traced = tracing.load(std::memory_order_relaxed);
  open_builder = t;
  return t;
}

void runtime_impl::link(const task_ref& ref, task_node* succ, hazard kind) {
  if (ref.id == succ->id) return;  // a task's own earlier access
  task_node* pred = ref.node;
  // Only this thread reuses nodes, so an id that still matches means the node is that task's.
  const bool live = pred->id == ref.id;
  if (live && pred->last_linked_successor == succ) return;
  if (ref.traced && succ->traced) trace_edges.push_back({ref.id, succ->id, kind});
  if (log_debug) log->debug("  {} {} -> {}", to_string(kind), ref.id, succ->id);
  if (!live) return;  // finished and recycled: nothing to wait for
  pred->last_linked_successor = succ;
  // Most predecessors of an aggregated task have finished by the time it is built: no lock for them.
  if (pred->done.load(std::memory_order_acquire)) return;
  std::lock_guard lock(pred->lock);
  if (pred->done.load(std::memory_order_relaxed)) return;
  // No reference for the list: a successor cannot finish, so cannot be recycled, before this
  // predecessor has released it.
  succ->pending.fetch_add(1, std::memory_order_relaxed);
  pred->successors.push_back(succ);
}

namespace {
void hold(ref_list& list, task_node* t) { list.push_back({t, t->id & task_ref::id_mask, t->traced}); }
bool last_is(const ref_list& list, const task_node* t) { return !list.empty() && list.back().id == t->id; }
}  // namespace

void runtime_impl::add_access(task_node* t, handle_state* h, access mode) {
  if (log_debug) log->debug("task {} accesses datum {:#x} ({})", t->id, h->key, static_cast<int>(mode));
  if (gpu) {
    t->extras = true;
    t->accesses.emplace_back(h, mode);
  }
  auto link_all = [&](const ref_list& list, hazard kind) { list.for_each([&](const task_ref& r) { link(r, t, kind); }); };
  switch (mode) {
    case access::read:
      link_all(h->writers, hazard::raw);
      if (h->accumulating) {  // the group is closed: later accesses order after all its members
        h->accumulating = false;
        h->group_preds.clear();
      }
      if (!last_is(h->readers, t)) hold(h->readers, t);
      break;
    case access::write:
    case access::read_write:
      if (!h->readers.empty()) link_all(h->readers, hazard::war);
      else link_all(h->writers, mode == access::write ? hazard::waw : hazard::raw);
      h->readers.clear();
      h->writers.clear();
      if (h->accumulating) {  // group_preds is empty unless a group is open
        h->accumulating = false;
        h->group_preds.clear();
      }
      hold(h->writers, t);
      t->written.push_back(h);
      break;
    case access::accumulate:
      if (!h->accumulating) {
        // A new group: it orders after the last writer and the readers since.
        h->group_preds.clear();
        if (!h->readers.empty()) h->group_preds.swap(h->readers);
        else h->group_preds.swap(h->writers);
        h->readers.clear();
        h->writers.clear();
        h->accumulating = true;
      }
      link_all(h->group_preds, hazard::accumulate);
      if (!last_is(h->writers, t)) {
        hold(h->writers, t);
        t->extras = true;
        t->accumulated.push_back(h);
        t->written.push_back(h);
      }
      break;
  }
}

void runtime_impl::submit(task_node* t) {
  if (t != open_builder) throw std::logic_error("tessera::task_builder::submit: task already submitted");
  open_builder = nullptr;
  if (t->extras && t->accumulated.size() > 1) {  // lock order for several accumulate groups: by address
    std::sort(t->accumulated.begin(), t->accumulated.end());
    t->accumulated.erase(std::unique(t->accumulated.begin(), t->accumulated.end()), t->accumulated.end());
  }
  if (gpu) {
    // Decided at insertion, in program order: a CPU task goes through the GPU thread (which copies
    // stale data back first) only if a GPU task inserted before it touched one of its data.
    if (t->where == device::gpu) {
      for (auto& [h, mode] : t->accesses) h->gpu_touched = true;
    } else {
      for (auto& [h, mode] : t->accesses) t->via_gpu_thread = t->via_gpu_thread || h->gpu_touched;
    }
  }
  ++t->seq->submitted;
  ++submitted;
  if (inline_below_ticks && !run_inline && t->id >= next_look) look_at_samples();
  if (log_debug) log->debug("task {} '{}' submitted", t->id, t->label);
  // No predecessor outstanding (the common case for wide DAGs): nobody else can touch the count,
  // so a plain store does, without the full fence of a locked instruction.
  if (t->pending.load(std::memory_order_acquire) == 1) {
    t->pending.store(0, std::memory_order_relaxed);
    make_ready(t, true);
  } else if (t->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    make_ready(t, true);
  }
  // The window: reading the workers' completion count on every insertion would pull its cache line
  // across cores each time, so look only when the last count seen says the window may be full.
  if (submitted - completed_seen >= window) {
    completed_seen = completed.load(std::memory_order_acquire);
    if (submitted - completed_seen >= window) help_until([&] { return in_flight() < window; });
  }
}

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

void* runtime_impl::scratch(unsigned worker, task_node* t, std::size_t i) {
  if (i >= t->scratch_bytes.size())
    throw std::out_of_range("tessera::task_context::scratch: index " + std::to_string(i) +
                            " but the task declared " + std::to_string(t->scratch_bytes.size()));
  std::size_t offset = 0;
  for (std::size_t k = 0; k < i; ++k) offset += align_up(t->scratch_bytes[k], scratch_align);
  return worker_states[worker]->scratch.get() + offset;
}

void runtime_impl::execute(task_node* t, unsigned worker, run_origin origin) {
  const bool inline_run = origin == run_origin::inline_run;
  worker_state& ws = *worker_states[worker];
  const bool traced = t->traced;
  if (traced) t->start_ns = now_ns();
  // Every body run inline is timed (one that proves long ends inline runs at once), one in
  // sample_every of the others.
  const bool timed = inline_below_ticks && (inline_run || ++ws.bodies_to_sample >= sample_every);
  const std::uint64_t body_start = timed ? ticks() : 0;
  const bool skip = !run_body(t, worker);
  if (timed && !skip) sample_body(ws, ticks() - body_start, inline_run);
  // Recording the writer pulls the datum's state into this core's cache: only when some task has
  // asked for a locality hint (or the GPU backend tracks copies).
  if (!skip && (locality_used.load(std::memory_order_relaxed) || gpu))
    for (handle_state* h : t->written) {
      h->last_worker.store(static_cast<int>(worker), std::memory_order_relaxed);
      if (gpu) gpu->cpu_wrote(h);
    }
  if (traced) {
    trace_task rec;
    rec.id = t->id;
    rec.label = t->label.empty() ? std::string("task") : t->label;
    rec.color = t->color;
    rec.track = static_cast<int>(worker);
    rec.start_us = static_cast<double>(t->start_ns - trace_origin_ns) * 1e-3;
    rec.end_us = static_cast<double>(now_ns() - trace_origin_ns) * 1e-3;
    rec.priority = t->priority;
    rec.where = t->where;
    rec.skipped = skip;
    ws.trace.push_back(std::move(rec));
  }
  // Captured resources go now, not when the node is reused; a body without any is left for the
  // inserting thread to overwrite, so this worker does not dirty another cache line of the node.
  if (t->body.owns_resources()) t->body.reset();
  if (origin == run_origin::queue) complete(t, worker);
  else complete_at_submission(t);
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

bool runtime_impl::run_body(task_node* t, unsigned worker) {
  if (t->seq->cancelled.load(std::memory_order_acquire)) return false;
  worker_state& ws = *worker_states[worker];
  if (t->extras && !t->scratch_bytes.empty()) {
    std::size_t need = 0;
    for (std::size_t b : t->scratch_bytes) need += align_up(b, scratch_align);
    if (need > ws.scratch_size) {  // grows once per worker to the largest request
      ws.scratch.reset(static_cast<std::byte*>(::operator new[](need, std::align_val_t(scratch_align))));
      ws.scratch_size = need;
    }
  }
  task_context ctx(this, t, worker);
  try {
    if (!t->extras || t->accumulated.empty()) {
      t->body(ctx);
    } else {
      for (handle_state* h : t->accumulated) h->accumulate_mutex.lock();
      struct unlock_all {
        task_node* t;
        ~unlock_all() {
          for (auto it = t->accumulated.rbegin(); it != t->accumulated.rend(); ++it) (*it)->accumulate_mutex.unlock();
        }
      } guard{t};
      t->body(ctx);
    }
  } catch (...) {
    record_error(*t->seq, std::current_exception());
  }
  return true;
}

void runtime_impl::complete(task_node* t, unsigned worker) {
  {
    std::lock_guard lock(t->lock);
    t->done.store(true, std::memory_order_release);
  }
  // No successor can be added once done is set, so the list is ours to walk.
  for (task_node* s : t->successors) {
    if (s->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) make_ready(s);  // s is not touched after
  }
  // The list is cleared when the node is reused (reset), by the thread that rewrites it anyway.
  sequence_state* seq = t->seq;
  recycle(t, worker);
  seq->completed.fetch_add(1, std::memory_order_acq_rel);
  completed.fetch_add(1, std::memory_order_acq_rel);
}

// A task run by the inserting thread within its own submit(): no later task has been inserted, so it
// has no successors, and its counts are this thread's alone. Not counting it at all costs no
// locked instruction on lines the workers write.
void runtime_impl::complete_at_submission(task_node* t) {
  t->done.store(true, std::memory_order_release);
  --t->seq->submitted;
  --submitted;
  pool_local.push_back(t);
}

void runtime_impl::recycle(task_node* t, unsigned worker) {
  if (worker == 0) {  // the inserting thread: its own pool
    pool_local.push_back(t);
    return;
  }
  // Other threads hand nodes over in batches: one lock per batch, and the inserting thread gets
  // nodes this thread finished with a while ago rather than one still hot in its cache.
  auto& freed = worker_states[worker]->freed;
  freed.push_back(t);
  if (freed.size() >= 64) {
    std::lock_guard lock(pool_lock);
    pool_shared.insert(pool_shared.end(), freed.begin(), freed.end());
    freed.clear();
  }
}

bool runtime_impl::help_once() {
  if (task_node* t = pop_for(0)) {
    execute(t, 0);
    return true;
  }
  return false;
}

template <class Done>
void runtime_impl::help_until(Done done) {
  while (!done()) {
    if (help_once()) continue;
    // Nothing ready here: wait for a completion, which may make something ready.
    const std::size_t seen = completed.load(std::memory_order_acquire);
    if (done()) break;
    if (max_runners == 0 && !gpu && ready.empty() && submitted_ready.empty()) {
      // Only this thread runs tasks: nothing ready means nothing can ever become ready.
      throw std::logic_error("tessera::runtime: tasks in flight but none can run (a task left unsubmitted?)");
    }
    for (int spin = 0; spin < 64 && completed.load(std::memory_order_acquire) == seen && ready.empty() &&
                       submitted_ready.empty();
         ++spin)
      cpu_relax();
    if (completed.load(std::memory_order_acquire) == seen && ready.empty() && submitted_ready.empty()) {
      // Bounded sleep: a ready task pushed to a mailbox does not change the counts.
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
}

void runtime_impl::record_error(sequence_state& s, std::exception_ptr e) {
  s.cancelled.store(true, std::memory_order_release);
  {
    std::lock_guard lock(s.mutex);
    if (s.error) return;  // the first error wins; later ones are consequences
    s.error = e;
  }
  std::lock_guard lock(errors_mutex);
  failed.push_back(&s);
  log->debug("task error recorded; its sequence is cancelled");
}

void runtime_impl::wait_all() {
  if (open_builder)
    throw std::logic_error("tessera::runtime::wait_all: a task is still being built; submit() it first");
  help_until([&] { return in_flight() == 0; });
  std::vector<sequence_state*> reported;
  {
    std::lock_guard lock(errors_mutex);
    reported.swap(failed);
  }
  std::exception_ptr first;
  for (sequence_state* s : reported) {
    std::lock_guard lock(s->mutex);
    if (!first) first = s->error;
    s->error = nullptr;
    s->cancelled.store(false, std::memory_order_release);
  }
  if (first) std::rethrow_exception(first);
}

void runtime_impl::wait(sequence_state& s) {
  if (open_builder)
    throw std::logic_error("tessera::runtime::wait: a task is still being built; submit() it first");
  help_until([&] { return s.in_flight() == 0; });
  {
    std::lock_guard lock(errors_mutex);
    failed.erase(std::remove(failed.begin(), failed.end(), &s), failed.end());
  }
  std::exception_ptr e;
  {
    std::lock_guard lock(s.mutex);
    e = std::exchange(s.error, nullptr);
    s.cancelled.store(false, std::memory_order_release);
  }
  if (e) std::rethrow_exception(e);
}

void runtime_impl::enable_trace(bool on) {
  if (on && !tracing.load()) {
    trace_edges.clear();
    for (auto& w : worker_states) w->trace.clear();
    trace_origin_ns = now_ns();
    merged_valid = false;
    if (gpu) gpu->start_trace();
  }
  tracing.store(on, std::memory_order_release);
}

const trace_data& runtime_impl::trace() {
  merged = trace_data{};
  merged.tracks.reserve(workers);
  for (unsigned w = 0; w < workers; ++w)
    merged.tracks.push_back(w == 0 ? std::string("worker 0 (inserting thread)") : "worker " + std::to_string(w));
  for (auto& w : worker_states) merged.tasks.insert(merged.tasks.end(), w->trace.begin(), w->trace.end());
  if (gpu) gpu->take_trace(merged.tasks, merged.tracks, static_cast<int>(workers), trace_origin_ns);
  std::sort(merged.tasks.begin(), merged.tasks.end(),
            [](const trace_task& a, const trace_task& b) { return a.id < b.id; });
  // A finished predecessor seen through several handles can be reported more than once.
  merged.edges = trace_edges;
  std::sort(merged.edges.begin(), merged.edges.end(), [](const trace_edge& a, const trace_edge& b) {
    return a.from != b.from ? a.from < b.from : a.to != b.to ? a.to < b.to : a.kind < b.kind;
  });
  merged.edges.erase(std::unique(merged.edges.begin(), merged.edges.end(),
                                 [](const trace_edge& a, const trace_edge& b) { return a.from == b.from && a.to == b.to; }),
                     merged.edges.end());
  return merged;
}

task_node* new_task(runtime_impl& impl) { return impl.new_task(); }

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Public surface.

void* handle::data() const noexcept { return _state ? _state->data : nullptr; }
std::size_t handle::bytes() const noexcept { return _state ? _state->bytes : 0; }
std::uint64_t handle::key() const noexcept { return _state ? _state->key : 0; }

bool sequence::cancelled() const noexcept {
  return _state && _state->cancelled.load(std::memory_order_acquire);
}

std::uint64_t task_context::task_id() const noexcept { return _task->id; }
void* task_context::scratch(std::size_t i) const { return _rt->scratch(_worker, _task, i); }
namespace {
detail::gpu_backend& gpu_of(detail::runtime_impl* rt, detail::task_node* t, const char* what) {
  if (!rt->gpu || t->where != device::gpu)
    throw std::logic_error(std::string("tessera::task_context::") + what + ": only GPU tasks have one");
  return *rt->gpu;
}
}  // namespace

void* task_context::stream() const { return gpu_of(_rt, _task, "stream").stream(_task->stream); }
void* task_context::blas() const { return gpu_of(_rt, _task, "blas").blas(_task->stream); }
void* task_context::device_data(handle h) const {
  gpu_of(_rt, _task, "device_data");
  if (!h || !h._state->copies.device)
    throw std::invalid_argument("tessera::task_context::device_data: the handle is not among this task's data on the GPU");
  return h._state->copies.device;
}
std::size_t task_context::device_pitch(handle h) const {
  device_data(h);
  return h._state->copies.device_pitch;
}

const void* task_context::_value(std::size_t i) const {
  if (i >= _task->value_offsets.size())
    throw std::out_of_range("tessera::task_context::value: index " + std::to_string(i) + " but the task has " +
                            std::to_string(_task->value_offsets.size()) + " values");
  return _task->value_bytes.data() + _task->value_offsets[i];
}

task_builder::~task_builder() {
  if (_task) {
    try {
      _rt->submit(_task);
    } catch (...) {
    }
  }
}

namespace {
void check_open(detail::task_node* t, const char* what) {
  if (!t) throw std::logic_error(std::string("tessera::task_builder::") + what + ": task already submitted");
}
}  // namespace

task_builder& task_builder::add(handle h, access mode) {
  check_open(_task, "add");
  if (!h) throw std::invalid_argument("tessera::task_builder::add: handle is empty (not registered)");
  _rt->add_access(_task, h._state, mode);
  return *this;
}

task_builder& task_builder::scratch(std::size_t bytes) {
  check_open(_task, "scratch");
  _task->extras = true;
  _task->scratch_bytes.push_back(bytes);
  return *this;
}

task_builder& task_builder::_add_value(const void* p, std::size_t size, std::size_t align) {
  check_open(_task, "value");
  _task->extras = true;
  auto& bytes = _task->value_bytes;
  // Offsets are aligned relative to the buffer start; the buffer itself is max-aligned by operator new.
  const std::size_t offset = detail::align_up(bytes.size(), std::max<std::size_t>(align, alignof(std::max_align_t)));
  bytes.resize(offset + size);
  std::memcpy(bytes.data() + offset, p, size);
  _task->value_offsets.push_back(offset);
  return *this;
}

task_builder& task_builder::priority(int p) {
  check_open(_task, "priority");
  _task->priority = p;
  return *this;
}

task_builder& task_builder::locality(handle h) {
  check_open(_task, "locality");
  if (!_rt->locality_used.load(std::memory_order_relaxed)) _rt->locality_used.store(true, std::memory_order_relaxed);
  _task->locality = h._state;
  return *this;
}

task_builder& task_builder::label(std::string_view name) {
  check_open(_task, "label");
  if (_rt->tracing.load(std::memory_order_relaxed) || _rt->log_debug) {
    _task->extras = true;
    _task->label.assign(name);
  }
  return *this;
}

task_builder& task_builder::color(std::uint32_t rgb) {
  check_open(_task, "color");
  _task->extras = true;
  _task->color = rgb;
  return *this;
}

task_builder& task_builder::in(const sequence& s) {
  check_open(_task, "in");
  if (!s) throw std::invalid_argument("tessera::task_builder::in: sequence is empty (use runtime::make_sequence)");
  _task->seq = s._state.get();
  return *this;
}

task_builder& task_builder::on(device d) {
  check_open(_task, "on");
  if (d == device::gpu && !_rt->gpu)
    throw std::invalid_argument(
        "tessera::task_builder::on: device::gpu but the runtime has no GPU backend (runtime_options::gpu_streams)");
  _task->where = d;
  return *this;
}

void task_builder::submit() {
  check_open(_task, "submit");
  detail::task_node* t = std::exchange(_task, nullptr);
  _rt->submit(t);
}

runtime::runtime(runtime_options options) : _impl(std::make_unique<detail::runtime_impl>(options)) {}
runtime::~runtime() = default;

handle runtime::register_data(void* data, std::size_t bytes) {
  if (!data) throw std::invalid_argument("tessera::runtime::register_data: data is null (use register_key)");
  auto& h = _impl->handles.emplace_back();
  h.data = data;
  h.bytes = bytes;
  h.key = reinterpret_cast<std::uintptr_t>(data);
  h.run_bytes = h.pitch = bytes;
  return handle(&h);
}

handle runtime::register_data(void* data, std::size_t run_bytes, std::size_t runs, std::size_t pitch) {
  if (pitch < run_bytes)
    throw std::invalid_argument("tessera::runtime::register_data: pitch " + std::to_string(pitch) +
                                " is smaller than run_bytes " + std::to_string(run_bytes));
  handle h = register_data(data, runs ? (runs - 1) * pitch + run_bytes : 0);
  h._state->run_bytes = run_bytes;
  h._state->runs = runs;
  h._state->pitch = pitch;
  return h;
}

bool runtime::gpu_available() noexcept { return detail::gpu_backend::available(); }
bool runtime::has_gpu() const noexcept { return _impl->gpu != nullptr; }

void runtime::place_on_device(handle h, void* device_data, std::size_t device_pitch) {
  if (!_impl->gpu) throw std::logic_error("tessera::runtime::place_on_device: the runtime has no GPU backend");
  if (!h || !h._state->data) throw std::invalid_argument("tessera::runtime::place_on_device: handle has no host data");
  if (!device_data) throw std::invalid_argument("tessera::runtime::place_on_device: device_data is null");
  if (device_pitch < h._state->run_bytes)
    throw std::invalid_argument("tessera::runtime::place_on_device: device_pitch is smaller than the datum's run_bytes");
  _impl->gpu->place(h._state, device_data, device_pitch);
}

void runtime::release_device(handle h) {
  if (!_impl->gpu || !h) return;
  auto& c = h._state->copies;
  if (c.pooled) return;  // pool memory lives as long as the runtime; keep using it
  c.device = nullptr;
  c.device_pitch = 0;
  c.device_valid = false;
  c.host_valid = true;
  c.h2d_done = c.d2h_done = nullptr;
  h._state->gpu_touched = false;
}

transfer_stats runtime::transfers() const { return _impl->gpu ? _impl->gpu->stats() : transfer_stats{}; }

handle runtime::register_key(std::uint64_t key) {
  auto& h = _impl->handles.emplace_back();
  h.key = key;
  return handle(&h);
}

sequence runtime::make_sequence() {
  auto s = std::make_shared<detail::sequence_state>();
  _impl->sequences.push_back(s);
  return sequence(std::move(s));
}

void runtime::wait_all() { _impl->wait_all(); }

void runtime::wait(const sequence& s) {
  if (!s) throw std::invalid_argument("tessera::runtime::wait: sequence is empty");
  _impl->wait(*s._state);
}

unsigned runtime::workers() const noexcept { return _impl->workers; }
std::size_t runtime::window() const noexcept { return _impl->window; }
void runtime::enable_trace(bool on) { _impl->enable_trace(on); }
const trace_data& runtime::trace() const { return _impl->trace(); }

detail::task_fn& runtime::_set_body(detail::task_node* t) { return t->body; }

}  // namespace tessera
