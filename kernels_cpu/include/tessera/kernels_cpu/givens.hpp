#pragma once
// Givens sweeps over a tall strip, and their application in blocks (QR updating, qr/update.hpp).
//
// A strip X (L x p) is brought to upper triangular form by p sweeps: sweep j zeroes X(i, j) for
// i = top(j) down to j + 1, each with a rotation of rows (i - 1, i),
//   [x_{i-1}; x_i] := [c s; -s c] [x_{i-1}; x_i],   top(j) = min(L - 1, base + j)
// (the rows below base + j are zero already). The rotations depend on the strip alone, so they are
// made first (givens_generate, O(L p^2)) and then applied to the big matrices (R, Q^T b from the
// left, Q from the right) as GEMMs with small orthogonal blocks (givens_blocks): block t holds
// every rotation of every sweep whose shifted index u = i - j lies in [u_lo(t), u_hi(t)), which
// are rows [u_lo - 1, u_hi + p - 1) of the strip. Applying the blocks in order t = 0, 1, ... is the
// sweeps' own order up to swapping rotations on disjoint rows (sweep j + 1 at u needs sweep j at
// u - 1 done, which the block order keeps), so the result is the same.
#include <cstddef>

// The plan's methods are called in CUDA kernels too (kernels_gpu/src/gpu_givens_*.cu).
#ifdef __CUDACC__
#define TESSERA_GIVENS_HD __host__ __device__
#else
#define TESSERA_GIVENS_HD
#endif

namespace tessera::kernels {

// The blocking of the sweeps of an L x p strip (rows below base + j of column j already zero)
// into blocks of w shifted indices.
struct givens_plan {
  int L = 0, p = 0, base = 0, w = 64;

  // Largest shifted index u = i - j of sweep j (0 if the sweep is empty).
  static TESSERA_GIVENS_HD int lo_(int a, int b) noexcept { return a < b ? a : b; }
  static TESSERA_GIVENS_HD int hi_(int a, int b) noexcept { return a < b ? b : a; }
  TESSERA_GIVENS_HD int umax(int j) const noexcept { return hi_(0, lo_(L - 1, base + j) - j); }
  TESSERA_GIVENS_HD int umax_all() const noexcept { return p > 0 ? umax(0) : 0; }
  TESSERA_GIVENS_HD int blocks() const noexcept { return (umax_all() + w - 1) / w; }
  TESSERA_GIVENS_HD int u_hi(int t) const noexcept { return umax_all() + 1 - t * w; }  // exclusive
  TESSERA_GIVENS_HD int u_lo(int t) const noexcept { return hi_(1, u_hi(t) - w); }
  // Rows of the strip block t touches: [row0(t), row0(t) + rows(t)).
  TESSERA_GIVENS_HD int row0(int t) const noexcept { return u_lo(t) - 1; }
  TESSERA_GIVENS_HD int rows(int t) const noexcept { return lo_(L, u_hi(t) + p - 1) - row0(t); }
  // The order of one block's stored matrix (ld of every block's, and their stride bw^2).
  TESSERA_GIVENS_HD int bw() const noexcept { return lo_(L, w + p); }
  // Elements of the rotations' array: (c, s) of sweep j, row i at cs[2 (j L + i)].
  std::size_t cs_size() const noexcept { return 2 * std::size_t(L) * std::size_t(p); }
  std::size_t blocks_size() const noexcept {
    return std::size_t(blocks()) * std::size_t(bw()) * std::size_t(bw());
  }
};

// The sweeps on X (L x p, ldx) in place: X := its upper triangular form (exact zeros where the
// sweeps zeroed), cs := the rotations. One thread; O(L p^2).
template <class T>
void givens_generate(const givens_plan& plan, T* X, int ldx, T* cs);

// For every block t, S_t := B_t^T in column-major (bw x bw, ld bw, at S + t bw^2), where B_t
// (rows(t) x rows(t), identity beyond) is the product of block t's rotations in their order:
// rows [row0, row0 + rows) of a matrix M become B_t M(those rows, :). Blocks in parallel
// (threads: 0 = all cores).
template <class T>
void givens_blocks(const givens_plan& plan, const T* cs, T* S, unsigned threads = 0);

// A rank-k update's steps between its last group of sweeps and its band's re-triangularization
// (qr/src/update_rank_k.cpp), which the GPU's TPQRT chain takes as its prologue
// (kernels::gpu_tpqrt_chain): the group's blocks S (rows roff + row0(t) .., R's from column row +
// cshift on), then R's rows 0 .. rw - 1 += W(0:rw, 0:k) V^T (W upper triangular), then the moves.
template <class T>
struct rank_band_steps {
  givens_plan plan;
  const T* S = nullptr;
  int roff = 0, cshift = 0;
  const T* W = nullptr;
  int ldw = 1, rw = 0;
  const T* V = nullptr;
  int ldv = 1, k = 0;
};

}  // namespace tessera::kernels
