#pragma once
// The runtime core's state, shared by the core's files (runtime.cpp, hazards.cpp, workers.cpp, ...)
// and the GPU backend. Not installed.
#include <spdlog/spdlog.h>

#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <queue>
#include <stdexcept>
#include <thread>
#include <vector>

#include "detail.hpp"
#include "gpu_backend.hpp"
#include "tessera/sched/runtime.hpp"

namespace tessera::detail {

struct runtime_impl;

// The runtime whose task body this thread is running (null: none), set around every body; its
// address also tells threads apart, so that a runtime knows its inserting thread.
inline constinit thread_local runtime_impl* current_body = nullptr;

// Per-worker scratch is handed out in pieces of this alignment; a GPU task's device scratch in
// pieces of the alignment cudaMalloc gives.
constexpr std::size_t scratch_align = 64;
constexpr std::size_t device_scratch_align = 256;

// runtime_options::workers may be up to 4 per hardware thread, and at least this many.
constexpr unsigned max_workers_floor = 64;

// Granularity control: a runner times one body in sample_every (see granularity.cpp).
constexpr unsigned sample_every = 16;

// Ready tasks: a FIFO for the common priority 0, a heap for the others, so that the usual case
// costs a deque push/pop and priorities still order what they must.
class ready_queue {
 public:
  void push(task_node* t) {
    std::lock_guard lock(_lock);
    if (t->priority == 0) _fifo.push_back(t);
    else _heap.push(t);
    _size.fetch_add(1, std::memory_order_release);
  }
  task_node* pop() {
    if (_size.load(std::memory_order_acquire) == 0) return nullptr;  // the common idle poll: no lock
    std::lock_guard lock(_lock);
    task_node* t = nullptr;
    if (!_heap.empty() && (_heap.top()->priority > 0 || _fifo.empty())) {
      t = _heap.top();
      _heap.pop();
    } else if (!_fifo.empty()) {
      t = _fifo.front();
      _fifo.pop_front();
    }
    if (t) _size.fetch_sub(1, std::memory_order_relaxed);
    return t;
  }
  bool empty() const { return _size.load(std::memory_order_acquire) == 0; }

  // Up to max priority-0 tasks at once, but no more than a fair share of what waits: a runner
  // that takes several per lock keeps the lock and its line away from the inserting thread.
  // Prioritised tasks are taken one at a time, so the priority order holds.
  std::size_t pop_batch(task_node** out, std::size_t max, unsigned consumers) {
    const std::size_t size = _size.load(std::memory_order_acquire);
    if (size == 0) return 0;
    std::lock_guard lock(_lock);
    if (!_heap.empty()) {
      if (_heap.top()->priority > 0 || _fifo.empty()) {
        out[0] = _heap.top();
        _heap.pop();
        _size.fetch_sub(1, std::memory_order_relaxed);
        return 1;
      }
      max = 1;
    }
    const std::size_t n = std::min({max, _fifo.size(), std::max<std::size_t>(1, _fifo.size() / (2 * consumers))});
    for (std::size_t i = 0; i < n; ++i) {
      out[i] = _fifo.front();
      _fifo.pop_front();
    }
    _size.fetch_sub(n, std::memory_order_relaxed);
    return n;
  }

 private:
  struct later {
    bool operator()(const task_node* a, const task_node* b) const {
      return a->priority != b->priority ? a->priority < b->priority : a->id > b->id;
    }
  };
  // Measured against oneTBB's concurrent_queue here: a short spinlock (with yield backoff, see
  // spinlock) costs less per task for one inserting thread and a few workers.
  // The size on a line of its own: idle runners poll it, and must not take the lock's line away
  // from the inserting thread each time.
  alignas(64) std::atomic<std::size_t> _size{0};
  alignas(64) spinlock _lock;
  std::deque<task_node*> _fifo;
  std::priority_queue<task_node*, std::vector<task_node*>, later> _heap;
};

// Tasks the inserting thread finds ready when it submits them (most tasks of a wide DAG): a
// single-producer, multi-consumer ring. The producer writes a slot and its own tail; consumers
// claim a share of slots with one compare-exchange on the head, so lines cross between cores once
// per several tasks, not once per task. Full: the task goes to the ready_queue instead.
class submit_ring {
 public:
  static constexpr std::size_t capacity = 4096;  // a power of two

  bool push(task_node* t) {  // the inserting thread only
    const std::size_t tail = _tail.load(std::memory_order_relaxed);
    if (tail - _head_seen >= capacity) {
      _head_seen = _head.load(std::memory_order_acquire);
      if (tail - _head_seen >= capacity) return false;
    }
    _slots[tail & (capacity - 1)].store(t, std::memory_order_relaxed);
    _tail.store(tail + 1, std::memory_order_release);
    return true;
  }

