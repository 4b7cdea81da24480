// Host time per enqueued call on the H200 machine (docs/results/2026-11-29-rank-k-as-rows-h200.md):
// "host": cuBLAS GEMMs, copies, launches, events (call 9); "lt": cublasLtMatmul with a cached
// algorithm against cublasDgemm (call 10). nvcc -O2 -std=c++17 -arch=sm_90 ... -lcublasLt -lcublas
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <random>
#include <vector>
__global__ void noop(double* p) { if (threadIdx.x == 1023) p[0] = 1; }
using clk = std::chrono::steady_clock;
#define CK(x) do { auto _s = (x); if (_s != 0) { std::printf("error %d at %s:%d\n", int(_s), __FILE__, __LINE__); } } while (0)
template <class F> double per_call(const char* tag, F f, int n, cudaStream_t s) {
  for (int i = 0; i < 20; ++i) f(i);
  cudaStreamSynchronize(s);
  auto t0 = clk::now();
  for (int i = 0; i < n; ++i) f(i);
  auto t1 = clk::now();
  cudaStreamSynchronize(s);
  auto t2 = clk::now();
  double h = std::chrono::duration<double, std::micro>(t1 - t0).count() / n;
  double g = std::chrono::duration<double, std::micro>(t2 - t0).count() / n;
  std::printf("  %-34s host %6.2f us/call, host+gpu %6.2f us/call\n", tag, h, g);
  return h;
}
struct lt_gemm {
  cublasLtHandle_t lt;
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatmulPreference_t pref;
  void* ws; size_t wsz = size_t(32) << 20;
  cublasLtMatmulAlgo_t algo; bool have = false;
  int key[8] = {};
  lt_gemm() {
    cublasLtCreate(&lt);
    cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_64F, CUDA_R_64F);
    cublasLtMatrixLayoutCreate(&la, CUDA_R_64F, 1, 1, 1);
    cublasLtMatrixLayoutCreate(&lb, CUDA_R_64F, 1, 1, 1);
    cublasLtMatrixLayoutCreate(&lc, CUDA_R_64F, 1, 1, 1);
    cublasLtMatmulPreferenceCreate(&pref);
    cudaMalloc(&ws, wsz);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsz, sizeof wsz);
    uint32_t al = 8;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al, 4);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al, 4);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al, 4);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al, 4);
  }
  static void set(cublasLtMatrixLayout_t l, uint64_t r, uint64_t c, int64_t ld) {
    cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &r, 8);
    cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_COLS, &c, 8);
    cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_LD, &ld, 8);
  }
  // mode 0: heuristic every call; 1: cached by exact key; 2: cached ignoring n
  int run(int mode, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const double* alpha, const double* A, int lda,
          const double* B, int ldb, const double* beta, double* C, int ldc, cudaStream_t s) {
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    set(la, ta == CUBLAS_OP_N ? m : k, ta == CUBLAS_OP_N ? k : m, lda);
    set(lb, tb == CUBLAS_OP_N ? k : n, tb == CUBLAS_OP_N ? n : k, ldb);
    set(lc, m, n, ldc);
    int kk[8] = {int(ta), int(tb), m, mode == 2 ? 0 : n, k, lda, ldb, ldc};
    bool hit = have && mode != 0;
    for (int i = 0; i < 8 && hit; ++i) hit = kk[i] == key[i];
    if (!hit) {
      cublasLtMatmulHeuristicResult_t r; int cnt = 0;
      CK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &r, &cnt));
      if (cnt < 1) return -1;
      algo = r.algo; have = true;
      for (int i = 0; i < 8; ++i) key[i] = kk[i];
    }
    return int(cublasLtMatmul(lt, op, alpha, A, la, B, lb, beta, C, lc, C, lc, &algo, ws, wsz, s));
  }
};
int host_cost() {
  cudaStream_t s; int lo, hi; cudaDeviceGetStreamPriorityRange(&lo, &hi);
  cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, hi);
  cublasHandle_t h; cublasCreate(&h); cublasSetStream(h, s);
  const size_t N = size_t(8000) * 8000;
  double *A, *B, *C; cudaMalloc(&A, N * 8); cudaMalloc(&B, N * 8); cudaMalloc(&C, N * 8);
  cudaMemset(A, 0, N * 8); cudaMemset(B, 0, N * 8); cudaMemset(C, 0, N * 8);
  double one = 1, zero = 0;
  struct shp { int m, n, k; };
  auto run_gemms = [&](const char* tag) {
    for (shp x : {shp{128, 3000, 128}, shp{8000, 128, 128}, shp{64, 64, 5000}, shp{8000, 64, 64}}) {
      std::printf("%s gemm %d x %d x %d (varying n)\n", tag, x.m, x.n, x.k);
      per_call("", [&](int i) { cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, x.m, x.n - (i % 64), x.k, &one, A, 8000, B, 8000, &zero, C, 8000); }, 400, s);
    }
    std::printf("%s gemm 128 x 3000 x 128 (same shape)\n", tag);
    per_call("", [&](int i) { cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, 128, 3000, 128, &one, A, 8000, B, 8000, &zero, C, 8000); }, 400, s);
  };
  run_gemms("default");
  std::printf("memcpy2DAsync 8000 x 64\n");
  per_call("", [&](int) { cudaMemcpy2DAsync(C, 8000 * 8, A, 8000 * 8, 8000 * 8, 64, cudaMemcpyDeviceToDevice, s); }, 400, s);
  std::printf("geam 128 x 3000\n");
  per_call("", [&](int) { cublasDgeam(h, CUBLAS_OP_N, CUBLAS_OP_N, 128, 3000, &one, A, 8000, &zero, B, 8000, C, 8000); }, 400, s);
  std::printf("kernel launch\n");
  per_call("", [&](int) { noop<<<1, 32, 0, s>>>(C); }, 400, s);
  cudaEvent_t e; cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  cudaStream_t s2; cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
  std::printf("event record + wait\n");
  per_call("", [&](int) { cudaEventRecord(e, s); cudaStreamWaitEvent(s2, e, 0); }, 400, s);
  void* ws; size_t wsz = size_t(32) << 20; cudaMalloc(&ws, wsz);
  cublasSetWorkspace(h, ws, wsz);
  run_gemms("workspace 32MB");
  cublasSetWorkspace(h, nullptr, 0);
  run_gemms("workspace 0");
  std::printf("trsm 3000 x 1\n");
  per_call("", [&](int) { cublasDtrsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, 3000, 1, &one, A, 8000, B, 8000); }, 200, s);
  return 0;
}

