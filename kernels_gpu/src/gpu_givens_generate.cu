// The Givens sweeps of a strip as a wavefront on one thread block (tessera/kernels_gpu/gpu_givens.hpp).
//
// At step t, sweep j works on rows (i - 1, i), i = U - t + 2 j (U = plan.umax_all()): the active
// sweeps' rows are two apart, so their rotations commute and are made at once (phase 1); then
// every (sweep, later column) pair applies one rotation to two entries (phase 2), all in
// parallel. The steps touch a window of 2p + 2 rows that slides up by one row per step: when it
// fits in shared memory the strip's rows pass through it (one row loaded ahead, one written back
// per step), so a step costs shared-memory latencies, not global ones; otherwise the strip is
// worked on in global memory.
#include <tessera/kernels_gpu/gpu_givens.hpp>

#include "check.hpp"

namespace tessera::kernels {
namespace {

template <class T>
__device__ void make_rotation(T a, T b, T& c, T& s, T& r) {
  c = 1;
  s = 0;
  r = a;
  if (b != T(0)) {
    r = hypot(a, b);
    c = a / r;
    s = b / r;
  }
}

// Shared: the window rows live at slot row % W (W = 2p + 2), p values each; then 2p (c, s).
template <class T, bool Window>
__global__ void givens_generate_kernel(givens_plan plan, T* X, int ldx, T* cs) {
  extern __shared__ unsigned char smem_raw[];
  T* sm = reinterpret_cast<T*>(smem_raw);
  const int L = plan.L, p = plan.p, U = plan.umax_all(), W = 2 * p + 2;
  T* csm = Window ? sm + static_cast<std::size_t>(W) * p : sm;
  const int tid = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x);
  auto x = [&](int i, int j) -> T& {
    if constexpr (Window)
      return sm[static_cast<std::size_t>(i % W) * p + j];
    else
      return X[i + static_cast<std::ptrdiff_t>(j) * ldx];
  };
  auto g = [&](int i, int j) -> T& { return X[i + static_cast<std::ptrdiff_t>(j) * ldx]; };
  // The window holds rows [lo, hi].
  int lo = max(0, U - 1), hi = min(L - 1, U + 2 * p - 2);
  if constexpr (Window) {
    for (int idx = tid; idx < (hi - lo + 1) * p; idx += nt) {
      const int r = lo + idx / p, j = idx % p;
      x(r, j) = g(r, j);
    }
    __syncthreads();
  }
  for (int step = 0; step < U + p; ++step) {
    const int next = U - step - 2;  // the row step + 1 starts to touch
    T pre = 0;
    if (Window && next >= 0 && tid < p) pre = g(next, tid);  // in flight during the phases
    // Phase 1: the active sweeps' rotations.
    for (int j = tid; j < p; j += nt) {
      const int u = U - step + j;
      bool active = u >= 1 && u <= plan.umax(j);
      T c = 1, s = 0;
      if (active) {
        const int i = u + j;
        T r;
        make_rotation(x(i - 1, j), x(i, j), c, s, r);
        x(i - 1, j) = r;
        x(i, j) = 0;
        cs[2 * (static_cast<std::size_t>(j) * L + i)] = c;
        cs[2 * (static_cast<std::size_t>(j) * L + i) + 1] = s;
      }
      csm[2 * j] = active ? c : T(2);  // 2: not active at this step
      csm[2 * j + 1] = s;
    }
    __syncthreads();
    // Phase 2: each active sweep j's rotation on each later column jj.
    const int jlo = max(0, step - U + 1);
    const int pairs = (p - jlo) * p;
    for (int idx = tid; idx < pairs; idx += nt) {
      const int j = jlo + idx / p, jj = idx % p;
      if (jj <= j) continue;
      const T c = csm[2 * j];
      if (c == T(2)) continue;
      const T s = csm[2 * j + 1];
      const int i = U - step + 2 * j;
      const T v = x(i - 1, jj), w = x(i, jj);
      x(i - 1, jj) = c * v + s * w;
      x(i, jj) = -s * v + c * w;
    }
    if constexpr (Window) {
      __syncthreads();
      // Row U - step + 2p - 2 is final: back to global memory; the prefetched row in.
      const int done = U - step + 2 * p - 2;
      if (done <= hi && done >= lo) {
        for (int j = tid; j < p; j += nt) g(done, j) = x(done, j);
        hi = done - 1;
      }
      if (next >= 0) {
        if (tid < p) x(next, tid) = pre;
        lo = next;
      }
    }
    __syncthreads();
  }
  if constexpr (Window) {
    for (int idx = tid; idx < (hi - lo + 1) * p; idx += nt) {
      const int r = lo + idx / p, j = idx % p;
      g(r, j) = x(r, j);
    }
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
  const int threads = plan.p >= 64 ? 1024 : (plan.p >= 16 ? 256 : 64);
  const std::size_t window = (std::size_t(2 * plan.p + 2) * plan.p + 2 * plan.p) * sizeof(T);
  constexpr std::size_t window_limit = 200 * 1024;  // of the H100's 227 KB per block
  if (window <= window_limit && threads >= plan.p) {
    auto k = givens_generate_kernel<T, true>;
    detail::check(kernel, "cudaFuncSetAttribute",
                  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(window_limit)));
    k<<<1, threads, window, stream>>>(plan, X, ldx, cs);
  } else {
    givens_generate_kernel<T, false><<<1, threads, 2 * plan.p * sizeof(T), stream>>>(plan, X, ldx, cs);
  }
  detail::check(kernel, "givens_generate_kernel launch", cudaGetLastError());
}

template void gpu_givens_generate<float>(const givens_plan&, float*, int, float*, cudaStream_t);
template void gpu_givens_generate<double>(const givens_plan&, double*, int, double*, cudaStream_t);

}  // namespace tessera::kernels
