#pragma once
// The runtime: sequential code inserts tasks with access lists; the runtime infers RAW/WAR/WAW
// hazards from them and runs each task once its predecessors are done, on a oneTBB arena.
// Execution is equivalent to running the tasks one after another in insertion order.
//
//   tessera::runtime rt({.workers = 4});
//   auto a = rt.register_data(x, sizeof x), b = rt.register_data(y, sizeof y);
//   rt.task([&] { *x = 1; }).write(a).submit();
//   rt.task([&] { *y = *x + 1; }).read(a).write(b).submit();   // waits for the first (RAW)
//   rt.wait_all();
//
// Task aggregation: a task is created empty and accesses are added in a loop before submit();
// each add costs the same whatever the number already added.
//
// Threads. One thread, the inserting thread, inserts tasks (task), registers data (register_*),
// makes sequences, waits (wait, wait_all) and reads traces: the thread that constructed the
// runtime, until another calls set_inserting_thread(). Those calls from any other thread, or from
// inside a task body of this runtime (where wait would wait for itself, and insertion would race
// with the inserting thread), throw std::logic_error and change nothing; from inside a body the
// error fails that task like any other, and the runtime stays usable. The check costs a thread-
// local address compare per call. Other calls (tasks_submitted, tasks_completed, workers, has_gpu,
// transfers, allocate_device, allocate_pinned) may come from any thread.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tessera/sched/access.hpp"
#include "tessera/sched/detail/task_fn.hpp"
#include "tessera/sched/handle.hpp"
#include "tessera/sched/memory.hpp"
#include "tessera/sched/trace.hpp"

namespace tessera {
namespace detail {
struct task_node;
struct runtime_impl;
struct sequence_state;
task_node* new_task(runtime_impl& impl);
}  // namespace detail

struct runtime_options {
  // Threads that run CPU tasks, the inserting thread included; 0: all cores. At most 4 per
  // hardware thread (and at least 64 allowed): more only oversubscribes, so the constructor throws
  // std::invalid_argument naming `workers` and the bound.
  unsigned workers = 0;
  std::size_t window = 1 << 18;  // tasks in flight before the inserting thread stops and helps run them
  bool trace = false;          // record a trace from the start (see runtime::enable_trace)
  // Granularity control: while the task bodies timed lately took less than this on average, a task
  // that is ready when it is submitted runs at once on the inserting thread instead of being handed
  // to a worker (a hand-off between cores costs the inserting thread more than such a body: 0.05 to
  // 0.15 us per task on the 2-core VM, depending on its cross-core latency). One body longer than
  // this ends it until the next look at the samples. 0: always hand tasks over.
  unsigned inline_below_ns = 100;
  // GPU backend: with gpu_streams > 0 the runtime drives one CUDA device (gpu_device) with that many
  // streams, each with its own cuBLAS handle; needs a CUDA build and a device (runtime::gpu_available).
  unsigned gpu_streams = 0;
  int gpu_device = 0;
  // GPU tasks wait in the runtime, highest priority first, until a stream has fewer than this many
  // in flight: enough to keep the device busy, few enough that a task made ready later with a higher
  // priority does not queue behind a stream's backlog. 0: no limit (launch as soon as ready).
  unsigned gpu_stream_depth = 2;
  // GPU tasks with at least this priority may also run on one more stream, kept for them and created
  // with CUDA's highest stream priority, so the device's block scheduler favours them (tasks on a
  // critical path, say). The default: no such stream.
  int gpu_urgent_priority = std::numeric_limits<int>::max();
  // With an urgent stream: SMs reserved for it (CUDA green contexts, driver 12.5 or later), the
  // other streams get the rest. Stream priorities order only thread blocks not yet started, so
  // urgent work still waits for the running blocks of a long GEMM; reserved SMs never do.
  // 0: no reservation, every stream may use every SM.
  unsigned gpu_urgent_sms = 0;
  // Several GPUs: the CUDA device of each logical GPU, which tasks and copies name by index
  // (task_builder::gpu). Empty: one, gpu_device. A device may appear more than once, so that the
  // several-GPU paths (placement, copies between GPUs) run on one physical GPU in tests; each
  // logical GPU has its own streams, cuBLAS handles, copy streams and scratch all the same.
  std::vector<int> gpus = {};
  // Copies between logical GPUs go through pinned host memory even where a direct copy could be
  // made (peer access, or the same physical GPU): the path a machine without peer access takes.
  bool gpu_copies_through_host = false;
};

// The GPU backend is a library of its own, Tessera::sched_cuda (tessera_sched_cuda), so that the
// scheduler alone (Tessera::sched) needs no CUDA. Linking it registers the backend; so does this
// call, which it defines (tessera/sched/cuda.hpp makes it for its includers). Without the backend,
// runtime::gpu_available() is false and gpu_streams > 0 throws std::runtime_error naming it.
bool enable_gpu_backend() noexcept;

// Bytes and copies the GPU backend moved between host and device.
struct transfer_stats {
  std::uint64_t h2d_bytes = 0, d2h_bytes = 0;
  std::uint64_t h2d_copies = 0, d2h_copies = 0;
  // Between logical GPUs (runtime_options::gpus): every copy from one GPU to another; of those, the
  // ones made through pinned host memory (no peer access, or gpu_copies_through_host).
  std::uint64_t peer_bytes = 0, peer_copies = 0;
  std::uint64_t staged_peer_copies = 0;
};

// A sequence groups tasks for error handling: when a task throws, the tasks of its sequence that
// have not started are cancelled (they complete without running their body), and the error
// reaches whoever waits. Tasks of other sequences are unaffected.
class sequence {
 public:
  sequence() = default;
  bool cancelled() const noexcept;
  explicit operator bool() const noexcept { return _state != nullptr; }

