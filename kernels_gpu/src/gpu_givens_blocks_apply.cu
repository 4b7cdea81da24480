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
#include "dmma.cuh"

namespace tessera::kernels {
namespace {

constexpr int cw = 32, ct8 = cw / 8, warps = 8, threads = 32 * warps, maxbw = gpu_givens_blocks_apply_max_bw;
static_assert(maxbw == 16 * warps, "a warp takes 16 of a block's rows");
// 4 (mod 16) doubles: the 16 lanes of a half-warp read B fragments X(k + tq, c + gr) from 16 banks.
constexpr int ldx = maxbw + 4, ksteps = maxbw / 4;

template <class T>
__global__ void __launch_bounds__(threads, 2) givens_blocks_apply_kernel(givens_plan plan, const T* __restrict__ S,
                                                                         T* M, int ldm, int roff, int jbeg, int jend,
                                                                         int cshift) {
  __shared__ double X[cw * ldx];  // block t's rows of the thread block's columns, X(k, c) at c * ldx + k
  const int tid = static_cast<int>(threadIdx.x), warp = tid >> 5, lane = tid & 31, gr = lane >> 2, tq = lane & 3;
  const int jb = jbeg + static_cast<int>(blockIdx.x) * cw, je = min(jb + cw, jend);
  const int nblocks = plan.blocks(), bw = plan.bw(), i0 = 16 * warp;
  for (int t = 0; t < nblocks; ++t) {
    const int g = roff + plan.row0(t), rt = plan.rows(t);
    const int c0 = max(jb, g + cshift);  // R's columns left of c0 are zeros in these rows: untouched
    if (c0 >= je) continue;               // the same in every thread
    // The warp's rows of S_t^T, A(i, k) = S_t(k, i), all loads issued at once and before X's, so
    // that a block costs about one trip to memory (S does not depend on M).
    const T* St = S + static_cast<std::size_t>(t) * bw * bw;
    double a[ksteps][2];
#pragma unroll
    for (int s = 0; s < ksteps; ++s)
#pragma unroll
      for (int ri = 0; ri < 2; ++ri) {
        const int kk = 4 * s + tq, i = i0 + 8 * ri + gr;
        a[s][ri] = kk < rt && i < rt ? static_cast<double>(St[kk + static_cast<std::size_t>(i) * bw]) : 0.0;
      }
    __syncthreads();  // the previous block's X read and its rows written by every warp
#pragma unroll
    for (int it = 0; it < maxbw * cw / threads; ++it) {  // rows beyond rt zero (S_t^T's columns there are)
      const int idx = tid + it * threads, k = idx % maxbw, c = idx / maxbw, j = jb + c;
      X[c * ldx + k] = k < rt && j >= c0 && j < je ? static_cast<double>(M[g + k + static_cast<std::size_t>(j) * ldm])
                                                   : 0.0;
    }
    __syncthreads();
    if (i0 < rt) {  // this warp's rows within the block's (warp-uniform)
      double acc[2][ct8][2] = {};
#pragma unroll
      for (int s = 0; s < ksteps; ++s) {
        double b[ct8];
#pragma unroll
        for (int ct = 0; ct < ct8; ++ct) b[ct] = X[(8 * ct + gr) * ldx + 4 * s + tq];
#pragma unroll
        for (int ri = 0; ri < 2; ++ri)
#pragma unroll
          for (int ct = 0; ct < ct8; ++ct) detail::dmma_8x8x4(acc[ri][ct], a[s][ri], b[ct]);
      }
#pragma unroll
      for (int ri = 0; ri < 2; ++ri) {
        const int i = i0 + 8 * ri + gr;
        if (i >= rt) continue;
#pragma unroll
        for (int ct = 0; ct < ct8; ++ct)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int j = jb + 8 * ct + 2 * tq + h;
            if (j >= c0 && j < je) M[g + i + static_cast<std::size_t>(j) * ldm] = static_cast<T>(acc[ri][ct][h]);
          }
      }
    }
  }
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
