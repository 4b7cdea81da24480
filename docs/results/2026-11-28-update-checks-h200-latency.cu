// Dependent-chain latency of the operations on a panel column's path (cycles per operation, one
// warp): the standalone program behind 2026-11-28-update-checks-h200.md (not built with Tessera;
// nvcc -O3 -arch=sm_90 -o lat this-file.cu). The chains were first written out one by one; this
// form, one CHAIN each, gave the same figures to the tenth of a cycle (H200, call 14).
#include <cstdio>
#include <cuda_runtime.h>
// n dependent steps of `step` on v, timed by clock64 into cyc[slot]; v is stored where it could
// be (never), so that the chain is not optimised away.
#define CHAIN(slot, v, step)                          \
  do {                                                \
    const long long t0 = clock64();                   \
    for (int i = 0; i < n; ++i) step;                 \
    if (v == decltype(v)(12345)) out[slot] = v;       \
    cyc[slot] = clock64() - t0;                       \
  } while (0)

__global__ void k(double* out, long long* cyc, double y, double z, int n) {
  __shared__ int idx[64];
  if (threadIdx.x < 64) idx[threadIdx.x] = (threadIdx.x + 1) & 63;
  __syncwarp();
  double x = threadIdx.x * 1e-3 + 1.0;
  CHAIN(0, x, x = fma(x, y, z));  // DFMA
  float xf = (float)x;
  CHAIN(1, xf, xf = fmaf(xf, (float)y, (float)z));  // FFMA
  x = 2.0 + threadIdx.x;
  CHAIN(2, x, x = rsqrt(x) + 1.5);
  CHAIN(3, x, x = __drcp_rn(x) + 1.5);
  CHAIN(4, x, x = __shfl_xor_sync(0xffffffffu, x, 1) + 1e-9);
  int j = threadIdx.x & 63;
  CHAIN(5, j, j = idx[j]);  // shared-memory load chain
  x = 1.0;
  CHAIN(6, x, x = x + y);  // DADD
  x = 2.0;
  CHAIN(7, x, x = sqrt(x) + 1.5);
  CHAIN(8, x, x = y / x + 1.5);
  {  // bar.sync of 4 warps
    const long long t0 = clock64();
    for (int i = 0; i < n; ++i) asm volatile("bar.sync 1, 128;" ::: "memory");
    cyc[9] = clock64() - t0;
  }
  xf = 2.0f;
  CHAIN(10, xf, xf = rsqrtf(xf) + 1.5f);
}
int main() {
  double* out; long long* cyc;
  cudaMalloc(&out, 64 * 8); cudaMalloc(&cyc, 64 * 8);
  const int n = 1024;
  for (int rep = 0; rep < 2; ++rep) {
    k<<<1, 128>>>(out, cyc, 1.0000001, 1e-7, n);
    cudaDeviceSynchronize();
  }
  long long h[16];
  cudaMemcpy(h, cyc, 11 * 8, cudaMemcpyDeviceToHost);
  const char* names[] = {"DFMA", "FFMA", "rsqrt(d)+add", "drcp_rn+add", "shfl(d)+add", "LDS int", "DADD", "sqrt(d)+add", "div(d)+add", "bar.sync128", "rsqrtf+add"};
  for (int i = 0; i < 11; ++i) std::printf("%-14s %.1f cycles\n", names[i], double(h[i]) / n);
  std::printf("err: %s\n", cudaGetErrorString(cudaGetLastError()));
}
