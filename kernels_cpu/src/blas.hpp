#pragma once
// One overload per precision of the BLAS routines the kernels call directly (CBLAS, column-major).
#include <cblas.h>

namespace tessera::kernels::detail {

inline void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha,
                 const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  cblas_sgemm(CblasColMajor, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
inline void gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, double alpha,
                 const double* A, int lda, const double* B, int ldb, double beta, double* C,
                 int ldc) {
  cblas_dgemm(CblasColMajor, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

inline void trmm(CBLAS_SIDE s, CBLAS_UPLO uplo, CBLAS_TRANSPOSE ta, CBLAS_DIAG diag, int m, int n,
                 const float* A, int lda, float* B, int ldb) {
  cblas_strmm(CblasColMajor, s, uplo, ta, diag, m, n, 1.0f, A, lda, B, ldb);
}
inline void trmm(CBLAS_SIDE s, CBLAS_UPLO uplo, CBLAS_TRANSPOSE ta, CBLAS_DIAG diag, int m, int n,
                 const double* A, int lda, double* B, int ldb) {
  cblas_dtrmm(CblasColMajor, s, uplo, ta, diag, m, n, 1.0, A, lda, B, ldb);
}

// Level-1: OpenBLAS takes no lock in these (see panel2.hpp).
inline float dot(int m, const float* x, const float* y) { return cblas_sdot(m, x, 1, y, 1); }
inline double dot(int m, const double* x, const double* y) { return cblas_ddot(m, x, 1, y, 1); }
inline void axpy(int m, float a, const float* x, float* y) { cblas_saxpy(m, a, x, 1, y, 1); }
inline void axpy(int m, double a, const double* x, double* y) { cblas_daxpy(m, a, x, 1, y, 1); }

}  // namespace tessera::kernels::detail
