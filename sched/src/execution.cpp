// Running one task: its scratch and body (with accumulate locks and error capture), the trace
// record, then completion, which releases successors and returns the node to the pool.
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "runtime_impl.hpp"

namespace tessera::detail {

void* runtime_impl::scratch(unsigned worker, task_node* t, std::size_t i) {
  if (i >= t->scratch_bytes.size())
    throw std::out_of_range("tessera::task_context::scratch: index " + std::to_string(i) +
                            " but the task declared " + std::to_string(t->scratch_bytes.size()));
  // A GPU task's scratch is its stream's device workspace; a CPU task's, its worker's host one.
  const bool on_gpu = t->where == device::gpu;
  const std::size_t align = on_gpu ? device_scratch_align : scratch_align;
  std::size_t offset = 0;
  for (std::size_t k = 0; k < i; ++k) offset += align_up(t->scratch_bytes[k], align);
  std::byte* base = on_gpu ? static_cast<std::byte*>(gpu->scratch(t->stream)) : worker_states[worker]->scratch.get();
  return base + offset;
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
bool runtime_impl::run_body(task_node* t, unsigned worker) {
  if (t->seq->cancelled.load(std::memory_order_acquire)) return false;
  worker_state& ws = *worker_states[worker];
  if (t->extras && !t->scratch_bytes.empty() && t->where == device::cpu) {  // the backend sizes a GPU task's
    std::size_t need = 0;
    for (std::size_t b : t->scratch_bytes) need += align_up(b, scratch_align);
    if (need > ws.scratch_size) {  // grows once per worker to the largest request
      ws.scratch.reset(static_cast<std::byte*>(::operator new[](need, std::align_val_t(scratch_align))));
      ws.scratch_size = need;
    }
  }
  task_context ctx(this, t, worker);
  struct body_scope {  // marks this thread as inside a body of this runtime (check_caller)
    runtime_impl* previous;
    explicit body_scope(runtime_impl* rt) noexcept : previous(std::exchange(current_body, rt)) {}
    ~body_scope() { current_body = previous; }
  } in_body(this);
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
  completed_at_submission.store(completed_at_submission.load(std::memory_order_relaxed) + 1, std::memory_order_release);
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

}  // namespace tessera::detail
