// Times gpu_givens_blocks on update-sized plans, median of 9 (docs/results/2026-11-28-givens-blocks-h200.md):
// v0 = main's kernel (0333fbf's kernels_gpu/src/gpu_givens_blocks.cu with the public function renamed
// gpu_givens_blocks_v0 by sed, compiled beside this file), staged = the library's, unstaged = the
// library's under a 150 KB shared-memory limit (its rotations then read from global memory).
// nvcc -O3 -std=c++20 -arch=sm_90 -I kernels_gpu/include -I kernels_cpu/include probe.cu gb_v0.cu
//   libtessera_kernels_gpu.a libtessera_kernels_cpu.a -lcublas
#include <tessera/kernels_gpu/gpu_givens.hpp>
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>
namespace tessera::kernels {
template <class T> void gpu_givens_blocks_v0(const givens_plan&, const T*, T*, cudaStream_t);
template <class T> void gpu_givens_blocks_v2(const givens_plan&, const T*, T*, cudaStream_t);
}
using namespace tessera::kernels;
template <class T, class F> float time_it(F f) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> ts;
  for (int r = 0; r < 9; ++r) { cudaEventRecord(a); f(); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); ts.push_back(ms); }
  std::sort(ts.begin(), ts.end()); return ts[4] * 1000;
}
template <class T> void run(int L, int p, int base, int w) {
  givens_plan plan; plan.L = L; plan.p = p; plan.base = base; plan.w = w;
  std::vector<T> cs(plan.cs_size()); std::mt19937_64 g(3); std::uniform_real_distribution<double> u(-3, 3);
  for (size_t k = 0; k < cs.size(); k += 2) { double a = u(g); cs[k] = T(std::cos(a)); cs[k + 1] = T(std::sin(a)); }
  T *dcs, *S0, *S2; size_t nS = std::max<size_t>(plan.blocks_size(), 1);
  cudaMalloc(&dcs, sizeof(T) * cs.size()); cudaMalloc(&S0, sizeof(T) * nS); cudaMalloc(&S2, sizeof(T) * nS);
  cudaMemcpy(dcs, cs.data(), sizeof(T) * cs.size(), cudaMemcpyHostToDevice);
  float t0 = time_it<T>([&] { gpu_givens_blocks_v0<T>(plan, dcs, S0, nullptr); });
  float t2 = time_it<T>([&] { gpu_givens_blocks<T>(plan, dcs, S2, nullptr); });
  detail::gpu_givens_limit_shared_memory(150 * 1024);  // S_t in shared memory, the rotations not
  float t3 = time_it<T>([&] { gpu_givens_blocks<T>(plan, dcs, S2, nullptr); });
  detail::gpu_givens_limit_shared_memory(0);
  std::vector<T> h0(nS), h2(nS); cudaMemcpy(h0.data(), S0, sizeof(T) * nS, cudaMemcpyDeviceToHost); cudaMemcpy(h2.data(), S2, sizeof(T) * nS, cudaMemcpyDeviceToHost);
  double d = 0; for (size_t k = 0; k < nS; ++k) d = std::max(d, std::abs(double(h0[k]) - double(h2[k])));
  std::printf("%s L=%5d p=%3d w=%3d blocks=%3d bw=%3d : v0 %8.1f us  staged %8.1f us  unstaged %8.1f us  max|diff| %.1e  %s\n", sizeof(T) == 8 ? "d" : "s", L, p, w, plan.blocks(), plan.bw(), t0, t2, t3, d, cudaGetErrorString(cudaGetLastError()));
  cudaFree(dcs); cudaFree(S0); cudaFree(S2);
}
int main() {
  for (int s = 0; s < 2; ++s) {
    auto f = [&](int L, int p, int b, int w) { if (s == 0) run<double>(L, p, b, w); else run<float>(L, p, b, w); };
    f(3200, 64, 3136, 64); f(6100, 64, 6036, 64); f(10100, 64, 10036, 64); f(3016, 16, 3000, 128); f(3001, 1, 3000, 128); f(3064, 64, 3000, 64);
  }
}
