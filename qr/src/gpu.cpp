#include "tessera/qr/gpu.hpp"

#include <new>

#if TESSERA_QR_CUDA
#include <cuda_runtime.h>

#include "tessera/kernels_gpu/common.hpp"
#include "tessera/sched/cuda.hpp"
#endif

namespace tessera::qr {

runtime_options gpu_runtime_options(unsigned workers) {
  runtime_options o;
  o.workers = workers;
  o.gpu_streams = 3;       // three were 3-5% faster than two (docs/architecture.md)
  o.gpu_stream_depth = 2;
  o.gpu_urgent_priority = urgent_priority;
  return o;
}

#if TESSERA_QR_CUDA

bool gpu_available() noexcept { return runtime::gpu_available(); }

int gpu_count() noexcept {
  int n = 0;
  if (!runtime::gpu_available() || cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

std::string gpu_name() { return runtime::gpu_available() ? kernels::gpu_device_name() : std::string(); }

namespace {
void* pinned_allocate(std::size_t bytes) {
  void* p = nullptr;
  if (pinned_host_alloc(&p, bytes) != cudaSuccess) {
    cudaGetLastError();
    throw std::bad_alloc();
  }
  return p;
}
void pinned_deallocate(void* p, std::size_t) noexcept { pinned_host_free(p); }
}  // namespace

tile_allocator pinned_allocator() noexcept {
  if (!runtime::gpu_available()) return {};
  return {pinned_allocate, pinned_deallocate};
}

#else

bool gpu_available() noexcept { return false; }
int gpu_count() noexcept { return 0; }
std::string gpu_name() { return {}; }
tile_allocator pinned_allocator() noexcept { return {}; }

#endif

}  // namespace tessera::qr
