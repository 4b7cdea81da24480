// Probe: forms of the Hessenberg sweep kernel (warps a block; rotation made by one lane or by all
// from shuffled inputs), timed alone on a (n+1) x n Hessenberg matrix. Not part of the build.
#include <cuda_runtime.h>
#include <cstdio>
#include <vector>
#include <random>
#include <algorithm>
#include "rotation.cuh"
using namespace tessera::kernels;
template <class T> constexpr T unset = T(2);
constexpr int ahead = 8;
template <class T>
__global__ void fill_unset(int n, T* cs) { for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) cs[i] = unset<T>; }
template <class T>
__device__ __forceinline__ void take(int from, int to, bool mine, T* col, T& carry, const volatile T* rot, int base) {
  for (int j = from; j < to; j += ahead) {
    const int n = to - j < ahead ? to - j : ahead;
    T x[ahead], r[2 * ahead];
#pragma unroll
    for (int u = 0; u < ahead; ++u) x[u] = mine && u < n ? col[j + 1 + u] : T(0);
    const volatile T* p = rot + 2 * (j - base);
    for (bool set = false; !set;) {
#pragma unroll
      for (int q = 0; q < 2 * ahead; ++q) r[q] = q < 2 * n ? p[q] : T(0);
      set = true;
#pragma unroll
      for (int q = 0; q < 2 * ahead; ++q) set = set && r[q] != unset<T>;
    }
#pragma unroll
    for (int u = 0; u < ahead; ++u)
      if (u < n) {
        const T co = r[2 * u], s = r[2 * u + 1];
        if (mine) col[j + u] = co * carry + s * x[u];
        carry = -s * carry + co * x[u];
      }
  }
}
template <class T, int WPB, bool CONV>
__global__ void __launch_bounds__(32 * WPB) hk(int rows, int cols, int k, T* H, int ldh, T* cs, int* sync) {
  constexpr int block_cols = 32 * WPB;
  __shared__ int ticket;
  __shared__ T rs[2 * block_cols];
  if (threadIdx.x == 0) ticket = atomicAdd(&sync[0], 1);
  for (int i = threadIdx.x; i < 2 * block_cols; i += block_cols) rs[i] = unset<T>;
  __syncthreads();
  const int lane = threadIdx.x % 32, b0 = ticket * block_cols;
  const int c0 = b0 + (threadIdx.x / 32) * 32;
  if (c0 >= cols) return;
  const int c = c0 + lane;
  const bool mine = c < cols;
  T* col = H + (std::ptrdiff_t)(mine ? c : c0) * ldh;
  T carry = mine ? col[0] : T(0);
  const int kb = b0 < k ? b0 : k, kc = c0 < k ? c0 : k;
  take(0, kb, mine, col, carry, cs, 0);
  take(kb, kc, mine, col, carry, rs, b0);
  if (c0 < k) {
    T x[32];
    const int last = c < k ? c + 1 : k;
#pragma unroll
    for (int i = 0; i < 32; ++i) x[i] = mine && c0 + 1 + i <= last ? col[c0 + 1 + i] : T(0);
    volatile T* vrs = rs;
    volatile T* vcs = cs;
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      const int j = c0 + i;
      if (j >= k) break;
      T co = 1, s = 0, r;
      if constexpr (CONV) {
        const T a = __shfl_sync(0xffffffffu, carry, i), b = __shfl_sync(0xffffffffu, x[i], i);
        detail::make_rotation(a, b, co, s, r);
        if (lane == i) {
          vrs[2 * (j - b0)] = co; vrs[2 * (j - b0) + 1] = s; vcs[2 * j] = co; vcs[2 * j + 1] = s;
          col[j] = r; col[j + 1] = T(0);
        }
      } else {
        if (lane == i) {
          detail::make_rotation(carry, x[i], co, s, r);
          vrs[2 * (j - b0)] = co; vrs[2 * (j - b0) + 1] = s; vcs[2 * j] = co; vcs[2 * j + 1] = s;
          col[j] = r; col[j + 1] = T(0);
        }
        co = __shfl_sync(0xffffffffu, co, i);
        s = __shfl_sync(0xffffffffu, s, i);
      }
      if (lane > i && mine) { col[j] = co * carry + s * x[i]; carry = -s * carry + co * x[i]; }
    }
  }
  if (mine && c >= k) col[k] = carry;
}
template <class T, int WPB, bool CONV>
void run(const char* name, int n, const T* H0, T* H, T* cs, int* sync, std::vector<T>& out) {
  const int rows = n + 1, cols = n, k = n;
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> ms;
  for (int rep = 0; rep < 11; ++rep) {
    cudaMemcpy(H, H0, sizeof(T) * size_t(rows) * cols, cudaMemcpyDeviceToDevice);
    cudaMemset(sync, 0, sizeof(int));
    fill_unset<T><<<64, 256>>>(2 * k, cs);
    cudaEventRecord(a);
    hk<T, WPB, CONV><<<(cols + 32 * WPB - 1) / (32 * WPB), 32 * WPB>>>(rows, cols, k, H, rows, cs, sync);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float t; cudaEventElapsedTime(&t, a, b); if (rep) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  std::vector<T> h(size_t(rows) * cols);
  cudaMemcpy(h.data(), H, sizeof(T) * h.size(), cudaMemcpyDeviceToHost);
  double d = 0, m = 0;
  if (!out.empty()) for (size_t i = 0; i < h.size(); ++i) { d = std::max(d, std::abs(double(h[i]) - out[i])); m = std::max(m, std::abs(double(out[i]))); }
  else out = h;
  std::printf("%-28s n=%5d %s  median %.3f ms  min %.3f  max %.3f  maxdiff/max %.2e  %s\n", name, n, sizeof(T) == 8 ? "d" : "s", ms[ms.size() / 2], ms.front(), ms.back(), m > 0 ? d / m : 0.0, cudaGetErrorString(cudaGetLastError()));
}
template <class T>
void all(int n) {
  const int rows = n + 1, cols = n;
  std::vector<T> h(size_t(rows) * cols, T(0));
  std::mt19937_64 g(7); std::uniform_real_distribution<double> u(-1, 1);
  for (int j = 0; j < cols; ++j) for (int i = 0; i <= j + 1 && i < rows; ++i) h[i + size_t(j) * rows] = T(u(g) + (i == j ? 4 : 0));
  T *H0, *H, *cs; int* sync;
  cudaMalloc(&H0, sizeof(T) * h.size()); cudaMalloc(&H, sizeof(T) * h.size()); cudaMalloc(&cs, sizeof(T) * 2 * n); cudaMalloc(&sync, 4);
  cudaMemcpy(H0, h.data(), sizeof(T) * h.size(), cudaMemcpyHostToDevice);
  std::vector<T> ref;
  run<T, 2, false>("2 warps, one lane (main)", n, H0, H, cs, sync, ref);
  run<T, 2, true>("2 warps, all lanes", n, H0, H, cs, sync, ref);
  run<T, 1, false>("1 warp, one lane", n, H0, H, cs, sync, ref);
  run<T, 1, true>("1 warp, all lanes", n, H0, H, cs, sync, ref);
  run<T, 4, false>("4 warps, one lane", n, H0, H, cs, sync, ref);
  run<T, 4, true>("4 warps, all lanes", n, H0, H, cs, sync, ref);
  run<T, 2, false>("2 warps, one lane (again)", n, H0, H, cs, sync, ref);
  cudaFree(H0); cudaFree(H); cudaFree(cs); cudaFree(sync);
}
int main() {
  for (int n : {3000, 6000}) { all<double>(n); all<float>(n); }
}
