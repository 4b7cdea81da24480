// The QR of a panel block of up to cholqr_wide_max columns by CholeskyQR2 and Householder
// reconstruction in a fixed sequence of about fifteen launches, every tall operation a DGEMM.
// Why: the 32-column path (cholqr.cu) is a chain of about ten latency-bound kernels costing
// ~130 us per 32 columns whatever the height, which made the panels 25 of the 33 ms of a
// 6000 x 6000 QR on an H100 (docs/results/2026-11-24-blocked-panel-h100.md).
//
// X := A D in double (D the columns' powers of two, equilibrate.hpp); Q1 = X R1^-1 with R1^T R1 =
// X^T X; Q = Q1 R2^-1 with R2^T R2 = Q1^T Q1 (only if that is within 1/64 of I); then Q^T Q must be
// within 64 eps of I. That verdict comes back to the host (one wait): on failure A is untouched and
// the caller factors the block the 32-column way. Else the LU of Q_top - S without pivoting (S =
// diag(+-1) making every pivot at least 1, as cholqr.cu) gives V = [L; Q_bottom U^-1], T = -U S
// L^-T and R = S R2 R1 D^-1, all in double (for float too) and rounded once.
//
// The small n x n steps (Cholesky, triangular inverse, LU, T) run in one thread block each with
// the matrix in shared memory, one barrier per elimination step; the triangular solves with the
// tall matrix are GEMMs with the explicit inverses (cuBLAS's TRSM of 6000 x 256 took 120 us, its
// GEMM 23). Explicit inverses are safe here: R2 and U are well conditioned whenever the checks
// pass, and R1's errors are what the second pass and the final check are for.
#include <cfloat>
#include <cmath>

#include "check.hpp"
#include "engine.hpp"
#include "equilibrate.hpp"

namespace tessera::kernels::detail {
namespace {

constexpr int threads = 1024;

// 256-byte aligned parts of the double workspace.
std::size_t dpart(std::size_t doubles) { return (doubles + 31) / 32 * 32; }

struct wide_layout {
  double *X, *Y, *G, *R1, *R1i, *R2, *R2i, *LU, *Ui, *Tw, *sign;
  unsigned long long* colmax;
  int* failed;
};

wide_layout layout(double* w, int m, int nc) {
  const std::size_t tall = dpart(static_cast<std::size_t>(m) * nc), sq = dpart(static_cast<std::size_t>(nc) * nc);
  wide_layout l{};
  l.X = w;
  l.Y = l.X + tall;
  double** parts[] = {&l.G, &l.R1, &l.R1i, &l.R2, &l.R2i, &l.LU, &l.Ui, &l.Tw};
  double* p = l.Y + tall;
  for (double** q : parts) {
    *q = p;
    p += sq;
  }
  l.sign = p;
  l.colmax = reinterpret_cast<unsigned long long*>(l.sign + dpart(nc));
  l.failed = reinterpret_cast<int*>(l.colmax + dpart(nc));
  return l;
}
constexpr int small_matrices = 8;

// colmax[c] := max |A(:, c)| as bits (atomicMax: non-negative doubles order as their bits).
template <class T>
__global__ void __launch_bounds__(256) wide_column_max_kernel(int m, const T* __restrict__ A, int lda,
                                                               unsigned long long* __restrict__ colmax) {
  const int c = static_cast<int>(blockIdx.y);
  const T* a = A + static_cast<std::ptrdiff_t>(c) * lda;
  double mx = 0;
  for (int r = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); r < m; r += static_cast<int>(gridDim.x * blockDim.x))
    mx = fmax(mx, fabs(static_cast<double>(a[r])));
  for (int o = 16; o > 0; o >>= 1) mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  if ((threadIdx.x & 31) == 0 && mx > 0) atomicMax(&colmax[c], static_cast<unsigned long long>(__double_as_longlong(mx)));
}

// X := A D in double: each column times 2^-e_c, exact (equilibrate.hpp).
template <class T>
__global__ void __launch_bounds__(256) wide_scale_kernel(int m, const T* __restrict__ A, int lda,
                                                          const unsigned long long* __restrict__ colmax,
                                                          double* __restrict__ X, int ldx) {
  const int c = static_cast<int>(blockIdx.y);
  const double unit = ldexp(1.0, -column_exponent(colmax[c]));
  for (int r = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); r < m; r += static_cast<int>(gridDim.x * blockDim.x))
    X[r + static_cast<std::ptrdiff_t>(c) * ldx] = static_cast<double>(A[r + static_cast<std::ptrdiff_t>(c) * lda]) * unit;
}

