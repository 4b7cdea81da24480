#pragma once
// Column equilibration of gpu_geqrt's blocks, which makes them safe at any scale (issue #16).
//
// Each block of at most 32 columns is factored as A D instead of A, D = diag(2^-e_c) with e_c the
// exponent of max_i |a_ic| (so A D's columns have max-abs in [1/2, 1)): the Gram matrix and the
// Householder sums of squares then neither underflow nor overflow, whatever the scale of A
// (entries of 1e-300 squared flush to zero, of 1e300 overflow). Q of A D is Q of A for a positive
// diagonal D, so V, tau and T are those of A (LAPACK's reflectors are scale invariant), and R of A
// is R of A D times D^-1: a power of two per column, exact unless the result is subnormal.
// cholqr_block finds the column maxima in its first pass (beside A^T A) and keeps them in its
// state; CholeskyQR2 scales A^T A and the rows it loads and unscales R as it writes it, and the
// Householder fallback scales the block in place before its first column and unscales R at its end.
#include <cstddef>

#include <cuda_runtime.h>

namespace tessera::kernels::detail {

// The block's column maxima in a cholqr_block state (32 entries, the bits of max |a_ic| as a
// double: non-negative doubles order as their bits), filled by cholqr_block.
const unsigned long long* cholqr_column_max(void* state);

// householder_block that scales the block's columns by column_max first (as above) and unscales R
// at its end; column_max null: householder_block. With column_max, a column whose remaining part
// has a squared norm below 2^-960 (double; float: 2^-90) of its equilibrated (>= 1/4) squared norm
// is taken as zero, LAPACK's tau = 0 and zero V: its sum of squares could be inaccurate there, and
// dropping it changes the column by less than 2^-480 of its norm.
template <class T>
void householder_block_scaled(const char* kernel, int m, int nc, T* A, int lda, T* tau, T* Vc, int ldvc, T* Tf,
                              int ldt, T* scratch, double* gram, const unsigned long long* column_max, int sms,
                              const int* skip, cudaStream_t stream);

#ifdef __CUDACC__
// The exponent e with max |a_c| 2^-e in [1/2, 1), from that maximum (column_exponent: from
// cholqr_column_max's entry); 0 for a zero or non-finite column (left alone: zero stays zero, Inf
// and NaN stay visible). Clamped to [-1021, 1024] so that 2^-e is a double (and so is 2^e, but
// for e = 1024, by scalbn).
__device__ inline int exponent_of_max(double x) {
  if (!(x > 0) || !isfinite(x)) return 0;
  int e = 0;
  frexp(x, &e);
  return e < -1021 ? -1021 : e;
}
__device__ inline int column_exponent(unsigned long long bits) {
  return exponent_of_max(__longlong_as_double(static_cast<long long>(bits)));
}

// Squared norms of a remaining column (alpha^2 + x^T x) below which an equilibrated column's
// reflector is skipped (see householder_block_scaled): sums of squares are accurate above them
// even where terms are subnormal (m * 2^-1075 << eps * 2^-960), and the dropped part is < 2^-480
// (2^-45) of a column of norm >= 1/2.
template <class T>
__device__ constexpr T negligible_square() {
  return sizeof(T) == sizeof(float) ? T(0x1p-90) : T(0x1p-960);
}

// The correctly rounded 1 / x, by the reciprocal instruction and its refinement rather than a
// division.
__device__ __forceinline__ double reciprocal(double x) { return __drcp_rn(x); }
__device__ __forceinline__ float reciprocal(float x) { return __frcp_rn(x); }

// LARFG's reflector from alpha and sigma = x^T x of an equilibrated column of precision T, in the
// compute precision C (double for T = float too, or T itself): beta = -sign(alpha) ||(alpha, x)||,
// tau = 1 + |alpha| / ||.||, and scale = 1 / (alpha - beta) (v = [1; scale x]), from one reciprocal
// square root and one reciprocal (the chain every column waits on); tau = 0, scale = 0, beta =
// alpha where the column is negligible.
template <class T, class C>
__device__ __forceinline__ void reflector_from_sums(C alpha, C sigma, C& beta, C& tau, C& scale) {
  C b = alpha, t = 0, sc = 0;
  const C s2 = alpha * alpha + sigma;
  if (sigma != C(0) && !(s2 < static_cast<C>(negligible_square<T>()))) {  // NaN stays visible
    const C r = rsqrt(s2), norm = s2 * r;
    b = -copysign(norm, alpha);
    t = fma(fabs(alpha), r, C(1));
    sc = copysign(reciprocal(fabs(alpha) + norm), alpha);
  }
  beta = b, tau = t, scale = sc;
}
#endif

}  // namespace tessera::kernels::detail
