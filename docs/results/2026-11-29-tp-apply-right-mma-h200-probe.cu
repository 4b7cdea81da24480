// Probe: does enqueueing cuBLAS GEMMs, copies and launches scale over host threads (a stream and
// a handle each)? Prints host µs per call and aggregate calls per ms for 1..4 threads.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>
#include <algorithm>
__global__ void noop(double* x) { if (x && threadIdx.x == 9999) x[0] = 1; }
using clk = std::chrono::steady_clock;
struct ctx { cudaStream_t s; cublasHandle_t h; double *A, *B, *C; void* ws; };
int main() {
  const int maxT = 4, calls = 300;
  std::vector<ctx> c(maxT);
  for (auto& x : c) {
    cudaStreamCreateWithFlags(&x.s, cudaStreamNonBlocking);
    cublasCreate(&x.h); cublasSetStream(x.h, x.s);
    cudaMalloc(&x.A, 8000 * 256 * 8); cudaMalloc(&x.B, 256 * 256 * 8); cudaMalloc(&x.C, 8000 * 256 * 8);
    cudaMemset(x.A, 0, 8000 * 256 * 8); cudaMemset(x.B, 0, 256 * 256 * 8);
    cudaMalloc(&x.ws, 32 << 20);
  }
  const char* names[] = {"dgemm 8000x128x128", "dgemm 128x3000x128", "memcpy2D 8000x64", "launch", "mix (gemm,copy,launch)", "dgemm 8000x128x128 +ws"};
  for (int kind = 0; kind < 6; ++kind) {
    for (int T = 1; T <= maxT; ++T) {
      double best = 1e30;
      for (int rep = 0; rep < 3; ++rep) {
        for (int t = 0; t < T; ++t) cublasSetWorkspace(c[t].h, kind == 5 ? c[t].ws : nullptr, kind == 5 ? (32 << 20) : 0);
        cudaDeviceSynchronize();
        std::atomic<int> ready{0}; std::atomic<bool> go{false};
        std::vector<double> took(T);
        auto body = [&](int t) {
          auto& x = c[t];
          const double one = 1, zero = 0;
          ready++;
          while (!go.load()) {}
          auto t0 = clk::now();
          for (int i = 0; i < calls; ++i) {
            const int v = i % 64;
            int k = kind == 4 ? i % 3 : kind;
            if (k == 5) k = 0;
            if (k == 0) cublasDgemm(x.h, CUBLAS_OP_N, CUBLAS_OP_N, 8000 - v, 128, 128, &one, x.A, 8000, x.B, 256, &zero, x.C, 8000);
            else if (k == 1) cublasDgemm(x.h, CUBLAS_OP_N, CUBLAS_OP_N, 128, 3000 - v, 128, &one, x.B, 256, x.A, 256, &zero, x.C, 256);
            else if (k == 2) cudaMemcpy2DAsync(x.C, 8000 * 8, x.A, 8000 * 8, (8000 - v) * 8, 64, cudaMemcpyDeviceToDevice, x.s);
            else noop<<<128, 128, 0, x.s>>>(x.C);
          }
          took[t] = std::chrono::duration<double, std::micro>(clk::now() - t0).count();
        };
        std::vector<std::thread> th;
        for (int t = 1; t < T; ++t) th.emplace_back(body, t);
        while (ready.load() < T - 1) {}
        auto w0 = clk::now();
        go = true;
        body(0);
        for (auto& x : th) x.join();
        double wall = std::chrono::duration<double, std::micro>(clk::now() - w0).count();
        cudaDeviceSynchronize();
        best = std::min(best, wall);
      }
      std::printf("%-26s threads %d: wall %8.0f us for %4d calls: %6.2f us a call per thread, %6.2f us a call aggregate\n",
                  names[kind], T, best, T * calls, best / calls, best / (T * calls));
    }
  }
  return 0;
}
