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
#include "tessera/kernels_cpu/rotations.hpp"
#include "tessera/kernels_gpu/gpu_givens.hpp"
#include "tessera/kernels_gpu/gpu_rotations.hpp"

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

// The Hessenberg sweep on the GPU against the CPUs' on the same H (rows x cols, diagonal
// dominant, entries scaled by `scale`), and the rotations from the left and the right with the
// CPUs' rotations.
template <class T>
void check_hessenberg(int rows, int cols, double scale = 1) {
  CAPTURE(rows);
  CAPTURE(cols);
  CAPTURE(scale);
  std::uniform_real_distribution<double> u(-1, 1);
  const int ld = rows + 3, k = std::min(cols, rows - 1), nq = 37;
  std::vector<T> H(std::size_t(ld) * cols, T(-777.25));  // rows past `rows`: padding left alone
  for (int j = 0; j < cols; ++j)
    for (int i = 0; i < rows; ++i)
      H[i + std::size_t(j) * ld] = i <= j + 1 ? T((u(tessera::testing::gpu::rng()) + (i == j ? 4 : 0)) * scale) : T(0);
  std::vector<T> Hc = H, cs_c(2 * std::size_t(std::max(k, 1)), T(0));
  tessera::kernels::hessenberg_rotations(rows, cols, Hc.data(), ld, cs_c.data());
  // C: nq x (k + 1) from the right, and its transpose's (k + 1) x nq from the left.
  std::vector<T> C(std::size_t(nq) * (k + 1)), Ct(std::size_t(k + 1) * nq);
  for (int j = 0; j <= k; ++j)
    for (int i = 0; i < nq; ++i) C[i + std::size_t(j) * nq] = Ct[j + std::size_t(i) * (k + 1)] = T(u(tessera::testing::gpu::rng()));
  std::vector<T> Cc = C, Ctc = Ct;
  tessera::kernels::rotations_right(nq, k, cs_c.data(), Cc.data(), nq);
  tessera::kernels::rotations_left(k, nq, cs_c.data(), Ctc.data(), k + 1);

  T *dH = nullptr, *dcs = nullptr, *dC = nullptr, *dCt = nullptr;
  cuda_ok(cudaMalloc(&dH, sizeof(T) * H.size()));
  cuda_ok(cudaMalloc(&dcs, sizeof(T) * cs_c.size()));
  cuda_ok(cudaMalloc(&dC, sizeof(T) * C.size()));
  cuda_ok(cudaMalloc(&dCt, sizeof(T) * Ct.size()));
  cuda_ok(cudaMemcpy(dH, H.data(), sizeof(T) * H.size(), cudaMemcpyHostToDevice));
  cuda_ok(cudaMemset(dcs, 0, sizeof(T) * cs_c.size()));
  cuda_ok(cudaMemcpy(dC, C.data(), sizeof(T) * C.size(), cudaMemcpyHostToDevice));
  cuda_ok(cudaMemcpy(dCt, Ct.data(), sizeof(T) * Ct.size(), cudaMemcpyHostToDevice));
  int* dsync = nullptr;
  cuda_ok(cudaMalloc(&dsync, sizeof(int)));
  cuda_ok(cudaMemset(dsync, 0x7f, sizeof(int)));  // the call clears it itself
  tessera::kernels::gpu_hessenberg_rotations(rows, cols, dH, ld, dcs, dsync, nullptr);
  std::vector<T> Hg(H.size()), cs_g(cs_c.size()), Cg(C.size()), Ctg(Ct.size());
  cuda_ok(cudaMemcpy(Hg.data(), dH, sizeof(T) * H.size(), cudaMemcpyDeviceToHost));
  cuda_ok(cudaMemcpy(cs_g.data(), dcs, sizeof(T) * cs_g.size(), cudaMemcpyDeviceToHost));
  // The applies with the CPUs' rotations, so that they are checked apart from the sweep.
  cuda_ok(cudaMemcpy(dcs, cs_c.data(), sizeof(T) * cs_c.size(), cudaMemcpyHostToDevice));
  tessera::kernels::gpu_rotations_right(nq, k, dcs, dC, nq, nullptr);
  tessera::kernels::gpu_rotations_left(k, nq, dcs, dCt, k + 1, nullptr);
  cuda_ok(cudaMemcpy(Cg.data(), dC, sizeof(T) * C.size(), cudaMemcpyDeviceToHost));
  cuda_ok(cudaMemcpy(Ctg.data(), dCt, sizeof(T) * Ct.size(), cudaMemcpyDeviceToHost));
  cudaFree(dH);
  cudaFree(dsync);
  cudaFree(dcs);
  cudaFree(dC);
  cudaFree(dCt);
  // Subnormal entries carry fewer bits than epsilon says (check_plan).
  const double prec = std::max(double(std::numeric_limits<T>::epsilon()), double(std::numeric_limits<T>::denorm_min()) / scale);
  const double tol = 100.0 * prec * (rows + cols);
  CHECK(max_rel(Cg, Cc) < tol);
  CHECK(max_rel(Ctg, Ctc) < tol);
  // Exact zeros below the diagonal and untouched padding; R and the rotations as on the CPUs up
  // to rounding.
  for (int j = 0; j < cols; ++j)
    for (int i = j + 1; i < ld; ++i) CHECK(Hg[i + std::size_t(j) * ld] == Hc[i + std::size_t(j) * ld]);
  CHECK(max_rel(Hg, Hc) < tol);
  CHECK(max_rel(cs_g, cs_c) < tol);
}

}  // namespace

