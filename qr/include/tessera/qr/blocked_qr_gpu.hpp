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
#include "tessera/sched/runtime.hpp"

namespace tessera::qr {

struct blocked_options {
  int nb = 0;                // panel width; 0: default_blocked_nb(n)
  int ib = 32;               // columns the panel kernel factors one at a time (<= 32)
  int lookahead = 0;         // column blocks updated ahead of the bulk; 0: default_blocked_lookahead(n)
  // The first chunked_steps steps' bulk updates in tasks of bulk_columns column blocks each (later
  // steps: one task for all; 0: one task throughout; -1: default_bulk_columns(n) and
  // default_chunked_steps(n)).
  int bulk_columns = -1;
  int chunked_steps = -1;
  // A and T are device pointers: factored in place on the device, nothing copied either way.
  bool device_matrix = false;
};

// Panel width when none is given (measured: docs/architecture.md).
int default_blocked_nb(int n) noexcept;

// Panel width with the full T when none is given: wider panels from n = 4096 (at least 512), whose
// steps of T and S are fewer and wider GEMMs (measured: docs/architecture.md, "The full T and S").
int default_full_t_nb(int n) noexcept;

// Column blocks updated ahead of the bulk when none is given (measured: docs/architecture.md).
int default_blocked_lookahead(int n) noexcept;

// How the bulk update is split when nothing is given (measured: docs/architecture.md, "Bulk
// splitting"): below n = 16384 the first 4 steps in tasks of 4 column blocks, so that they start on
// the columns already on the device while the rest are on their way; from 16384 every step in
// tasks of 8, so that the GPU's streams turn over sooner.
int default_bulk_columns(int n) noexcept;
int default_chunked_steps(int n) noexcept;

// A (m x n, lda, m >= n, column-major) := R on and above the diagonal and V below it; T (nb x n,
// ldt >= min(nb, n)) := the panels' T side by side, exactly as LAPACK xGEQRT(m, n, nb, A, lda, T,
// ldt) leaves them, so LAPACK's xGEMQRT applies Q. Every flop runs on the GPU. Host memory (pinned
// for full-speed copies) travels to the device and back as the factorization goes; with
// device_matrix, A and T are device memory and stay there. rt must have a GPU
// (gpu_runtime_options gives the tuned setting). Waits for the result. A is checked for NaN and
// Inf on the GPU; on any error nothing is written to A or T.
template <class T>
void blocked_qr_gpu(runtime& rt, int m, int n, T* a, int lda, T* t, int ldt, const blocked_options& options = {});

// The same, and the full T of Q = I - V T V^T (n x n, upper) with S = V T^T (m x n, lower
// trapezoidal) in st (m x n, ldst >= m, in A's memory): T on and above the diagonal, S on and
// below it, both hold tau there (the seed 001's storage: no element is spent twice). Built by the
// seed's Algorithm 1, one task per step beside the trailing update (kernels::gpu_full_t_step):
// T's new block column from the previous S, S updated and extended in place. A host st comes
// home a row block at a time as it becomes final.
template <class T>
void blocked_qr_gpu(runtime& rt, int m, int n, T* a, int lda, T* t, int ldt, T* st, int ldst,
                    const blocked_options& options = {});

}  // namespace tessera::qr
