// Memory owned through the runtime: device_buffer and pinned_buffer (tessera/sched/memory.hpp),
// and the test hooks that make the backend's allocations and launches fail.
#include "tessera/sched/memory.hpp"

#include <atomic>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>

#include "runtime_impl.hpp"
#include "tessera/sched/detail/testing.hpp"
#include "tessera/sched/runtime.hpp"

namespace tessera {

std::size_t host_memory_available() noexcept {
  try {
    std::ifstream meminfo("/proc/meminfo");
    std::string key, unit;
    std::size_t kib = 0;
    while (meminfo >> key >> kib >> unit)
      if (key == "MemAvailable:") return kib * 1024;
  } catch (...) {
  }
  return std::numeric_limits<std::size_t>::max();
}

namespace detail {

std::atomic<unsigned> injected_allocation_failures{0};
std::atomic<unsigned> injected_launch_failures{0};

void gpu_allocation::reset() noexcept {
  if (_data) _owner->free(_data, _pinned, _gpu);
  _data = nullptr;
  _bytes = 0;
  _owner.reset();
}

namespace testing {
void fail_allocations(unsigned n) noexcept { injected_allocation_failures.store(n, std::memory_order_relaxed); }
void fail_gpu_launches(unsigned n) noexcept { injected_launch_failures.store(n, std::memory_order_relaxed); }
}  // namespace testing

}  // namespace detail

device_buffer runtime::allocate_device(std::size_t bytes, unsigned gpu) {
  if (!_impl->gpu) throw std::logic_error("tessera::runtime::allocate_device: the runtime has no GPU backend");
  if (gpu >= _impl->gpu_count)
    throw std::invalid_argument("tessera::runtime::allocate_device: GPU " + std::to_string(gpu) + " but the runtime has " +
                                std::to_string(_impl->gpu_count));
  void* p = _impl->gpu->allocate(bytes, false, gpu);
  return device_buffer(_impl->gpu->memory(), p, bytes, gpu);
}

pinned_buffer runtime::allocate_pinned(std::size_t bytes) {
  if (!_impl->gpu) throw std::logic_error("tessera::runtime::allocate_pinned: the runtime has no GPU backend");
  void* p = _impl->gpu->allocate(bytes, true, 0);
  return pinned_buffer(_impl->gpu->memory(), p, bytes);
}

}  // namespace tessera
