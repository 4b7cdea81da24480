// Hazard inference: each access a task adds is resolved against its handle's last writer, readers
// since and open accumulate group, linking the task after the predecessors that are still running.
#include <mutex>
#include <stdexcept>
#include <string>

#include "runtime_impl.hpp"

namespace tessera::detail {

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
    if (h->device_only && t->where != device::gpu)  // before anything changes: the builder stays usable
      throw std::invalid_argument("tessera::task_builder::add: datum " + std::to_string(h->key) +
                                  " lives only in device memory (register_device_data), so only a GPU task may "
                                  "access it; call .on(tessera::device::gpu) before adding its accesses");
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

}  // namespace tessera::detail
