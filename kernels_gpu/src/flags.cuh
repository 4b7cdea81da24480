#pragma once
// An int flag stored with release and loaded with acquire semantics, the one way kernels here
// hand work from one thread to others without a barrier: at block scope in shared memory
// (small_panel.cu: the reflector chain's warp to the warps building T) or at device scope in
// global memory (tpqrt_chain.cu: a panel's thread block to the slabs that apply it).

namespace tessera::kernels::detail {

enum class flag_scope { block_shared, device_global };

template <flag_scope S>
__device__ __forceinline__ void store_release(int* p, int v) {
  if constexpr (S == flag_scope::block_shared)
    asm volatile("st.release.cta.shared.b32 [%0], %1;" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(p))),
                 "r"(v)
                 : "memory");
  else
    asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

template <flag_scope S>
__device__ __forceinline__ int load_acquire(const int* p) {
  int v;
  if constexpr (S == flag_scope::block_shared)
    asm volatile("ld.acquire.cta.shared.b32 %0, [%1];"
                 : "=r"(v)
                 : "r"(static_cast<unsigned>(__cvta_generic_to_shared(p)))
                 : "memory");
  else
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

}  // namespace tessera::kernels::detail
