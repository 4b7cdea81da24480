#pragma once
// The runtime's internals: task nodes, handle states, sequences. Not installed.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tessera/sched/access.hpp"
#include "tessera/sched/detail/task_fn.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <x86intrin.h>
#endif
#include <chrono>

namespace tessera::detail {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// A cheap clock for timing task bodies: the time-stamp counter on x86 (about 11 ns to read on the
// 2-core VM, against 27 for steady_clock), nanoseconds elsewhere. ticks_per_ns converts.
inline std::uint64_t ticks() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}
double ticks_per_ns();  // measured once per process

// Wall-clock nanoseconds for traces.
inline std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

inline std::size_t align_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

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
// 16 bytes, so that a handle's usual hazard state (one writer, one reader) fits in one cache line.
struct task_ref {
  static constexpr std::uint64_t id_mask = (std::uint64_t(1) << 63) - 1;  // ids never get near 2^63
  task_node* node;
  std::uint64_t id : 63;
  std::uint64_t traced : 1;
};
static_assert(sizeof(task_ref) == 16);

// The task references of one list of a handle (its writers, its readers since): the first is held
// inline, any others in a vector allocated on first need. Most data have one writer and few
// readers, so resolving an access reads the handle's own line and no buffer elsewhere (with 10^5
// data, those buffers were each a cache miss).
class ref_list {
 public:
  bool empty() const noexcept { return _size == 0; }
  std::size_t size() const noexcept { return _size; }
  const task_ref& back() const noexcept { return _size == 1 ? _first : _more->back(); }
  void push_back(const task_ref& r) {
    if (_size == 0) {
      _first = r;
    } else {
      if (!_more) _more = std::make_unique<std::vector<task_ref>>();
      _more->push_back(r);
    }
    ++_size;
  }
  void clear() noexcept {  // keeps the vector's capacity
    if (_size > 1) _more->clear();
    _size = 0;
  }
  void swap(ref_list& other) noexcept {
    std::swap(_first, other._first);
    _more.swap(other._more);
    std::swap(_size, other._size);
  }
  template <class F>
  void for_each(F&& f) const {
    if (_size == 0) return;
    f(_first);
    if (_size > 1)
      for (const task_ref& r : *_more) f(r);
  }

 private:
  task_ref _first{nullptr, 0, 0};
  std::unique_ptr<std::vector<task_ref>> _more;
  std::uint32_t _size = 0;
};

// One device's copy of a datum (GPU backend).
struct device_copy {
  void* data = nullptr;        // the copy, once there is one
  std::size_t pitch = 0;
  bool pooled = false;         // data came from the runtime's pool (freed with the runtime)
  bool valid = false;
  void* arrived = nullptr;     // cudaEvent_t recorded after the last copy to this device, or null
  std::uint64_t seq = 0;       // that copy's place in this device's incoming copy order (0: none)
};

// Where a datum's copies are and which are current (GPU backend). Changed by the GPU thread, and
// by a CPU task that writes the datum: the DAG keeps those two from touching one datum at once.
struct copy_state {
  bool host_valid = true;
  void* d2h_done = nullptr;    // cudaEvent_t recorded after the last copy to the host, or null
  device_copy first;           // logical GPU 0's copy, inline: a one-GPU runtime needs no more
  std::unique_ptr<device_copy[]> more;  // GPUs 1.. (runtime_options::gpus), made at registration
  device_copy& on(unsigned gpu) noexcept { return gpu == 0 ? first : more[gpu - 1]; }
  const device_copy& on(unsigned gpu) const noexcept { return gpu == 0 ? first : more[gpu - 1]; }
};

// A handle's hazard state, one cache line: resolving an access touches only this (and, for a
// handle with several writers or readers, the lists' vectors). Touched only by the inserting
// thread. The flags sit in the tail padding of `readers` (no_unique_address).
struct hazard_state {
  ref_list writers;                           // the last writer, or the members of the open accumulate group
  [[no_unique_address]] ref_list readers;     // readers since the last write
  bool accumulating = false;
  bool gpu_touched = false;                   // some task inserted so far ran on the GPU with it
  bool device_only = false;                   // runtime::register_device_data: no host copy, ever
};
static_assert(sizeof(hazard_state) == 64);

