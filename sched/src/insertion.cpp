// Inserting a task: a node from the pool, then submit() (counts, granularity look, readiness,
// the window that bounds tasks in flight). The inserting thread alone runs this.
#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "runtime_impl.hpp"

namespace tessera::detail {

namespace {

// How far ahead the inserting thread prefetches the nodes it will reuse: enough transfers in
// flight to cover a slow core-to-core round trip (about 0.4 us in one state of the 2-core VM).
constexpr std::size_t prefetch_distance = 8;


}  // namespace

[[noreturn]] void runtime_impl::refuse_caller(const char* what) const {
  const std::string call = std::string("tessera::runtime::") + what + ": ";
  if (current_body == this) {
    const bool waits = std::string_view(what).starts_with("wait");
    throw std::logic_error(call + "called from inside a task body of this runtime; " +
                           (waits ? "a task cannot wait for tasks (it would wait for itself)"
                                  : "tasks are inserted, and data registered, outside task bodies"));
  }
  throw std::logic_error(call + "called from a thread other than the runtime's inserting thread (the one that "
                                "constructed it, or the last to call runtime::set_inserting_thread); one thread "
                                "at a time inserts, registers and waits");
}

task_node* runtime_impl::new_task() {
  check_caller("task");
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
      if (gpu_count > 1) place_gpu_task(t);
      else t->gpu = 0;
      for (auto& [h, mode] : t->accesses) h->gpu_touched = true;
    } else {
      for (auto& [h, mode] : t->accesses) {
        t->via_gpu_thread = t->via_gpu_thread || h->gpu_touched;
        if (mode != access::read) h->placed_gpu = -1;
      }
    }
  }
  ++t->seq->submitted;
  ++submitted;
  submitted_total.store(submitted_total.load(std::memory_order_relaxed) + 1, std::memory_order_release);
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

// In insertion order, so placement is deterministic: a task that names no GPU goes where the last
// GPU writers of most of its bytes ran (its data's current copies, once its predecessors are done),
// GPU 0 when none; a write to device-only data off its home GPU fails the task (the runtime has no
// way to bring it back there).
void runtime_impl::place_gpu_task(task_node* t) {
  if (t->gpu == any_gpu) {
    std::vector<std::size_t> bytes(gpu_count, 0);
    for (auto& [h, mode] : t->accesses)
      if (h->placed_gpu >= 0) bytes[static_cast<unsigned>(h->placed_gpu)] += h->bytes;
    t->gpu = static_cast<std::uint16_t>(std::max_element(bytes.begin(), bytes.end()) - bytes.begin());
  }
  for (auto& [h, mode] : t->accesses) {
    if (mode == access::read) continue;
    if (h->device_only && h->placed_gpu != t->gpu)
      record_error(*t->seq, std::make_exception_ptr(std::invalid_argument(
                                "tessera GPU " + task_name(*t) + " on GPU " + std::to_string(t->gpu) +
                                " writes device-only datum " + std::to_string(h->key) + ", which lives on GPU " +
                                std::to_string(h->placed_gpu))));
    else h->placed_gpu = t->gpu;
  }
}

task_node* new_task(runtime_impl& impl) { return impl.new_task(); }

}  // namespace tessera::detail
