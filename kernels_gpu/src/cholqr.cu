// The QR of a narrow block (at most 32 columns) of a tall panel in four short kernels instead of
// one grid-wide barrier per column: CholeskyQR2 (Q1 = A R1^-1 with R1^T R1 = A^T A, then once
// more on Q1) and Householder reconstruction (Ballard et al., "Reconstructing Householder vectors
// from tall-skinny QR", 2015): the LU of Q - S, S = diag(+-1) chosen so every pivot is at least 1
// in magnitude, gives V = L, tau_j = 1 + |pivot_j| and R = S R2 R1, the GEQRT form.
//
// CholeskyQR2 is accurate only while cond(A) is below about eps^-1/2, so every step is checked
// and the first failure leaves A untouched and tells the Householder kernel (householder.cu) to
// do the block instead: a Cholesky pivot not > 0 or not finite, Q1^T Q1 far from I (which would
// let rounding in Q1 spoil A = QR), or the final Q^T Q off I by more than 64 eps. Gram matrices
// and factors are kept in double for both precisions.
//
// The block is factored as A D, its columns equilibrated by powers of two (equilibrate.hpp): the
// first pass finds each column's max |a_ic| while it sums A^T A, the second takes D A^T A D (exact:
// powers of two) and scales the rows it loads, and the finish kernel unscales R; so the Cholesky
// factorizations and every check above see data of order 1. A^T A itself is safe only while
// every column's max |a_ic| is within [2^-400, 2^400]; a block beyond that (entries of 1e-300
// squared flush to zero, of 1e300 overflow) goes to the Householder kernel, which equilibrates
// before it sums. A separate kernel for the maxima cost a launch and a read of the block each time.
//
// Rows are taken 128 at a time, one per thread; every thread block factors the small Gram matrix
// itself (the same result everywhere), so no kernel waits for another block.
#include <cfloat>
#include <cmath>

#include "check.hpp"
#include "engine.hpp"
#include "equilibrate.hpp"

