// The rotations of a strip gathered into small orthogonal blocks on the GPU
// (tessera/kernels_gpu/gpu_givens.hpp): block t's thread c carries column c of B_t through the
// block's rotations; S_t = B_t^T is stored so that those threads touch consecutive addresses.
#include <tessera/kernels_gpu/gpu_givens.hpp>

#include "check.hpp"

namespace tessera::kernels {
namespace {

// Shared: the block's S_t while it is built, when it fits (then written out once).
template <class T, bool Shared>
__global__ void givens_blocks_kernel(givens_plan plan, const T* __restrict__ cs, T* S) {
  extern __shared__ unsigned char smem_raw[];
  const int t = static_cast<int>(blockIdx.x);
  const int bw = plan.bw(), r0 = plan.row0(t), n = plan.rows(t);
  const int lo = plan.u_lo(t), hi = plan.u_hi(t), L = plan.L;
  T* out = S + static_cast<std::size_t>(t) * bw * bw;
  T* St = Shared ? reinterpret_cast<T*>(smem_raw) : out;
  for (int c = static_cast<int>(threadIdx.x); c < bw; c += static_cast<int>(blockDim.x))
    for (int r = 0; r < bw; ++r) St[c + static_cast<std::size_t>(r) * bw] = (r == c) ? T(1) : T(0);
  for (int c = static_cast<int>(threadIdx.x); c < n; c += static_cast<int>(blockDim.x)) {
    for (int j = 0; j < plan.p; ++j) {
      const int top = min(hi - 1, plan.umax(j));
      for (int u = top; u >= lo; --u) {
        const int i = u + j;
        const T cc = cs[2 * (static_cast<std::size_t>(j) * L + i)];
        const T s = cs[2 * (static_cast<std::size_t>(j) * L + i) + 1];
        T* x = St + c + static_cast<std::size_t>(i - 1 - r0) * bw;
        const T a = x[0], b = x[bw];
        x[0] = cc * a + s * b;
        x[bw] = -s * a + cc * b;
      }
    }
  }
  if constexpr (Shared) {
    __syncthreads();
    for (int idx = static_cast<int>(threadIdx.x); idx < bw * bw; idx += static_cast<int>(blockDim.x))
      out[idx] = St[idx];
  }
}

}  // namespace

template <class T>
void gpu_givens_blocks(const givens_plan& plan, const T* cs, T* S, cudaStream_t stream) {
  constexpr const char* kernel = "gpu_givens_blocks";
  const int nblocks = plan.blocks();
  if (nblocks == 0) return;
  detail::require_ptr(kernel, "cs", cs);
  detail::require_ptr(kernel, "S", S);
  const std::size_t bytes = std::size_t(plan.bw()) * plan.bw() * sizeof(T);
  constexpr std::size_t shared_limit = 200 * 1024;  // of the H100's 227 KB per block
  const unsigned threads = plan.bw() > 128 ? 256 : 128;
  if (bytes <= shared_limit) {
    auto k = givens_blocks_kernel<T, true>;
    detail::check(kernel, "cudaFuncSetAttribute",
                  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(shared_limit)));
    k<<<static_cast<unsigned>(nblocks), threads, bytes, stream>>>(plan, cs, S);
  } else {
    givens_blocks_kernel<T, false><<<static_cast<unsigned>(nblocks), threads, 0, stream>>>(plan, cs, S);
  }
  detail::check(kernel, "givens_blocks_kernel launch", cudaGetLastError());
}

template void gpu_givens_blocks<float>(const givens_plan&, const float*, float*, cudaStream_t);
template void gpu_givens_blocks<double>(const givens_plan&, const double*, double*, cudaStream_t);

}  // namespace tessera::kernels
