// The probe of docs/results/2026-11-29-givens-scan-pipeline-h200.md (call 1): times gpu_givens_generate
// alone on device-resident random strips (column j nonzero to row base + j), median of 9 after a
// warm-up, and compares each strip with the CPUs' givens_generate. v0 is main's (fccec3e) copy of
// kernels_gpu/src/gpu_givens_generate.cu with the public function renamed
// (sed 's/gpu_givens_generate\b/gpu_givens_generate_v0/g'), compiled in beside this file; lib is
// the library's new kernel:
//   nvcc -O3 -std=c++20 -arch=sm_90 -Ikernels_gpu/include -Ikernels_cpu/include -Ikernels_gpu/src \
//     THIS_FILE gg_v0.cu build/lib/libtessera_kernels_gpu.a build/lib/libtessera_kernels_cpu.a -lcublas
// Times gpu_givens_generate alone on device-resident strips (median of 9, events).
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>
#include <cuda_runtime.h>
#include "tessera/kernels_gpu/gpu_givens.hpp"
namespace tessera::kernels {
template <class T>
void gpu_givens_generate_lib(const givens_plan& plan, T* X, int ldx, T* cs, int* sync, std::size_t nsync,
                             cudaStream_t stream) {
  gpu_givens_generate(plan, X, ldx, cs, sync, nsync, stream);
}
}  // namespace tessera::kernels
namespace tessera::kernels {
template <class T>
void gpu_givens_generate_v0(const givens_plan& plan, T* X, int ldx, T* cs, int* sync, std::size_t nsync, cudaStream_t stream);
}
#define VARIANTS X(v0) X(lib)
#include <string>
#include <cmath>
#include "tessera/kernels_cpu/givens.hpp"
template <class T, class G>
void run(const char* name, G gen, int L, int p, int base) {
  tessera::kernels::givens_plan plan;
  plan.L = L; plan.p = p; plan.base = base; plan.w = 64;
  const int ldx = L;
  std::vector<T> X(std::size_t(ldx) * p, T(0));
  std::mt19937_64 g(7);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int j = 0; j < p; ++j)
    for (int i = 0; i <= std::min(L - 1, base + j); ++i) X[i + std::size_t(j) * ldx] = T(u(g));
  T *dX, *dX0, *dcs; int* sync;
  cudaMalloc(&dX, X.size() * sizeof(T)); cudaMalloc(&dX0, X.size() * sizeof(T));
  cudaMalloc(&dcs, plan.cs_size() * sizeof(T)); cudaMalloc(&sync, 4096);
  cudaMemcpy(dX0, X.data(), X.size() * sizeof(T), cudaMemcpyHostToDevice);
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> ms;
  for (int r = 0; r < 10; ++r) {
    cudaMemcpy(dX, dX0, X.size() * sizeof(T), cudaMemcpyDeviceToDevice);
    cudaEventRecord(a);
    gen(plan, dX, ldx, dcs, sync, 1024, nullptr);
    cudaEventRecord(b); cudaEventSynchronize(b);
    float t; cudaEventElapsedTime(&t, a, b); if (r) ms.push_back(t);
  }
  std::vector<T> Xg(X.size()), Xc = X, cs(plan.cs_size());
  cudaMemcpy(Xg.data(), dX, X.size() * sizeof(T), cudaMemcpyDeviceToHost);
  tessera::kernels::givens_generate(plan, Xc.data(), ldx, cs.data());
  double d = 0, mx = 0;
  for (std::size_t i = 0; i < X.size(); ++i) d = std::max(d, std::abs(double(Xg[i]) - double(Xc[i]))), mx = std::max(mx, std::abs(double(Xc[i])));
  std::sort(ms.begin(), ms.end());
  std::printf("%s strip %c L=%6d p=%3d base=%6d: %8.1f us (%.2f us a sweep) rel diff %.1e\n", name, sizeof(T) == 8 ? 'd' : 's', L, p, base,
              1000 * ms[ms.size() / 2], 1000 * ms[ms.size() / 2] / p, d / mx);
  cudaFree(dX); cudaFree(dX0); cudaFree(dcs); cudaFree(sync);
}
int main() {
  const int plans[][3] = {{3064, 64, 3000}, {6100, 64, 6000}, {6036, 36, 5936}, {10100, 64, 10000}, {3200, 64, 3000},
                          {3001, 1, 3000}, {3016, 16, 3000}, {12020, 20, 12000}, {6050, 50, 6000}, {256, 1, 255},
                          {600, 40, 560}, {300, 20, 280}, {1500, 9, 1500}, {3128, 64, 3064}};
#define X(v) run<double>(#v, tessera::kernels::gpu_givens_generate_##v<double>, q[0], q[1], q[2]);
  for (auto& q : plans) { VARIANTS }
#undef X
#define X(v) run<float>(#v, tessera::kernels::gpu_givens_generate_##v<float>, q[0], q[1], q[2]);
  for (auto& q : plans) { VARIANTS }
}
