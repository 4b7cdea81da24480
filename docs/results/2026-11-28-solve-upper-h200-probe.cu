// The triangular solve kernel measured in 2026-11-28-solve-upper-h200.md (not kept in the library), its
// header and its test as they ran in call 11, and the timing program (solve2.cu).

// ---- kernels_gpu/include/tessera/kernels_gpu/gpu_solve_upper.hpp ----
#pragma once
// B := R^-1 B on the GPU for R n x n upper triangular (non-unit) and a few right-hand sides: the
// least-squares solves' last step, in one kernel. cuBLAS's TRSM with one right-hand side took
// 200 us at n = 3000 on an H200 (a chain of 32-row blocks); here a thread block owns 64 rows,
// subtracts each later block's solution as soon as it is out and solves its own triangle by
// substitution on one warp.
#include <cstddef>

#include <cuda_runtime.h>

namespace tessera::kernels {

// The most right-hand sides one call takes (more: the caller's TRSM).
inline constexpr int gpu_solve_upper_max_nrhs = 8;

// Workspace (bytes) gpu_solve_upper needs for order n.
std::size_t gpu_solve_upper_workspace(int n);

// On `stream`: B (n x nrhs, ldb) := R^-1 B, R (n x n, ldr; its strict lower part not read). As
// reference LAPACK's TRSM: R(k, k) divides where its reciprocal would not be a normal number (so
// pivots near the ends of the range give what TRSM gives, where cuBLAS multiplies by an infinite
// or subnormal reciprocal), an entry of B that is zero updates nothing (an Inf in R's column is
// not multiplied by it). nrhs <= gpu_solve_upper_max_nrhs; work: gpu_solve_upper_workspace(n)
// bytes (lwork), which calls sharing it use in stream order. Throws on bad arguments.
template <class T>
void gpu_solve_upper(int n, int nrhs, const T* R, int ldr, T* B, int ldb, void* work, std::size_t lwork,
                     cudaStream_t stream);

}  // namespace tessera::kernels

// ---- kernels_gpu/src/solve_upper.cu ----
// gpu_solve_upper (tessera/kernels_gpu/gpu_solve_upper.hpp): B := R^-1 B in one kernel.
//
// Thread block t owns R's block row i = nblk - 1 - t (64 rows; tickets in the order blocks start,
// so a block waits only for blocks already running). It subtracts R(i, k) x_k from its rows of B
// for k = nblk - 1 down to i + 1, each as soon as block k has published x_k, then solves its
// diagonal triangle by substitution on one warp (lane l: rows l and l + 32, the solved entry sent
// to the other lanes by a shuffle) and publishes x_i. The chain is then a substitution of 64 steps
// and a handoff a block; the products with earlier blocks' solutions run beside it, and R(i, i + 1)
// and the triangle are in shared memory before the wait.
#include <tessera/kernels_gpu/gpu_solve_upper.hpp>

#include <algorithm>
#include <cfloat>

#include "check.hpp"
#include "per_device.hpp"

