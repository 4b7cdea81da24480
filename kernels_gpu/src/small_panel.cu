// gpu_small_panel_qr (tessera/kernels_gpu/gpu_small_panel.hpp): one thread block of four warps, the
// panel in shared memory.
//
// The reflectors form a chain (reflector j + 1 comes from column j + 1 after reflector j), so a
// step's latency is what counts. Warp 0 runs the chain alone, without block barriers: each lane
// owns two columns (lane, lane + 32), holds the band's rows of each in registers and takes
// reflector j on them (w = A(j, c) + scale x^T a_c, a_c -= tau w [1; scale x]); then the lane that
// owns column j + 1 forms reflector j + 1 from its registers (beta, tau, scale and x into shared
// memory), and a __syncwarp ends the step. Column j keeps x unscaled; V = scale x is written at
// the end. Warps 1-3 build T meanwhile, one reflector behind: as soon as reflector c is out (a
// counter in shared memory, release/acquire at block scope) they form G(k, c) = v_k^T v_c for the
// reflectors k that overlap it (c - band <= k < c) and then T(l, c) = -tau_c sum_k T(l, k) G(k, c),
// LARFT's recurrence, a row a thread with the row's recent entries in registers.
//
// Registers instead of shared memory for the columns and T's rows (H100, ncu, double, kernel per
// panel): (80 x 64, band 16) 79-83 -> 59 us, (96 x 64, band 32) 98-101 -> 75 us, (84 x 64, band
// 20) 88-99 -> 74 us; the owner's window chosen by a branch instead of a select per value, 59 ->
// 56, 74 -> 70, 73 -> 68 us (docs/results/2026-11-27-small-panel-registers-h100.md). With the
// columns in registers alone T became the limit (83 us at band 16).
#include <tessera/kernels_gpu/gpu_small_panel.hpp>

#include <algorithm>

#include "check.hpp"
#include "equilibrate.hpp"
#include "flags.cuh"
#include "per_device.hpp"

