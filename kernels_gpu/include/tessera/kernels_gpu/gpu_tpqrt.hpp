#pragma once
// [R; U] := its QR factor in one persistent kernel (LAPACK TPQRT with l = 0 over the whole
// matrix): the QR updates' added rows (issue #18). R is m x m upper triangular, U p x m. Panels of
// 32 columns each: reflector j of panel t is [e_j; 0; u_j], so R stays triangular and each panel
// touches 32 rows of R and the p rows of U. Thread block b owns the 32-column slabs b, b + grid,
// ... of [R; U]: it applies each earlier panel to its slab as soon as that panel's flag is set,
// then factors its own slab and sets its flag. The chain of panels costs one panel and one apply a
// step; every other apply runs beside it on the other SMs, with no launch between them.
#include <cstddef>

#include <cuda_runtime.h>

#include <tessera/kernels_gpu/gpu_givens.hpp>

namespace tessera::kernels {

// The most rows of U a chain takes (its slab of U lives in a thread block's registers).
inline constexpr int gpu_tpqrt_chain_max_rows = 512;

// Workspace (bytes) gpu_tpqrt_chain needs for m columns, nrhs right-hand sides and `chains` row
// blocks: ints, one flag a panel and chain, then four group flags a panel and chain (its 8-column
// groups, which the chain's next slab takes as they are out), then with several chains a progress
// counter a slab and chain; then, 8-byte aligned, each group's Gram block and taus (72 doubles).
std::size_t gpu_tpqrt_chain_workspace(int m, int nrhs = 0, int chains = 1);

// On `stream`: [R; U] = Q [R'; 0] with Q = H_0 ... H_{m-1}, H_j = I - tau_j [e_j; u_j][e_j; u_j]^T.
// R (m x m, ldr: its upper triangle read, R' written there; the strict lower part untouched),
// U (p x m, ldu: the u_j written there, column j of panel t in column 32 t + j), T: panel t's
// 32 x 32 upper triangular factor at T + 1024 t (ld 32; the last panel's jb x jb part), so that
// H_{32t} ... H_{32t+jb-1} = I - V_t T_t V_t^T, V_t = [I; U's columns of panel t] (LAPACK TPQRT's
// V and T). The nrhs columns [C1; C2] (C1 m x nrhs, ldc1; C2 p x nrhs, ldc2) get Q^T as well
// (the right-hand sides). Computed in double for T = float too. Returns false, having done
// nothing, where it cannot run (more than gpu_tpqrt_chain_max_rows rows a chain, below, or the
// device cannot hold a thread block an SM); the caller then takes another path. Throws on bad arguments and CUDA errors.
// max_grid > 0 caps the thread blocks (tests: several slabs a block).
// Panel t's flag (int t of work) says when its V and T are out: with epoch = 0 the flags are
// cleared first (on stream) and each is set to 1; with epoch > 0 they are not cleared, the caller
// guarantees each is below epoch (a counter over the calls that share the flags) and each is set to
// epoch, so that another stream can wait for a panel (cuStreamWaitValue32, GEQ epoch) while the
// kernel runs.
//
// chains > 1 splits U into row blocks of r = ceil(p / chains) rows (the last: the rest; fewer blocks
// where p is small), triangularized into R in turn as [R; U_0], then [R; U_1], ... (TPQRT on each):
// the blocks' chains run at once as a pipeline, block c one panel behind block c - 1, each with
// r rows a lane's column instead of p, so a step of the chain is shorter. Then block c's
// reflectors are in its rows of U and panel t's T at T + 1024 (c npanels + t) (npanels =
// ceil(m / 32)): Q^T = Q_{chains-1}^T ... Q_0^T, which [C1; C2] gets; T needs chains * npanels
// blocks. The flags above are block 0's (so that another stream can wait for a panel only where
// chains = 1). The group flags carry the epoch as the panel flags do; the progress counters and
// the groups' data are 0 again when the call is done (on stream), so that a later call's flags
// may lie there.
//
// With `pro` (kernels_cpu/givens.hpp's rank_band_steps; one chain only), [R; U] and [C1; C2]
// start as a rank-k update's band leaves them:
// R's array holds p dense rows over the m x m triangle (ldr >= m + p) and C1's array the p rows
// of C2's over C1's m (ldc1 >= m + p), and the last group of the update's Givens sweeps, R's rank
// product and the rows' moves are still to be done. Each slab's thread block does them on its own
// columns before its panels: pro's Givens blocks (gpu_givens_blocks; rows roff + row0(t) ..., R's
// from column row + cshift on, C1's all, as gpu_givens_blocks_apply), then R's rows 0 .. rw - 1
// += W(0:rw, 0:k) V^T (W upper triangular, ldw; V m x k, ldv), then U := the top p rows, R := the
// m rows below them and zeros below R's diagonal to row m + p (C2 := C1's top p rows, C1 := the
// m below). The chain reaches slab s one panel step at a time, so the slabs' own work runs beside
// it and only the first slab's is on its path.
//
// Whether gpu_tpqrt_chain runs for p added rows in `chains` blocks on the current device (it
// returns false where not).
template <class T>
bool gpu_tpqrt_chain_runs(int p, int chains = 1);

template <class T>
bool gpu_tpqrt_chain(int m, int p, int nrhs, T* R, int ldr, T* U, int ldu, T* C1, int ldc1, T* C2, int ldc2,
                     T* Tf, void* work, std::size_t lwork, cudaStream_t stream, int max_grid = 0, int epoch = 0,
                     int chains = 1, const rank_band_steps<T>* pro = nullptr);

// The most added rows (U's) that gpu_tp_apply_right takes: a lane holds p / 4 of C2's entries in
// registers (64 doubles at 256).
inline constexpr int gpu_tp_apply_right_max_p = 256;

// On `stream`: [C1 C2] := [C1 C2] H_0 H_1 ... H_last, H_i = I - V_i T_i V_i^T, V_i = [I; U_i]: a
// group of gpu_tpqrt_chain's panels (32 columns each, the last may be narrower; w columns in all)
// applied to Q's columns from the right in one kernel, computed in double. U is p x w (ldu), panel
// i's columns 32 i..; T_i upper triangular at Tm + 1024 i (ld 32; below the diagonal not read); C1
// n x w (ldc1), C2 n x p (ldc2). Returns false, having done nothing, for p beyond
// gpu_tp_apply_right_max_p or where the device lacks the shared memory (256 bytes a row of U and
// 21.5 KB); throws on bad arguments and CUDA errors.
template <class T>
bool gpu_tp_apply_right(int n, int w, int p, const T* U, int ldu, const T* Tm, T* C1, int ldc1, T* C2, int ldc2,
                        cudaStream_t stream);

// The triangular factor of consecutive panels of [R; U]'s QR as one block reflector: panels of nb
// columns (nb <= 32) whose reflectors are V_i = [I; 0; U_i] (gpu_tpqrt_chain's, or TPQRT's with
// l = 0), panel i's T at Tm + nb nb i (ld nb), n columns in all (the last panel may be partial),
// and S = U^T U (n x n, lds; only its blocks above the diagonal blocks are read). On `stream`:
// Tb (n x n, ldtb) upper triangular with zeros below, so that I - V Tb V^T is the panels' product
// in order (LAPACK LARFT's forward form of their compound V). Throws on bad arguments, n beyond
// what gpu_tp_merge_t_runs allows among them (its shared memory: about 200 KB at n = 128).
inline constexpr int gpu_tp_merge_t_max_cols = 128;
template <class T>
bool gpu_tp_merge_t_runs(int n, int nb);
template <class T>
void gpu_tp_merge_t(int n, int nb, const T* Tm, const T* S, int lds, T* Tb, int ldtb, cudaStream_t stream);

}  // namespace tessera::kernels