namespace tessera::kernels {
namespace {

constexpr int nb = 64, threads = 2 * nb, ldd = nb + 1, maxr = gpu_solve_upper_max_nrhs;

template <class T>
struct solve_args {
  int n, nrhs;
  const T* R;
  int ldr;
  T* B;
  int ldb;
  int* ticket;
  int* done;  // block row k's solution is in B (zero at launch)
};

template <class T>
constexpr std::size_t shared_bytes() {
  return sizeof(T) * (2 * std::size_t(nb) * ldd + 2 * std::size_t(nb) * maxr + nb);
}

// A reciprocal that is a normal number: multiplying by it loses nothing. Elsewhere R(k, k)
// divides, as reference TRSM does.
template <class T>
__device__ __forceinline__ bool reciprocal_ok(T d) {
  const T a = d < 0 ? -d : d;
  const T lo = sizeof(T) == 8 ? T(DBL_MIN) : T(FLT_MIN);
  return a >= lo && a <= T(1) / lo;
}

template <class T>
__global__ void __launch_bounds__(threads) solve_upper_kernel(solve_args<T> a) {
  extern __shared__ unsigned char raw[];
  T* D = reinterpret_cast<T*>(raw);  // the diagonal block, D[c ldd + r] = R(r0 + r, r0 + c)
  T* N1 = D + nb * ldd;              // R(i, i + 1)'s block
  T* xs = N1 + nb * ldd;             // a later block's solution; then this block's right-hand sides
  T* red = xs + nb * maxr;           // the second half's sums
  T* inv = red + nb * maxr;          // reciprocals of the diagonal
  __shared__ int ticket;
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32;
  if (tid == 0) ticket = atomicAdd(a.ticket, 1);
  __syncthreads();
  const int nblk = (a.n + nb - 1) / nb, i = nblk - 1 - ticket, r0 = i * nb, h = min(nb, a.n - r0);
  const int c1 = r0 + nb, w1 = i + 1 < nblk ? min(nb, a.n - c1) : 0;
  auto R = [&](int r, int c) { return a.R[r + static_cast<std::ptrdiff_t>(c) * a.ldr]; };
  for (int idx = tid; idx < nb * nb; idx += threads) {
    const int r = idx % nb, c = idx / nb;
    D[c * ldd + r] = r < h && c < h && r <= c ? R(r0 + r, r0 + c) : T(0);
    N1[c * ldd + r] = r < h && c < w1 ? R(r0 + r, c1 + c) : T(0);
  }
  // Thread t: row t % nb, the columns of half t / nb of each later block.
  const int row = tid % nb, half = tid / nb;
  T acc[maxr];
#pragma unroll
  for (int q = 0; q < maxr; ++q) acc[q] = T(0);
  for (int k = nblk - 1; k > i; --k) {
    if (tid == 0) {
      const volatile int* f = a.done + k;
      while (*f == 0) {
      }
      __threadfence();
    }
    __syncthreads();
    const int ck = k * nb, wk = min(nb, a.n - ck);
    // From L2 (__ldcg): another block wrote x_k, and this SM's L1 may hold B's old rows.
    for (int idx = tid; idx < nb * maxr; idx += threads) {
      const int r = idx % nb, q = idx / nb;
      xs[q * nb + r] = r < wk && q < a.nrhs ? __ldcg(a.B + ck + r + static_cast<std::ptrdiff_t>(q) * a.ldb) : T(0);
    }
    __syncthreads();
    if (row < h) {
      const int cb = half * (nb / 2), ce = min(cb + nb / 2, wk);
      for (int c = cb; c < ce; ++c) {
        const T rv = k == i + 1 ? N1[c * ldd + row] : R(r0 + row, ck + c);
#pragma unroll
        for (int q = 0; q < maxr; ++q) {
          const T x = xs[q * nb + c];
          if (q < a.nrhs && x != T(0)) acc[q] = fma(-rv, x, acc[q]);
        }
      }
    }
    __syncthreads();  // xs is overwritten next
  }
  if (half == 1) {
#pragma unroll
    for (int q = 0; q < maxr; ++q) red[q * nb + row] = acc[q];
  }
  for (int r = tid; r < nb; r += threads) {
    const T d = D[r * ldd + r];
    inv[r] = reciprocal_ok(d) ? T(1) / d : T(0);
  }
  __syncthreads();
  if (half == 0) {
#pragma unroll
    for (int q = 0; q < maxr; ++q)
      xs[q * nb + row] = row < h && q < a.nrhs ? a.B[r0 + row + static_cast<std::ptrdiff_t>(q) * a.ldb] + acc[q] +
                                                     red[q * nb + row]
                                               : T(0);
  }
  __syncthreads();
  if (tid < 32) {
    // Lane l: rows l (b0) and l + 32 (b1). Step kk: x_kk from its owner, then the rows above it.
    T b0[maxr], b1[maxr];
#pragma unroll
    for (int q = 0; q < maxr; ++q) b0[q] = xs[q * nb + lane], b1[q] = xs[q * nb + lane + 32];
#pragma unroll 2
    for (int kk = h - 1; kk >= 0; --kk) {
      const int o = kk % 32;
      const bool hi = kk >= 32;  // the step's row is in b1
      const T d = D[kk * ldd + kk], iv = inv[kk], d0 = D[kk * ldd + lane], d1 = D[kk * ldd + lane + 32];
      const bool by_division = iv == T(0);
#pragma unroll
      for (int q = 0; q < maxr; ++q) {
        if (q >= a.nrhs) break;
        const T b = hi ? b1[q] : b0[q];
        T v;
        if (by_division)  // the warp's branch: the division stays off the other steps' chain
          v = b / d;
        else
          v = b * iv;
        const T x = __shfl_sync(0xffffffffu, b == T(0) ? T(0) : v, o);  // a zero entry stays zero
        if (lane == o) {
          if (hi)
            b1[q] = x;
          else
            b0[q] = x;
        }
        if (x != T(0)) {
          if (lane < kk) b0[q] = fma(-d0, x, b0[q]);
          if (lane + 32 < kk) b1[q] = fma(-d1, x, b1[q]);
        }
      }
    }
#pragma unroll
    for (int q = 0; q < maxr; ++q) {
      if (q >= a.nrhs) break;
      T* col = a.B + r0 + static_cast<std::ptrdiff_t>(q) * a.ldb;
      if (lane < h) col[lane] = b0[q];
      if (lane + 32 < h) col[lane + 32] = b1[q];
    }
  }
  __syncthreads();
  if (tid == 0) {
    __threadfence();
    *static_cast<volatile int*>(a.done + i) = 1;
  }
}

}  // namespace

std::size_t gpu_solve_upper_workspace(int n) {
  return n <= 0 ? 0 : (std::size_t(1) + std::size_t((n + nb - 1) / nb)) * sizeof(int);
}

template <class T>
void gpu_solve_upper(int n, int nrhs, const T* R, int ldr, T* B, int ldb, void* work, std::size_t lwork,
                     cudaStream_t stream) {
  constexpr const char* fn = "tessera::kernels::gpu_solve_upper";
  detail::require_ge(fn, "n", n, "0", 0);
  detail::require_ge(fn, "nrhs", nrhs, "0", 0);
  detail::require_le(fn, "nrhs", nrhs, "gpu_solve_upper_max_nrhs", gpu_solve_upper_max_nrhs);
  if (n == 0 || nrhs == 0) return;
  detail::require_ge(fn, "ldr", ldr, "n", n);
  detail::require_ge(fn, "ldb", ldb, "n", n);
  detail::require_ptr(fn, "R", R);
  detail::require_ptr(fn, "B", B);
  const std::size_t need = gpu_solve_upper_workspace(n);
  if (lwork < need)
    detail::bad_argument(fn, "lwork", static_cast<long long>(lwork), ">=", "gpu_solve_upper_workspace(n)",
                         static_cast<long long>(need));
  detail::require_ptr(fn, "work", work);
  auto* flags = static_cast<int*>(work);
  detail::check(fn, "cudaMemsetAsync", cudaMemsetAsync(flags, 0, need, stream));
  auto kernel = solve_upper_kernel<T>;
  static detail::per_device_value allowed;
  detail::allow_shared_memory(allowed, fn, kernel, static_cast<int>(shared_bytes<T>()));
  const int blocks = (n + nb - 1) / nb;
  kernel<<<static_cast<unsigned>(blocks), threads, shared_bytes<T>(), stream>>>(
      solve_args<T>{n, nrhs, R, ldr, B, ldb, flags, flags + 1});
  detail::check(fn, "solve_upper_kernel launch", cudaGetLastError());
}

template void gpu_solve_upper<float>(int, int, const float*, int, float*, int, void*, std::size_t, cudaStream_t);
template void gpu_solve_upper<double>(int, int, const double*, int, double*, int, void*, std::size_t, cudaStream_t);

}  // namespace tessera::kernels

