// Dependent-chain latency of the operations on a panel column's path (cycles per operation, one
// warp): the standalone program behind 2026-11-28-update-checks-h200.md (not built with Tessera;
// nvcc -O3 -arch=sm_90 -o lat this-file.cu).
#include <cstdio>
#include <cuda_runtime.h>
__global__ void k(double* out, long long* cyc, double y, double z, int n) {
  double x = threadIdx.x * 1e-3 + 1.0;
  long long t0, t1;
  __shared__ int idx[64];
  if (threadIdx.x < 64) idx[threadIdx.x] = (threadIdx.x + 1) & 63;
  __syncwarp();
  // 0 DFMA
  t0 = clock64();
  for (int i = 0; i < n; ++i) x = fma(x, y, z);
  if (x == 12345.0) out[0] = x;
  t1 = clock64(); cyc[0] = t1 - t0;
  // 1 FFMA
  float xf = (float)x;
  t0 = clock64();
  for (int i = 0; i < n; ++i) xf = fmaf(xf, (float)y, (float)z);
  if (xf == 12345.0f) out[1] = xf;
  t1 = clock64(); cyc[1] = t1 - t0;
  // 2 rsqrt double
  x = 2.0 + threadIdx.x;
  t0 = clock64();
  for (int i = 0; i < n; ++i) x = rsqrt(x) + 1.5;
  if (x == 12345.0) out[2] = x;
  t1 = clock64(); cyc[2] = t1 - t0;
  // 3 drcp_rn
  t0 = clock64();
  for (int i = 0; i < n; ++i) x = __drcp_rn(x) + 1.5;
  if (x == 12345.0) out[3] = x;
  t1 = clock64(); cyc[3] = t1 - t0;
  // 4 shfl double
  t0 = clock64();
  for (int i = 0; i < n; ++i) x = __shfl_xor_sync(0xffffffffu, x, 1) + 1e-9;
  if (x == 12345.0) out[4] = x;
  t1 = clock64(); cyc[4] = t1 - t0;
  // 5 LDS int chain
  int j = threadIdx.x & 63;
  t0 = clock64();
  for (int i = 0; i < n; ++i) j = idx[j];
  if (j == 1000) out[5] = j;
  t1 = clock64(); cyc[5] = t1 - t0;
  // 6 DADD
  x = 1.0;
  t0 = clock64();
  for (int i = 0; i < n; ++i) x = x + y;
  if (x == 12345.0) out[6] = x;
  t1 = clock64(); cyc[6] = t1 - t0;
  // 7 sqrt double (IEEE)
  x = 2.0;
  t0 = clock64();
  for (int i = 0; i < n; ++i) x = sqrt(x) + 1.5;
  if (x == 12345.0) out[7] = x;
  t1 = clock64(); cyc[7] = t1 - t0;
  // 8 division double
  t0 = clock64();
  for (int i = 0; i < n; ++i) x = y / x + 1.5;
  if (x == 12345.0) out[8] = x;
  t1 = clock64(); cyc[8] = t1 - t0;
  // 9 bar.sync 128 (4 warps)
  t0 = clock64();
  for (int i = 0; i < n; ++i) asm volatile("bar.sync 1, 128;" ::: "memory");
  t1 = clock64(); cyc[9] = t1 - t0;
  // 10 float rsqrt approx + double refine cost reference: rsqrtf chain
  xf = 2.0f;
  t0 = clock64();
  for (int i = 0; i < n; ++i) xf = rsqrtf(xf) + 1.5f;
  if (xf == 12345.0f) out[10] = xf;
  t1 = clock64(); cyc[10] = t1 - t0;
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
