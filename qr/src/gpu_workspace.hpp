#pragma once
// Per-stream device workspace for GPU task bodies, grown (stream-ordered pool) to the largest
// request. GPU task bodies run on the runtime's one GPU thread, so the map needs no lock.
#include <cuda_runtime.h>

#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include "tessera/sched/cuda.hpp"

namespace tessera::qr::detail {

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