// ---- tests/test_gpu_solve_upper.cpp ----
// gpu_solve_upper (tessera/kernels_gpu/gpu_solve_upper.hpp) against the CPUs' reference TRSM
// (kernels::trsm_upper_divide): orders around the kernel's 64-row blocks and up to 3001, one to
// the most right-hand sides, leading dimensions above the order with padding left alone and NaN in
// R's strict lower part (never read); diagonals whose reciprocals are not normal numbers (the
// division path), zero right-hand side entries over a zero pivot, and bad arguments named.
// Skipped without a CUDA device.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "gpu_test_util.hpp"
#include "tessera/kernels_cpu/trsm_upper.hpp"
#include "tessera/kernels_gpu/gpu_solve_upper.hpp"

namespace {

using namespace tessera::testing::gpu;
using tessera::kernels::gpu_solve_upper;
using tessera::kernels::gpu_solve_upper_workspace;

// R: diagonal of magnitude 1..2 (sign random), above it uniform in (-1, 1) / sqrt(n), all times
// `scale` (then / n above the diagonal, so that no sum overflows); B uniform in (-1, 1) times
// `scale` too, so that X is of order 1. Returns the largest relative error against the CPUs'
// solve, after checking that R and B's padding came back as they were.
template <class T>
double check_solve(int n, int nrhs, double scale = 1, bool zero_pivot = false) {
  CAPTURE(n);
  CAPTURE(nrhs);
  CAPTURE(scale);
  std::uniform_real_distribution<double> u(-1, 1);
  const double off = scale == 1 ? 1 / std::sqrt(double(n)) : 1.0 / n;
  mat<T> R(n, n, 3), B(n, nrhs, 2);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      if (i < j) R(i, j) = T(u(rng()) * off * scale);
      if (i == j) R(i, j) = T((u(rng()) < 0 ? -1 : 1) * (1.5 + 0.5 * u(rng())) * scale);
      if (i > j) R(i, j) = std::numeric_limits<T>::quiet_NaN();  // never read
    }
  B.randomize();
  for (int q = 0; q < nrhs; ++q)
    for (int i = 0; i < n; ++i) B(i, q) = T(double(B(i, q)) * scale);
  if (zero_pivot && n > 1) {  // R(k, k) = 0 with R's row and column k and B's row k zero: x_k = 0
    const int k = n / 2;
    for (int i = 0; i < n; ++i) {
      if (i <= k) R(i, k) = T(0);
      if (i >= k) R(k, i) = T(0);
    }
    for (int q = 0; q < nrhs; ++q) B(k, q) = T(0);
  }
  mat<T> Bc = B;
  tessera::kernels::trsm_upper_divide(n, nrhs, R.data(), R.ld, Bc.data(), Bc.ld);
  dev<T> dR(R), dB(B);
  const std::size_t lwork = gpu_solve_upper_workspace(n);
  dev<unsigned char> work(lwork);
  blas b;
  gpu_solve_upper<T>(n, nrhs, dR.p, R.ld, dB.p, B.ld, work.p, lwork, b.s);
  b.sync();
  mat<T> Bg = B, Rg = R;
  dB.get(Bg);
  dR.get(Rg);
  CHECK(std::equal(Rg.a.begin(), Rg.a.end(), R.a.begin(), [](T x, T y) { return x == y || (x != x && y != y); }));
  CHECK(same_outside(Bg, B, 0, n));
  bool finite = true;
  for (int q = 0; q < nrhs; ++q)
    for (int i = 0; i < n; ++i) finite = finite && std::isfinite(double(Bg(i, q)));
  CHECK(finite);
  const double e = rel_error(Bg, Bc);
  CHECK(e <= 30.0 * std::numeric_limits<T>::epsilon() * n);
  return e;
}

}  // namespace