TEST_CASE("hessenberg sweep on the GPU: R, the rotations and their applies as on the CPUs") {
  // One warp and several, the last one part full; more rows than columns, as many, fewer.
  for (auto [rows, cols] : {std::tuple{1, 1}, {2, 1}, {1, 3}, {2, 2}, {7, 5}, {5, 9}, {33, 32}, {65, 64}, {130, 129},
                            {1100, 1100}, {3001, 3000}, {2000, 2600}, {700, 300}}) {
    check_hessenberg<double>(rows, cols);
    check_hessenberg<float>(rows, cols);
  }
  // Subnormal entries take make_rotation's divisions in double; large ones its reciprocal.
  for (double scale : {1e-310, 1e300}) check_hessenberg<double>(600, 600, scale);
}

// A sweep made from the bottom up (one Givens sweep of a strip, p = 1) as line sweeps: the GPU's
// from the left and the right against the CPUs', random rotations.
template <class T>
void check_sweep_up(int k, int n) {
  CAPTURE(k);
  CAPTURE(n);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> cs(2 * std::size_t(k + 1));
  for (int i = 0; i <= k; ++i) {
    const double a = u(tessera::testing::gpu::rng()), b = u(tessera::testing::gpu::rng()), r = std::hypot(a, b);
    cs[2 * i] = T(a / r);
    cs[2 * i + 1] = T(b / r);
  }
  const int ldl = k + 3;  // from the left: k + 1 rows of n columns, padding below left alone
  std::vector<T> L(std::size_t(ldl) * n), R(std::size_t(n) * (k + 1));
  for (auto& x : L) x = T(u(tessera::testing::gpu::rng()));
  for (auto& x : R) x = T(u(tessera::testing::gpu::rng()));
  std::vector<T> Lc = L, Rc = R, Lg(L.size()), Rg(R.size());
  tessera::kernels::sweep_up_left(k, n, cs.data(), Lc.data(), ldl);
  tessera::kernels::sweep_up_right(n, k, cs.data(), Rc.data(), n);
  T *dcs = nullptr, *dL = nullptr, *dR = nullptr;
  cuda_ok(cudaMalloc(&dcs, sizeof(T) * cs.size()));
  cuda_ok(cudaMalloc(&dL, sizeof(T) * L.size()));
  cuda_ok(cudaMalloc(&dR, sizeof(T) * R.size()));
  cuda_ok(cudaMemcpy(dcs, cs.data(), sizeof(T) * cs.size(), cudaMemcpyHostToDevice));
  cuda_ok(cudaMemcpy(dL, L.data(), sizeof(T) * L.size(), cudaMemcpyHostToDevice));
  cuda_ok(cudaMemcpy(dR, R.data(), sizeof(T) * R.size(), cudaMemcpyHostToDevice));
  tessera::kernels::gpu_sweep_up_left(k, n, dcs, dL, ldl, nullptr);
  tessera::kernels::gpu_sweep_up_right(n, k, dcs, dR, n, nullptr);
  cuda_ok(cudaMemcpy(Lg.data(), dL, sizeof(T) * L.size(), cudaMemcpyDeviceToHost));
  cuda_ok(cudaMemcpy(Rg.data(), dR, sizeof(T) * R.size(), cudaMemcpyDeviceToHost));
  cudaFree(dcs);
  cudaFree(dL);
  cudaFree(dR);
  const double tol = 100.0 * double(std::numeric_limits<T>::epsilon()) * (k + 1);
  CHECK(max_rel(Lg, Lc) < tol);
  CHECK(max_rel(Rg, Rc) < tol);
  for (int c = 0; c < n; ++c)
    for (int i = k + 1; i < ldl; ++i) CHECK(Lg[i + std::size_t(c) * ldl] == L[i + std::size_t(c) * ldl]);
}

