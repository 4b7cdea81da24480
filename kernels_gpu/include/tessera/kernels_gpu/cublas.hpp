#pragma once
// Tessera's one wrapper of the cuBLAS calls it makes: each name overloaded for float and double
// (the S and D routines), column-major, scalars by value (so the handle must be in host pointer
// mode), returning cuBLAS's status for check() below.
#include <cublas_v2.h>

namespace tessera::cublas {

// Throws std::runtime_error "<function>: <call> failed: <cuBLAS's message>".
[[noreturn]] void failed(const char* function, const char* call, cublasStatus_t status);

inline void check(const char* function, const char* call, cublasStatus_t status) {
  if (status != CUBLAS_STATUS_SUCCESS) [[unlikely]]
    failed(function, call, status);
}

// C := alpha op(A) op(B) + beta C
inline cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, float alpha, const float* A, int lda, const float* B,
                           int ldb, float beta, float* C, int ldc) {
  return cublasSgemm(h, ta, tb, m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc);
}
inline cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, double alpha, const double* A, int lda, const double* B,
                           int ldb, double beta, double* C, int ldc) {
  return cublasDgemm(h, ta, tb, m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc);
}

// gemm on batch matrices at strides sa, sb, sc (elements) from A, B, C.
inline cublasStatus_t gemm_strided(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                   int m, int n, int k, float alpha, const float* A, int lda,
                                   long long sa, const float* B, int ldb, long long sb, float beta,
                                   float* C, int ldc, long long sc, int batch) {
  return cublasSgemmStridedBatched(h, ta, tb, m, n, k, &alpha, A, lda, sa, B, ldb, sb, &beta, C,
                                   ldc, sc, batch);
}
inline cublasStatus_t gemm_strided(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                   int m, int n, int k, double alpha, const double* A, int lda,
                                   long long sa, const double* B, int ldb, long long sb,
                                   double beta, double* C, int ldc, long long sc, int batch) {
  return cublasDgemmStridedBatched(h, ta, tb, m, n, k, &alpha, A, lda, sa, B, ldb, sb, &beta, C,
                                   ldc, sc, batch);
}

// C := alpha op(A) B (side left) or alpha B op(A) (right), A triangular; C == B (ldc == ldb)
// is the in-place BLAS form.
inline cublasStatus_t trmm(cublasHandle_t h, cublasSideMode_t s, cublasFillMode_t uplo,
                           cublasOperation_t ta, cublasDiagType_t diag, int m, int n, float alpha,
                           const float* A, int lda, const float* B, int ldb, float* C, int ldc) {
  return cublasStrmm(h, s, uplo, ta, diag, m, n, &alpha, A, lda, B, ldb, C, ldc);
}
inline cublasStatus_t trmm(cublasHandle_t h, cublasSideMode_t s, cublasFillMode_t uplo,
                           cublasOperation_t ta, cublasDiagType_t diag, int m, int n, double alpha,
                           const double* A, int lda, const double* B, int ldb, double* C,
                           int ldc) {
  return cublasDtrmm(h, s, uplo, ta, diag, m, n, &alpha, A, lda, B, ldb, C, ldc);
}

// B := alpha op(A)^-1 B (side left) or alpha B op(A)^-1 (right), A triangular.
inline cublasStatus_t trsm(cublasHandle_t h, cublasSideMode_t s, cublasFillMode_t uplo,
                           cublasOperation_t ta, cublasDiagType_t diag, int m, int n, float alpha,
                           const float* A, int lda, float* B, int ldb) {
  return cublasStrsm(h, s, uplo, ta, diag, m, n, &alpha, A, lda, B, ldb);
}
inline cublasStatus_t trsm(cublasHandle_t h, cublasSideMode_t s, cublasFillMode_t uplo,
                           cublasOperation_t ta, cublasDiagType_t diag, int m, int n, double alpha,
                           const double* A, int lda, double* B, int ldb) {
  return cublasDtrsm(h, s, uplo, ta, diag, m, n, &alpha, A, lda, B, ldb);
}

// C := alpha op(A) + beta op(B); C == A allowed when ldc == lda and op(A) is A (same for B).
inline cublasStatus_t geam(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, float alpha, const float* A, int lda, float beta, const float* B,
                           int ldb, float* C, int ldc) {
  return cublasSgeam(h, ta, tb, m, n, &alpha, A, lda, &beta, B, ldb, C, ldc);
}
inline cublasStatus_t geam(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, double alpha, const double* A, int lda, double beta,
                           const double* B, int ldb, double* C, int ldc) {
  return cublasDgeam(h, ta, tb, m, n, &alpha, A, lda, &beta, B, ldb, C, ldc);
}

}  // namespace tessera::cublas