TEST_CASE_TEMPLATE("gpu_solve_upper equals reference TRSM", T, float, double) {
  double worst = 0;
  for (auto [n, nrhs] : {std::tuple{1, 1}, {2, 1}, {31, 3}, {63, 1}, {64, 8}, {65, 2}, {127, 1}, {128, 5},
                         {129, 1}, {300, 4}, {1000, 1}, {1000, 8}, {3001, 1}, {3000, 3}}) {
    worst = std::max(worst, check_solve<T>(n, nrhs));
  }
  MESSAGE("largest relative error " << worst);
}

TEST_CASE_TEMPLATE("gpu_solve_upper at the ends of the range: as reference TRSM", T, float, double) {
  // Pivots below the smallest normal number, whose reciprocals overflow or nearly, and pivots
  // whose reciprocals are subnormal: R(k, k) divides.
  const double lo = double(std::numeric_limits<T>::min()), hi = double(std::numeric_limits<T>::max());
  check_solve<T>(200, 2, lo / 2);
  check_solve<T>(200, 2, hi / 4);
  check_solve<T>(130, 3, 1, true);  // a zero pivot over a zero right-hand side entry
}

TEST_CASE("gpu_solve_upper: bad arguments named, nothing enqueued") {
  auto what = [](auto&& f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  double* d = nullptr;
  cuda_ok(cudaMalloc(&d, sizeof(double) * 256));
  const std::size_t lw = gpu_solve_upper_workspace(8);
  CHECK(what([&] { gpu_solve_upper<double>(-1, 1, d, 8, d, 8, d, lw, nullptr); }).find("n") != std::string::npos);
  CHECK(what([&] { gpu_solve_upper<double>(8, 9, d, 8, d, 8, d, lw, nullptr); }).find("nrhs") != std::string::npos);
  CHECK(what([&] { gpu_solve_upper<double>(8, 1, d, 7, d, 8, d, lw, nullptr); }).find("ldr") != std::string::npos);
  CHECK(what([&] { gpu_solve_upper<double>(8, 1, d, 8, d, 7, d, lw, nullptr); }).find("ldb") != std::string::npos);
  CHECK(what([&] { gpu_solve_upper<double>(8, 1, d, 8, d, 8, d, lw - 1, nullptr); }).find("lwork") !=
        std::string::npos);
  cuda_ok(cudaFree(d));
}

// ---- the timing program ----
// gpu_solve_upper against cuBLAS TRSM (and the diagonal's download the old path made first),
// device-resident, median of 9, microseconds; and the largest difference between the two solutions.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <tessera/kernels_gpu/gpu_solve_upper.hpp>
int main() {
  std::mt19937_64 g(3);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int n : {1000, 3000, 6000, 10000}) for (int nrhs : {1, 4, 8}) {
    std::vector<double> h((size_t)n * n), b((size_t)n * nrhs);
    for (int j = 0; j < n; ++j) for (int i = 0; i <= j; ++i) h[i + (size_t)j * n] = i == j ? 1.5 + 0.5 * u(g) : u(g) / std::sqrt(double(n));
    for (auto& x : b) x = u(g);
    double *R, *B, *B0; cudaMalloc(&R, h.size() * 8); cudaMalloc(&B, b.size() * 8); cudaMalloc(&B0, b.size() * 8);
    cudaMemcpy(R, h.data(), h.size() * 8, cudaMemcpyHostToDevice);
    cudaMemcpy(B0, b.data(), b.size() * 8, cudaMemcpyHostToDevice);
    cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cublasHandle_t hb; cublasCreate(&hb); cublasSetStream(hb, s);
    size_t lw = tessera::kernels::gpu_solve_upper_workspace(n); void* w; cudaMalloc(&w, lw);
    auto t = [] { return std::chrono::steady_clock::now(); };
    std::vector<double> tk, tc, x1(b.size()), x2(b.size()), d(n);
    for (int rep = 0; rep < 9; ++rep) {
      cudaMemcpyAsync(B, B0, b.size() * 8, cudaMemcpyDeviceToDevice, s); cudaStreamSynchronize(s);
      auto t0 = t();
      tessera::kernels::gpu_solve_upper(n, nrhs, R, n, B, n, w, lw, s); cudaStreamSynchronize(s);
      auto t1 = t();
      tk.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      cudaMemcpy(x1.data(), B, b.size() * 8, cudaMemcpyDeviceToHost);
      cudaMemcpyAsync(B, B0, b.size() * 8, cudaMemcpyDeviceToDevice, s); cudaStreamSynchronize(s);
      t0 = t();
      cudaMemcpy2DAsync(d.data(), 8, R, (size_t)(n + 1) * 8, 8, n, cudaMemcpyDefault, s); cudaStreamSynchronize(s);
      double one = 1; cublasDtrsm(hb, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, n, nrhs, &one, R, n, B, n);
      cudaStreamSynchronize(s);
      t1 = t();
      tc.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      cudaMemcpy(x2.data(), B, b.size() * 8, cudaMemcpyDeviceToHost);
    }
    std::sort(tk.begin(), tk.end()); std::sort(tc.begin(), tc.end());
    double dm = 0, xm = 0;
    for (size_t i = 0; i < x1.size(); ++i) dm = std::max(dm, std::abs(x1[i] - x2[i])), xm = std::max(xm, std::abs(x2[i]));
    printf("d n=%5d nrhs=%d  gpu_solve_upper %7.1f us   cuBLAS TRSM + diagonal %7.1f us  (%.2fx)  max|dx|/max|x| %.1e %s\n", n, nrhs, tk[4], tc[4], tc[4] / tk[4], dm / xm, cudaGetErrorString(cudaGetLastError()));
    cudaFree(R); cudaFree(B); cudaFree(B0); cudaFree(w); cublasDestroy(hb); cudaStreamDestroy(s);
  }
}