TEST_CASE("a sweep from the bottom up on the GPU: from the left and the right as on the CPUs") {
  for (auto [k, n] : {std::tuple{1, 1}, {1, 70}, {7, 3}, {8, 65}, {9, 130}, {3000, 37}, {2999, 3001}}) {
    check_sweep_up<double>(k, n);
    check_sweep_up<float>(k, n);
  }
}

TEST_CASE("hessenberg sweep on the GPU: bad arguments named, nothing enqueued") {
  auto what = [](auto&& f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  double *dH = nullptr, *dcs = nullptr;
  int* dsync = nullptr;
  cuda_ok(cudaMalloc(&dH, sizeof(double) * 100));
  cuda_ok(cudaMalloc(&dcs, sizeof(double) * 20));
  cuda_ok(cudaMalloc(&dsync, sizeof(int)));
  using tessera::kernels::gpu_hessenberg_rotations;
  CHECK(what([&] { gpu_hessenberg_rotations(-1, 5, dH, 10, dcs, dsync, nullptr); }).find("rows") != std::string::npos);
  CHECK(what([&] { gpu_hessenberg_rotations(10, 5, dH, 9, dcs, dsync, nullptr); }).find("ldh") != std::string::npos);
  CHECK(what([&] { gpu_hessenberg_rotations(10, 5, dH, 10, dcs, static_cast<int*>(nullptr), nullptr); }).find("sync") !=
        std::string::npos);
  CHECK(what([&] { tessera::kernels::gpu_rotations_right(10, 5, dcs, dH, 9, nullptr); }).find("ldc") != std::string::npos);
  CHECK(what([&] { tessera::kernels::gpu_rotations_left(9, 2, dcs, dH, 9, nullptr); }).find("ldc") != std::string::npos);
  CHECK(what([&] { tessera::kernels::gpu_sweep_up_left(9, 2, dcs, dH, 9, nullptr); }).find("ldc") != std::string::npos);
  CHECK(what([&] { tessera::kernels::gpu_sweep_up_right(-1, 2, dcs, dH, 9, nullptr); }).find("nrows") != std::string::npos);
  cudaFree(dH);
  cudaFree(dcs);
  cudaFree(dsync);
}

// The warps wait for each rotation's value itself: a NaN or Inf among them must not look unset.
TEST_CASE("hessenberg sweep on the GPU: NaN and Inf entries end the sweep, as on the CPUs") {
  for (double bad : {std::nan(""), 1.0 / 0.0}) {
    CAPTURE(bad);
    const int n = 300;
    std::vector<double> H(std::size_t(n) * n, 0.0);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i <= std::min(j + 1, n - 1); ++i) H[i + std::size_t(j) * n] = 1.0 + (i == j ? 4 : 0);
    H[0] = bad;
    std::vector<double> Hc = H, cs_c(2 * (n - 1));
    tessera::kernels::hessenberg_rotations(n, n, Hc.data(), n, cs_c.data());
    double *dH = nullptr, *dcs = nullptr;
    int* dsync = nullptr;
    cuda_ok(cudaMalloc(&dH, sizeof(double) * H.size()));
    cuda_ok(cudaMalloc(&dcs, sizeof(double) * cs_c.size()));
    cuda_ok(cudaMalloc(&dsync, sizeof(int)));
    cuda_ok(cudaMemcpy(dH, H.data(), sizeof(double) * H.size(), cudaMemcpyHostToDevice));
    tessera::kernels::gpu_hessenberg_rotations(n, n, dH, n, dcs, dsync, nullptr);
    std::vector<double> Hg(H.size());
    cuda_ok(cudaMemcpy(Hg.data(), dH, sizeof(double) * H.size(), cudaMemcpyDeviceToHost));
    cudaFree(dH);
    cudaFree(dcs);
    cudaFree(dsync);
    // Non-finite where the CPUs' is (the last column's last entry included), exact zeros below.
    for (std::size_t i = 0; i < H.size(); ++i) CHECK(std::isfinite(Hg[i]) == std::isfinite(Hc[i]));
    CHECK(!std::isfinite(Hg.back()));
  }
}

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
// 99 KB), the forms that need more give way to ones that fit: the scans work on the column in
// place instead of in shared memory (24 KB for 3000 rows in double), the wavefront and the blocks
// in global memory. Limits imposed here, the results as on the CPUs.
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