// The small n x n steps: 1024 threads as 32 x 32, thread (x, y) holding entries (x + 32p, y + 32q),
// p, q < E, in registers (n <= 32 E; the matrix padded with the identity). An elimination step
// reads the pivot row or column from a shared buffer its owners wrote after the previous step, so
// a step costs one barrier and no division per entry.
template <int E>
struct small {
  static constexpr int N = 32 * E, ld = N + 1;
  double v[E][E];
  int x, y;
  __device__ __forceinline__ small() : x(static_cast<int>(threadIdx.x) & 31), y(static_cast<int>(threadIdx.x) >> 5) {}
  __device__ __forceinline__ int row(int p) const { return x + 32 * p; }
  __device__ __forceinline__ int col(int q) const { return y + 32 * q; }
  // Row r of the held entries into buf (by the threads holding it).
  __device__ __forceinline__ void publish_row(int r, double* buf) const {
    if (x != (r & 31)) return;
    const int sel = r >> 5;
#pragma unroll
    for (int q = 0; q < E; ++q) {
      double t = v[0][q];  // selects, not v[sel][q]: an indexed register array goes to local memory
#pragma unroll
      for (int p = 1; p < E; ++p) t = p == sel ? v[p][q] : t;
      buf[col(q)] = t;
    }
  }
  __device__ __forceinline__ void publish_col(int c, double* buf) const {
    if (y != (c & 31)) return;
    const int sel = c >> 5;
#pragma unroll
    for (int p = 0; p < E; ++p) {
      double t = v[p][0];
#pragma unroll
      for (int q = 1; q < E; ++q) t = q == sel ? v[p][q] : t;
      buf[row(p)] = t;
    }
  }
  __device__ __forceinline__ void to_shared(double* a) const {
#pragma unroll
    for (int p = 0; p < E; ++p)
#pragma unroll
      for (int q = 0; q < E; ++q) a[row(p) + col(q) * ld] = v[p][q];
  }
  // out (n x n, ld n) := the held entries, zero where below the diagonal if upper.
  __device__ __forceinline__ void store(int n, double* out, bool upper) const {
#pragma unroll
    for (int p = 0; p < E; ++p)
#pragma unroll
      for (int q = 0; q < E; ++q)
        if (row(p) < n && col(q) < n) out[row(p) + col(q) * n] = upper && row(p) > col(q) ? 0.0 : v[p][q];
  }
};

// out := U^-1 for the upper triangular U in shared a (N x N, ld N + 1, identity padding): Z = I,
// then from the bottom row up Z_i -= U_ik Z_k / U_kk (i < k), and Y_k = Z_k / U_kk.
template <int E>
__device__ __forceinline__ void invert_upper(int n, const double* a, double (*buf)[32 * E], double* out) {
  using S = small<E>;
  S z;
#pragma unroll
  for (int p = 0; p < E; ++p)
#pragma unroll
    for (int q = 0; q < E; ++q) z.v[p][q] = z.row(p) == z.col(q) ? 1.0 : 0.0;
  z.publish_row(S::N - 1, buf[(S::N - 1) & 1]);
  __syncthreads();
  for (int k = S::N - 1; k > 0; --k) {
    const double* zk = buf[k & 1];
    const double inv = 1.0 / a[k + k * S::ld];
    double u[E], r[E];
#pragma unroll
    for (int p = 0; p < E; ++p) u[p] = a[z.row(p) + k * S::ld] * inv;
#pragma unroll
    for (int q = 0; q < E; ++q) r[q] = zk[z.col(q)];
#pragma unroll
    for (int p = 0; p < E; ++p)
#pragma unroll
      for (int q = 0; q < E; ++q)
        if (z.row(p) < k) z.v[p][q] -= u[p] * r[q];
    z.publish_row(k - 1, buf[(k - 1) & 1]);
    __syncthreads();
  }
#pragma unroll
  for (int p = 0; p < E; ++p)
#pragma unroll
    for (int q = 0; q < E; ++q) z.v[p][q] /= a[z.row(p) + z.row(p) * S::ld];
  z.store(n, out, true);
}