namespace tessera::kernels {
namespace {

using detail::exponent_of_max;
using detail::reflector_from_sums;

constexpr int threads = 128, helpers = threads - 32;
static_assert(gpu_small_panel_max_band <= 32, "the band's rows live in registers (BW <= 32)");

struct layout {
  int lds, a, g, t, tau, scale, beta, expo, doubles;
  __host__ __device__ layout(int h, int n) : lds(h | 1) {
    a = 0;
    g = a + lds * n;
    t = g + n * n;
    tau = t + n * n;
    scale = tau + n;
    beta = scale + n;
    expo = beta + n;
    doubles = expo + n;
  }
};

constexpr auto in_block = detail::flag_scope::block_shared;

// sum_{r in [r0, r1)} x[r] a[r] with four partial sums.
__device__ __forceinline__ double dot(const double* x, const double* a, int r0, int r1) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int r = r0;
  for (; r + 3 < r1; r += 4) {
    s0 = fma(x[r], a[r], s0);
    s1 = fma(x[r + 1], a[r + 1], s1);
    s2 = fma(x[r + 2], a[r + 2], s2);
    s3 = fma(x[r + 3], a[r + 3], s3);
  }
  for (; r < r1; ++r) s0 = fma(x[r], a[r], s0);
  return (s0 + s1) + (s2 + s3);
}

// acc := step(i, acc) for i = 0 .. K - 1 in P partial sums (term i into sum i mod P), then added
// pairwise: the unrolled chains of the register windows' dot products.
template <int P, int K, class Step>
__device__ __forceinline__ double partial_sums(Step step) {
  static_assert(P == 2 || P == 4, "two or four partial sums");
  double s[P];
#pragma unroll
  for (int q = 0; q < P; ++q) s[q] = 0.0;
#pragma unroll
  for (int i = 0; i < K; ++i) s[i % P] = step(i, s[i % P]);
  if constexpr (P == 2) return s[0] + s[1];
  else return (s[0] + s[1]) + (s[2] + s[3]);
}

// BW >= band: the rows a reflector reaches below its diagonal, held in registers.
template <class T, int BW>
__global__ void __launch_bounds__(threads) small_panel_kernel(int h, int n, int band, T* A, int lda, T* V, int ldv,
                                                              T* Tf, int ldt) {
  extern __shared__ double sm[];
  __shared__ int ready;  // reflectors 0 .. ready - 1 are out (their tau, scale and x final)
  const layout L(h, n);
  double* As = sm + L.a;
  double* G = sm + L.g;  // G(k, c) at G[c n + k], k < c
  double* Ts = sm + L.t;
  double* taus = sm + L.tau;
  double* scales = sm + L.scale;
  double* betas = sm + L.beta;
  double* expo = sm + L.expo;
  const int lds = L.lds, tid = static_cast<int>(threadIdx.x), lane = tid & 31;
  // Column c is zero below row c + band: the rows its reflector reaches end here.
  const auto row_end = [&](int c) { return min(h, c + band + 1); };
  for (int idx = tid; idx < h * n; idx += threads) {
    const int r = idx % h, c = idx / h;
    As[c * lds + r] = r < row_end(c) ? static_cast<double>(A[r + static_cast<std::ptrdiff_t>(c) * lda]) : 0.0;
  }
  for (int idx = tid; idx < n * n; idx += threads) G[idx] = 0.0, Ts[idx] = 0.0;
  if (tid == 0) ready = 0;
  __syncthreads();
  // A := A D, D = diag(2^-e_c), every column's max-abs in [1/2, 1) (a thread a column).
  if (tid < n) {
    double* a = As + tid * lds;
    double mx = 0;
    for (int r = 0; r < row_end(tid); ++r) mx = fmax(mx, fabs(a[r]));
    const int e = exponent_of_max(mx);
    for (int r = 0; r < row_end(tid); ++r) a[r] = scalbn(a[r], -e);
    expo[tid] = e;
  }
  __syncthreads();

  if (tid < 32) {
    if (lane == 0) {  // reflector 0
      const double* a = As;
      double beta, tau, scale;
      reflector_from_sums<T>(a[0], dot(a, a, 1, row_end(0)), beta, tau, scale);
      taus[0] = tau, scales[0] = scale, betas[0] = beta;
      detail::store_release<in_block>(&ready, 1);
    }
    __syncwarp();
    // Each column's rows j .. j + BW at step j, in registers (wa: column lane, wb: lane + 32;
    // rows at or past row_end(c) zero). Reflector j moves the window down a row: row j is final
    // (stored), row j + 1 + BW enters (no reflector before j + 1 reaches it: loaded as it is).
    double wa[BW + 1], wb[BW + 1];
    const int ca = lane, cb = lane + 32;
#pragma unroll
    for (int i = 0; i <= BW; ++i) {
      wa[i] = ca < n && i < row_end(ca) ? As[ca * lds + i] : 0.0;
      wb[i] = cb < n && i < row_end(cb) ? As[cb * lds + i] : 0.0;
    }
    for (int j = 0; j < n; ++j) {
      const double tau = taus[j], scale = scales[j];
      const double* x = As + j * lds;
      const int end = row_end(j);
      double xr[BW];
#pragma unroll
      for (int i = 0; i < BW; ++i) xr[i] = j + 1 + i < end ? x[j + 1 + i] : 0.0;
      const auto take = [&](double(&w)[BW + 1], int c) {
        if (c <= j || c >= n) return;
        const double xw = partial_sums<4, BW>([&](int i, double a) { return fma(xr[i], w[i + 1], a); });
        const double f = tau * fma(scale, xw, w[0]), fs = f * scale;
        As[c * lds + j] = w[0] - f;
#pragma unroll
        for (int i = 0; i < BW; ++i) w[i] = fma(-fs, xr[i], w[i + 1]);
        const int r = j + 1 + BW;
        w[BW] = r < row_end(c) ? As[c * lds + r] : 0.0;
      };
      take(wa, ca);
      take(wb, cb);
      const int c = j + 1;  // the next reflector, from its owner's window
      // Which window holds column c is the same for every lane: a branch per window, so that the
      // owner reads its registers by constant index.
      const auto form = [&](const double(&w)[BW + 1]) {
        const double sq = partial_sums<2, BW + 1>([&](int i, double a) { return i > 0 ? fma(w[i], w[i], a) : a; });
        double beta, tau1, scale1;
        reflector_from_sums<T>(w[0], sq, beta, tau1, scale1);
        const int e = row_end(c);
#pragma unroll
        for (int i = 1; i <= BW; ++i)
          if (c + i < e) As[c * lds + c + i] = w[i];
        taus[c] = tau1, scales[c] = scale1, betas[c] = beta;
        detail::store_release<in_block>(&ready, c + 1);
      };
      if (c < n && lane == (c & 31)) {
        if (c < 32) form(wa);
        else form(wb);
      }
      __syncwarp();
    }
  } else {
    // T, one reflector behind the chain: G(k, c) for c - band <= k < c (v_k is 1 at k and scale_k
    // x_k below it; v_c 1 at c), then row ht of T's column c from G's column and the row's entries
    // of the last BW columns, held in registers (G(k, c) is zero for k < c - band).
    const int ht = tid - 32;
    double tw[BW];
#pragma unroll
    for (int i = 0; i < BW; ++i) tw[i] = 0.0;
    for (int c = 0; c < n; ++c) {
      while (detail::load_acquire<in_block>(&ready) < c + 1) __nanosleep(20);
      const int k = c - 1 - ht;
      if (ht < band && k >= 0) {
        const double *xk = As + k * lds, *xc = As + c * lds;
        const int e = row_end(k);
        const double xx = partial_sums<2, BW>([&](int i, double a) {
          const int r = c + 1 + i;
          if (r < e) a = fma(xk[r], xc[r], a);
          return a;
        });
        G[c * n + k] = scales[k] * fma(scales[c], xx, xk[c]);
      }
      asm volatile("bar.sync 1, %0;" ::"r"(helpers) : "memory");
      const double tg = partial_sums<4, BW>([&](int i, double a) {
        const int kk = c - BW + i;
        const double g = kk >= 0 ? G[c * n + kk] : 0.0;
        return fma(tw[i], g, a);
      });
      const double t = ht < c ? -taus[c] * tg : ht == c ? taus[c] : 0.0;
      if (ht <= c) Ts[c * n + ht] = t;
#pragma unroll
      for (int i = 0; i + 1 < BW; ++i) tw[i] = tw[i + 1];
      tw[BW - 1] = t;
    }
  }
  __syncthreads();

  for (int idx = tid; idx < h * n; idx += threads) {
    const int r = idx % h, c = idx / h;
    const std::ptrdiff_t o = static_cast<std::ptrdiff_t>(c);
    const double rv = r < c ? scalbn(As[c * lds + r], static_cast<int>(expo[c]))
                            : r == c ? scalbn(betas[c], static_cast<int>(expo[c])) : 0.0;
    A[r + o * lda] = static_cast<T>(rv);
    V[r + o * ldv] = static_cast<T>(r <= c || r >= row_end(c) ? (r == c ? 1.0 : 0.0) : scales[c] * As[c * lds + r]);
  }
  for (int idx = tid; idx < n * n; idx += threads) {
    const int k = idx % n, c = idx / n;
    Tf[k + static_cast<std::ptrdiff_t>(c) * ldt] = static_cast<T>(k <= c ? Ts[c * n + k] : 0.0);
  }
}

}  // namespace