struct alignas(64) handle_state : hazard_state {
  ref_list group_preds;                       // what the open accumulate group orders after
  std::uint64_t key = 0;
  void* data = nullptr;
  std::size_t bytes = 0;
  // Shape for copies: runs of run_bytes, pitch apart (a 1-D datum is one run).
  std::size_t run_bytes = 0;
  std::size_t runs = 1;
  std::size_t pitch = 0;
  copy_state copies;
  // Several GPUs: the logical GPU of the last GPU task inserted that wrote this datum, or its home
  // (register_device_data); -1: none, or a CPU task wrote it since. Placement reads it.
  int placed_gpu = -1;
  // Written by workers: the worker that last wrote this datum (locality hint).
  std::atomic<int> last_worker{-1};
  // Serialises the members of an accumulate group while they run.
  std::mutex accumulate_mutex;
};

// task_node::gpu of a GPU task that named no GPU: the runtime places it at submission.
constexpr std::uint16_t any_gpu = 0xffff;

struct alignas(64) task_node {
  // Lifetime: from runtime::task to the end of complete(), which returns the node to the pool.
  // A task handed to another core moves two lines there and back: line 0 (what both threads
  // write) and line 1 (the body, with a small callable's captures). The inserting thread's own
  // bookkeeping follows, on lines workers do not touch.
  // Unfinished predecessors, plus one until submit(): the task is ready when it reaches zero.
  std::atomic<int> pending{1};
  spinlock lock;                  // guards done and successors
  std::atomic<bool> done{false};  // set under lock; read without it on the fast path
  bool traced = false;            // tracing was on when the task was created
  bool extras = false;            // some cold field below is in use (reset clears them then)
  bool via_gpu_thread = false;    // a CPU task that may need copies to the host first
  device where = device::cpu;
  std::uint16_t gpu = 0xffff;     // a GPU task's logical GPU (any_gpu until placed)
  int priority = 0;
  unsigned stream = 0;            // a GPU task's stream
  sequence_state* seq = nullptr;
  std::vector<task_node*> successors;
  alignas(64) task_fn body;       // line 1: its three pointers, then the inline captures

  // Written by the inserting thread only (workers may read): a later task that finds this node
  // in a handle's lists reads id without pulling a line from the core that ran the task.
  std::uint64_t id = 0;
  task_node* last_linked_successor = nullptr;  // dedupes edges while a successor is being built
  handle_state* locality = nullptr;
  std::vector<handle_state*> written;          // for the locality hint and copy validity

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
    gpu = any_gpu;
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

// How error messages name a task: its label, if it has one, and its id.
inline std::string task_name(const task_node& t) {
  return t.label.empty() ? "task #" + std::to_string(t.id) : "task '" + t.label + "' (#" + std::to_string(t.id) + ")";
}

// Starts pulling a node's two shared lines (line 0 and the body's first line) into this core's
// cache with write intent. Nodes and tasks move between cores; a thread about to use several of
// them prefetches them so the transfers overlap instead of stalling one after another.
inline void prefetch_for_write(const void* p) noexcept {
#if defined(__x86_64__)
  // PREFETCHW: GCC emits it for __builtin_prefetch(p, 1) only with -mprfchw, and otherwise a read
  // prefetch, after which the first store still waits for the other core to give the line up.
  // Every x86-64 CPU runs it (those without it as a no-op).
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1, 3);
#endif
}

inline void prefetch_node(const task_node* t) noexcept {
  constexpr std::size_t hot_lines = 2;  // line 0 and the body's line (see task_node)
  const char* p = reinterpret_cast<const char*>(t);
  for (std::size_t l = 0; l < hot_lines; ++l) prefetch_for_write(p + 64 * l);
}

}  // namespace tessera::detail
