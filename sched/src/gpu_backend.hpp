#pragma once
// The GPU backend's interface to the runtime core. One thread (the GPU thread) launches GPU task
// bodies on a pool of streams (highest priority first, a bounded number in flight per stream),
// issues host<->device copies on two copy streams as soon as a task is ready, and completes tasks
// when their CUDA events fire, so CPU workers never block on the device.
#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "tessera/sched/runtime.hpp"

namespace tessera::detail {

struct runtime_impl;
struct task_node;
struct handle_state;

// Frees what runtime::allocate_device / allocate_pinned handed out. Shared by the backend and its
// buffers, so a buffer that outlives the runtime can still be freed.
class gpu_memory {
 public:
  virtual ~gpu_memory() = default;
  virtual void free(void* p, bool pinned, unsigned gpu) noexcept = 0;
};

// Test hooks (tessera/sched/detail/testing.hpp): failures the backend fakes, counted down.
extern std::atomic<unsigned> injected_allocation_failures;
extern std::atomic<unsigned> injected_launch_failures;
inline bool take_injected(std::atomic<unsigned>& n) noexcept {
  unsigned left = n.load(std::memory_order_relaxed);
  while (left > 0 && !n.compare_exchange_weak(left, left - 1, std::memory_order_relaxed)) {
  }
  return left > 0;
}

class gpu_backend;

// The GPU backend lives in a library of its own (Tessera::sched_cuda), so that the core never
// links CUDA; linked in, it registers these (tessera::enable_gpu_backend).
struct gpu_backend_entry {
  bool (*available)() noexcept;
  std::unique_ptr<gpu_backend> (*create)(runtime_impl& rt, const runtime_options& options);
};
void register_gpu_backend(const gpu_backend_entry& entry) noexcept;

class gpu_backend {
 public:
  // The registered backend's: false, and a std::runtime_error naming Tessera::sched_cuda, if none.
  static bool available() noexcept;
  static std::unique_ptr<gpu_backend> create(runtime_impl& rt, const runtime_options& options);
  virtual ~gpu_backend() = default;

  // A ready task that is a GPU task, or a CPU task that may need host copies first.
  virtual void submit(task_node* t) = 0;
  // A CPU task wrote h: the host copy is now the only current one.
  virtual void cpu_wrote(handle_state* h) = 0;
  virtual void place(handle_state* h, void* device, std::size_t pitch, unsigned gpu) = 0;
  virtual transfer_stats stats() const = 0;
  // Streams are numbered across the logical GPUs (task_node::stream).
  virtual void* stream(unsigned i) const = 0;
  virtual void* blas(unsigned i) const = 0;
  virtual unsigned streams() const = 0;
  virtual unsigned gpus() const = 0;
  // Stream i's device workspace for GPU tasks' scratch (task_builder::scratch), sized by launch.
  virtual void* scratch(unsigned stream) const = 0;
  // runtime::allocate_device / allocate_pinned: throw std::runtime_error when they cannot.
  virtual void* allocate(std::size_t bytes, bool pinned, unsigned gpu) = 0;
  virtual std::shared_ptr<gpu_memory> memory() const = 0;
  // Trace records of GPU tasks and copies; tracks numbered from first_track.
  virtual void take_trace(std::vector<trace_task>& out, std::vector<std::string>& tracks, int first_track,
                          std::uint64_t origin_ns) = 0;
  virtual void start_trace() = 0;
};

}  // namespace tessera::detail