// in: n x n (ld n), its upper triangle read. tol > 0: first requires it within tol of I (else
// *failed). factor: Cholesky (a pivot not > 0 or not finite sets *failed); else the input is
// already upper triangular. R (if not null) := the factor, Ri (if not null) := its inverse, both
// with zeros below the diagonal. Nothing runs once *failed is set.
template <int E>
__global__ void __launch_bounds__(threads) small_cholesky_inverse_kernel(int n, const double* __restrict__ in,
                                                                          double tol, bool factor,
                                                                          double* __restrict__ R, double* __restrict__ Ri,
                                                                          int* __restrict__ failed) {
  using S = small<E>;
  extern __shared__ double a[];  // N x (N + 1)
  __shared__ double buf[2][S::N];
  __shared__ double pivot[S::N];
  __shared__ int bad;
  if (*failed) return;
  if (threadIdx.x == 0) bad = 0;
  S g;
  bool far = false;
#pragma unroll
  for (int p = 0; p < E; ++p)
#pragma unroll
    for (int q = 0; q < E; ++q) {
      const int i = g.row(p), j = g.col(q);
      g.v[p][q] = i < n && j < n ? (i <= j ? in[i + j * n] : 0.0) : (i == j ? 1.0 : 0.0);
      if (tol > 0 && i <= j && !(fabs(g.v[p][q] - (i == j ? 1.0 : 0.0)) <= tol)) far = true;
    }
  __syncthreads();
  if (far) bad = 1;
  __syncthreads();
  if (bad) {
    if (threadIdx.x == 0) *failed = 1;
    return;
  }
  if (factor) {
    // Right-looking on the upper triangle with row k left unscaled: G_ij -= G_ki G_kj / G_kk for
    // k < i <= j; then R_ij = G_ij / sqrt(G_ii).
    g.publish_row(0, buf[0]);
    __syncthreads();
    for (int k = 0; k < S::N; ++k) {
      const double* rk = buf[k & 1];
      const double d = rk[k];
      if (!(d > 0) || !isfinite(d)) {
        if (threadIdx.x == 0) *failed = 1;
        return;
      }
      const double inv = 1.0 / d;
      double u[E], r[E];
#pragma unroll
      for (int p = 0; p < E; ++p) u[p] = rk[g.row(p)] * inv;
#pragma unroll
      for (int q = 0; q < E; ++q) r[q] = rk[g.col(q)];
#pragma unroll
      for (int p = 0; p < E; ++p)
#pragma unroll
        for (int q = 0; q < E; ++q)
          if (k < g.row(p) && g.row(p) <= g.col(q)) g.v[p][q] -= u[p] * r[q];
      if (threadIdx.x == 0) pivot[k] = d;
      if (k + 1 < S::N) g.publish_row(k + 1, buf[(k + 1) & 1]);
      __syncthreads();
    }
#pragma unroll
    for (int p = 0; p < E; ++p)
#pragma unroll
      for (int q = 0; q < E; ++q) {
        const int i = g.row(p), j = g.col(q);
        g.v[p][q] = i < j ? g.v[p][q] / sqrt(pivot[i]) : i == j ? sqrt(pivot[i]) : 0.0;
      }
  }
  if (R) g.store(n, R, true);
  if (!Ri) return;
  g.to_shared(a);
  __syncthreads();
  invert_upper<E>(n, a, buf, Ri);
}

