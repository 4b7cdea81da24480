// Page-locked host memory for the GPU backend's pinned buffers and staging.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace tessera::detail {

// *p := `bytes` of page-locked host memory, or cudaMallocHost's error. Large blocks are anonymous
// mappings asked for transparent huge pages, first touched by several threads, then registered
// with CUDA: on the H200 machine a GiB took 0.07 s that way against 0.38-0.47 s from
// cudaMallocHost, and 0.02 s to free against 0.10 s (docs/results/2026-11-28-pinned-host-h200.md).
cudaError_t pinned_host_alloc(void** p, std::size_t bytes) noexcept;

// Frees what pinned_host_alloc gave, whichever way it was made.
void pinned_host_free(void* p) noexcept;

}  // namespace tessera::detail
