// A plan's rotations applied from the left to a matrix's columns, block by block, by one kernel
// (tessera/kernels_gpu/gpu_givens.hpp). The updates made a GEMM and a copy a block and matrix
// there, at 12-27 us of the H200 host's time a GEMM: R's Givens stage waited for the host
// (docs/results/2026-11-29-rank-k-as-rows-h200.md). Multiplying by the blocks S_t in FP64 FMAs
// instead was 4-10x slower than cuBLAS's GEMMs (the blocks cost (w + p)^2 / (3 w p) times the
// rotations' flops); Q's rows from the right by this kernel were slower than its GEMMs, and so
// were groups of 64 sweeps (docs/results/2026-11-29-givens-apply-h200.md).
//
// So the rotations themselves: a thread block owns 32 of the matrix's columns, a lane a column,
// and takes block t's rows of them and its rotations into shared memory; its warps run the
// block's sweeps as a wavefront, a few rotations a warp and step (below), every column at once.
// Blocks go one after another, each on the thread block's own columns, so thread blocks need no
// order between them.
#include <tessera/kernels_gpu/gpu_givens.hpp>

#include <algorithm>
#include <type_traits>

#include "check.hpp"
#include "per_device.hpp"

namespace tessera::kernels {
namespace {

constexpr int lines = 32, warps = 16, ldt = lines + 1;  // ldt odd: loads along columns or rows avoid bank conflicts
constexpr int kmax = 8;  // rotations a warp applies in one step: a block's width w <= warps * kmax

// Sweep j runs in steps [j, j + S) on warp j % warps, k = ceil(width / warps) of its rotations a
// step (S = ceil(width / k) <= warps, so a warp's sweeps never overlap), u from hi - 1 down:
// at local step i, u in [hi - (i + 1) k, hi - 1 - i k], rows [hi - (i + 1) k + j - 1, hi - 1 - i k + j].
// Sweep j + 1 is then a step behind on rows just below those, which sweep j has finished (its last
// rotation on rows u + j, u + j + 1 is (j, u)); p + S - 1 steps and barriers a block.
template <class T>
__global__ void __launch_bounds__(warps * 32, 2) givens_apply_kernel(givens_plan plan, const T* __restrict__ cs, T* M,
                                                                   int ldm, int roff, int jbeg, int jend, int cshift) {
  extern __shared__ __align__(16) double smem[];
  using pair = std::conditional_t<sizeof(T) == 8, double2, float2>;
  double* tile = smem;                                                      // row k of column l at k * ldt + l
  pair* rot = reinterpret_cast<pair*>(smem + ((plan.bw() * ldt + 1) & ~1));  // block t's rotations, sweep by sweep
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, wid = tid >> 5, nt = warps * 32;
  const int jb = jbeg + static_cast<int>(blockIdx.x) * lines, je = min(jb + lines, jend);
  const int nblocks = plan.blocks(), L = plan.L, p = plan.p;
  auto at = [&](int row, int j) -> T& { return M[row + static_cast<std::size_t>(j) * ldm]; };
  for (int t = 0; t < nblocks; ++t) {
    const int lo = plan.u_lo(t), hi = plan.u_hi(t), r0 = plan.row0(t), rt = plan.rows(t), g = roff + r0;
    const int c0 = max(jb, g + cshift);  // R's columns left of c0 are zeros in these rows
    if (c0 >= je) continue;               // the same in every thread
    const int width = hi - lo, k = (width + warps - 1) / warps, S = (width + k - 1) / k;
    for (int idx = tid; idx < rt * lines; idx += nt) {  // along each column's rows
      const int kk = idx % rt, l = idx / rt, j = jb + l;
      tile[kk * ldt + l] = j >= c0 && j < je ? static_cast<double>(at(g + kk, j)) : 0.0;
    }
    for (int idx = tid; idx < p * width; idx += nt) {
      const int j = idx / width, u = lo + idx % width;
      if (u <= plan.umax(j)) rot[idx] = *reinterpret_cast<const pair*>(cs + 2 * (static_cast<std::size_t>(j) * L + u + j));
    }
    __syncthreads();
    for (int s = 0; s < p + S - 1; ++s) {
      const int j = s < wid ? -1 : wid + (s - wid) / warps * warps, i = s - j;
      if (j >= 0 && j < p && i < S) {
        const int utop = min(hi - 1 - i * k, plan.umax(j)), ubot = max(lo, hi - (i + 1) * k), n = utop - ubot + 1;
        if (n > 0) {
          // rows ubot + j - 1 .. utop + j of this lane's column; rotations (j, utop) .. (j, ubot)
          double* base = tile + (ubot + j - 1 - r0) * ldt + lane;
          const pair* rj = rot + j * width + (ubot - lo);
          double a[kmax + 1];
          pair r[kmax];
#pragma unroll
          for (int q = 0; q <= kmax; ++q)
            if (q <= n) a[q] = base[q * ldt];
#pragma unroll
          for (int q = 0; q < kmax; ++q)
            if (q < n) r[q] = rj[q];
          double carry = a[0];  // a[n], picked without indexing by a run-time value (a stays in registers)
#pragma unroll
          for (int q = 1; q <= kmax; ++q)
            if (q == n) carry = a[q];
#pragma unroll
          for (int q = kmax - 1; q >= 0; --q)
            if (q < n) {  // rotation (j, ubot + q) on rows ubot + q + j - 1 (a[q]) and ubot + q + j (the carry)
              const double c = static_cast<double>(r[q].x), sn = static_cast<double>(r[q].y);
              base[(q + 1) * ldt] = -sn * a[q] + c * carry;
              carry = c * a[q] + sn * carry;
            }
          base[0] = carry;
        }
      }
      __syncthreads();
    }
    for (int idx = tid; idx < rt * lines; idx += nt) {
      const int kk = idx % rt, l = idx / rt, j = jb + l;
      if (j >= c0 && j < je) at(g + kk, j) = static_cast<T>(tile[kk * ldt + l]);
    }
    __syncthreads();  // the next block's rows and rotations go where this one's were read from
  }
}

template <class T>
std::size_t shared_bytes(const givens_plan& plan) {
  const std::size_t width = static_cast<std::size_t>(std::max(0, std::min(plan.w, plan.umax_all())));
  return ((std::size_t(plan.bw()) * ldt + 1) & ~std::size_t(1)) * sizeof(double) +
         std::size_t(plan.p) * width * 2 * sizeof(T);
}

}  // namespace

template <class T>
bool gpu_givens_apply_fits(const givens_plan& plan) {
  return plan.bw() <= gpu_givens_apply_max_bw && plan.w <= gpu_givens_apply_max_w &&
         shared_bytes<T>(plan) <= detail::gpu_givens_shared_memory("gpu_givens_apply_fits");
}

template <class T>
void gpu_givens_apply(const givens_plan& plan, const T* cs, T* M, int ldm, int roff, int jbeg, int jend, int cshift,
                      cudaStream_t stream) {
  constexpr const char* kernel = "tessera::kernels::gpu_givens_apply";
  const int nblocks = plan.blocks();
  if (nblocks == 0 || jend <= jbeg) return;
  detail::require_le(kernel, "plan.bw()", plan.bw(), "gpu_givens_apply_max_bw", gpu_givens_apply_max_bw);
  detail::require_le(kernel, "plan.w", plan.w, "gpu_givens_apply_max_w", gpu_givens_apply_max_w);
  detail::require_ge(kernel, "jbeg", jbeg, "0", 0);
  detail::require_ge(kernel, "roff", roff, "0", 0);
  detail::require_ge(kernel, "ldm", ldm, "roff + plan.L", roff + plan.L);  // the rows the blocks touch
  detail::require_ptr(kernel, "cs", cs);
  detail::require_ptr(kernel, "M", M);
  const std::size_t bytes = shared_bytes<T>(plan), limit = detail::gpu_givens_shared_memory(kernel);
  if (bytes > limit)
    detail::bad_argument(kernel, "shared memory for plan (bytes)", static_cast<long long>(bytes), "<=",
                         "the device's (gpu_givens_apply_fits)", static_cast<long long>(limit));
  const unsigned grid = static_cast<unsigned>((jend - jbeg + lines - 1) / lines);
  static detail::per_device_value allowed;
  detail::allow_shared_memory(allowed, kernel, givens_apply_kernel<T>, detail::shared_optin_bytes(kernel));
  givens_apply_kernel<T><<<grid, warps * 32, bytes, stream>>>(plan, cs, M, ldm, roff, jbeg, jend, cshift);
  detail::check(kernel, "givens_apply_kernel launch", cudaGetLastError());
}

template bool gpu_givens_apply_fits<float>(const givens_plan&);
template bool gpu_givens_apply_fits<double>(const givens_plan&);
template void gpu_givens_apply<float>(const givens_plan&, const float*, float*, int, int, int, int, int, cudaStream_t);
template void gpu_givens_apply<double>(const givens_plan&, const double*, double*, int, int, int, int, int,
                                       cudaStream_t);

}  // namespace tessera::kernels
