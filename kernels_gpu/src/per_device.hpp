#pragma once
// A value worked out once per CUDA device (a device attribute, an occupancy, a kernel attribute
// set), for host code that runs before every launch: the queries cost microseconds a call where
// the kernels they launch take tens.
#include <array>
#include <atomic>
#include <climits>

#include "check.hpp"

namespace tessera::kernels::detail {

class per_device_value {
 public:
  per_device_value() {
    for (auto& s : slots_) s.store(unset, std::memory_order_relaxed);
  }
  // compute() on the current device the first time, its result after. Two threads may both
  // compute it the first time: compute must give the same value and may be repeated.
  template <class F>
  int get(const char* kernel, F&& compute) {
    int dev = 0;
    check(kernel, "cudaGetDevice", cudaGetDevice(&dev));
    if (dev < 0 || dev >= max_devices) return compute();
    int v = slots_[static_cast<std::size_t>(dev)].load(std::memory_order_acquire);
    if (v == unset) {
      v = compute();
      slots_[static_cast<std::size_t>(dev)].store(v, std::memory_order_release);
    }
    return v;
  }

 private:
  static constexpr int max_devices = 64;
  static constexpr int unset = INT_MIN;
  std::array<std::atomic<int>, max_devices> slots_;
};

// The dynamic shared memory a block may opt in to on the current device, less 1 KB for the
// kernels' static arrays (cudaDevAttrMaxSharedMemoryPerBlockOptin: 227 KB on the H100 and H200,
// 163 KB on the A100, 99 KB on consumer GPUs), read once per device.
inline int shared_optin_bytes(const char* kernel) {
  static per_device_value optin;
  return optin.get(kernel, [kernel] {
    int dev = 0, bytes = 0;
    check(kernel, "cudaGetDevice", cudaGetDevice(&dev));
    check(kernel, "cudaDeviceGetAttribute", cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    return bytes > 1024 ? bytes - 1024 : 0;
  });
}

// Lets `kernel` take up to `bytes` of dynamic shared memory on the current device, set once per
// device (a function's attributes belong to each device's context); `done` is the call site's
// record.
template <class K>
void allow_shared_memory(per_device_value& done, const char* name, K* kernel, int bytes) {
  done.get(name, [&] {
    check(name, "cudaFuncSetAttribute", cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    return bytes;
  });
}

}  // namespace tessera::kernels::detail
