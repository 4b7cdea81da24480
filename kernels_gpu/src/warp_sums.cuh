#pragma once
// A warp's transpose-reduction: 32 values a lane in, lane l out with the warp's reduction of value
// l. Each round halves the values a lane still holds, so 32 values take 16 + 8 + 4 + 2 + 1
// shuffles instead of 32 x 5. Used by householder.cu (householder_short.cu reduces over the 8
// lanes of a column group the same way, across lane bits 4, 3, 2).
namespace tessera::kernels::detail {

// One round: lanes with bit K set keep the upper K of their 2K values, the others the lower K,
// each combining its partner's copy of the half it keeps.
template <int K, class T, class Op>
__device__ __forceinline__ void transpose_round(T (&acc)[32], int lane, Op op) {
  const bool upper = (lane & K) != 0;
#pragma unroll
  for (int i = 0; i < K; ++i) {
    const T send = upper ? acc[i] : acc[i + K];
    const T keep = upper ? acc[i + K] : acc[i];
    acc[i] = op(keep, __shfl_xor_sync(0xffffffffu, send, K));
  }
}

template <class T, class Op>
__device__ __forceinline__ T warp_transpose_reduce(T (&acc)[32], int lane, Op op) {
  transpose_round<16>(acc, lane, op);
  transpose_round<8>(acc, lane, op);
  transpose_round<4>(acc, lane, op);
  transpose_round<2>(acc, lane, op);
  transpose_round<1>(acc, lane, op);
  return acc[0];
}

struct plus_op {
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
struct max_op {
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const { return fmax(a, b); }
};

}  // namespace tessera::kernels::detail