namespace {

// Whether a call throws std::invalid_argument naming `name`.
template <class F>
bool refused_naming(F&& call, const char* name) {
  try {
    call();
  } catch (const std::invalid_argument& e) {
    return std::string(e.what()).find(name) != std::string::npos;
  }
  return false;
}

// A 400 x 400 matrix of zeros in device memory, for calls refused before they touch it.
struct zero_matrix {
  static constexpr std::size_t count = 400 * 400;
  double* d = nullptr;
  zero_matrix() {
    cuda_ok(cudaMalloc(&d, sizeof(double) * count));
    cuda_ok(cudaMemset(d, 0, sizeof(double) * count));
  }
  ~zero_matrix() { cudaFree(d); }
  bool untouched() const {
    cuda_ok(cudaDeviceSynchronize());
    std::vector<double> after(count, 1.0);
    cuda_ok(cudaMemcpy(after.data(), d, sizeof(double) * count, cudaMemcpyDeviceToHost));
    return std::all_of(after.begin(), after.end(), [](double x) { return x == 0.0; });
  }
};

// gpu_givens_apply (the rotations themselves, block by block; blocks = false) or
// gpu_givens_blocks_apply (the blocks S_t in one kernel; blocks = true) against the blocks S_t
// applied one by one on the host as the updates' GEMMs do: the CPUs' sweeps of a random strip applied from the
// left to a random matrix's rows from roff, columns [jbeg, jend) cut at row + cshift; every entry
// outside what a block touches stays as it was, bit for bit. The reference accumulates in double:
// in double its rounding is the kernel's order of size.
template <class T>
void check_apply(int L, int p, int base, int w, int roff, int jbeg, int jend, int cshift, bool blocks = false) {
  CAPTURE(blocks);
  CAPTURE(L);
  CAPTURE(p);
  CAPTURE(base);
  CAPTURE(w);
  CAPTURE(roff);
  CAPTURE(jbeg);
  CAPTURE(jend);
  CAPTURE(cshift);
  std::uniform_real_distribution<double> u(-1, 1);
  auto& gen = tessera::testing::gpu::rng();
  tessera::kernels::givens_plan plan;
  plan.L = L;
  plan.p = p;
  plan.base = base;
  plan.w = w;
  std::vector<T> X(std::size_t(L) * p, T(0)), cs(plan.cs_size(), T(0));
  for (int j = 0; j < p; ++j)
    for (int i = 0; i <= std::min(L - 1, base + j); ++i) X[i + std::size_t(j) * L] = T(u(gen));
  tessera::kernels::givens_generate(plan, X.data(), L, cs.data());
  std::vector<T> S(std::max<std::size_t>(plan.blocks_size(), 1));
  tessera::kernels::givens_blocks(plan, cs.data(), S.data(), 1);
  // M: rows x cols, ld = rows + 2 (padding checked too).
  const int rows = roff + L + 3, cols = jend + 4, ld = rows + 2;
  std::vector<T> M(std::size_t(ld) * cols);
  for (auto& x : M) x = T(u(gen));
  std::vector<T> ref = M;
  std::vector<char> touched(M.size(), 0);
  const int bw = plan.bw();
  for (int t = 0; t < plan.blocks(); ++t) {
    const int g = roff + plan.row0(t), rt = plan.rows(t);
    const T* St = S.data() + std::size_t(t) * bw * bw;
    for (int j = std::max(jbeg, g + cshift); j < jend; ++j) {
      T* col = ref.data() + g + std::size_t(j) * ld;
      std::vector<double> y(rt, 0.0);
      for (int i = 0; i < rt; ++i)
        for (int k = 0; k < rt; ++k) y[i] += double(St[k + std::size_t(i) * bw]) * double(col[k]);
      for (int i = 0; i < rt; ++i) {
        col[i] = T(y[i]);
        touched[g + i + std::size_t(j) * ld] = 1;
      }
    }
  }
  const std::vector<T>& in = blocks ? S : cs;  // the kernel's rotations or blocks
  T *din = nullptr, *dM = nullptr;
  cuda_ok(cudaMalloc(&din, sizeof(T) * std::max<std::size_t>(in.size(), 1)));
  cuda_ok(cudaMalloc(&dM, sizeof(T) * M.size()));
  cuda_ok(cudaMemcpy(din, in.data(), sizeof(T) * in.size(), cudaMemcpyHostToDevice));
  cuda_ok(cudaMemcpy(dM, M.data(), sizeof(T) * M.size(), cudaMemcpyHostToDevice));
  if (blocks) tessera::kernels::gpu_givens_blocks_apply(plan, din, dM, ld, roff, jbeg, jend, cshift, nullptr);
  else tessera::kernels::gpu_givens_apply(plan, din, dM, ld, roff, jbeg, jend, cshift, nullptr);
  cuda_ok(cudaGetLastError());
  std::vector<T> got(M.size());
  cuda_ok(cudaMemcpy(got.data(), dM, sizeof(T) * M.size(), cudaMemcpyDeviceToHost));
  cudaFree(din);
  cudaFree(dM);
  // Entries no block touches: bit for bit; the rest within rounding of the products (a block's
  // entries are sums of rt products of numbers below 1 in magnitude, blocks applied in turn).
  const double tol = 50.0 * double(std::numeric_limits<T>::epsilon()) * (bw + plan.blocks());
  double err = 0;
  bool untouched_same = true;
  for (std::size_t e = 0; e < M.size(); ++e) {
    if (touched[e]) err = std::max(err, std::abs(double(got[e]) - double(ref[e])));
    else untouched_same = untouched_same && got[e] == M[e];
  }
  CHECK(untouched_same);
  CHECK(err < tol);
}

}  // namespace