  // Claims up to max tasks, if at least min wait.
  std::size_t pop(task_node** out, std::size_t max, unsigned consumers, std::size_t min = 1) {
    std::size_t head = _head.load(std::memory_order_acquire);
    for (;;) {
      const std::size_t tail = _tail.load(std::memory_order_acquire);
      if (head >= tail || tail - head < min) return 0;
      const std::size_t n = std::min({max, tail - head, std::max<std::size_t>(1, (tail - head) / (2 * consumers))});
      // Read before claiming: the producer reuses a slot only once the head has passed it, and
      // only a successful claim below moves the head past these.
      for (std::size_t i = 0; i < n; ++i) out[i] = _slots[(head + i) & (capacity - 1)].load(std::memory_order_relaxed);
      if (_head.compare_exchange_weak(head, head + n, std::memory_order_acq_rel, std::memory_order_acquire)) return n;
    }
  }

  bool empty() const {
    return _head.load(std::memory_order_acquire) >= _tail.load(std::memory_order_acquire);
  }

  // The producer's view: at least n tasks wait. Reads the consumers' head only when the last look
  // at it allows that many, so a short backlog costs no cache-line transfer.
  bool backlog_at_least(std::size_t n) {  // the inserting thread only
    const std::size_t tail = _tail.load(std::memory_order_relaxed);
    if (tail - _head_seen < n) return false;
    _head_seen = _head.load(std::memory_order_acquire);
    return tail - _head_seen >= n;
  }

 private:
  alignas(64) std::atomic<std::size_t> _head{0};
  alignas(64) std::atomic<std::size_t> _tail{0};
  std::size_t _head_seen = 0;  // the producer's last look at _head
  alignas(64) std::array<std::atomic<task_node*>, capacity> _slots{};
};

struct worker_state {
  ready_queue mailbox;              // tasks whose locality hint names this worker
  struct aligned_delete {
    void operator()(std::byte* p) const noexcept { ::operator delete[](p, std::align_val_t(64)); }
  };
  std::unique_ptr<std::byte[], aligned_delete> scratch;
  std::size_t scratch_size = 0;
  std::vector<trace_task> trace;    // this worker's finished tasks, while tracing
  std::vector<task_node*> freed;    // done nodes, handed to the shared pool in batches
  unsigned bodies_to_sample = 0;    // bodies this thread runs before it times one
  // Sampled body times, in ticks: written by this worker only, read by the inserting thread now
  // and then (granularity control, runtime_options::inline_below_ns).
  alignas(64) std::atomic<std::uint64_t> sampled_ticks{0};
  std::atomic<std::uint64_t> sampled_bodies{0};
};

// What oneTBB runs on a worker: runtime_impl::runner_main. Its call operator has a file of its own
// (runner_entry.cpp; see there why).
struct runner_entry {
  runtime_impl* rt;
  void operator()() const;
};

struct runtime_impl {
  explicit runtime_impl(const runtime_options& options);
  ~runtime_impl();

  // --- insertion (one thread) ---
  // Insertion, registration and waiting: on the inserting thread, outside this runtime's task
  // bodies; a thread-local address compare and a load. Throws std::logic_error otherwise.
  void check_caller(const char* what) const {
    if (&current_body != inserter || current_body == this) [[unlikely]]
      refuse_caller(what);
  }
  [[noreturn]] void refuse_caller(const char* what) const;
  task_node* new_task();
  void add_access(task_node* t, handle_state* h, access mode);
  void link(const task_ref& pred, task_node* succ, hazard kind);
  void submit(task_node* t);
  void place_gpu_task(task_node* t);  // several GPUs: picks t's GPU, checks device-only writes
  // --- execution ---
  void make_ready(task_node* t, bool by_inserter = false);
  void spawn_runner();
  void runner_main();  // a runner's whole life
  void runner_loop();
  task_node* pop_for(unsigned worker, std::size_t ring_min = 1);
  // Where a task came from: a queue, or its own submission (the throttle, granularity control).
  enum class run_origin : std::uint8_t { queue, throttled, inline_run };
  void execute(task_node* t, unsigned worker, run_origin origin = run_origin::queue);
  void complete_at_submission(task_node* t);
  void sample_body(worker_state& ws, std::uint64_t body_ticks, bool inline_run);
  void look_at_samples();  // the inserting thread: decides run_inline
  void sum_samples(std::uint64_t& sum_ticks, std::uint64_t& bodies) const;
  void complete(task_node* t, unsigned worker);
  void recycle(task_node* t, unsigned worker);  // back to the pool once done
  bool help_once();  // the inserting thread runs one ready task, if any
  template <class Done>
  void help_until(Done done);
  void make_ready_cpu(task_node* t, bool by_inserter = false);
  bool run_body(task_node* t, unsigned worker);  // false when skipped (cancelled sequence)
  // --- waiting and errors ---
  void wait_all();
  void wait(sequence_state& s);
  void record_error(sequence_state& s, std::exception_ptr e);
  unsigned current_worker() const;
  void* scratch(unsigned worker, task_node* t, std::size_t i);
  void enable_trace(bool on);
  const trace_data& trace();

