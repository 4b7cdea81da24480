#pragma once
// Tile QR on the CPUs and a GPU (the seed's Figure 2 and 5b). The CPUs factor each panel (GEQRT,
// TSQRT) and update the first `lookahead` tile columns of the trailing matrix, so the next panels
// can proceed; the GPU updates the rest: aggregated tasks that inherit the dependencies of the CPU
// ORMQR/TSMQR tasks they replace. When the trailing width falls to the lookahead, the CPUs finish.
// The runtime moves tiles between host and device: the matrix goes to the device as it is first
// needed, then only the moving boundary travels (panel and T column in, the columns that pass to
// the CPUs and the finished rows of R out).
#include <atomic>
#include <cstdint>
#include <string>

#include "tessera/qr/geqrf.hpp"
#include "tessera/qr/tile_matrix.hpp"
#include "tessera/sched/runtime.hpp"

namespace tessera::qr {

struct hybrid_options {
  int lookahead = 0;         // tile columns the CPUs update ahead of the GPU; 0 (measured
                             // fastest, default_lookahead): the CPUs only factor panels;
                             // 1: the seed's "GPU-only"
  bool row_pipelined = true; // one GPU task per TSQRT, started as soon as that row is factored;
                             // false: one per panel (Figure 5b)
  bool split_next = true;    // the GPU column the CPUs take at the next step gets tasks of its own
  int gpu_rows = 2;          // with row_pipelined and split_next: TSQRT rows per GPU task of the
                             // bulk update (the column the CPUs take next stays one per row), so
                             // that its GEMMs run batched (kernels::gpu_sssmqr)
  std::atomic<std::uint64_t>* progress = nullptr;  // ticks once per task, as geqrf_options
};

// Priority of the GPU tasks on the CPUs' path (the tile column the CPUs take at the next step);
// the GPU's bulk updates have priority 1. A runtime whose gpu_urgent_priority is at most this
// gives them a stream of their own (hybrid_runtime_options does).
inline constexpr int hybrid_urgent_priority = 1 << 20;

// Runtime options geqrf_hybrid was tuned with (docs/results/history.md, "GPU and hybrid"):
// `workers` CPU workers (0: all cores), three GPU streams with at most two tasks in flight each (three were 3-5% faster than two
// at n = 8192, 16384 and 32768), and an urgent stream.
runtime_options hybrid_runtime_options(unsigned workers = 0);

// True when Tessera was built with CUDA and a CUDA device is present.
bool hybrid_available() noexcept;

// Pinned host memory for the tiles of a matrix that will travel to the GPU (qr_factors' allocator).
// Without CUDA it is the default allocator.
tile_allocator pinned_allocator() noexcept;

// Factors f (made with rt) on the CPUs and the GPU of rt (runtime_options::gpu_streams > 0), waits,
// and leaves the result on the host. The device matrix lives for the call only.
template <class T>
void geqrf_hybrid(runtime& rt, qr_factors<T>& f, const hybrid_options& options = {});

// Number of tasks geqrf_hybrid inserts (progress reports).
std::uint64_t hybrid_task_count(int mt, int nt, const hybrid_options& options);

// The GPU's name, or "" without one.
std::string gpu_name();

// Tile size for the GPU modes when none is given, measured on an H200 with 16 cores
// (docs/results/history.md, lookahead 0, medians of 3): 192 below n = 8192 (not re-measured since
// lookahead 0), 256 from 8192 (0.149 s against 0.165 at nb 192; at 16384 0.49 s against 0.78, 320
// no faster), 384 from 32768 (2.54 s against 2.73 at 256): larger tiles make the GPU's GEMMs
// (inner dimension nb) faster while the CPUs, now only factoring panels, keep up.
int default_gpu_tile_size(int n) noexcept;

// Lookahead chosen when none is given (nt: tile columns), measured on the GPU machine
// (docs/results/history.md, "GPU and hybrid"): 0, the CPUs factor the panels and the GPU does
// every update.
int default_lookahead(int nt) noexcept;

}  // namespace tessera::qr
