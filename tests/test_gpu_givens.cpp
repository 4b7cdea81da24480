// The Givens sweeps of a strip on the GPU (tessera/kernels_gpu/gpu_givens.hpp) against the CPU
// forms (tessera/kernels_cpu/givens.hpp): the same triangular strip with exact zeros, the same
// rotations and the same blocks, up to rounding, for strips of one warp's systolic form
// (p <= 31: every register width), of the block-wide wavefront (p >= 32) and of the sweeps by
// scans (p <= 64, sweeps of at least 64 and 8 p rows), with ldx > L.
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
#include "tessera/kernels_cpu/givens.hpp"
#include "tessera/kernels_gpu/gpu_givens.hpp"

namespace {

using tessera::testing::gpu::cuda_ok;

template <class T>
double max_rel(const std::vector<T>& a, const std::vector<T>& b) {
  double d = 0, s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d = std::max(d, std::abs(double(a[i]) - double(b[i])));
    s = std::max(s, std::abs(double(b[i])));
  }
  return s > 0 ? d / s : d;
}

// The strip's entries are uniform in (-scale, scale); blocks of w rotations a sweep.
template <class T>
void check_plan(int L, int p, int base, double scale = 1, int w = 64) {
  CAPTURE(L);
  CAPTURE(p);
  CAPTURE(base);
  CAPTURE(scale);
  CAPTURE(w);
  std::uniform_real_distribution<double> u(-1, 1);
  tessera::kernels::givens_plan plan;
  plan.L = L;
  plan.p = p;
  plan.base = base;
  plan.w = w;
  const int ldx = L + 3;
  // The strip: column j nonzero down to row base + j, as the updates leave it; the rows past L
  // are padding the kernels must leave alone.
  std::vector<T> X(std::size_t(ldx) * p, T(0));
  for (int j = 0; j < p; ++j)
    for (int i = 0; i < ldx; ++i)
      X[i + std::size_t(j) * ldx] =
          i >= L ? T(-777.25) : i <= std::min(L - 1, base + j) ? T(u(tessera::testing::gpu::rng()) * scale) : T(0);
  std::vector<T> Xc = X, cs_c(plan.cs_size(), T(0));
  tessera::kernels::givens_generate(plan, Xc.data(), ldx, cs_c.data());
  std::vector<T> S_c(std::max<std::size_t>(plan.blocks_size(), 1));
  tessera::kernels::givens_blocks(plan, cs_c.data(), S_c.data(), 1);

  T *dX = nullptr, *dcs = nullptr, *dS = nullptr;
  cuda_ok(cudaMalloc(&dX, sizeof(T) * X.size()));
  cuda_ok(cudaMalloc(&dcs, sizeof(T) * std::max<std::size_t>(cs_c.size(), 1)));
  cuda_ok(cudaMalloc(&dS, sizeof(T) * S_c.size()));
  cuda_ok(cudaMemcpy(dX, X.data(), sizeof(T) * X.size(), cudaMemcpyHostToDevice));
  cuda_ok(cudaMemset(dcs, 0, sizeof(T) * std::max<std::size_t>(cs_c.size(), 1)));
  int* dsync = nullptr;
  const std::size_t nsync = tessera::kernels::gpu_givens_sync_count(plan);
  cuda_ok(cudaMalloc(&dsync, sizeof(int) * nsync));
  cuda_ok(cudaMemset(dsync, 0x7f, sizeof(int) * nsync));  // the call clears them itself
  tessera::kernels::gpu_givens_generate(plan, dX, ldx, dcs, dsync, nsync, nullptr);
  tessera::kernels::gpu_givens_blocks(plan, dcs, dS, nullptr);
  std::vector<T> Xg(X.size()), cs_g(cs_c.size()), S_g(S_c.size());
  cuda_ok(cudaMemcpy(Xg.data(), dX, sizeof(T) * X.size(), cudaMemcpyDeviceToHost));
  cuda_ok(cudaMemcpy(cs_g.data(), dcs, sizeof(T) * cs_g.size(), cudaMemcpyDeviceToHost));
  if (plan.blocks() > 0)
    cuda_ok(cudaMemcpy(S_g.data(), dS, sizeof(T) * S_g.size(), cudaMemcpyDeviceToHost));
  else
    S_g = S_c;
  cudaFree(dX);
  cudaFree(dcs);
  cudaFree(dS);
  cudaFree(dsync);

  // Exact zeros below the diagonal and untouched padding; the rest and the rotations as on the
  // CPUs up to rounding (the GPU may contract into FMAs).
  for (int j = 0; j < p; ++j)
    for (int i = j + 1; i < ldx; ++i) CHECK(Xg[i + std::size_t(j) * ldx] == Xc[i + std::size_t(j) * ldx]);
  // Subnormal entries carry fewer significant bits than epsilon says: the strip's precision
  // relative to its scale bounds the agreement (a seed with scale 1e-310 differed by 8.9e-12).
  const double prec = std::max(double(std::numeric_limits<T>::epsilon()), double(std::numeric_limits<T>::denorm_min()) / scale);
  const double tol = 100.0 * prec * (L + p);
  std::vector<T> Xg_in, Xc_in;  // the strip's L rows
  for (int j = 0; j < p; ++j)
    for (int i = 0; i < L; ++i) {
      Xg_in.push_back(Xg[i + std::size_t(j) * ldx]);
      Xc_in.push_back(Xc[i + std::size_t(j) * ldx]);
    }
  CHECK(max_rel(Xg_in, Xc_in) < tol);
  CHECK(max_rel(cs_g, cs_c) < tol);
  CHECK(max_rel(S_g, S_c) < tol);
}

}  // namespace