// The updates' plans: rank 16 and 32 (w 128) blocks of about 3000 rows, rank 64's (w 64), deletions'
// short strips, one block narrower than w (bw = L), sweeps fewer and more than the kernel's 16
// warps; R's columns cut where its rows start (cshift) and not; Q^T b's single column.
TEST_CASE("givens blocks applied on the GPU in one call: as the blocks one by one") {
  for (auto [L, p, base, w] : {std::tuple{3016, 16, 3000, 128}, {3064, 64, 3000, 64}, {300, 20, 280, 128},
                               {90, 31, 60, 64}, {40, 5, 35, 64}, {2, 1, 1, 64}, {600, 64, 560, 64},
                               {1100, 32, 1068, 128}, {200, 40, 150, 64}, {200, 40, 150, 32}, {500, 17, 483, 64}}) {
    for (int roff : {0, 37}) {
      // 300 columns at most: all but the last blocks of the long strips cut them from the left
      const int cols = L + roff + 20, few = std::min(cols, 300), cut = std::max(3, cols - 300);
      check_apply<double>(L, p, base, w, roff, 0, few, -(1 << 30));
      check_apply<float>(L, p, base, w, roff, 0, few, -(1 << 30));
      check_apply<double>(L, p, base, w, roff, cut, cols, -p + 1);  // R's rows: zeros left of row - p + 1
      check_apply<float>(L, p, base, w, roff, cut, cols, -p + 1);
      check_apply<double>(L, p, base, w, roff, 0, 1, -(1 << 30));  // Q^T b's one column
      check_apply<float>(L, p, base, w, roff, 5, 6, -(1 << 30));
    }
  }
}

