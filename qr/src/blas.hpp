#pragma once
// Precision overloads of the few CBLAS/LAPACKE calls the qr sources make, so the templates stay
// one implementation.
#include <cblas.h>
#include <lapacke.h>

namespace tessera::qr::blas {

inline void trsm_lunn(int m, int n, const float* a, int lda, float* b, int ldb) {
  cblas_strsm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, m, n, 1.0f, a, lda, b, ldb);
}
inline void trsm_lunn(int m, int n, const double* a, int lda, double* b, int ldb) {
  cblas_dtrsm(CblasColMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, m, n, 1.0, a, lda, b, ldb);
}

// C := C - A B (no transposes).
inline void gemm_sub(int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c, int ldc) {
  cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, -1.0f, a, lda, b, ldb, 1.0f, c, ldc);
}
inline void gemm_sub(int m, int n, int k, const double* a, int lda, const double* b, int ldb, double* c, int ldc) {
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, -1.0, a, lda, b, ldb, 1.0, c, ldc);
}

// C := C - A^T A (upper triangle), A: k x n.
inline void syrk_sub(int n, int k, const float* a, int lda, float* c, int ldc) {
  cblas_ssyrk(CblasColMajor, CblasUpper, CblasTrans, n, k, -1.0f, a, lda, 1.0f, c, ldc);
}
inline void syrk_sub(int n, int k, const double* a, int lda, double* c, int ldc) {
  cblas_dsyrk(CblasColMajor, CblasUpper, CblasTrans, n, k, -1.0, a, lda, 1.0, c, ldc);
}

inline double norm1(int m, int n, const float* a, int lda) {
  return LAPACKE_slange(LAPACK_COL_MAJOR, '1', m, n, a, lda);
}
inline double norm1(int m, int n, const double* a, int lda) {
  return LAPACKE_dlange(LAPACK_COL_MAJOR, '1', m, n, a, lda);
}
inline double norm1_sym_upper(int n, const float* a, int lda) {
  return LAPACKE_slansy(LAPACK_COL_MAJOR, '1', 'U', n, a, lda);
}
inline double norm1_sym_upper(int n, const double* a, int lda) {
  return LAPACKE_dlansy(LAPACK_COL_MAJOR, '1', 'U', n, a, lda);
}

// C := Q C, Q from LAPACK GEQRT (V: m x k, T: nb x k); work: at least max(m, n) * nb.
inline int gemqrt_left(int m, int n, int k, int nb, const float* v, int ldv, const float* t, int ldt,
                       float* c, int ldc, float* work) {
  return LAPACKE_sgemqrt_work(LAPACK_COL_MAJOR, 'L', 'N', m, n, k, nb, v, ldv, t, ldt, c, ldc, work);
}
inline int gemqrt_left(int m, int n, int k, int nb, const double* v, int ldv, const double* t, int ldt,
                       double* c, int ldc, double* work) {
  return LAPACKE_dgemqrt_work(LAPACK_COL_MAJOR, 'L', 'N', m, n, k, nb, v, ldv, t, ldt, c, ldc, work);
}

// LAPACK's relative machine precision (LAMCH('E'): half of numeric_limits::epsilon when rounding).
inline double lamch_eps(float) { return LAPACKE_slamch('E'); }
inline double lamch_eps(double) { return LAPACKE_dlamch('E'); }

}  // namespace tessera::qr::blas