int lt_cost() {
  cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cublasHandle_t h; cublasCreate(&h); cublasSetStream(h, s);
  const size_t N = size_t(8000) * 8000;
  std::vector<double> hA(N); std::mt19937_64 g(1); std::uniform_real_distribution<double> u(-1, 1);
  for (auto& x : hA) x = u(g);
  double *A, *B, *C, *C2; cudaMalloc(&A, N * 8); cudaMalloc(&B, N * 8); cudaMalloc(&C, N * 8); cudaMalloc(&C2, N * 8);
  cudaMemcpy(A, hA.data(), N * 8, cudaMemcpyHostToDevice); cudaMemcpy(B, hA.data(), N * 8, cudaMemcpyHostToDevice);
  double one = 1, zero = 0;
  lt_gemm L;
  struct shp { cublasOperation_t ta, tb; int m, n, k; const char* what; };
  shp shapes[] = {{CUBLAS_OP_T, CUBLAS_OP_N, 128, 3000, 128, "R block: S^T C (n varies)"},
                  {CUBLAS_OP_N, CUBLAS_OP_N, 8000, 128, 128, "Q block: Q S"},
                  {CUBLAS_OP_T, CUBLAS_OP_N, 64, 64, 5000, "long K"},
                  {CUBLAS_OP_N, CUBLAS_OP_T, 8000, 64, 64, "Q -= W V^T"}};
  for (auto x : shapes) {
    std::printf("%s: %d x %d x %d\n", x.what, x.m, x.n, x.k);
    int lda = 8000, ldb = 8000, ldc = 8000;
    // correctness at a few n (offset pointers: 8-byte alignment)
    double worst = 0;
    for (int t = 0; t < 5; ++t) {
      int n = x.n - 7 * t; const double* Ao = A + t; const double* Bo = B + 3 * t;
      cublasDgemm(h, x.ta, x.tb, x.m, n, x.k, &one, Ao, lda, Bo, ldb, &zero, C, ldc);
      int st = L.run(2, x.ta, x.tb, x.m, n, x.k, &one, Ao, lda, Bo, ldb, &zero, C2 + 1, ldc, s);
      cudaStreamSynchronize(s);
      std::vector<double> c1(size_t(ldc) * n), c2(size_t(ldc) * n);
      cudaMemcpy(c1.data(), C, c1.size() * 8, cudaMemcpyDeviceToHost);
      cudaMemcpy(c2.data(), C2 + 1, c2.size() * 8, cudaMemcpyDeviceToHost);
      for (int j = 0; j < n; ++j) for (int i = 0; i < x.m; ++i) { double a = c1[i + size_t(j) * ldc], b = c2[i + size_t(j) * ldc]; worst = std::max(worst, std::abs(a - b) / (1 + std::abs(a))); }
      if (st) std::printf("  lt status %d at n %d\n", st, n);
    }
    std::printf("  max rel diff Lt (cached ignoring n, offsets) vs cublasDgemm: %.3g\n", worst);
    per_call("cublasDgemm, n varies", [&](int i) { cublasDgemm(h, x.ta, x.tb, x.m, x.n - (i % 64), x.k, &one, A, lda, B, ldb, &zero, C, ldc); }, 300, s);
    per_call("Lt heuristic every call", [&](int i) { L.run(0, x.ta, x.tb, x.m, x.n - (i % 64), x.k, &one, A, lda, B, ldb, &zero, C, ldc, s); }, 300, s);
    per_call("Lt cached (exact), same shape", [&](int) { L.run(1, x.ta, x.tb, x.m, x.n, x.k, &one, A, lda, B, ldb, &zero, C, ldc, s); }, 300, s);
    per_call("Lt cached ignoring n, n varies", [&](int i) { L.run(2, x.ta, x.tb, x.m, x.n - (i % 64), x.k, &one, A, lda, B, ldb, &zero, C, ldc, s); }, 300, s);
  }
  return 0;
}

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "host";
  return what == "lt" ? lt_cost() : host_cost();
}