// The plans beyond gpu_givens_apply's groups of 32 sweeps (rank 33-64 and the groups of wider ones,
// deleting rows, adding columns: w 64 or 32, bw <= 128), blocks whose rows are not a multiple of
// four or of a warp's 16, one block narrower than w; columns cut where R's rows start and not,
// widths not a multiple of the kernel's 32, Q^T b's single column.
TEST_CASE("givens blocks applied on the GPU by one kernel of the blocks: as the blocks one by one") {
  for (auto [L, p, base, w] : {std::tuple{3064, 64, 3000, 64}, {600, 64, 560, 64}, {200, 40, 150, 64},
                               {200, 40, 150, 32}, {90, 31, 60, 64}, {40, 5, 35, 64}, {2, 1, 1, 64},
                               {500, 17, 483, 64}, {1133, 33, 1100, 64}, {700, 64, 0, 64}, {130, 50, 81, 77}}) {
    tessera::kernels::givens_plan plan;
    plan.L = L;
    plan.p = p;
    plan.base = base;
    plan.w = w;
    REQUIRE(tessera::kernels::gpu_givens_blocks_apply_fits<double>(plan));
    for (int roff : {0, 37}) {
      const int cols = L + roff + 20, few = std::min(cols, 300), cut = std::max(3, cols - 300);
      check_apply<double>(L, p, base, w, roff, 0, few, -(1 << 30), true);
      check_apply<float>(L, p, base, w, roff, 0, few, -(1 << 30), true);
      check_apply<double>(L, p, base, w, roff, cut, cols, -p + 1, true);
      check_apply<float>(L, p, base, w, roff, cut, cols, -p + 1, true);
      check_apply<double>(L, p, base, w, roff, 0, 1, -(1 << 30), true);
      check_apply<float>(L, p, base, w, roff, 5, 6, -(1 << 30), true);
    }
  }
}

