// The Givens sweeps of a strip as a wavefront on one thread block (tessera/kernels_gpu/gpu_givens.hpp).
#include <tessera/kernels_gpu/gpu_givens.hpp>

#include "check.hpp"

namespace tessera::kernels {
namespace {

template <class T>
__global__ void givens_generate_kernel(givens_plan plan, T* X, int ldx, T* cs) {
  const int L = plan.L, p = plan.p, U = plan.umax_all();
  auto x = [&](int i, int j) -> T& { return X[i + static_cast<std::ptrdiff_t>(j) * ldx]; };
  for (int step = 0; step < U + p; ++step) {
    // Sweeps active at this step: u = U - step + j in [1, umax(j)].
    for (int j = static_cast<int>(threadIdx.x); j < p; j += static_cast<int>(blockDim.x)) {
      const int u = U - step + j;
      if (u < 1 || u > plan.umax(j)) continue;
      const int i = u + j;
      const T a = x(i - 1, j), b = x(i, j);
      T c = 1, s = 0;
      if (b != T(0)) {
        const T r = hypot(a, b);
        c = a / r;
        s = b / r;
        x(i - 1, j) = r;
      }
      x(i, j) = 0;
      cs[2 * (static_cast<std::size_t>(j) * L + i)] = c;
      cs[2 * (static_cast<std::size_t>(j) * L + i) + 1] = s;
    }
    __syncthreads();
    // Every active sweep j's rotation on the later columns jj > j (rows of different sweeps are
    // disjoint, so one thread per column applies them in any order).
    const int jlo = max(0, step - U + 1);  // u >= 1
    for (int jj = static_cast<int>(threadIdx.x); jj < p; jj += static_cast<int>(blockDim.x)) {
      for (int j = jlo; j < jj; ++j) {
        const int u = U - step + j;
        if (u > plan.umax(j)) continue;
        const int i = u + j;
        const T c = cs[2 * (static_cast<std::size_t>(j) * L + i)];
        const T s = cs[2 * (static_cast<std::size_t>(j) * L + i) + 1];
        const T v = x(i - 1, jj), w = x(i, jj);
        x(i - 1, jj) = c * v + s * w;
        x(i, jj) = -s * v + c * w;
      }
    }
    __syncthreads();
  }
}

}  // namespace

template <class T>
void gpu_givens_generate(const givens_plan& plan, T* X, int ldx, T* cs, cudaStream_t stream) {
  constexpr const char* kernel = "gpu_givens_generate";
  detail::require_ge(kernel, "L", plan.L, "0", 0);
  detail::require_ge(kernel, "p", plan.p, "0", 0);
  if (plan.L <= 1 || plan.p == 0 || plan.umax_all() == 0) return;
  detail::require_ge(kernel, "ldx", ldx, "L", plan.L);
  const int threads = plan.p >= 512 ? 1024 : (plan.p >= 128 ? 512 : 128);
  givens_generate_kernel<T><<<1, threads, 0, stream>>>(plan, X, ldx, cs);
  detail::check(kernel, "givens_generate_kernel launch", cudaGetLastError());
}

template void gpu_givens_generate<float>(const givens_plan&, float*, int, float*, cudaStream_t);
template void gpu_givens_generate<double>(const givens_plan&, double*, int, double*, cudaStream_t);

}  // namespace tessera::kernels
