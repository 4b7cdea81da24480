#pragma once
// The blocked QR (blocked_qr_gpu.hpp) on several GPUs: the runtime's logical GPUs
// (runtime_options::gpus) split the trailing matrix by column blocks, 1-D block-cyclic (column
// block j lives on GPU j mod G, docs/architecture.md says why). Each step, panel k is factored on
// its owner GPU; its V and T reach every other GPU that still owns trailing columns through the
// runtime's copies between GPUs (the panel broadcast); each GPU then updates all its trailing
// columns in one aggregated task that inherits their dependencies (and the next `lookahead` column
// blocks first, one urgent task each, on their owners). Host matrices only: each GPU holds its own
// column blocks, and every column block comes home once final.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tessera/qr/blocked_qr_gpu.hpp"
#include "tessera/sched/runtime.hpp"

namespace tessera::qr {

// Bytes copied between GPUs at each step k of an m x n factorization with panel width nb on `gpus`
// GPUs (elem bytes per entry): panel k's V (rows k nb .. m) and T_k, to each GPU other than its
// owner that owns a column block right of it. What the runtime's transfer_stats::peer_bytes adds up
// to, step by step.
std::vector<std::uint64_t> multi_gpu_peer_bytes(int m, int n, int nb, unsigned gpus, std::size_t elem);

// A (m x n, lda, m >= n, host memory) := R and V, T (nb x n, ldt) := the panels' T, exactly as
// blocked_qr_gpu leaves them, on all rt.gpus() GPUs (one GPU: the same algorithm, nothing copied
// between GPUs). options.device_matrix is refused (std::invalid_argument); bulk_columns and
// chunked_steps are not used. Waits; on any error (NaN or Inf in A included) nothing is written to
// A or T.
template <class T>
void blocked_qr_multi_gpu(runtime& rt, int m, int n, T* a, int lda, T* t, int ldt, const blocked_options& options = {});

}  // namespace tessera::qr