TEST_CASE("givens sweeps on the GPU: the strip, the rotations and the blocks as on the CPUs") {
  for (auto [L, p, base] :
       {std::tuple{1, 1, 0}, {2, 1, 1}, {10, 3, 7}, {40, 5, 35}, {40, 5, 10}, {33, 12, 21},
        {17, 17, 0}, {100, 30, 70}, {200, 7, 193}, {300, 20, 280}, {90, 31, 60}, {64, 31, 0},
        {500, 16, 480}, {50, 23, 60}, {70, 24, 40}, {120, 8, 115}, {130, 32, 100},
        {200, 40, 150}, {300, 64, 236},
        // Long sweeps (at least 64 and 8 p rows, p <= 64) go one at a time by scans over the rows:
        // these, except {2000, 31, 40} (sweeps of at most 71 rows), and above {120, 8, 115},
        // {200, 7, 193}, {300, 20, 280} and {500, 16, 480}; the rest take a wavefront.
        {256, 1, 255}, {257, 5, 100}, {1000, 1, 999}, {3016, 16, 3000}, {2000, 31, 40}, {4000, 32, 3968},
        {1500, 9, 1500}, {12020, 20, 12000}, {600, 40, 560}, {3000, 64, 2936}, {6050, 50, 6000}}) {
    check_plan<double>(L, p, base);
    check_plan<float>(L, p, base);
  }
}

// The blocks of the updates' other widths (128 for p <= 32 on the GPU, 32 beyond 128 sweeps), and
// blocks wider than a thread block (256 threads: a thread then takes several columns).
TEST_CASE("givens sweeps on the GPU: blocks of other widths as on the CPUs") {
  for (auto [L, p, base, w] : {std::tuple{300, 20, 280, 128}, {3016, 16, 3000, 128}, {1000, 1, 999, 128},
                               {200, 40, 150, 32}, {600, 64, 560, 32}, {1100, 5, 1096, 1050}}) {
    check_plan<double>(L, p, base, 1, w);
    check_plan<float>(L, p, base, 1, w);
  }
}

