// Host time per enqueued call (no synchronization between calls), H200 probe.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <vector>
__global__ void noop(double* p) { if (threadIdx.x == 1023) p[0] = 1; }
using clk = std::chrono::steady_clock;
template <class F> double per_call(F f, int n, cudaStream_t s) {
  for (int i = 0; i < 20; ++i) f(i);
  cudaStreamSynchronize(s);
  auto t0 = clk::now();
  for (int i = 0; i < n; ++i) f(i);
  auto t1 = clk::now();
  cudaStreamSynchronize(s);
  auto t2 = clk::now();
  double h = std::chrono::duration<double, std::micro>(t1 - t0).count() / n;
  double g = std::chrono::duration<double, std::micro>(t2 - t0).count() / n;
  std::printf("  host %.2f us/call, host+gpu %.2f us/call\n", h, g);
  return h;
}
int main() {
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
      per_call([&](int i) { cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, x.m, x.n - (i % 64), x.k, &one, A, 8000, B, 8000, &zero, C, 8000); }, 400, s);
    }
    std::printf("%s gemm 128 x 3000 x 128 (same shape)\n", tag);
    per_call([&](int i) { cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, 128, 3000, 128, &one, A, 8000, B, 8000, &zero, C, 8000); }, 400, s);
  };
  run_gemms("default");
  std::printf("memcpy2DAsync 8000 x 64\n");
  per_call([&](int) { cudaMemcpy2DAsync(C, 8000 * 8, A, 8000 * 8, 8000 * 8, 64, cudaMemcpyDeviceToDevice, s); }, 400, s);
  std::printf("geam 128 x 3000\n");
  per_call([&](int) { cublasDgeam(h, CUBLAS_OP_N, CUBLAS_OP_N, 128, 3000, &one, A, 8000, &zero, B, 8000, C, 8000); }, 400, s);
  std::printf("kernel launch\n");
  per_call([&](int) { noop<<<1, 32, 0, s>>>(C); }, 400, s);
  cudaEvent_t e; cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  cudaStream_t s2; cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
  std::printf("event record + wait\n");
  per_call([&](int) { cudaEventRecord(e, s); cudaStreamWaitEvent(s2, e, 0); }, 400, s);
  void* ws; size_t wsz = size_t(32) << 20; cudaMalloc(&ws, wsz);
  cublasSetWorkspace(h, ws, wsz);
  run_gemms("workspace 32MB");
  cublasSetWorkspace(h, nullptr, 0);
  run_gemms("workspace 0");
  std::printf("trsm 3000 x 1\n");
  per_call([&](int) { cublasDtrsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, 3000, 1, &one, A, 8000, B, 8000); }, 200, s);
  return 0;
}
