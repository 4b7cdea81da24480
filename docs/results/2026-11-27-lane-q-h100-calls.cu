// The standalone program behind 2026-11-27-lane-q-h100-calls.txt (lane Q's calls, one at a time):
// nvcc -O2 -arch=sm_90 -o calls 2026-11-27-lane-q-h100-calls.cu -lcublas; ./calls (14500 rows), ./calls small
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <vector>
#include <algorithm>
template <class T> struct B;
template <> struct B<double> {
  static cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t a, cublasOperation_t b, int m, int n, int k, const double* al, const double* A, int lda, const double* Bm, int ldb, const double* be, double* C, int ldc) { return cublasDgemm(h, a, b, m, n, k, al, A, lda, Bm, ldb, be, C, ldc); }
  static cublasStatus_t trmm(cublasHandle_t h, int m, int n, const double* al, const double* A, int lda, const double* Bm, int ldb, double* C, int ldc) { return cublasDtrmm(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, m, n, al, A, lda, Bm, ldb, C, ldc); }
  static cublasStatus_t geam(cublasHandle_t h, int m, int n, const double* al, const double* A, int lda, const double* be, const double* Bm, int ldb, double* C, int ldc) { return cublasDgeam(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, al, A, lda, be, Bm, ldb, C, ldc); }
};
template <> struct B<float> {
  static cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t a, cublasOperation_t b, int m, int n, int k, const float* al, const float* A, int lda, const float* Bm, int ldb, const float* be, float* C, int ldc) { return cublasSgemm(h, a, b, m, n, k, al, A, lda, Bm, ldb, be, C, ldc); }
  static cublasStatus_t trmm(cublasHandle_t h, int m, int n, const float* al, const float* A, int lda, const float* Bm, int ldb, float* C, int ldc) { return cublasStrmm(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, m, n, al, A, lda, Bm, ldb, C, ldc); }
  static cublasStatus_t geam(cublasHandle_t h, int m, int n, const float* al, const float* A, int lda, const float* be, const float* Bm, int ldb, float* C, int ldc) { return cublasSgeam(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, al, A, lda, be, Bm, ldb, C, ldc); }
};
template <class T>
void run(const char* name, int n, int m, int p, int w) {
  // Q: n x (m + p) (Q1 then Q2, ld n), V: p x m (ld p + 32), T: w x w, W, X: n x w.
  int ldv = p + 32;
  T *Q, *V, *Tm, *W, *X;
  cudaMalloc(&Q, sizeof(T) * size_t(n) * (m + p));
  cudaMalloc(&V, sizeof(T) * size_t(ldv) * m);
  cudaMalloc(&Tm, sizeof(T) * size_t(w) * w);
  cudaMalloc(&W, sizeof(T) * size_t(n) * w);
  cudaMalloc(&X, sizeof(T) * size_t(n) * w);
  cudaMemset(Q, 0, sizeof(T) * size_t(n) * (m + p));
  cudaMemset(V, 0, sizeof(T) * size_t(ldv) * m);
  cudaMemset(Tm, 0, sizeof(T) * w * w);
  cublasHandle_t h; cublasCreate(&h);
  cudaStream_t s; cudaStreamCreate(&s); cublasSetStream(h, s);
  T one = 1, mone = -1, zero = 0;
  T* Q2 = Q + size_t(n) * m;
  const int groups = m / w;
  const int NE = 7;
  cudaEvent_t ev[NE];
  for (auto& e : ev) cudaEventCreate(&e);
  std::vector<double> acc(NE, 0.0);
  for (int rep = 0; rep < 2; ++rep) {
    std::fill(acc.begin(), acc.end(), 0.0);
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    cudaEventRecord(a, s);
    for (int g = 0; g < groups; ++g) {
      T* Q1 = Q + size_t(n) * g * w;
      const T* Vb = V + size_t(ldv) * g * w;
      cudaEventRecord(ev[0], s);
      cudaMemcpy2DAsync(W, sizeof(T) * n, Q1, sizeof(T) * n, sizeof(T) * n, w, cudaMemcpyDeviceToDevice, s);
      cudaEventRecord(ev[1], s);
      B<T>::gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, w, p, &one, Q2, n, Vb, ldv, &one, W, n);
      cudaEventRecord(ev[2], s);
      B<T>::trmm(h, n, w, &one, Tm, w, W, n, W, n);   // in place, as the update does
      cudaEventRecord(ev[3], s);
      B<T>::gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, w, w, &one, W, n, Tm, w, &zero, X, n);  // the alternative: GEMM into X
      cudaEventRecord(ev[4], s);
      B<T>::gemm(h, CUBLAS_OP_N, CUBLAS_OP_T, n, p, w, &mone, W, n, Vb, ldv, &one, Q2, n);
      cudaEventRecord(ev[5], s);
      B<T>::geam(h, n, w, &one, Q1, n, &mone, W, n, Q1, n);
      cudaEventRecord(ev[6], s);
      cudaEventSynchronize(ev[6]);
      for (int e = 1; e < NE; ++e) { float ms; cudaEventElapsedTime(&ms, ev[e - 1], ev[e]); acc[e] += ms; }
    }
    cudaEventRecord(b, s); cudaEventSynchronize(b);
    float tot; cudaEventElapsedTime(&tot, a, b);
    // Without events between: the sequence alone, T's product by the TRMM in place or by a GEMM into X.
    auto sequence = [&](bool gemm_t) {
      cudaEventRecord(a, s);
      for (int g = 0; g < groups; ++g) {
        T* Q1 = Q + size_t(n) * g * w;
        const T* Vb = V + size_t(ldv) * g * w;
        cudaMemcpy2DAsync(W, sizeof(T) * n, Q1, sizeof(T) * n, sizeof(T) * n, w, cudaMemcpyDeviceToDevice, s);
        B<T>::gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, w, p, &one, Q2, n, Vb, ldv, &one, W, n);
        if (gemm_t) B<T>::gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, w, w, &one, W, n, Tm, w, &zero, X, n);
        else B<T>::trmm(h, n, w, &one, Tm, w, W, n, W, n);
        T* WT = gemm_t ? X : W;
        B<T>::gemm(h, CUBLAS_OP_N, CUBLAS_OP_T, n, p, w, &mone, WT, n, Vb, ldv, &one, Q2, n);
        B<T>::geam(h, n, w, &one, Q1, n, &mone, WT, n, Q1, n);
      }
      cudaEventRecord(b, s); cudaEventSynchronize(b);
      float ms; cudaEventElapsedTime(&ms, a, b);
      return ms;
    };
    const float seq = sequence(false), seqx = sequence(true);
    if (rep == 1)
      printf("%s n=%d m=%d p=%d w=%d groups=%d: evented total %.3f ms; per group us: copy %.1f gemm1 %.1f trmm %.1f gemmT %.1f gemm3 %.1f geam %.1f | sequence %.3f ms, with GEMM for T %.3f ms\n",
             name, n, m, p, w, groups, tot, 1e3 * acc[1] / groups, 1e3 * acc[2] / groups, 1e3 * acc[3] / groups,
             1e3 * acc[4] / groups, 1e3 * acc[5] / groups, 1e3 * acc[6] / groups, seq, seqx);
  }
  cudaFree(Q); cudaFree(V); cudaFree(Tm); cudaFree(W); cudaFree(X);
  cublasDestroy(h); cudaStreamDestroy(s);
}
int main(int argc, char**) {
  if (argc > 1) {  // 2026-11-27-lane-q-h100-calls-small.txt: fewer rows, 100 new columns
    for (int n : {2048, 4096, 6000})
      for (int w : {32, 64}) { run<double>("d", n, 2900, 100, w); run<float>("s", n, 2900, 100, w); }
    for (int w : {32, 64}) run<double>("d", 6000, 2500, 500, w);
    return 0;
  }
  for (int w : {32, 64, 128, 256, 512}) { run<double>("d", 14500, 3000, 500, w); run<float>("s", 14500, 3000, 500, w); }
  for (int w : {64, 256}) { run<double>("d", 8200, 3000, 200, w); }
  return 0;
}
