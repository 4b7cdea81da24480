#pragma once
// One overload per precision of the LAPACK routines behind the kernels, so each kernel is written
// once as a template. The _work variants take caller workspace and never allocate.
#include <tessera/kernels_cpu/common.hpp>

#define LAPACK_COMPLEX_CPP  // std::complex instead of C99 _Complex, which ISO C++ lacks
#include <lapacke.h>

namespace tessera::kernels::detail {

constexpr char to_char(side s) { return s == side::left ? 'L' : 'R'; }
constexpr char to_char(trans t) { return t == trans::trans ? 'T' : 'N'; }

inline int geqrt(int m, int n, int nb, float* a, int lda, float* t, int ldt, float* work) {
  return LAPACKE_sgeqrt_work(LAPACK_COL_MAJOR, m, n, nb, a, lda, t, ldt, work);
}
inline int geqrt(int m, int n, int nb, double* a, int lda, double* t, int ldt, double* work) {
  return LAPACKE_dgeqrt_work(LAPACK_COL_MAJOR, m, n, nb, a, lda, t, ldt, work);
}

inline int geqrt2(int m, int n, float* a, int lda, float* t, int ldt) {
  return LAPACKE_sgeqrt2_work(LAPACK_COL_MAJOR, m, n, a, lda, t, ldt);
}
inline int geqrt2(int m, int n, double* a, int lda, double* t, int ldt) {
  return LAPACKE_dgeqrt2_work(LAPACK_COL_MAJOR, m, n, a, lda, t, ldt);
}
inline int tpqrt2(int m, int n, int l, float* a, int lda, float* b, int ldb, float* t, int ldt) {
  return LAPACKE_stpqrt2_work(LAPACK_COL_MAJOR, m, n, l, a, lda, b, ldb, t, ldt);
}
inline int tpqrt2(int m, int n, int l, double* a, int lda, double* b, int ldb, double* t, int ldt) {
  return LAPACKE_dtpqrt2_work(LAPACK_COL_MAJOR, m, n, l, a, lda, b, ldb, t, ldt);
}

inline int larfg(int n, float* alpha, float* x, int incx, float* tau) {
  return LAPACKE_slarfg_work(n, alpha, x, incx, tau);
}
inline int larfg(int n, double* alpha, double* x, int incx, double* tau) {
  return LAPACKE_dlarfg_work(n, alpha, x, incx, tau);
}

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

}  // namespace tessera::kernels::detail