 private:
  explicit sequence(std::shared_ptr<detail::sequence_state> s) : _state(std::move(s)) {}
  std::shared_ptr<detail::sequence_state> _state;
  friend class runtime;
  friend class task_builder;
};

// What a running task can ask of the runtime.
class task_context {
 public:
  unsigned worker() const noexcept { return _worker; }   // 0 .. workers-1 (0: the inserting thread)
  std::uint64_t task_id() const noexcept;                 // insertion order
  // The i-th scratch(bytes) of the task: a CPU task's lies in its worker's host workspace, a GPU
  // task's in its stream's device workspace (a device pointer, valid on stream() for the body).
  void* scratch(std::size_t i = 0) const;
  template <class T>
  const T& value(std::size_t i) const {                   // the i-th value(x) of the task
    return *static_cast<const T*>(_value(i));
  }
  // GPU tasks (see tessera/sched/cuda.hpp for typed versions): the cudaStream_t to enqueue on, its
  // cublasHandle_t, and where a handle's device copy lives (valid on this stream when the body runs).
  void* stream() const;
  void* blas() const;
  unsigned gpu() const;  // the logical GPU the task runs on (an index into runtime_options::gpus)
  void* device_data(handle h) const;
  std::size_t device_pitch(handle h) const;

 private:
  task_context(detail::runtime_impl* rt, detail::task_node* t, unsigned worker) noexcept
      : _rt(rt), _task(t), _worker(worker) {}
  const void* _value(std::size_t i) const;
  detail::runtime_impl* _rt;
  detail::task_node* _task;
  unsigned _worker;
  friend struct detail::runtime_impl;
};

// Builds one task: returned by runtime::task, filled with accesses and options, then submitted.
// Accesses are resolved as they are added, so an aggregated task with 10^5 accesses costs 10^5
// constant-time steps. No other task may be inserted between runtime::task and submit().
class task_builder {
 public:
  task_builder(task_builder&& other) noexcept
      : _rt(std::exchange(other._rt, nullptr)), _task(std::exchange(other._task, nullptr)) {}
  task_builder(const task_builder&) = delete;
  task_builder& operator=(const task_builder&) = delete;
  task_builder& operator=(task_builder&&) = delete;
  ~task_builder();  // submits a task that was not submitted, so nothing waits forever

  task_builder& read(handle h) { return add(h, access::read); }
  task_builder& write(handle h) { return add(h, access::write); }
  task_builder& read_write(handle h) { return add(h, access::read_write); }
  task_builder& accumulate(handle h) { return add(h, access::accumulate); }
  task_builder& add(handle h, access mode);

  // Workspace for the body, see task_context::scratch. CPU task: per-worker host memory. GPU task
  // (call on(device::gpu) first or after, either way): per-stream device memory from the
  // stream-ordered pool, grown to the largest request and kept across tasks, freed with the
  // runtime; when it cannot be had, the task fails with a std::runtime_error naming the bytes
  // (its sequence is cancelled, the error reaches wait).
  task_builder& scratch(std::size_t bytes);
  template <class T>
  task_builder& value(const T& v) {                  // a copied argument, see task_context::value
    static_assert(std::is_trivially_copyable_v<T>, "value() copies bytes: use a lambda capture otherwise");
    return _add_value(&v, sizeof(T), alignof(T));
  }
  task_builder& priority(int p);                     // higher runs first among ready tasks
  task_builder& locality(handle h);                  // prefer the worker that last wrote h
  task_builder& label(std::string_view name);        // shown in traces
  task_builder& color(std::uint32_t rgb);            // 0xRRGGBB in traces
  task_builder& in(const sequence& s);               // default: the runtime's own sequence
  task_builder& on(device d);                        // default: device::cpu
  // A GPU task on logical GPU `index` (runtime_options::gpus); implies on(device::gpu). A GPU task
  // that names none is placed at submission on the GPU that the last GPU writers (in insertion
  // order) of most of its bytes ran on, or GPU 0 when none did.
  task_builder& gpu(unsigned index);

  void submit();

