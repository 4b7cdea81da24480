#pragma once
// Tile QR on the CPUs and a GPU (the seed's Figure 2 and 5b). The CPUs factor each panel (GEQRT,
// TSQRT) and update the first `lookahead` tile columns of the trailing matrix, so the next panels
// can proceed; the GPU updates the rest: aggregated tasks that inherit the dependencies of the CPU
// ORMQR/TSMQR tasks they replace. When the trailing width falls to the lookahead, the CPUs finish.
// The runtime moves tiles between host and device: the matrix goes to the device as it is first
// needed, then only the moving boundary travels (panel and T column in, the columns that pass to
// the CPUs and the finished rows of R out).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/qr/geqrf.hpp"
#include "tessera/qr/gpu.hpp"
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
  unsigned gpus = 1;         // logical GPUs of the runtime sharing the GPU's columns: contiguous
                             // ranges of equal width, moved every step (each GPU holds a copy of
                             // the device matrix's layout; a column that changes GPU travels)
};

// Factors f (made with rt) on the CPUs and the GPU of rt (runtime_options::gpu_streams > 0), or
// options.gpus of its GPUs, waits, and leaves the result on the host. The device matrices live for
// the call only. Throws std::invalid_argument when the runtime has fewer GPUs than options.gpus.
template <class T>
void geqrf_hybrid(runtime& rt, qr_factors<T>& f, const hybrid_options& options = {});

// Bytes the hybrid on `gpus` GPUs copies between them for each of its steps (m x n, tiles nb x nb,
// inner block ib, hybrid_options::lookahead, elem bytes an entry), with direct copies between the
// GPUs: the rows from the step's down of every column whose GPU changes as the ranges move, and the
// panel's V and T, which come from the host to the first GPU that reads them and from it to the
// other GPUs with columns (through the host, runtime_options::gpu_copies_through_host, the panel
// comes from the host to every GPU instead).
std::vector<std::uint64_t> hybrid_peer_bytes(int m, int n, int nb, int ib, int lookahead, unsigned gpus,
                                             std::size_t elem);

// Tile size of the tile hybrid when none is given: 192 below n = 8192, 256 from there, 384 from
// 32768, measured (docs/architecture.md): larger tiles speed the GPU's GEMMs (inner dimension nb)
// while the CPUs, only factoring panels, keep up.
int default_gpu_tile_size(int n) noexcept;

// Lookahead of the tile hybrid when none is given (nt: tile columns): 0, measured fastest: the
// CPUs factor the panels and the GPU does every update (docs/architecture.md).
int default_lookahead(int nt) noexcept;

}  // namespace tessera::qr