  unsigned workers;
  std::size_t window;
  const void* inserter = &current_body;  // the inserting thread (see check_caller)
  std::shared_ptr<spdlog::logger> log;
  bool log_debug;

  std::unique_ptr<tbb::task_arena> arena;
  std::unique_ptr<gpu_backend> gpu;
  unsigned gpu_count = 0;  // logical GPUs (runtime_options::gpus)
  std::vector<std::unique_ptr<worker_state>> worker_states;
  ready_queue ready;
  submit_ring submitted_ready;  // ready at submission, pushed by the inserting thread
  std::atomic<unsigned> active_runners{0};
  std::atomic<unsigned> live_runners{0};      // enqueued or running runner_loops; the destructor waits for 0
  std::atomic<bool> locality_used{false};     // some task gave a locality hint: record writers
  // Ready tasks waiting in submitted_ready beyond which the inserting thread runs a task that is
  // ready at insertion itself instead of handing it over (64 per worker, like libgomp's bound on
  // its task queue): when the runners fall behind (tasks shorter than a hand-off between cores),
  // this keeps the backlog, the nodes in flight and the cores' shared lines few.
  std::size_t help_backlog;
  // Granularity control (runtime_options::inline_below_ns), the inserting thread's: run_inline
  // says whether tasks ready at submission run at once on it; looked at every 64 submissions.
  std::uint64_t inline_below_ticks = 0;  // 0: off
  bool run_inline = false;
  double inline_average = 0;  // ticks per body, lately: a moving average while run_inline
  std::uint64_t next_look = 0;                    // the task id at which to look next
  std::uint64_t looked_ticks = 0, looked_bodies = 0;  // the samples' sums at the last decision
  unsigned linger_us = 200;  // how long an idle runner polls before it leaves (TESSERA_LINGER_US)
  unsigned max_runners;

  // In flight = submitted (inserting thread only) - completed (workers): see sequence_state.
  // Each on a line of its own, away from the runner counts that workers change.
  alignas(64) std::size_t submitted = 0;
  std::size_t completed_seen = 0;  // the inserting thread's last read of completed
  alignas(64) std::atomic<std::size_t> completed{0};
  std::size_t in_flight() const noexcept { return submitted - completed.load(std::memory_order_acquire); }
  // A line of their own: the inserting thread writes these for every task, while workers increment
  // `completed` for every task; on one line they would bounce between the cores each time.
  alignas(64) std::uint64_t next_id = 0;
  task_node* open_builder = nullptr;
  // Progress (runtime::tasks_submitted/tasks_completed), readable from any thread: the inserting
  // thread alone writes these, so a plain load and store each, on this line it writes anyway.
  std::atomic<std::uint64_t> submitted_total{0};
  std::atomic<std::uint64_t> completed_at_submission{0};  // see complete_at_submission
  std::uint64_t tasks_completed() const noexcept {
    return completed.load(std::memory_order_acquire) + completed_at_submission.load(std::memory_order_acquire);
  }

  std::deque<handle_state> handles;
  std::shared_ptr<sequence_state> default_sequence = std::make_shared<sequence_state>();
  std::vector<std::shared_ptr<sequence_state>> sequences;  // those made by make_sequence

  std::mutex errors_mutex;
  std::vector<sequence_state*> failed;  // sequences with an unreported error, in failure order

  // Node pool: nodes keep their vectors' capacity across reuse.
  spinlock pool_lock;
  std::vector<task_node*> pool_shared;  // returned by any thread
  std::vector<task_node*> pool_local;   // taken by the inserting thread
  std::vector<std::unique_ptr<task_node>> all_nodes;

  // Tracing.
  std::atomic<bool> tracing{false};
  std::uint64_t trace_origin_ns = 0;
  std::vector<trace_edge> trace_edges;   // inserting thread only
  trace_data merged;
  bool merged_valid = false;
};

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

}  // namespace tessera::detail
