// Finding the GPU backend: Tessera::sched_cuda registers itself when it is linked, so the core
// (Tessera::sched) never links CUDA and a scheduler-only program needs no CUDA at all.
#include <atomic>
#include <stdexcept>

#include "gpu_backend.hpp"
#include "tessera/sched/runtime.hpp"

namespace tessera {
// Weak: null unless Tessera::sched_cuda is linked. Asked for here as well as registered by the
// backend's own static initializer, so that code running before that one (another file's static
// initializer asking gpu_available) finds the backend too.
[[gnu::weak]] bool enable_gpu_backend() noexcept;
}  // namespace tessera

namespace tessera::detail {
namespace {
std::atomic<const gpu_backend_entry*> registered{nullptr};

const gpu_backend_entry* backend() noexcept {
  const gpu_backend_entry* e = registered.load(std::memory_order_acquire);
  if (!e && &enable_gpu_backend != nullptr) {
    enable_gpu_backend();
    e = registered.load(std::memory_order_acquire);
  }
  return e;
}
}  // namespace

void register_gpu_backend(const gpu_backend_entry& entry) noexcept { registered.store(&entry, std::memory_order_release); }

bool gpu_backend::available() noexcept {
  const gpu_backend_entry* e = backend();
  return e && e->available();
}

std::unique_ptr<gpu_backend> gpu_backend::create(runtime_impl& rt, const runtime_options& options) {
  const gpu_backend_entry* e = backend();
  if (!e)
    throw std::runtime_error(
        "tessera::runtime: gpu_streams > 0 but the GPU backend is not linked: link Tessera::sched_cuda (the "
        "tessera_sched_cuda library, which a Tessera built with CUDA has) and include tessera/sched/cuda.hpp "
        "or call tessera::enable_gpu_backend()");
  return e->create(rt, options);
}

}  // namespace tessera::detail
