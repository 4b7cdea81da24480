#pragma once
// Tessera's one wrapper of the CBLAS and LAPACKE routines it calls: each name is overloaded for
// float and double (the s and d routines), always column-major, so callers are written once as
// templates. LAPACK routines that take a workspace are the LAPACKE _work variants (caller
// workspace, no allocation) and return LAPACK's info; geqrf, orgqr and gels allocate theirs
// (references for tests and benchmarks).
#include <cblas.h>

#ifndef LAPACK_COMPLEX_CPP
#define LAPACK_COMPLEX_CPP  // std::complex instead of C99 _Complex, which ISO C++ lacks
#endif
#include <lapacke.h>

#include <type_traits>

namespace tessera::blas {

// --- BLAS level 1 ----------------------------------------------------------------------------
inline float dot(int n, const float* x, int incx, const float* y, int incy) {
  return cblas_sdot(n, x, incx, y, incy);
}
inline double dot(int n, const double* x, int incx, const double* y, int incy) {
  return cblas_ddot(n, x, incx, y, incy);
}

// y := alpha x + y
inline void axpy(int n, float alpha, const float* x, int incx, float* y, int incy) {
  cblas_saxpy(n, alpha, x, incx, y, incy);
}
inline void axpy(int n, double alpha, const double* x, int incx, double* y, int incy) {
  cblas_daxpy(n, alpha, x, incx, y, incy);
}

// --- BLAS level 3 ----------------------------------------------------------------------------
// C := alpha op(A) op(B) + beta C
inline void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha,
                 const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  cblas_sgemm(CblasColMajor, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
inline void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, double alpha,
                 const double* A, int lda, const double* B, int ldb, double beta, double* C,
                 int ldc) {
  cblas_dgemm(CblasColMajor, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

// C := alpha op(A) op(A)^T + beta C (op(A) n x k), the uplo triangle of C only.
inline void syrk(CBLAS_UPLO uplo, CBLAS_TRANSPOSE t, int n, int k, float alpha, const float* A,
                 int lda, float beta, float* C, int ldc) {
  cblas_ssyrk(CblasColMajor, uplo, t, n, k, alpha, A, lda, beta, C, ldc);
}
inline void syrk(CBLAS_UPLO uplo, CBLAS_TRANSPOSE t, int n, int k, double alpha, const double* A,
                 int lda, double beta, double* C, int ldc) {
  cblas_dsyrk(CblasColMajor, uplo, t, n, k, alpha, A, lda, beta, C, ldc);
}

// B := alpha op(A) B (side left) or alpha B op(A) (right), A triangular.
inline void trmm(CBLAS_SIDE s, CBLAS_UPLO uplo, CBLAS_TRANSPOSE ta, CBLAS_DIAG diag, int m, int n,
                 float alpha, const float* A, int lda, float* B, int ldb) {
  cblas_strmm(CblasColMajor, s, uplo, ta, diag, m, n, alpha, A, lda, B, ldb);
}
inline void trmm(CBLAS_SIDE s, CBLAS_UPLO uplo, CBLAS_TRANSPOSE ta, CBLAS_DIAG diag, int m, int n,
                 double alpha, const double* A, int lda, double* B, int ldb) {
  cblas_dtrmm(CblasColMajor, s, uplo, ta, diag, m, n, alpha, A, lda, B, ldb);
}

// B := alpha op(A)^-1 B (side left) or alpha B op(A)^-1 (right), A triangular.
inline void trsm(CBLAS_SIDE s, CBLAS_UPLO uplo, CBLAS_TRANSPOSE ta, CBLAS_DIAG diag, int m, int n,
                 float alpha, const float* A, int lda, float* B, int ldb) {
  cblas_strsm(CblasColMajor, s, uplo, ta, diag, m, n, alpha, A, lda, B, ldb);
}
inline void trsm(CBLAS_SIDE s, CBLAS_UPLO uplo, CBLAS_TRANSPOSE ta, CBLAS_DIAG diag, int m, int n,
                 double alpha, const double* A, int lda, double* B, int ldb) {
  cblas_dtrsm(CblasColMajor, s, uplo, ta, diag, m, n, alpha, A, lda, B, ldb);
}

// --- LAPACK auxiliaries ----------------------------------------------------------------------
// LAMCH(cmach) of T's precision, e.g. lamch<double>('E'): the relative machine precision (half
// of numeric_limits::epsilon when rounding).
template <class T>
T lamch(char cmach) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  if constexpr (std::is_same_v<T, float>)
    return LAPACKE_slamch(cmach);
  else
    return LAPACKE_dlamch(cmach);
}

// norm ('M', '1', 'I' or 'F') of the m x n matrix A.
inline float lange(char norm, int m, int n, const float* A, int lda) {
  return LAPACKE_slange(LAPACK_COL_MAJOR, norm, m, n, A, lda);
}
inline double lange(char norm, int m, int n, const double* A, int lda) {
  return LAPACKE_dlange(LAPACK_COL_MAJOR, norm, m, n, A, lda);
}

// norm of the symmetric n x n matrix stored in A's uplo ('U' or 'L') triangle.
inline float lansy(char norm, char uplo, int n, const float* A, int lda) {
  return LAPACKE_slansy(LAPACK_COL_MAJOR, norm, uplo, n, A, lda);
}
inline double lansy(char norm, char uplo, int n, const double* A, int lda) {
  return LAPACKE_dlansy(LAPACK_COL_MAJOR, norm, uplo, n, A, lda);
}

// The reflector H = I - tau [1; v] [1; v]^T with H [alpha; x] = [beta; 0]: alpha := beta, x := v.
inline int larfg(int n, float* alpha, float* x, int incx, float* tau) {
  return LAPACKE_slarfg_work(n, alpha, x, incx, tau);
}
inline int larfg(int n, double* alpha, double* x, int incx, double* tau) {
  return LAPACKE_dlarfg_work(n, alpha, x, incx, tau);
}

// T (k x k, ldt) of the block reflector H = I - V T V^T from V (storev 'C': n x k) and tau.
inline int larft(char direct, char storev, int n, int k, const float* v, int ldv, const float* tau,
                 float* t, int ldt) {
  return LAPACKE_slarft_work(LAPACK_COL_MAJOR, direct, storev, n, k, v, ldv, tau, t, ldt);
}
inline int larft(char direct, char storev, int n, int k, const double* v, int ldv,
                 const double* tau, double* t, int ldt) {
  return LAPACKE_dlarft_work(LAPACK_COL_MAJOR, direct, storev, n, k, v, ldv, tau, t, ldt);
}

// --- QR with compact WY blocks (GEQRT family; work: LAPACK's documented size) ----------------
inline int geqrt(int m, int n, int nb, float* a, int lda, float* t, int ldt, float* work) {
  return LAPACKE_sgeqrt_work(LAPACK_COL_MAJOR, m, n, nb, a, lda, t, ldt, work);
}
inline int geqrt(int m, int n, int nb, double* a, int lda, double* t, int ldt, double* work) {
  return LAPACKE_dgeqrt_work(LAPACK_COL_MAJOR, m, n, nb, a, lda, t, ldt, work);
}

// The full T (n x n) of all n reflectors at once, recursively (LAPACK's reference for the full T).
inline int geqrt3(int m, int n, float* a, int lda, float* t, int ldt) {
  return LAPACKE_sgeqrt3_work(LAPACK_COL_MAJOR, m, n, a, lda, t, ldt);
}
inline int geqrt3(int m, int n, double* a, int lda, double* t, int ldt) {
  return LAPACKE_dgeqrt3_work(LAPACK_COL_MAJOR, m, n, a, lda, t, ldt);
}

// C := op(I - V T V^T) C (side 'L') for k forward, columnwise reflectors; work: n x k (ldwork n).
inline int larfb(char side, char trans, int m, int n, int k, const float* v, int ldv, const float* t, int ldt,
                 float* c, int ldc, float* work, int ldwork) {
  return LAPACKE_slarfb_work(LAPACK_COL_MAJOR, side, trans, 'F', 'C', m, n, k, v, ldv, t, ldt, c, ldc, work, ldwork);
}
inline int larfb(char side, char trans, int m, int n, int k, const double* v, int ldv, const double* t, int ldt,
                 double* c, int ldc, double* work, int ldwork) {
  return LAPACKE_dlarfb_work(LAPACK_COL_MAJOR, side, trans, 'F', 'C', m, n, k, v, ldv, t, ldt, c, ldc, work, ldwork);
}

inline int geqrt2(int m, int n, float* a, int lda, float* t, int ldt) {
  return LAPACKE_sgeqrt2_work(LAPACK_COL_MAJOR, m, n, a, lda, t, ldt);
}
inline int geqrt2(int m, int n, double* a, int lda, double* t, int ldt) {
  return LAPACKE_dgeqrt2_work(LAPACK_COL_MAJOR, m, n, a, lda, t, ldt);
}

inline int tpqrt(int m, int n, int l, int nb, float* a, int lda, float* b, int ldb, float* t,
                 int ldt, float* work) {
  return LAPACKE_stpqrt_work(LAPACK_COL_MAJOR, m, n, l, nb, a, lda, b, ldb, t, ldt, work);
}
inline int tpqrt(int m, int n, int l, int nb, double* a, int lda, double* b, int ldb, double* t,
                 int ldt, double* work) {
  return LAPACKE_dtpqrt_work(LAPACK_COL_MAJOR, m, n, l, nb, a, lda, b, ldb, t, ldt, work);
}

inline int tpqrt2(int m, int n, int l, float* a, int lda, float* b, int ldb, float* t, int ldt) {
  return LAPACKE_stpqrt2_work(LAPACK_COL_MAJOR, m, n, l, a, lda, b, ldb, t, ldt);
}
inline int tpqrt2(int m, int n, int l, double* a, int lda, double* b, int ldb, double* t, int ldt) {
  return LAPACKE_dtpqrt2_work(LAPACK_COL_MAJOR, m, n, l, a, lda, b, ldb, t, ldt);
}

// C := op(Q) C (side 'L') or C op(Q) ('R'), Q from GEQRT (V: k reflectors, T: nb x k).
inline int gemqrt(char side, char trans, int m, int n, int k, int nb, const float* v, int ldv,
                  const float* t, int ldt, float* c, int ldc, float* work) {
  return LAPACKE_sgemqrt_work(LAPACK_COL_MAJOR, side, trans, m, n, k, nb, v, ldv, t, ldt, c, ldc,
                              work);
}
inline int gemqrt(char side, char trans, int m, int n, int k, int nb, const double* v, int ldv,
                  const double* t, int ldt, double* c, int ldc, double* work) {
  return LAPACKE_dgemqrt_work(LAPACK_COL_MAJOR, side, trans, m, n, k, nb, v, ldv, t, ldt, c, ldc,
                              work);
}

// [A; B] := op(Q) [A; B] (side 'L') or [A B] op(Q) ('R'), Q from TPQRT.
inline int tpmqrt(char side, char trans, int m, int n, int k, int l, int nb, const float* v,
                  int ldv, const float* t, int ldt, float* a, int lda, float* b, int ldb,
                  float* work) {
  return LAPACKE_stpmqrt_work(LAPACK_COL_MAJOR, side, trans, m, n, k, l, nb, v, ldv, t, ldt, a, lda,
                              b, ldb, work);
}
inline int tpmqrt(char side, char trans, int m, int n, int k, int l, int nb, const double* v,
                  int ldv, const double* t, int ldt, double* a, int lda, double* b, int ldb,
                  double* work) {
  return LAPACKE_dtpmqrt_work(LAPACK_COL_MAJOR, side, trans, m, n, k, l, nb, v, ldv, t, ldt, a, lda,
                              b, ldb, work);
}

// --- References (LAPACKE allocates the workspace) --------------------------------------------
inline int geqrf(int m, int n, float* a, int lda, float* tau) {
  return LAPACKE_sgeqrf(LAPACK_COL_MAJOR, m, n, a, lda, tau);
}
inline int geqrf(int m, int n, double* a, int lda, double* tau) {
  return LAPACKE_dgeqrf(LAPACK_COL_MAJOR, m, n, a, lda, tau);
}
// The same on caller workspace (lwork = -1: the size wanted, in work[0]), for timing LAPACK alone.
inline int geqrf(int m, int n, float* a, int lda, float* tau, float* work, int lwork) {
  return LAPACKE_sgeqrf_work(LAPACK_COL_MAJOR, m, n, a, lda, tau, work, lwork);
}
inline int geqrf(int m, int n, double* a, int lda, double* tau, double* work, int lwork) {
  return LAPACKE_dgeqrf_work(LAPACK_COL_MAJOR, m, n, a, lda, tau, work, lwork);
}

inline int orgqr(int m, int n, int k, float* a, int lda, const float* tau) {
  return LAPACKE_sorgqr(LAPACK_COL_MAJOR, m, n, k, a, lda, tau);
}
inline int orgqr(int m, int n, int k, double* a, int lda, const double* tau) {
  return LAPACKE_dorgqr(LAPACK_COL_MAJOR, m, n, k, a, lda, tau);
}

inline int gels(char trans, int m, int n, int nrhs, float* a, int lda, float* b, int ldb) {
  return LAPACKE_sgels(LAPACK_COL_MAJOR, trans, m, n, nrhs, a, lda, b, ldb);
}
inline int gels(char trans, int m, int n, int nrhs, double* a, int lda, double* b, int ldb) {
  return LAPACKE_dgels(LAPACK_COL_MAJOR, trans, m, n, nrhs, a, lda, b, ldb);
}

// LU with partial pivoting (ipiv 1-based), the inverse from it (work of lwork >= n), and solves.
// The _work forms: no allocation, so they may run on many threads at once for tiny matrices.
inline int getrf(int m, int n, float* a, int lda, int* ipiv) {
  return LAPACKE_sgetrf_work(LAPACK_COL_MAJOR, m, n, a, lda, ipiv);
}
inline int getrf(int m, int n, double* a, int lda, int* ipiv) {
  return LAPACKE_dgetrf_work(LAPACK_COL_MAJOR, m, n, a, lda, ipiv);
}
inline int getri(int n, float* a, int lda, const int* ipiv, float* work, int lwork) {
  return LAPACKE_sgetri_work(LAPACK_COL_MAJOR, n, a, lda, ipiv, work, lwork);
}
inline int getri(int n, double* a, int lda, const int* ipiv, double* work, int lwork) {
  return LAPACKE_dgetri_work(LAPACK_COL_MAJOR, n, a, lda, ipiv, work, lwork);
}
inline int getrs(char trans, int n, int nrhs, const float* a, int lda, const int* ipiv, float* b,
                 int ldb) {
  return LAPACKE_sgetrs_work(LAPACK_COL_MAJOR, trans, n, nrhs, a, lda, ipiv, b, ldb);
}
inline int getrs(char trans, int n, int nrhs, const double* a, int lda, const int* ipiv, double* b,
                 int ldb) {
  return LAPACKE_dgetrs_work(LAPACK_COL_MAJOR, trans, n, nrhs, a, lda, ipiv, b, ldb);
}
inline int gesv(int n, int nrhs, float* a, int lda, int* ipiv, float* b, int ldb) {
  return LAPACKE_sgesv_work(LAPACK_COL_MAJOR, n, nrhs, a, lda, ipiv, b, ldb);
}
inline int gesv(int n, int nrhs, double* a, int lda, int* ipiv, double* b, int ldb) {
  return LAPACKE_dgesv_work(LAPACK_COL_MAJOR, n, nrhs, a, lda, ipiv, b, ldb);
}

}  // namespace tessera::blas