// On GPUs with less shared memory a block than the H100's (the A100's 163 KB, consumer GPUs'
// 99 KB), the forms that need more give way to ones that fit: the scans (110 KB in double) to the
// wavefronts, the blocks to global memory. Limits imposed here, the results as on the CPUs.
TEST_CASE("givens sweeps on the GPU: with less shared memory, the same results") {
  struct reset {
    ~reset() { tessera::kernels::detail::gpu_givens_limit_shared_memory(0); }
  } at_end;
  for (std::size_t kb : {99, 40, 4}) {
    CAPTURE(kb);
    tessera::kernels::detail::gpu_givens_limit_shared_memory(kb * 1024);
    CHECK(tessera::kernels::detail::gpu_givens_shared_memory("test") <= kb * 1024);
    for (auto [L, p, base, w] : {std::tuple{3000, 64, 2936, 64}, {600, 40, 560, 64}, {12020, 20, 12000, 128},
                                 {300, 20, 280, 128}, {200, 7, 193, 64}}) {
      check_plan<double>(L, p, base, 1, w);
      check_plan<float>(L, p, base, 1, w);
    }
  }
}

// In double the GPU makes its rotations with a reciprocal hypot, and with divisions where that
// would overflow or be subnormal: subnormal entries, and entries whose hypot passes 1 / (the
// smallest normal number), take the divisions; both paths agree with the CPUs' (a mutant that
// always took the reciprocal failed here with inf).
TEST_CASE("givens sweeps on the GPU: entries near underflow and overflow, as on the CPUs") {
  for (auto [L, p, base] :
       {std::tuple{2, 1, 1}, {3, 2, 2}, {40, 5, 35}, {90, 31, 60}, {200, 40, 150}, {600, 7, 590}, {700, 32, 100}}) {
    check_plan<double>(L, p, base, 1e-310);
    check_plan<float>(L, p, base, 1e-40);
    check_plan<double>(L, p, base, 1e-300);
    check_plan<float>(L, p, base, 1e-30);
  }
  for (auto [L, p, base] : {std::tuple{2, 1, 1}, {3, 2, 2}, {3, 1, 2}}) {
    check_plan<double>(L, p, base, 1e308);
    check_plan<float>(L, p, base, 1e38);
  }
  // Long strips whose squares overflow (the scans scale each column by a power of two first) but
  // whose norms do not.
  for (auto [L, p, base] : {std::tuple{300, 1, 299}, {400, 3, 398}, {1000, 20, 990}}) {
    check_plan<double>(L, p, base, 1e305);
    check_plan<float>(L, p, base, 1e36);
  }
}

// The sweeps' tickets and flags are the caller's device ints: too few is refused by name before
// anything runs (the strip untouched).
TEST_CASE("givens sweeps on the GPU: too few sync ints named") {
  tessera::kernels::givens_plan plan;
  plan.L = 600;
  plan.p = 8;
  plan.base = 590;
  double *dX = nullptr, *dcs = nullptr;
  int* dsync = nullptr;
  cuda_ok(cudaMalloc(&dX, sizeof(double) * 600 * 8));
  cuda_ok(cudaMalloc(&dcs, sizeof(double) * plan.cs_size()));
  cuda_ok(cudaMalloc(&dsync, sizeof(int) * 8));
  std::vector<double> X(600 * 8);
  std::uniform_real_distribution<double> u(-1, 1);
  for (auto& x : X) x = u(tessera::testing::gpu::rng());  // sweeps would zero most of it
  cuda_ok(cudaMemcpy(dX, X.data(), sizeof(double) * X.size(), cudaMemcpyHostToDevice));
  std::string what;
  try {
    tessera::kernels::gpu_givens_generate(plan, dX, 600, dcs, dsync, 8, nullptr);
  } catch (const std::invalid_argument& e) {
    what = e.what();
  }
  CHECK(what.find("nsync") != std::string::npos);
  cuda_ok(cudaDeviceSynchronize());
  std::vector<double> after(X.size());
  cuda_ok(cudaMemcpy(after.data(), dX, sizeof(double) * X.size(), cudaMemcpyDeviceToHost));
  CHECK(after == X);
  cudaFree(dX);
  cudaFree(dcs);
  cudaFree(dsync);
}
