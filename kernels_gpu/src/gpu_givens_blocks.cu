// The rotations of a strip gathered into small orthogonal blocks on the GPU
// (tessera/kernels_gpu/gpu_givens.hpp): block t's thread c carries column c of B_t through the
// block's rotations; S_t = B_t^T is stored so that those threads touch consecutive addresses.
#include <tessera/kernels_gpu/gpu_givens.hpp>

#include <algorithm>
#include <atomic>
#include <type_traits>

#include "check.hpp"
#include "per_device.hpp"

namespace tessera::kernels {
namespace {

// The block's rotations, (c, s) pairs in shared memory after S_t: sweep j's of shifted rows
// u in [lo, hi) at pair j (hi - lo) + u - lo. S_t's size rounded up to an even number of values so
// that the pairs are aligned.
__host__ __device__ inline std::size_t staged_offset(int bw) { return (std::size_t(bw) * bw + 1) & ~std::size_t(1); }

constexpr int batch = 8;           // rotations whose loads go out together
constexpr int max_threads = 256;   // a thread a column up to the updates' widest blocks (w + p <= 192)

// Shared: the block's S_t while it is built, when it fits (then written out once). Staged: its
// rotations in shared memory beside it, when they fit (else read from global memory).
// A thread carries its column through the sweeps in order. Within a sweep the row that a rotation
// passes up to the next is kept in a register (the carry), and the loads of the rows above and of
// the rotations go out `batch` at a time before any store, so that the chain from one rotation to
// the next is two floating-point operations, not a store and a load through shared memory. With
// the rotations staged in shared memory that took a block of 64 sweeps from 0.32 to 0.075 ms on the
// H200; read from global memory instead they still cost about 0.32 ms (the loads' latency).
template <class T, bool Shared, bool Staged>
__global__ void __launch_bounds__(max_threads) givens_blocks_kernel(givens_plan plan, const T* __restrict__ cs, T* S) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  using pair = std::conditional_t<sizeof(T) == 8, double2, float2>;
  const int t = static_cast<int>(blockIdx.x), tid = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x);
  const int bw = plan.bw(), r0 = plan.row0(t), n = plan.rows(t);
  const int lo = plan.u_lo(t), hi = plan.u_hi(t), L = plan.L, width = hi - lo;
  T* out = S + static_cast<std::size_t>(t) * bw * bw;
  T* St = Shared ? reinterpret_cast<T*>(smem_raw) : out;
  for (int c = tid; c < bw; c += nt)
    for (int r = 0; r < bw; ++r) St[c + static_cast<std::size_t>(r) * bw] = (r == c) ? T(1) : T(0);
  pair* staged = nullptr;
  if constexpr (Staged) {
    staged = reinterpret_cast<pair*>(St + staged_offset(bw));
    for (int idx = tid; idx < plan.p * width; idx += nt) {
      const int j = idx / width, u = lo + idx % width;
      if (u <= plan.umax(j))
        staged[idx] = *reinterpret_cast<const pair*>(cs + 2 * (static_cast<std::size_t>(j) * L + u + j));
    }
    __syncthreads();
  }
  auto rotation = [&](int j, int u) -> pair {
    if constexpr (Staged)
      return staged[j * width + u - lo];
    else
      return __ldg(reinterpret_cast<const pair*>(cs + 2 * (static_cast<std::size_t>(j) * L + u + j)));
  };
  for (int c = tid; c < n; c += nt) {
    T* col = St + c;
    auto row = [&](int i) -> T& { return col[static_cast<std::size_t>(i - r0) * bw]; };
    for (int j = 0; j < plan.p; ++j) {
      const int top = min(hi - 1, plan.umax(j));
      if (top < lo) continue;
      // Rotation (j, u) on rows (u + j - 1, u + j): row u + j is final after it, row u + j - 1
      // goes on as the carry.
      T carry = row(top + j);
      int u = top;
      for (; u - (batch - 1) >= lo; u -= batch) {
        T a[batch];
        pair r[batch];
#pragma unroll
        for (int q = 0; q < batch; ++q) {
          a[q] = row(u - q + j - 1);
          r[q] = rotation(j, u - q);
        }
#pragma unroll
        for (int q = 0; q < batch; ++q) {
          row(u - q + j) = -r[q].y * a[q] + r[q].x * carry;
          carry = r[q].x * a[q] + r[q].y * carry;
        }
      }
      for (; u >= lo; --u) {
        const T a = row(u + j - 1);
        const pair r = rotation(j, u);
        row(u + j) = -r.y * a + r.x * carry;
        carry = r.x * a + r.y * carry;
      }
      row(lo + j - 1) = carry;
    }
  }
  if constexpr (Shared) {
    __syncthreads();
    for (int idx = tid; idx < bw * bw; idx += nt) out[idx] = St[idx];
  }
}

}  // namespace

namespace detail {

namespace {
std::atomic<std::size_t> forced_shared{0};
}

void gpu_givens_limit_shared_memory(std::size_t bytes) { forced_shared.store(bytes); }

std::size_t gpu_givens_shared_memory(const char* kernel) {
  const std::size_t device = static_cast<std::size_t>(shared_optin_bytes(kernel)), forced = forced_shared.load();
  return forced > 0 ? std::min(forced, device) : device;
}

}  // namespace detail

template <class T>
void gpu_givens_blocks(const givens_plan& plan, const T* cs, T* S, cudaStream_t stream) {
  constexpr const char* kernel = "gpu_givens_blocks";
  const int nblocks = plan.blocks();
  if (nblocks == 0) return;
  detail::require_ptr(kernel, "cs", cs);
  detail::require_ptr(kernel, "S", S);
  const int bw = plan.bw(), width = std::min(plan.w, plan.umax_all());
  const std::size_t bytes = std::size_t(bw) * bw * sizeof(T);
  const std::size_t staged = staged_offset(bw) * sizeof(T) + std::size_t(plan.p) * width * 2 * sizeof(T);
  const unsigned threads = static_cast<unsigned>(std::min(max_threads, (bw + 31) / 32 * 32));
  // S_t (and the rotations) in shared memory where the device allows it (the attribute set once
  // per device).
  const std::size_t limit = detail::gpu_givens_shared_memory(kernel);
  auto launch = [&](auto k, std::size_t smem, detail::per_device_value& allowed) {
    detail::allow_shared_memory(allowed, kernel, k, detail::shared_optin_bytes(kernel));
    k<<<static_cast<unsigned>(nblocks), threads, smem, stream>>>(plan, cs, S);
  };
  static detail::per_device_value staged_set, shared_set;
  if (staged <= limit)
    launch(givens_blocks_kernel<T, true, true>, staged, staged_set);
  else if (bytes <= limit)
    launch(givens_blocks_kernel<T, true, false>, bytes, shared_set);
  else
    givens_blocks_kernel<T, false, false><<<static_cast<unsigned>(nblocks), threads, 0, stream>>>(plan, cs, S);
  detail::check(kernel, "givens_blocks_kernel launch", cudaGetLastError());
}

template void gpu_givens_blocks<float>(const givens_plan&, const float*, float*, cudaStream_t);
template void gpu_givens_blocks<double>(const givens_plan&, const double*, double*, cudaStream_t);

}  // namespace tessera::kernels