// The LU of Q_top - S without pivoting, S_kk = -sign(pivot_k) chosen at step k so that |U_kk| =
// |pivot_k| + 1 >= 1: LU := L strictly below the diagonal and U on and above it, sign := diag(S);
// Tw := T = -U S L^-T (zeros below), solved as T L^T = -U S; Ui := U^-1.
template <int E>
__global__ void __launch_bounds__(threads) small_lu_t_kernel(int n, const double* __restrict__ Q, int ldq,
                                                              double* __restrict__ LU, double* __restrict__ Tw,
                                                              double* __restrict__ Ui, double* __restrict__ sign,
                                                              const int* __restrict__ failed) {
  using S = small<E>;
  extern __shared__ double a[];  // N x (N + 1)
  __shared__ double rows[2][S::N], cols[2][S::N];
  __shared__ double us[S::N], ss[S::N];
  if (*failed) return;
  S m;
#pragma unroll
  for (int p = 0; p < E; ++p)
#pragma unroll
    for (int q = 0; q < E; ++q) {
      const int i = m.row(p), j = m.col(q);
      m.v[p][q] = i < n && j < n ? Q[i + static_cast<std::ptrdiff_t>(j) * ldq] : (i == j ? 1.0 : 0.0);
    }
  m.publish_row(0, rows[0]);
  m.publish_col(0, cols[0]);
  __syncthreads();
  // Column k of L left unscaled: A_ij -= A_ik A_kj / U_kk for i, j > k.
  for (int k = 0; k < S::N; ++k) {
    const double pk = rows[k & 1][k], sk = pk >= 0 ? -1.0 : 1.0, uk = pk - sk, inv = 1.0 / uk;
    double l[E], r[E];
#pragma unroll
    for (int p = 0; p < E; ++p) l[p] = cols[k & 1][m.row(p)] * inv;
#pragma unroll
    for (int q = 0; q < E; ++q) r[q] = rows[k & 1][m.col(q)];
#pragma unroll
    for (int p = 0; p < E; ++p)
#pragma unroll
      for (int q = 0; q < E; ++q)
        if (m.row(p) > k && m.col(q) > k) m.v[p][q] -= l[p] * r[q];
    if (threadIdx.x == 0) {
      us[k] = uk;
      ss[k] = sk;
    }
    if (k + 1 < S::N) {
      m.publish_row(k + 1, rows[(k + 1) & 1]);
      m.publish_col(k + 1, cols[(k + 1) & 1]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int p = 0; p < E; ++p)
#pragma unroll
    for (int q = 0; q < E; ++q) {
      const int i = m.row(p), j = m.col(q);
      if (i > j) m.v[p][q] /= us[j];
      else if (i == j) m.v[p][q] = us[i];
    }
  m.store(n, LU, false);
  m.to_shared(a);
  if (threadIdx.x < n) sign[threadIdx.x] = ss[threadIdx.x];
  // T := -U S; column j of T is final once columns < j are applied: T_il -= T_ij L_lj, l > j.
#pragma unroll
  for (int p = 0; p < E; ++p)
#pragma unroll
    for (int q = 0; q < E; ++q) {
      const int i = m.row(p), j = m.col(q);
      m.v[p][q] = i <= j ? -m.v[p][q] * ss[j] : 0.0;
    }
  m.publish_col(0, cols[0]);
  __syncthreads();
  for (int j = 0; j + 1 < S::N; ++j) {
    double t[E], l[E];
#pragma unroll
    for (int p = 0; p < E; ++p) t[p] = cols[j & 1][m.row(p)];
#pragma unroll
    for (int q = 0; q < E; ++q) l[q] = a[m.col(q) + j * S::ld];
#pragma unroll
    for (int p = 0; p < E; ++p)
#pragma unroll
      for (int q = 0; q < E; ++q)
        if (m.row(p) <= j && m.col(q) > j) m.v[p][q] -= t[p] * l[q];
    m.publish_col(j + 1, cols[(j + 1) & 1]);
    __syncthreads();
  }
  m.store(n, Tw, true);
  invert_upper<E>(n, a, rows, Ui);
}

// A := S R2 R1 D^-1 on and above the diagonal, L below it in the top nc rows and V = Y below
// them; Vc (if not null) := V with its unit diagonal and zeros explicit; Tf := T, zeros below the
// diagonal. Rounded once to T.
template <class T>
__global__ void __launch_bounds__(256) wide_write_kernel(int m, int nc, const double* __restrict__ Y, int ldy,
                                                          const double* __restrict__ LU, const double* __restrict__ R1,
                                                          const double* __restrict__ R2, const double* __restrict__ Tw,
                                                          const double* __restrict__ sign,
                                                          const unsigned long long* __restrict__ colmax,
                                                          T* __restrict__ A, int lda, T* __restrict__ Vc, int ldvc,
                                                          T* __restrict__ Tf, int ldt, const int* __restrict__ failed) {
  if (*failed) return;
  const int c = static_cast<int>(blockIdx.y);
  const int e = column_exponent(colmax[c]);
  for (int r = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); r < m; r += static_cast<int>(gridDim.x * blockDim.x)) {
    double a, v;
    if (r >= nc) {
      a = v = Y[r + static_cast<std::ptrdiff_t>(c) * ldy];
    } else if (r > c) {
      a = v = LU[r + c * nc];
    } else {
      double sum = 0;  // (R2 R1)_rc
      for (int k = r; k <= c; ++k) sum += R2[r + k * nc] * R1[k + c * nc];
      // R of A D unscaled to R of A (scalbn: 2^e need not be a double).
      a = scalbn(sign[r] * sum, e);
      v = r == c ? 1.0 : 0.0;
    }
    A[r + static_cast<std::ptrdiff_t>(c) * lda] = static_cast<T>(a);
    if (Vc) Vc[r + static_cast<std::ptrdiff_t>(c) * ldvc] = static_cast<T>(v);
    if (r < nc) Tf[r + static_cast<std::ptrdiff_t>(c) * ldt] = static_cast<T>(r <= c ? Tw[r + c * nc] : 0.0);
  }
}

dim3 column_grid(int m, int nc, int cap) {
  const int chunks = (m + 255) / 256;
  return dim3(static_cast<unsigned>(chunks < cap ? chunks : cap), static_cast<unsigned>(nc));
}

}  // namespace

