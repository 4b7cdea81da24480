#pragma once
// Blocked QR with the panels on the GPU (LAPACK GEQRT form), as tasks on the runtime.
//
// The tile algorithms keep the GPU's GEMMs at inner dimension nb and the 16 cores' panel chain on
// the critical path; this one runs LAPACK's right-looking blocked QR on the GPU instead: each
// panel is factored by kernels::gpu_geqrt, and its block reflector updates the trailing matrix as
// two large GEMMs (kernels::gpu_larfb, inner dimensions m and nb). Lookahead L: the next L column
// blocks are updated first, one task each, on the urgent stream, so that the panels run up to L-1
// steps ahead of the bulk update of the rest and their chain, slowed by the bulk GEMMs beside it,
// stays off the critical path longer. Each column block and each T block is one handle; the bulk
// update is one aggregated task per step that inherits the dependencies of every column block it
// touches. The runtime moves the column blocks: each to the device once, and home once it is
// final (right after its panel, while the factorization goes on).
#include <atomic>
#include <cstdint>

#include "tessera/sched/runtime.hpp"

namespace tessera::qr {

struct blocked_options {
  int nb = 0;                // panel width; 0: default_blocked_nb(n)
  int ib = 32;               // columns the panel kernel factors one at a time (<= 32)
  int lookahead = 0;         // column blocks updated ahead of the bulk; 0: default_blocked_lookahead(n)
  // The first steps' bulk updates in tasks of bulk_columns column blocks each, so that they start
  // on the columns that reached the device while the rest are still on their way; later steps:
  // one task for all. 0: one task from the start.
  // 8 and 4: 1.30 s against 1.38 s unsplit at n = 32768, nb 384 on an H100 (medians of 3); with
  // the CholeskyQR2 panels at nb 512, 4 and 4: 1.1688 s against 1.1887 s for 8 and 4 (4 and 8:
  // 1.1731, 2 and 8: 1.1760, 2 and 16: 1.1981 s; one run, medians of 3, about 1% apart run to run).
  int bulk_columns = 4;
  int chunked_steps = 4;     // steps split that way (with bulk_columns > 0)
  std::atomic<std::uint64_t>* progress = nullptr;  // ticks once per task
};

// Panel width when none is given (measured: docs/results/history.md).
int default_blocked_nb(int n) noexcept;

// The deep lookahead of tessera_qr --device hybrid (README, "GPU and hybrid QR against cuSOLVER").
int default_blocked_lookahead(int n) noexcept;

// A (m x n, lda, m >= n, column-major host memory; pinned for full-speed copies) := R on and above
// the diagonal and V below it; T (nb x n, ldt >= nb) := the panels' T side by side, exactly as
// LAPACK xGEQRT(m, n, nb, A, lda, T, ldt) leaves them, so LAPACK's xGEMQRT applies Q.
// rt must have a GPU (runtime_options::gpu_streams > 0; hybrid_runtime_options gives the tuned
// setting). Waits for the result. A is checked for NaN and Inf on the GPU as it arrives;
// on any error nothing is written back to A or T.
template <class T>
void geqrt_gpu(runtime& rt, int m, int n, T* a, int lda, T* t, int ldt, const blocked_options& options = {});

// Number of tasks geqrt_gpu inserts (progress reports).
std::uint64_t geqrt_gpu_task_count(int m, int n, const blocked_options& options);

}  // namespace tessera::qr
