// A plan's blocks S_t (gpu_givens_blocks') applied in turn from the left to a matrix's columns by
// one kernel (tessera/kernels_gpu/gpu_givens.hpp), where the updates made a GEMM and a copy a block:
// 96 host calls for rank 64's 48 blocks on R alone, at 12-27 us of the H200 host's time a GEMM,
// while the TPQRT chain that follows waited for them
// (docs/results/2026-11-29-q-after-chain-h200.md).
//
// A thread block owns 32 of the matrix's columns and walks the blocks: it stages block t's rows of
// its columns in shared memory, each warp multiplies 16 of the block's rows by S_t^T on the tensor
// cores (m8n8k4 in double, S_t read from L2, where all of a group's blocks fit) and writes them back;
// the next block's rows overlap these, so a barrier separates them. Columns are independent, so
// thread blocks need no order between them. Single precision is computed in double. Two thread
// blocks an SM (128 registers, a few spilled) keep R's 6000 columns of a row deletion in one wave:
// against 242 registers and one block an SM, or 16 columns a block, up to 8% faster for row
// deletions, within 2% elsewhere (docs/results/2026-11-29-givens-blocks-apply-h200.md).
#include <tessera/kernels_gpu/gpu_givens.hpp>

#include "check.hpp"
#include "givens_blocks_apply.cuh"

namespace tessera::kernels {
namespace {

constexpr int cw = 32, warps = 8, threads = 32 * warps;

template <class T>
__global__ void __launch_bounds__(threads, 2) givens_blocks_apply_kernel(givens_plan plan, const T* __restrict__ S,
                                                                         T* M, int ldm, int roff, int jbeg, int jend,
                                                                         int cshift) {
  __shared__ double X[detail::givens_blocks_shared];  // block t's rows of the thread block's columns
  const int jb = jbeg + static_cast<int>(blockIdx.x) * cw;
  detail::givens_blocks_apply_columns<T, warps>(plan, S, M, ldm, roff, jb, min(jb + cw, jend), cshift, X);
}

}  // namespace

template <class T>
bool gpu_givens_blocks_apply_fits(const givens_plan& plan) {
  return plan.bw() <= gpu_givens_blocks_apply_max_bw;
}

template <class T>
void gpu_givens_blocks_apply(const givens_plan& plan, const T* S, T* M, int ldm, int roff, int jbeg, int jend,
                             int cshift, cudaStream_t stream) {
  constexpr const char* kernel = "tessera::kernels::gpu_givens_blocks_apply";
  if (plan.blocks() == 0 || jend <= jbeg) return;
  detail::require_le(kernel, "plan.bw()", plan.bw(), "gpu_givens_blocks_apply_max_bw", gpu_givens_blocks_apply_max_bw);
  detail::require_ge(kernel, "jbeg", jbeg, "0", 0);
  detail::require_ge(kernel, "roff", roff, "0", 0);
  detail::require_ge(kernel, "ldm", ldm, "roff + plan.L", roff + plan.L);  // the rows the blocks touch
  detail::require_ptr(kernel, "S", S);
  detail::require_ptr(kernel, "M", M);
  const unsigned grid = static_cast<unsigned>((jend - jbeg + cw - 1) / cw);
  givens_blocks_apply_kernel<T><<<grid, threads, 0, stream>>>(plan, S, M, ldm, roff, jbeg, jend, cshift);
  detail::check(kernel, "givens_blocks_apply_kernel launch", cudaGetLastError());
}

template bool gpu_givens_blocks_apply_fits<float>(const givens_plan&);
template bool gpu_givens_blocks_apply_fits<double>(const givens_plan&);
template void gpu_givens_blocks_apply<float>(const givens_plan&, const float*, float*, int, int, int, int, int,
                                             cudaStream_t);
template void gpu_givens_blocks_apply<double>(const givens_plan&, const double*, double*, int, int, int, int, int,
                                              cudaStream_t);

}  // namespace tessera::kernels