namespace tessera::kernels::detail {
namespace {

constexpr int max_cols = 32;
constexpr int threads = 128;
constexpr int pad = max_cols + 1;  // row stride of shared matrices (fewer bank conflicts)
constexpr int per_thread = max_cols * max_cols / threads;  // entries of a small matrix per thread
constexpr int warps = threads / 32;
static_assert(warps * max_cols * max_cols <= threads * pad, "the warps' Gram sums fit in the row buffer");

struct alignas(256) cholqr_state {
  int failed;  // a step failed: the later ones return at once
  int done;    // the block is factored: the Householder fallback returns at once
  // A^T A, Q1^T Q1, Q^T Q, and the fallback's V^T V: upper triangles, column major.
  double gram[4][max_cols * max_cols];
  double r[2][max_cols * max_cols];     // R1, R2
  double qtop[max_cols * max_cols];     // Q's top nc rows
  unsigned long long colmax[max_cols];  // bits of max |a_ic| per column (equilibrate.hpp)
};

struct pass_shared {
  double rows[threads][pad];   // this pass's rows, for the Gram sums
  double unit[max_cols];       // 2^-e_c: the column scaling
  double tri[max_cols][pad];   // the Cholesky factor, then this block's Gram sum
  double inv_diag[max_cols];
  int bad;
};

struct finish_shared {
  double lu[max_cols][pad];
  double r1[max_cols][pad], r2[max_cols][pad];
  double inv_diag[max_cols];  // 1 / U_jj
  double sign[max_cols];      // S_jj
  double pivot[max_cols];     // |Q_jj| at step j of the LU
  int bad;
};

__device__ void mark_failed(cholqr_state* st) {
  if (blockIdx.x == 0 && threadIdx.x == 0) st->failed = 1;
}

// Whether every entry of the upper triangle of g (nc x nc) is within tol of the identity's; the
// same answer in every thread (NaN counts as far).
__device__ bool near_identity(const double* g, int nc, double tol, int& bad) {
  if (threadIdx.x == 0) bad = 0;
  __syncthreads();
  for (int e = static_cast<int>(threadIdx.x); e < max_cols * max_cols; e += threads) {
    const int i = e % max_cols, j = e / max_cols;
    if (i <= j && j < nc && !(fabs(g[e] - (i == j ? 1.0 : 0.0)) <= tol)) bad = 1;
  }
  __syncthreads();
  return bad == 0;
}

// a := R, the Cholesky factor of the nc x nc matrix whose upper triangle is g (column major, ld
// max_cols), times unit_i unit_j where unit is not null; inv_diag := 1 / R_jj. False, in every thread, when a pivot is not > 0 or not finite.
// Each warp, lane j holding column j in registers (padded to 32 columns with the identity); step k's
// row of R travels by shuffles. A shared-memory version with a barrier per step took 22 us.
__device__ bool cholesky(const double* g, const double* unit, int nc, double (&a)[max_cols][pad], double* inv_diag,
                         int& bad) {
  __syncthreads();  // every thread has read `bad` (near_identity) before lane 0 rewrites it
  {
    // Every warp factors (the same result); warp 0 stores. A branch to warp 0 around the shuffles
    // is one the compiler cannot see is warp-uniform.
    const bool store = threadIdx.x < 32;
    const int j = static_cast<int>(threadIdx.x) & 31;
    double c[max_cols];
#pragma unroll
    for (int i = 0; i < max_cols; ++i) c[i] = j < nc ? (i <= j ? g[i + j * max_cols] : 0.0) : (i == j ? 1.0 : 0.0);
    if (unit) {
      const double uj = unit[j];
#pragma unroll
      for (int i = 0; i < max_cols; ++i) c[i] *= unit[i] * uj;  // exact: powers of two, no overflow
    }
    bool ok = true;
#pragma unroll
    for (int k = 0; k < max_cols; ++k) {
      const double d = __shfl_sync(0xffffffffu, c[k], k);
      ok = ok && d > 0 && isfinite(d);
      const double inv = rsqrt(d), r = c[k] * inv;  // R(k, j)
      c[k] = j >= k ? r : 0.0;
      if (store && j == k) inv_diag[k] = inv;
#pragma unroll
      for (int i = k + 1; i < max_cols; ++i) {
        const double rki = __shfl_sync(0xffffffffu, r, i);
        if (i <= j) c[i] -= rki * r;
      }
    }
    if (store) {
#pragma unroll
      for (int i = 0; i < max_cols; ++i) a[i][j] = c[i];
      if (j == 0) bad = ok ? 0 : 1;
    }
  }
  __syncthreads();
  return bad == 0;
}

// x := x U^-1 for the row vector x, U upper triangular (strict upper part in u, 1/diag in inv_diag).
// Column-oriented: once x_k is final it updates every later x_c, so the 31 updates of a step are
// independent (a dot product per x_c made one 528-long dependent chain).
__device__ void solve_upper(double (&x)[max_cols], const double (&u)[max_cols][pad], const double* inv_diag,
                            int nc) {
#pragma unroll
  for (int k = 0; k < max_cols; ++k) {
    if (k < nc) {
      x[k] *= inv_diag[k];
#pragma unroll
      for (int c = k + 1; c < max_cols; ++c) x[c] -= x[k] * u[k][c];
    }
  }
}

// Whether A^T A of the block's columns, unscaled, can neither overflow nor lose accuracy to
// underflow: every column's max |a_ic| within [2^-400, 2^400] (then sums of m products stay below
// 2^1000, and what flushes to zero is below 2^-674 of the columns' norms). The same in every thread.
__device__ bool unscaled_gram_safe(const cholqr_state* st, int nc) {
  bool ok = true;
  for (int c = 0; c < nc; ++c) {
    const double v = __longlong_as_double(static_cast<long long>(st->colmax[c]));
    ok = ok && v >= 0x1p-400 && v <= 0x1p400;
  }
  return ok;
}

// pass 0: gram[0] = A^T A and colmax. pass 1: R_1 = chol(D gram[0] D), Q := A D R_1^-1 (rows of A
// scaled as they are loaded); pass 2: R_2 = chol(gram[1]), Q := Q R_2^-1; Q rounded to T, gram[p] =
// Q^T Q of the rounded Q.
template <class T>
__global__ void __launch_bounds__(threads) cholqr_pass_kernel(int pass, int m, int nc, const T* __restrict__ A,
                                                               int lda, T* __restrict__ Q, int ldq,
                                                               cholqr_state* __restrict__ st) {
  __shared__ pass_shared sh;
  if (pass == 1 && threadIdx.x < max_cols) sh.unit[threadIdx.x] = ldexp(1.0, -column_exponent(st->colmax[threadIdx.x]));
  __syncthreads();
  if (pass == 1 || pass == 2) {
    if (st->failed) return;
    // A^T A out of range: the Householder kernel equilibrates first.
    if (pass == 1 && !unscaled_gram_safe(st, nc)) return mark_failed(st);
    // A Q1 far from orthogonal means cond(A) is past CholeskyQR2's reach.
    if (pass == 2 && !near_identity(st->gram[1], nc, 1.0 / 64, sh.bad)) return mark_failed(st);
    if (!cholesky(st->gram[pass - 1], pass == 1 ? sh.unit : nullptr, nc, sh.tri, sh.inv_diag, sh.bad))
      return mark_failed(st);
    if (blockIdx.x == 0)
      for (int e = static_cast<int>(threadIdx.x); e < max_cols * max_cols; e += threads)
        st->r[pass - 1][e] = sh.tri[e % max_cols][e / max_cols];
  }
  const T* in = pass >= 2 ? Q : A;
  const int ldin = pass >= 2 ? ldq : lda;
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  const int i0 = (lane >> 2) * 4, j0 = (lane & 3) * 8;  // this lane's 4 x 8 block of the Gram matrix
  double acc[4][8] = {};
  double cmax = 0;  // pass 0: max |a| of column lane over this warp's rows of the chunks
  for (int r0 = static_cast<int>(blockIdx.x) * threads; r0 < m; r0 += static_cast<int>(gridDim.x) * threads) {
    const int r = r0 + static_cast<int>(threadIdx.x);
    double x[max_cols];
#pragma unroll
    for (int c = 0; c < max_cols; ++c)
      x[c] = r < m && c < nc ? static_cast<double>(in[r + static_cast<std::ptrdiff_t>(c) * ldin]) : 0.0;
    if (pass == 1) {
#pragma unroll
      for (int c = 0; c < max_cols; ++c) x[c] *= sh.unit[c];  // exact: a power of two (equilibrate.hpp)
    }
    if (pass == 1 || pass == 2) {
      solve_upper(x, sh.tri, sh.inv_diag, nc);
#pragma unroll
      for (int c = 0; c < max_cols; ++c) {
        x[c] = static_cast<double>(static_cast<T>(x[c]));  // the sums are of the stored Q
        if (r < m && c < nc) Q[r + static_cast<std::ptrdiff_t>(c) * ldq] = static_cast<T>(x[c]);
        if (pass == 2 && r < nc && c < nc) st->qtop[r + c * max_cols] = x[c];
      }
    }
#pragma unroll
    for (int c = 0; c < max_cols; ++c) sh.rows[threadIdx.x][c] = x[c];
    __syncthreads();
    if (pass == 0)
      for (int rr = warp * 32; rr < warp * 32 + 32; ++rr) cmax = fmax(cmax, fabs(sh.rows[rr][lane]));
    for (int rr = warp * 32; rr < warp * 32 + 32; ++rr) {
      double xi[4], xj[8];
#pragma unroll
      for (int a = 0; a < 4; ++a) xi[a] = sh.rows[rr][i0 + a];
#pragma unroll
      for (int b = 0; b < 8; ++b) xj[b] = sh.rows[rr][j0 + b];
#pragma unroll
      for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int b = 0; b < 8; ++b) acc[a][b] += xi[a] * xj[b];
    }
    __syncthreads();
  }
  if (pass == 0 && lane < nc && cmax > 0)  // non-negative doubles order as their bits
    atomicMax(&st->colmax[lane], static_cast<unsigned long long>(__double_as_longlong(cmax)));
  // This block's sum: each warp's partial sums into the row buffer, added in a fixed order
  // (shared-memory double atomics are compare-and-swap loops), then into the global sum.
  double* red = &sh.rows[0][0];  // warps x 32 x 32 fits in threads x pad
#pragma unroll
  for (int a = 0; a < 4; ++a)
#pragma unroll
    for (int b = 0; b < 8; ++b) red[warp * max_cols * max_cols + (i0 + a) + (j0 + b) * max_cols] = acc[a][b];
  __syncthreads();
#pragma unroll
  for (int q = 0; q < per_thread; ++q) {
    const int e = static_cast<int>(threadIdx.x) + q * threads, i = e % max_cols, j = e / max_cols;
    if (i <= j && j < nc) {
      double sum = 0;
#pragma unroll
      for (int w = 0; w < warps; ++w) sum += red[w * max_cols * max_cols + e];
      atomicAdd(&st->gram[pass][e], sum);
    }
  }
}

// If every pass succeeded and Q^T Q is within tol of I: A := R = S R2 R1 D^-1 on and above the
// diagonal, V = L below it, Vc := V explicit, tau_j = 1 + |pivot_j|, T := -U S L_top^-T (so that
// (I - V T V^T) [I; 0] = Q S), done := 1.
template <class T>
__global__ void __launch_bounds__(threads) cholqr_finish_kernel(int m, int nc, T* __restrict__ A, int lda,
                                                                 T* __restrict__ Vc, int ldvc, T* __restrict__ tau,
                                                                 T* __restrict__ Tf, int ldt, double tol,
                                                                 cholqr_state* __restrict__ st) {
  __shared__ finish_shared sh;
  if (st->failed) return;
  if (!near_identity(st->gram[2], nc, tol, sh.bad)) return;
#pragma unroll
  for (int q = 0; q < per_thread; ++q) {
    const int e = static_cast<int>(threadIdx.x) + q * threads, i = e % max_cols, j = e / max_cols;
    sh.r1[i][j] = st->r[0][e];
    sh.r2[i][j] = st->r[1][e];
  }
  // The LU of Q_top - S without pivoting, S_kk = -sign(Q_kk) making |U_kk| = |Q_kk| + 1 >= 1: one
  // warp, lane j holding column j (padded with the identity); L's column k travels by shuffles.
  // sh.lu := L strictly below the diagonal, U on and above it.
  {
    // Every warp factors (the same result); warp 0 stores (as in cholesky()).
    const bool store = threadIdx.x < 32;
    const int j = static_cast<int>(threadIdx.x) & 31;
    double c[max_cols];
#pragma unroll
    for (int i = 0; i < max_cols; ++i) c[i] = j < nc ? (i < nc ? st->qtop[i + j * max_cols] : 0.0) : (i == j ? 1.0 : 0.0);
#pragma unroll
    for (int k = 0; k < max_cols; ++k) {
      const double p = __shfl_sync(0xffffffffu, c[k], k), s = p >= 0 ? -1.0 : 1.0, u = p - s, inv_u = 1 / u;
      if (j == k) c[k] = u;
      if (store && j == k) {
        sh.sign[k] = s;
        sh.inv_diag[k] = inv_u;
        sh.pivot[k] = fabs(p);
      }
#pragma unroll
      for (int i = k + 1; i < max_cols; ++i) {
        const double l = __shfl_sync(0xffffffffu, c[i], k) * inv_u;  // L(i, k)
        if (j == k) c[i] = l;
        else if (j > k) c[i] -= l * c[k];
      }
    }
    if (store) {
#pragma unroll
      for (int i = 0; i < max_cols; ++i) sh.lu[i][j] = c[i];
    }
  }
  __syncthreads();
  // V's rows below the top: Q U^-1.
  for (int r0 = static_cast<int>(blockIdx.x) * threads; r0 < m; r0 += static_cast<int>(gridDim.x) * threads) {
    // Keeps U's 528 loads in the loop: hoisted out of it as loop invariants, they spilled.
    asm volatile("" ::: "memory");
    const int r = r0 + static_cast<int>(threadIdx.x);
    if (r >= m || r < nc) continue;
    double x[max_cols];
#pragma unroll
    for (int c = 0; c < max_cols; ++c)
      x[c] = c < nc ? static_cast<double>(Vc[r + static_cast<std::ptrdiff_t>(c) * ldvc]) : 0.0;
    solve_upper(x, sh.lu, sh.inv_diag, nc);
#pragma unroll
    for (int c = 0; c < max_cols; ++c) {
      if (c < nc) {
        A[r + static_cast<std::ptrdiff_t>(c) * lda] = static_cast<T>(x[c]);
        Vc[r + static_cast<std::ptrdiff_t>(c) * ldvc] = static_cast<T>(x[c]);
      }
    }
  }
  if (blockIdx.x != 0) return;
  // The top nc x nc, per_thread entries a thread (lane = row, column warp + 4q, so sh.r1 reads are
  // broadcasts): L below the diagonal, S R2 R1 on and above it. Sums run k-outer over independent
  // entries (one entry's 32-long chain at a time took most of this kernel's 77 us under ncu).
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  double acc[per_thread] = {};
#pragma unroll
  for (int k = 0; k < max_cols; ++k) {
    const double r2 = sh.r2[lane][k];
#pragma unroll
    for (int q = 0; q < per_thread; ++q) {
      const int c = warp + warps * q;
      if (k >= lane && k <= c) acc[q] += r2 * sh.r1[k][c];
    }
  }
#pragma unroll
  for (int q = 0; q < per_thread; ++q) {
    const int r = lane, c = warp + warps * q;
    if (r < nc && c < nc) {
      const bool lower = c < r;
      // R of A D unscaled to R of A (scalbn: 2^e_c need not be a double).
      A[r + static_cast<std::ptrdiff_t>(c) * lda] = static_cast<T>(
          lower ? sh.lu[r][c] : scalbn(sh.sign[r] * acc[q], column_exponent(st->colmax[c])));
      Vc[r + static_cast<std::ptrdiff_t>(c) * ldvc] = static_cast<T>(lower ? sh.lu[r][c] : (c == r ? 1.0 : 0.0));
    }
  }
  if (warp == 0 && lane < nc) {
    const int i = lane;
    tau[i] = static_cast<T>(1 + sh.pivot[i]);
    // Row i of T: x L_top^T = -(U S)(i, :), L_top^T unit upper: once x_k is final it updates every
    // later x_c (registers; L is zero in the identity padding, so the padded x_c stay zero).
    double x[max_cols];
#pragma unroll
    for (int c = 0; c < max_cols; ++c) x[c] = c >= i && c < nc ? -sh.lu[i][c] * sh.sign[c] : 0.0;
#pragma unroll
    for (int k = 0; k < max_cols; ++k)
#pragma unroll
      for (int c = k + 1; c < max_cols; ++c) x[c] -= x[k] * sh.lu[c][k];
#pragma unroll
    for (int c = 0; c < max_cols; ++c)
      if (c < nc) Tf[i + static_cast<std::ptrdiff_t>(c) * ldt] = static_cast<T>(x[c]);
    if (i == 0) st->done = 1;
  }
}

}  // namespace