TEST_CASE("givens blocks applied on the GPU by one kernel of the blocks: bad arguments named, the matrix untouched") {
  tessera::kernels::givens_plan plan;
  plan.L = 300;
  plan.p = 40;
  plan.base = 260;
  plan.w = 64;
  zero_matrix zm;
  double* dM = zm.d;
  const double* S = dM;  // never read: the checks come first
  using tessera::kernels::gpu_givens_blocks_apply;
  CHECK(refused_naming([&] { gpu_givens_blocks_apply(plan, S, dM, 299, 0, 0, 10, 0, nullptr); }, "ldm"));
  CHECK(refused_naming([&] { gpu_givens_blocks_apply(plan, S, dM, 400, -1, 0, 10, 0, nullptr); }, "roff"));
  CHECK(refused_naming([&] { gpu_givens_blocks_apply(plan, S, dM, 400, 0, -2, 10, 0, nullptr); }, "jbeg"));
  const double* none = nullptr;
  CHECK(refused_naming([&] { gpu_givens_blocks_apply(plan, none, dM, 400, 0, 0, 10, 0, nullptr); }, "S is null"));
  CHECK(tessera::kernels::gpu_givens_blocks_apply_fits<double>(plan));
  plan.w = 100;  // bw = 140 > gpu_givens_blocks_apply_max_bw
  CHECK_FALSE(tessera::kernels::gpu_givens_blocks_apply_fits<double>(plan));
  CHECK(refused_naming([&] { gpu_givens_blocks_apply(plan, S, dM, 400, 0, 0, 10, 0, nullptr); }, "bw"));
  CHECK(zm.untouched());
}

TEST_CASE("givens blocks applied on the GPU in one call: bad arguments named, the matrix untouched") {
  tessera::kernels::givens_plan plan;
  plan.L = 300;
  plan.p = 20;
  plan.base = 280;
  plan.w = 128;
  zero_matrix zm;
  double* dM = zm.d;
  const double* cs = dM;  // never read: the checks come first
  using tessera::kernels::gpu_givens_apply;
  CHECK(refused_naming([&] { gpu_givens_apply(plan, cs, dM, 299, 0, 0, 10, 0, nullptr); }, "ldm"));
  CHECK(refused_naming([&] { gpu_givens_apply(plan, cs, dM, 400, -1, 0, 10, 0, nullptr); }, "roff"));
  CHECK(refused_naming([&] { gpu_givens_apply(plan, cs, dM, 400, 0, -2, 10, 0, nullptr); }, "jbeg"));
  const double* none = nullptr;
  CHECK(refused_naming([&] { gpu_givens_apply(plan, none, dM, 400, 0, 0, 10, 0, nullptr); }, "cs is null"));
  CHECK(tessera::kernels::gpu_givens_apply_fits<double>(plan));
  plan.w = 200;  // bw = 220 > gpu_givens_apply_max_bw
  CHECK_FALSE(tessera::kernels::gpu_givens_apply_fits<double>(plan));
  CHECK(refused_naming([&] { gpu_givens_apply(plan, cs, dM, 400, 0, 0, 10, 0, nullptr); }, "bw"));
  plan.w = 150;  // bw = 170, but w > gpu_givens_apply_max_w (a warp's rotations a step would pass kmax)
  CHECK_FALSE(tessera::kernels::gpu_givens_apply_fits<double>(plan));
  CHECK(refused_naming([&] { gpu_givens_apply(plan, cs, dM, 400, 0, 0, 10, 0, nullptr); }, "plan.w"));
  {  // a device with less shared memory than the plan needs (39 KB for its rows, 40 KB for its rotations)
    struct reset {
      ~reset() { tessera::kernels::detail::gpu_givens_limit_shared_memory(0); }
    } at_end;
    plan.w = 128;
    tessera::kernels::detail::gpu_givens_limit_shared_memory(40 * 1024);
    CHECK_FALSE(tessera::kernels::gpu_givens_apply_fits<double>(plan));
    CHECK(refused_naming([&] { gpu_givens_apply(plan, cs, dM, 400, 0, 0, 10, 0, nullptr); }, "shared memory"));
  }
  CHECK(zm.untouched());
}