template <class T>
bool gpu_small_panel_qr(int h, int n, int band, T* A, int lda, T* V, int ldv, T* Tf, int ldt, cudaStream_t stream) {
  constexpr const char* fn = "tessera::kernels::gpu_small_panel_qr";
  detail::require_ge(fn, "n", n, "1", 1);
  detail::require_ge(fn, "h", h, "n", n);
  detail::require_ge(fn, "band", band, "0", 0);
  detail::require_ge(fn, "lda", lda, "h", h);
  detail::require_ge(fn, "ldv", ldv, "h", h);
  detail::require_ge(fn, "ldt", ldt, "n", n);
  detail::require_ptr(fn, "A", A);
  detail::require_ptr(fn, "V", V);
  detail::require_ptr(fn, "T", Tf);
  if (n > gpu_small_panel_max_cols || std::min(band, h - 1) > gpu_small_panel_max_band) return false;
  band = std::min(band, h - 1);
  const std::size_t smem = static_cast<std::size_t>(layout(h, n).doubles) * sizeof(double);
  // Once per device: both kernels may take all the shared memory a block can have (less 1 KB).
  static detail::per_device_value limit;
  const int most = limit.get(fn, [] {
    int dev = 0, optin = 0;
    detail::check(fn, "cudaGetDevice", cudaGetDevice(&dev));
    detail::check(fn, "cudaDeviceGetAttribute",
                  cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    const int bytes = optin > 1024 ? optin - 1024 : 0;
    for (auto k : {small_panel_kernel<T, 16>, small_panel_kernel<T, 32>})
      detail::check(fn, "cudaFuncSetAttribute",
                    cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    return bytes;
  });
  if (smem > static_cast<std::size_t>(most)) return false;
  auto kernel = band <= 16 ? small_panel_kernel<T, 16> : small_panel_kernel<T, 32>;
  kernel<<<1, threads, smem, stream>>>(h, n, band, A, lda, V, ldv, Tf, ldt);
  detail::check(fn, "small_panel_kernel launch", cudaGetLastError());
  return true;
}

template bool gpu_small_panel_qr<float>(int, int, int, float*, int, float*, int, float*, int, cudaStream_t);
template bool gpu_small_panel_qr<double>(int, int, int, double*, int, double*, int, double*, int, cudaStream_t);

}  // namespace tessera::kernels
