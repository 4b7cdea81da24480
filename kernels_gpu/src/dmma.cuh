#pragma once
// The tensor cores' m8n8k4 product in double (sm_80 and later), for the kernels that keep their
// operands in registers (the TPQRT chain, gpu_tp_apply_right, gpu_givens_blocks_apply, the batched
// inverse by blocks).
namespace tessera::kernels::detail {

// c += a b for one 8 x 8 tile: lane 4 gr + tq holds a = A(gr, tq) of the 8 x 4 A operand,
// b = B(tq, gr) of the 4 x 8 B, and c = C(gr, 2 tq), C(gr, 2 tq + 1).
__device__ __forceinline__ void dmma_8x8x4(double (&c)[2], double a, double b) {
  asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};"
      : "+d"(c[0]), "+d"(c[1])
      : "d"(a), "d"(b));
}

}  // namespace tessera::kernels::detail
