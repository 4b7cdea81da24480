#pragma once
// Device memory and pinned host memory owned through a runtime's GPU backend, as RAII buffers.
// Needs no CUDA headers: a buffer is an opaque pointer and a size; get<T>() gives typed access.
//
//   tessera::runtime rt({.gpu_streams = 2});
//   tessera::device_buffer a = rt.allocate_device(n * sizeof(double));   // throws if it cannot
//   tessera::pinned_buffer staging = rt.allocate_pinned(n * sizeof(double));
//   double* d = a.get<double>();
//
// Allocation failure throws std::runtime_error naming the bytes asked for, the memory kind
// ("device memory" or "pinned host memory") and, for device memory, the bytes free.
//
// Freeing (destructor, reset, move-assignment): never synchronizes the device. While the runtime
// lives, the memory is released after all work the runtime has enqueued on its streams so far
// (device memory: cudaFreeAsync ordered after every stream; pinned memory: once an event after
// that work has fired). So a buffer may go as soon as no task that uses it is still waiting to be
// launched: after a wait() or wait_all() covering those tasks. A buffer that outlives its
// runtime is freed at once, the runtime having waited for all its work.
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <utility>

namespace tessera {

// Device or pinned host memory that could not be had (runtime::allocate_device/_pinned, a GPU
// task's scratch, a datum's device copy): the message names the bytes and the memory, and the
// bytes free where CUDA can tell. Tools report it as a resource error (exit code 3).
struct out_of_memory : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Host memory the kernel could give without swapping (Linux's MemAvailable: free memory and
// reclaimable caches), in bytes; the largest size_t where that cannot be told.
std::size_t host_memory_available() noexcept;

class runtime;
namespace detail {
class gpu_memory;

// What device_buffer and pinned_buffer share: the memory, its size, and who frees it.
class gpu_allocation {
 public:
  gpu_allocation(const gpu_allocation&) = delete;
  gpu_allocation& operator=(const gpu_allocation&) = delete;
  gpu_allocation(gpu_allocation&& other) noexcept
      : _owner(std::move(other._owner)), _data(std::exchange(other._data, nullptr)),
        _bytes(std::exchange(other._bytes, 0)), _pinned(other._pinned), _gpu(other._gpu) {}
  gpu_allocation& operator=(gpu_allocation&& other) noexcept {
    if (this != &other) {
      reset();
      _owner = std::move(other._owner);
      _data = std::exchange(other._data, nullptr);
      _bytes = std::exchange(other._bytes, 0);
      _pinned = other._pinned;
      _gpu = other._gpu;
    }
    return *this;
  }
  ~gpu_allocation() { reset(); }

  void* data() const noexcept { return _data; }
  std::size_t bytes() const noexcept { return _bytes; }
  template <class T>
  T* get() const noexcept {
    return static_cast<T*>(_data);
  }
  explicit operator bool() const noexcept { return _data != nullptr; }
  void reset() noexcept;  // frees the memory (see the rule above); the buffer becomes empty

 protected:
  gpu_allocation() noexcept = default;
  gpu_allocation(std::shared_ptr<gpu_memory> owner, void* data, std::size_t bytes, bool pinned,
                 unsigned gpu = 0) noexcept
      : _owner(std::move(owner)), _data(data), _bytes(bytes), _pinned(pinned), _gpu(gpu) {}

 private:
  std::shared_ptr<gpu_memory> _owner;  // the backend's allocator; outlives the runtime if need be
  void* _data = nullptr;
  std::size_t _bytes = 0;
  bool _pinned = false;
  unsigned _gpu = 0;  // device memory: the logical GPU it belongs to
};
}  // namespace detail

// Device memory of one of the runtime's GPUs (runtime::allocate_device).
class device_buffer : public detail::gpu_allocation {
 public:
  device_buffer() noexcept = default;

 private:
  device_buffer(std::shared_ptr<detail::gpu_memory> owner, void* data, std::size_t bytes, unsigned gpu) noexcept
      : gpu_allocation(std::move(owner), data, bytes, false, gpu) {}
  friend class runtime;
};

// Page-locked host memory, for asynchronous copies (runtime::allocate_pinned).
class pinned_buffer : public detail::gpu_allocation {
 public:
  pinned_buffer() noexcept = default;

 private:
  pinned_buffer(std::shared_ptr<detail::gpu_memory> owner, void* data, std::size_t bytes) noexcept
      : gpu_allocation(std::move(owner), data, bytes, true) {}
  friend class runtime;
};

}  // namespace tessera
