#include "tessera/sched/cuda.hpp"
#include "tessera/sched/memory.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tessera {
namespace {

#if defined(__linux__)
constexpr std::size_t huge_page = std::size_t(2) << 20;
// Below this cudaMallocHost's cost (about 0.4 ms a MiB) is small beside a thread's start.
constexpr std::size_t mapped_from = std::size_t(32) << 20;
constexpr std::size_t touch_per_thread = std::size_t(64) << 20;
constexpr unsigned max_touch_threads = 16;

std::mutex registry_mutex;
// The mapped blocks and their sizes (registry_mutex): what pinned_host_free must unmap. Never
// destroyed, so that a runtime destroyed at exit can still free its blocks.
std::unordered_map<void*, std::size_t>& mapped() {
  static auto* blocks = new std::unordered_map<void*, std::size_t>;
  return *blocks;
}

// A fresh mapping's pages are zeroed by the kernel on first touch; one thread does about 6 GB/s
// with huge pages, several together about 25 GB/s.
void touch(char* p, std::size_t bytes) noexcept {
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t parts =
      std::max<std::size_t>(1, std::min<std::size_t>({hw, max_touch_threads, bytes / touch_per_thread}));
  const std::size_t chunk = (bytes / parts + huge_page - 1) / huge_page * huge_page;
  auto part = [&](std::size_t i) {
    const std::size_t begin = std::min(bytes, i * chunk), end = std::min(bytes, begin + chunk);
    if (end > begin) std::memset(p + begin, 0, end - begin);
  };
  std::vector<std::thread> threads;
  std::size_t started = 1;
  try {
    threads.reserve(parts - 1);
    for (; started < parts; ++started) threads.emplace_back(part, started);
  } catch (...) {  // no thread to be had: this one touches the rest
  }
  part(0);
  for (std::size_t i = started; i < parts; ++i) part(i);
  for (std::thread& t : threads) t.join();
}

// `size` bytes (a multiple of huge_page) mapped at a huge-page boundary, so that every page of it
// can be huge; null when the mapping fails.
char* map_aligned(std::size_t size) noexcept {
  void* raw = mmap(nullptr, size + huge_page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto r = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t start = (r + huge_page - 1) / huge_page * huge_page;
  if (start > r) munmap(raw, start - r);
  const std::uintptr_t end = start + size, raw_end = r + size + huge_page;
  if (raw_end > end) munmap(reinterpret_cast<void*>(end), raw_end - end);
  auto* p = reinterpret_cast<char*>(start);
  madvise(p, size, MADV_HUGEPAGE);  // a hint: without huge pages it still works, more slowly
  return p;
}
#endif

}  // namespace

cudaError_t pinned_host_alloc(void** p, std::size_t bytes) noexcept {
  *p = nullptr;
#if defined(__linux__)
  // Touching pages that are not there would wake the OOM killer, not return an error: a block
  // near or beyond what is available is left to cudaMallocHost, which fails with an error.
  if (bytes >= mapped_from && bytes < host_memory_available() / 10 * 9) {
    const std::size_t size = (bytes + huge_page - 1) / huge_page * huge_page;
    if (char* q = map_aligned(size)) {
      touch(q, size);
      if (cudaHostRegister(q, size, cudaHostRegisterPortable) == cudaSuccess) {
        try {
          std::lock_guard lock(registry_mutex);
          mapped().emplace(q, size);
          *p = q;
          return cudaSuccess;
        } catch (...) {  // no room to remember it: give it back
        }
        cudaHostUnregister(q);
      }
      cudaGetLastError();
      munmap(q, size);
    }
  }
#endif
  return cudaMallocHost(p, bytes ? bytes : 1);
}

void pinned_host_free(void* p) noexcept {
  if (!p) return;
#if defined(__linux__)
  std::size_t size = 0;
  {
    std::lock_guard lock(registry_mutex);
    const auto it = mapped().find(p);
    if (it != mapped().end()) {
      size = it->second;
      mapped().erase(it);
    }
  }
  if (size) {
    cudaHostUnregister(p);
    munmap(p, size);
    return;
  }
#endif
  cudaFreeHost(p);
}

}  // namespace tessera
