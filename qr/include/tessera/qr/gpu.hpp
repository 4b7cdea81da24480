#pragma once
// What every GPU path of qr/ shares: whether a GPU is there, the runtime setting the GPU QRs were
// tuned with, pinned host memory for matrices that travel, and the urgent priority.
#include <string>

#include "tessera/qr/tile_matrix.hpp"
#include "tessera/sched/runtime.hpp"

namespace tessera::qr {

// True when Tessera was built with CUDA, its GPU backend is linked, and a CUDA device is present.
bool gpu_available() noexcept;

// CUDA devices on this machine (0 without CUDA or a device).
int gpu_count() noexcept;

// The GPU's name, or "" without one.
std::string gpu_name();

// Priority of GPU tasks on a factorization's critical path (the next panel's column); bulk
// updates have priority 1. gpu_runtime_options gives tasks at or above it a stream of their own.
inline constexpr int urgent_priority = 1 << 20;

// Runtime options the GPU QRs were tuned with (docs/architecture.md): `workers` CPU workers (0: all
// cores), three GPU streams with at most two tasks in flight each, and an urgent stream.
runtime_options gpu_runtime_options(unsigned workers = 0);

// Pinned host memory for tiles that travel to the GPU (a tile_allocator); without a GPU, the
// default allocator.
tile_allocator pinned_allocator() noexcept;

}  // namespace tessera::qr