std::size_t cholqr_scratch_bytes() { return sizeof(cholqr_state); }

const unsigned long long* cholqr_column_max(void* state) { return static_cast<cholqr_state*>(state)->colmax; }

namespace {
dim3 grid_for(int m, int sms) {
  const int chunks = (m + threads - 1) / threads, cap = sms > 0 ? sms : 1;
  return dim3(static_cast<unsigned>(chunks < cap ? chunks : cap));
}
}  // namespace

void cholqr_clear(const char* kernel, void* states, int count, cudaStream_t stream) {
  if (count > 0)
    check(kernel, "cudaMemsetAsync",
          cudaMemsetAsync(states, 0, sizeof(cholqr_state) * static_cast<std::size_t>(count), stream));
}

template <class T>
cholqr_handoff cholqr_block(const char* kernel, int m, int nc, T* A, int lda, T* tau, T* Vc, int ldvc, T* Tf,
                            int ldt, void* state, int sms, cudaStream_t stream) {
  auto* st = static_cast<cholqr_state*>(state);
  if (m <= 0 || nc <= 0) return {nullptr, nullptr};
  if (nc > max_cols) bad_argument(kernel, "ib", nc, "<=", "the widest block", max_cols);
  const dim3 grid = grid_for(m, sms), block(threads);
  for (int pass = 0; pass < 3; ++pass) {
    cholqr_pass_kernel<T><<<grid, block, 0, stream>>>(pass, m, nc, A, lda, Vc, ldvc, st);
    check(kernel, "cholqr_pass_kernel launch", cudaGetLastError());
  }
  constexpr double eps = sizeof(T) == sizeof(float) ? FLT_EPSILON : DBL_EPSILON;
  cholqr_finish_kernel<T><<<grid, block, 0, stream>>>(m, nc, A, lda, Vc, ldvc, tau, Tf, ldt, 64 * eps, st);
  check(kernel, "cholqr_finish_kernel launch", cudaGetLastError());
  return {&st->done, st->gram[3]};
}

#define TESSERA_CHOLQR_INSTANTIATE(T) \
  template cholqr_handoff cholqr_block<T>(const char*, int, int, T*, int, T*, T*, int, T*, int, void*, int, \
                                          cudaStream_t);
TESSERA_CHOLQR_INSTANTIATE(float)
TESSERA_CHOLQR_INSTANTIATE(double)
#undef TESSERA_CHOLQR_INSTANTIATE

}  // namespace tessera::kernels::detail
