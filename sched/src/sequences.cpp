// Errors and waiting: a task's error cancels its sequence; wait(seq) and wait_all() help run tasks
// until theirs are done, then rethrow the first error and clear it.
#include <algorithm>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include "runtime_impl.hpp"

namespace tessera::detail {

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
  check_caller("wait_all");
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
  check_caller("wait");
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

}  // namespace tessera::detail
