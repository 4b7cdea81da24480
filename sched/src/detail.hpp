#pragma once
// The runtime's internals: task nodes, handle states, sequences. Not installed.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tessera/sched/access.hpp"
#include "tessera/sched/detail/task_fn.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tessera::detail {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// Short critical sections only (a push or a pop): cheaper than std::mutex when uncontended.
class spinlock {
 public:
  void lock() noexcept {
    for (int spins = 0;;) {
      if (!_flag.exchange(true, std::memory_order_acquire)) return;
      while (_flag.load(std::memory_order_relaxed)) {
        // A holder preempted on an oversubscribed machine would make pure spinning pathological.
        if (++spins < 64) cpu_relax();
        else std::this_thread::yield();
      }
    }
  }
  bool try_lock() noexcept {
    return !_flag.load(std::memory_order_relaxed) && !_flag.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { _flag.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> _flag{false};
};

struct sequence_state {
  // In flight = submitted - completed: the inserting thread alone writes `submitted`, so it and the
  // workers do not bounce one cache line per task.
  std::size_t submitted = 0;
  alignas(64) std::atomic<std::size_t> completed{0};
  std::size_t in_flight() const noexcept { return submitted - completed.load(std::memory_order_acquire); }
  std::atomic<bool> cancelled{false};
  std::mutex mutex;
  std::exception_ptr error;  // the first error; guarded by mutex
  bool reported_to_runtime = false;
};

struct task_node;

// A handle's reference to a task: no count is held. A task's node is recycled once it is done; a
// reference whose id no longer matches its node's names a task that finished (nothing to wait for).
struct task_ref {
  task_node* node;
  std::uint64_t id;
  bool traced;
};

// Where a datum's copies are and which are current (GPU backend). Changed by the GPU thread, and
// by a CPU task that writes the datum: the DAG keeps those two from touching one datum at once.
struct copy_state {
  void* device = nullptr;      // the device copy, once there is one
  std::size_t device_pitch = 0;
  bool pooled = false;         // device came from the runtime's pool (freed with the runtime)
  bool host_valid = true;
  bool device_valid = false;
  void* h2d_done = nullptr;    // cudaEvent_t recorded after the last copy to the device, or null
  void* d2h_done = nullptr;    // ... to the host
};

struct handle_state {
  // Hazard state first, on one cache line: resolving an access touches only this (and the lists'
  // buffers). Touched only by the inserting thread.
  std::vector<task_ref> writers;      // the last writer, or the members of the open accumulate group
  std::vector<task_ref> readers;      // readers since the last write
  bool accumulating = false;
  bool gpu_touched = false;           // some task inserted so far ran on the GPU with it
  std::uint64_t key = 0;
  std::vector<task_ref> group_preds;  // what the open accumulate group orders after
  void* data = nullptr;
  std::size_t bytes = 0;
  // Shape for copies: runs of run_bytes, pitch apart (a 1-D datum is one run).
  std::size_t run_bytes = 0;
  std::size_t runs = 1;
  std::size_t pitch = 0;
  copy_state copies;
  // Written by workers: the worker that last wrote this datum (locality hint).
  std::atomic<int> last_worker{-1};
  // Serialises the members of an accumulate group while they run.
  std::mutex accumulate_mutex;
};

struct task_node {
  // Hot fields first: inserting and running an ordinary task touches only these few cache lines.
  // Lifetime: from runtime::task to the end of complete(), which returns the node to the pool.
  // Unfinished predecessors, plus one until submit(): the task is ready when it reaches zero.
  std::atomic<int> pending{1};
  spinlock lock;                  // guards done and successors
  std::atomic<bool> done{false};  // set under lock; read without it on the fast path
  bool traced = false;            // tracing was on when the task was created
  bool extras = false;            // some cold field below is in use (reset clears them then)
  bool via_gpu_thread = false;    // a CPU task that may need copies to the host first
  device where = device::cpu;
  int priority = 0;
  unsigned stream = 0;            // a GPU task's stream
  std::uint64_t id = 0;
  sequence_state* seq = nullptr;
  handle_state* locality = nullptr;
  task_node* last_linked_successor = nullptr;  // dedupes edges while a successor is being built
  std::vector<task_node*> successors;
  std::vector<handle_state*> written;          // for the locality hint and copy validity
  task_fn body;

  // Cold: used by some tasks only (extras says so).
  std::vector<std::pair<handle_state*, access>> accesses;  // kept only with the GPU backend
  std::vector<handle_state*> accumulated;   // mutexes to hold while running
  std::vector<std::size_t> scratch_bytes;
  std::vector<std::size_t> value_offsets;
  std::vector<std::byte> value_bytes;
  std::string label;                        // while tracing or debug logging
  std::uint32_t color = 0;
  std::uint64_t start_ns = 0;

  void reset() noexcept {
    pending.store(1, std::memory_order_relaxed);
    done.store(false, std::memory_order_relaxed);
    traced = false;
    via_gpu_thread = false;
    where = device::cpu;
    priority = 0;
    stream = 0;
    seq = nullptr;
    // Stores only where something changes: a line another core has read stays shared.
    if (locality) locality = nullptr;
    if (last_linked_successor) last_linked_successor = nullptr;
    if (!successors.empty()) successors.clear();
    if (!written.empty()) written.clear();
    body.reset();
    if (extras) {
      extras = false;
      accesses.clear();
      accumulated.clear();
      scratch_bytes.clear();
      value_offsets.clear();
      value_bytes.clear();
      label.clear();
      color = 0;
    }
  }
};

}  // namespace tessera::detail
