#pragma once
// Device memory for the GPU factorizations, from the device's stream-ordered pool (which the
// runtime's GPU backend keeps from one call to the next): never cudaMalloc on the hot path, where
// 8.6 GB for a 32768^2 matrix took a noticeable part of a one-second factorization.
#include <cuda_runtime.h>

#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include "tessera/sched/cuda.hpp"

namespace tessera::qr::detail {

// A device array from the pool, ready for use on any stream when the constructor returns.
template <class T>
class device_buffer {
 public:
  device_buffer(const char* func, std::size_t elements, const std::string& what) {
    if (cudaMallocAsync(reinterpret_cast<void**>(&_data), sizeof(T) * elements, nullptr) != cudaSuccess ||
        cudaStreamSynchronize(nullptr) != cudaSuccess) {
      cudaGetLastError();
      _data = nullptr;
      throw std::runtime_error(std::string("tessera::qr::") + func + ": out of device memory for the " + what);
    }
  }
  // Call after the work that used it is done.
  ~device_buffer() {
    cudaFreeAsync(_data, nullptr);
    cudaStreamSynchronize(nullptr);
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  T* get() const noexcept { return _data; }

 private:
  T* _data = nullptr;
};

// Per-stream device workspace for GPU task bodies, grown (stream-ordered pool) to the largest
// request. GPU task bodies run on the runtime's one GPU thread, so the map needs no lock.
template <class T>
class gpu_workspace {
 public:
  explicit gpu_workspace(const char* func) : _func(func) {}
  gpu_workspace(const gpu_workspace&) = delete;
  gpu_workspace& operator=(const gpu_workspace&) = delete;
  // Call after the tasks that used it are done (the runtime waited).
  ~gpu_workspace() {
    for (auto& [stream, buffer] : _work) cudaFreeAsync(buffer.first, static_cast<cudaStream_t>(stream));
  }

  T* get(task_context& ctx, std::size_t elements) {
    auto& [ptr, size] = _work[ctx.stream()];
    if (size < elements) {
      cudaStream_t s = stream_of(ctx);
      if (ptr) cudaFreeAsync(ptr, s);
      ptr = nullptr;
      size = 0;
      if (cudaMallocAsync(reinterpret_cast<void**>(&ptr), sizeof(T) * elements, s) != cudaSuccess) {
        cudaGetLastError();
        throw std::runtime_error(std::string("tessera::qr::") + _func + ": out of device memory for " +
                                 std::to_string(sizeof(T) * elements) + " bytes of workspace");
      }
      size = elements;
    }
    return ptr;
  }

 private:
  const char* _func;
  std::map<void*, std::pair<T*, std::size_t>> _work;
};

}  // namespace tessera::qr::detail