std::size_t cholqr_wide_doubles(int m, int nc) {
  return 2 * dpart(static_cast<std::size_t>(m) * nc) + small_matrices * dpart(static_cast<std::size_t>(nc) * nc) +
         2 * dpart(nc) + 32;
}

template <class T>
bool cholqr_wide(const char* kernel, int m, int nc, T* A, int lda, T* Vc, int ldvc, T* Tf, int ldt, double* work,
                 cublasHandle_t h) {
  if (nc > cholqr_wide_max) bad_argument(kernel, "nc", nc, "<=", "cholqr_wide_max", cholqr_wide_max);
  const cudaStream_t s = stream_of(kernel, h);
  const wide_layout w = layout(work, m, nc);
  const int ld = m;
  constexpr double eps = sizeof(T) == sizeof(float) ? FLT_EPSILON : DBL_EPSILON;
  const auto N = CUBLAS_OP_N, Tr = CUBLAS_OP_T;
  // The small steps' register blocks: 2 x 2 entries a thread up to 64 columns, else 4 x 4.
  const bool e2 = nc <= 64;
  const int big = 32 * (e2 ? 2 : 4), smem = static_cast<int>(sizeof(double)) * big * (big + 1);
  check(kernel, "cudaFuncSetAttribute (small_cholesky_inverse_kernel)",
        cudaFuncSetAttribute(e2 ? small_cholesky_inverse_kernel<2> : small_cholesky_inverse_kernel<4>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  check(kernel, "cudaFuncSetAttribute (small_lu_t_kernel)",
        cudaFuncSetAttribute(e2 ? small_lu_t_kernel<2> : small_lu_t_kernel<4>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             smem));
  auto gram = [&](const double* Z) {
    check(kernel, "gemm (G = Z^T Z)", cublas::gemm(h, Tr, N, nc, nc, m, 1.0, Z, ld, Z, ld, 0.0, w.G, nc));
  };
  auto cholesky_inverse = [&](const double* in, double tol, bool factor, double* R, double* Ri) {
    (e2 ? small_cholesky_inverse_kernel<2> : small_cholesky_inverse_kernel<4>)<<<1, threads, smem, s>>>(
        nc, in, tol, factor, R, Ri, w.failed);
    check(kernel, "small_cholesky_inverse_kernel launch", cudaGetLastError());
  };
  auto times = [&](int rows, const double* Z, const double* Ri, double* out) {
    check(kernel, "gemm (Z R^-1)", cublas::gemm(h, N, N, rows, nc, nc, 1.0, Z, ld, Ri, nc, 0.0, out, ld));
  };

  check(kernel, "cudaMemsetAsync (column maxima, verdict)",
        cudaMemsetAsync(w.colmax, 0, dpart(nc) * sizeof(double) + sizeof(int), s));
  wide_column_max_kernel<T><<<column_grid(m, nc, 8), 256, 0, s>>>(m, A, lda, w.colmax);
  check(kernel, "wide_column_max_kernel launch", cudaGetLastError());
  wide_scale_kernel<T><<<column_grid(m, nc, 8), 256, 0, s>>>(m, A, lda, w.colmax, w.X, ld);
  check(kernel, "wide_scale_kernel launch", cudaGetLastError());
  gram(w.X);
  cholesky_inverse(w.G, 0.0, true, w.R1, w.R1i);
  times(m, w.X, w.R1i, w.Y);  // Q1
  gram(w.Y);
  // A Q1 far from orthogonal means cond(A) is past CholeskyQR2's reach.
  cholesky_inverse(w.G, 1.0 / 64, true, w.R2, w.R2i);
  times(m, w.Y, w.R2i, w.X);  // Q
  gram(w.X);
  cholesky_inverse(w.G, 64 * eps, false, nullptr, nullptr);
  // The verdict decides what the host launches next: the one wait of this path.
  int failed = 1;
  check(kernel, "cudaMemcpyAsync (verdict)", cudaMemcpyAsync(&failed, w.failed, sizeof(int), cudaMemcpyDeviceToHost, s));
  check(kernel, "cudaStreamSynchronize (verdict)", cudaStreamSynchronize(s));
  if (failed) return false;

  (e2 ? small_lu_t_kernel<2> : small_lu_t_kernel<4>)<<<1, threads, smem, s>>>(nc, w.X, ld, w.LU, w.Tw, w.Ui, w.sign,
                                                                               w.failed);
  check(kernel, "small_lu_t_kernel launch", cudaGetLastError());
  if (m > nc) times(m - nc, w.X + nc, w.Ui, w.Y + nc);  // V's rows below the top: Q U^-1
  wide_write_kernel<T><<<column_grid(m, nc, 16), 256, 0, s>>>(m, nc, w.Y, ld, w.LU, w.R1, w.R2, w.Tw, w.sign,
                                                               w.colmax, A, lda, Vc, ldvc, Tf, ldt, w.failed);
  check(kernel, "wide_write_kernel launch", cudaGetLastError());
  return true;
}

#define TESSERA_CHOLQR_WIDE_INSTANTIATE(T)                                                                      \
  template bool cholqr_wide<T>(const char*, int, int, T*, int, T*, int, T*, int, double*, cublasHandle_t);
TESSERA_CHOLQR_WIDE_INSTANTIATE(float)
TESSERA_CHOLQR_WIDE_INSTANTIATE(double)
#undef TESSERA_CHOLQR_WIDE_INSTANTIATE

}  // namespace tessera::kernels::detail