 private:
  task_builder(detail::runtime_impl* rt, detail::task_node* t) noexcept : _rt(rt), _task(t) {}
  task_builder& _add_value(const void* p, std::size_t size, std::size_t align);
  detail::runtime_impl* _rt;
  detail::task_node* _task;
  friend class runtime;
};

class runtime {
 public:
  explicit runtime(runtime_options options = {});
  ~runtime();  // waits for every task; errors not yet reported are logged, not thrown
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  handle register_data(void* data, std::size_t bytes);
  // A strided datum: `runs` runs of `run_bytes` contiguous bytes, `pitch` bytes apart (a column-major
  // tile: runs = columns, run_bytes = rows * sizeof(T), pitch = ld * sizeof(T)).
  handle register_data(void* data, std::size_t run_bytes, std::size_t runs, std::size_t pitch);
  handle register_key(std::uint64_t key);

  // GPU backend. Copies between host and device are the runtime's: a GPU task that reads a datum
  // whose current copy is on the host gets it copied first, and a CPU task likewise the other way.
  // place_on_device says where a datum's device copy lives (runs device_pitch bytes apart), e.g.
  // inside one device matrix; otherwise the runtime takes it from a stream-ordered memory pool.
  static bool gpu_available() noexcept;
  bool has_gpu() const noexcept;
  unsigned gpus() const noexcept;  // logical GPUs (runtime_options::gpus); 0 without the backend
  // gpu: which logical GPU's copy lives there (each GPU's copy is placed, or pooled, separately).
  void place_on_device(handle h, void* device_data, std::size_t device_pitch, unsigned gpu = 0);
  // Forgets h's device copy (before its memory goes): call after a wait, once the host holds what
  // the caller needs (a CPU task that read h brought it home).
  void release_device(handle h);
  transfer_stats transfers() const;

  // Data that lives only in device memory (a cuSOLVER, CuPy or PyTorch matrix): its only current
  // copy is at device_ptr (`runs` runs of `run_bytes` bytes, `pitch` bytes apart). GPU tasks use it
  // in place (task_context::device_data gives device_ptr); the runtime never copies it. A CPU task
  // may not access it: task_builder::add throws std::invalid_argument (so call on(device::gpu)
  // before adding its accesses), and so does on(device::cpu) on a task that has. Throws
  // std::logic_error if the runtime has no GPU backend. handle::data() is null for such data.
  // With several GPUs it lives on logical GPU `gpu`: tasks on other GPUs may read it (the runtime
  // copies it there), only tasks on its own may write it (a write elsewhere fails that task).
  handle register_device_data(void* device_ptr, std::size_t run_bytes, std::size_t runs, std::size_t pitch,
                              unsigned gpu = 0);

  // Device memory and pinned host memory owned through this runtime's GPU backend, freed by RAII
  // without synchronizing the device: see tessera/sched/memory.hpp for when a buffer may go.
  // Throw std::runtime_error naming the bytes, the memory kind and the bytes free when the memory
  // cannot be had; std::logic_error if the runtime has no GPU backend.
  device_buffer allocate_device(std::size_t bytes, unsigned gpu = 0);  // on logical GPU gpu
  pinned_buffer allocate_pinned(std::size_t bytes);

  // A new task running body (callable as body(task_context&) or body()). Add accesses, submit.
  template <class F>
  task_builder task(F&& body) {
    detail::task_node* t = detail::new_task(*_impl);
    _set_body(t).emplace(std::forward<F>(body));
    return task_builder(_impl.get(), t);
  }

  sequence make_sequence();

  // Waits for every inserted task, the calling thread helping to run them; then rethrows the first
  // error of any sequence not yet reported, and clears it: the runtime stays usable. A task's own
  // exception reaches the waiter as it was thrown (type and message); errors the runtime raises
  // for a GPU task (a failed copy, allocation or CUDA call) name the task by label and id.
  void wait_all();
  // Waits for the tasks of s; rethrows its error and clears it.
  void wait(const sequence& s);

  // Progress, cumulative since construction, for callers that report it (no counters in task
  // bodies needed). tasks_submitted: tasks submitted. tasks_completed: tasks finished, whether
  // their body ran, threw, or was skipped because their sequence was cancelled. Cheap (a load or
  // two, no lock, nothing added to a task's run) and safe from any thread, task bodies included.
  // Both only grow; after wait_all() they are equal. Read completed before submitted and
  // completed <= submitted.
  std::uint64_t tasks_submitted() const noexcept;
  std::uint64_t tasks_completed() const noexcept;

  unsigned workers() const noexcept;
  std::size_t window() const noexcept;

  // Hands insertion over: the calling thread becomes the inserting thread (see the top of this
  // file). The previous one must have made its last call on the runtime before this one (join it,
  // or hand over through a mutex or other synchronization), and no task may be being built.
  void set_inserting_thread();

  // Tracing costs one predictable branch per task when off. The trace holds every task and edge
  // recorded since it was last enabled; read it after a wait.
  void enable_trace(bool on);
  const trace_data& trace() const;

 private:
  detail::task_fn& _set_body(detail::task_node* t);
  std::unique_ptr<detail::runtime_impl> _impl;
};

}  // namespace tessera
