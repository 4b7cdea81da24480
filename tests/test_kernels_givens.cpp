// The Givens sweeps of a strip (tessera/kernels_cpu/givens.hpp): the strip comes out upper
// triangular with exact zeros, and the rotations gathered into blocks do to a matrix what the
// rotations one by one in the sweeps' order do, for strips of every shape the updates make.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <random>
#include <vector>

#include "tessera/kernels_cpu/givens.hpp"
#include "tessera/kernels_cpu/rotations.hpp"
#include "test_util.hpp"

namespace {

template <class T>
void check_plan(int L, int p, int base, int w, int ncols) {
  CAPTURE(L);
  CAPTURE(p);
  CAPTURE(base);
  CAPTURE(w);
  std::mt19937_64 g(tessera::testing::seed() + std::uint64_t(L * 7919 + p * 31 + base));
  std::uniform_real_distribution<double> u(-1, 1);
  tessera::kernels::givens_plan plan;
  plan.L = L;
  plan.p = p;
  plan.base = base;
  plan.w = w;
  // The strip: column j nonzero down to row base + j, as the updates leave it.
  std::vector<T> X(std::size_t(L) * p, T(0));
  for (int j = 0; j < p; ++j)
    for (int i = 0; i <= std::min(L - 1, base + j); ++i) X[i + std::size_t(j) * L] = T(u(g));
  const std::vector<T> X0 = X;
  std::vector<T> cs(plan.cs_size());
  tessera::kernels::givens_generate(plan, X.data(), L, cs.data());
  // Upper triangular with exact zeros; column norms kept.
  for (int j = 0; j < p; ++j) {
    double n0 = 0, n1 = 0;
    for (int i = 0; i < L; ++i) {
      if (i > j) CHECK(X[i + std::size_t(j) * L] == T(0));
      n0 += double(X0[i + std::size_t(j) * L]) * X0[i + std::size_t(j) * L];
      n1 += double(X[i + std::size_t(j) * L]) * X[i + std::size_t(j) * L];
    }
    CHECK(std::abs(std::sqrt(n1) - std::sqrt(n0)) <= 50.0 * double(std::numeric_limits<T>::epsilon()) * std::sqrt(n0) * L);
  }
  // A matrix M (L x ncols): rotations one at a time against the blocks.
  std::vector<T> M(std::size_t(L) * ncols);
  for (auto& x : M) x = T(u(g));
  std::vector<T> A = M, B = M;
  for (int j = 0; j < p; ++j)
    for (int i = std::min(L - 1, base + j); i > j; --i) {
      const T c = cs[2 * (std::size_t(j) * L + i)], s = cs[2 * (std::size_t(j) * L + i) + 1];
      for (int k = 0; k < ncols; ++k) {
        T& a = A[i - 1 + std::size_t(k) * L];
        T& b = A[i + std::size_t(k) * L];
        const T x = a, y = b;
        a = c * x + s * y;
        b = -s * x + c * y;
      }
    }
  if (p == 1) {
    // The single sweep as line sweeps: from the left on M, from the right on M^T.
    const int top = plan.umax(0);
    std::vector<T> Ml = M, Mt(std::size_t(ncols) * L);
    for (int k = 0; k < ncols; ++k)
      for (int i = 0; i < L; ++i) Mt[k + std::size_t(i) * ncols] = M[i + std::size_t(k) * L];
    tessera::kernels::sweep_up_left(top, ncols, cs.data(), Ml.data(), L);
    tessera::kernels::sweep_up_right(ncols, top, cs.data(), Mt.data(), ncols);
    double dl = 0, dr = 0, sa = 0;
    for (int k = 0; k < ncols; ++k)
      for (int i = 0; i < L; ++i) {
        const double a = A[i + std::size_t(k) * L];
        dl = std::max(dl, std::abs(a - Ml[i + std::size_t(k) * L]));
        dr = std::max(dr, std::abs(a - Mt[k + std::size_t(i) * ncols]));
        sa = std::max(sa, std::abs(a));
      }
    CHECK(dl <= 4 * double(std::numeric_limits<T>::epsilon()) * sa);  // the same operations, in order
    CHECK(dr <= 4 * double(std::numeric_limits<T>::epsilon()) * sa);
  }
  std::vector<T> S(std::max<std::size_t>(plan.blocks_size(), 1));
  tessera::kernels::givens_blocks(plan, cs.data(), S.data(), 2);
  const int bw = plan.bw();
  for (int t = 0; t < plan.blocks(); ++t) {
    const int r0 = plan.row0(t), rt = plan.rows(t);
    const T* St = S.data() + std::size_t(t) * bw * bw;
    std::vector<T> tmp(std::size_t(rt) * ncols, T(0));
    for (int k = 0; k < ncols; ++k)
      for (int r = 0; r < rt; ++r) {
        double acc = 0;
        for (int q = 0; q < rt; ++q) acc += double(St[q + std::size_t(r) * bw]) * B[r0 + q + std::size_t(k) * L];
        tmp[r + std::size_t(k) * rt] = T(acc);
      }
    for (int k = 0; k < ncols; ++k)
      for (int r = 0; r < rt; ++r) B[r0 + r + std::size_t(k) * L] = tmp[r + std::size_t(k) * rt];
  }
  double d = 0, s = 0;
  for (std::size_t i = 0; i < A.size(); ++i) {
    d += (double(A[i]) - B[i]) * (double(A[i]) - B[i]);
    s += double(A[i]) * A[i];
  }
  CHECK(std::sqrt(d / s) < 100.0 * double(std::numeric_limits<T>::epsilon()) * (p + w));
}

// An upper Hessenberg H (rows x cols, random, diagonal dominant so that R is well determined):
// the sweep leaves R upper triangular with exact zeros, Q = G^T (the rotations from the right on
// the identity) is orthogonal with Q R = H, and the rotations from the left give Q^T C.
template <class T>
void check_hessenberg(int rows, int cols) {
  CAPTURE(rows);
  CAPTURE(cols);
  std::mt19937_64 g(tessera::testing::seed() + std::uint64_t(rows * 7919 + cols));
  std::uniform_real_distribution<double> u(-1, 1);
  const int ld = rows + 2, k = std::min(cols, rows - 1);
  std::vector<T> H(std::size_t(ld) * cols, T(0));
  for (int j = 0; j < cols; ++j)
    for (int i = 0; i <= std::min(j + 1, rows - 1); ++i) H[i + std::size_t(j) * ld] = T(u(g) + (i == j ? 4 : 0));
  const std::vector<T> H0 = H;
  std::vector<T> cs(2 * std::size_t(std::max(k, 1)), T(-5));
  tessera::kernels::hessenberg_rotations(rows, cols, H.data(), ld, cs.data());
  for (int j = 0; j < cols; ++j)
    for (int i = j + 1; i < ld; ++i) CHECK(H[i + std::size_t(j) * ld] == H0[i + std::size_t(j) * ld] * T(i >= rows));
  std::vector<T> Q(std::size_t(rows) * rows, T(0));
  for (int i = 0; i < rows; ++i) Q[i + std::size_t(i) * rows] = T(1);
  tessera::kernels::rotations_right(rows, k, cs.data(), Q.data(), rows);
  const double eps = double(std::numeric_limits<T>::epsilon());
  double res = 0, nh = 0, orth = 0;
  for (int j = 0; j < cols; ++j)
    for (int i = 0; i < rows; ++i) {
      double qr = 0;
      for (int l = 0; l <= std::min(j, rows - 1); ++l) qr += double(Q[i + std::size_t(l) * rows]) * H[l + std::size_t(j) * ld];
      res = std::max(res, std::abs(qr - H0[i + std::size_t(j) * ld]));
      nh = std::max(nh, std::abs(double(H0[i + std::size_t(j) * ld])));
    }
  for (int j = 0; j < rows; ++j)
    for (int i = 0; i < rows; ++i) {
      double qq = 0;
      for (int l = 0; l < rows; ++l) qq += double(Q[l + std::size_t(i) * rows]) * Q[l + std::size_t(j) * rows];
      orth = std::max(orth, std::abs(qq - (i == j ? 1.0 : 0.0)));
    }
  CHECK(res / (nh * rows * eps) < 60);
  CHECK(orth / (rows * eps) < 60);
  // Q^T C from the left, three columns.
  std::vector<T> C(std::size_t(ld) * 3);
  for (auto& x : C) x = T(u(g));
  std::vector<T> D = C;
  tessera::kernels::rotations_left(k, 3, cs.data(), D.data(), ld);
  double diff = 0;
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < ld; ++i) {
      double qc = 0;
      if (i < rows)
        for (int l = 0; l < rows; ++l) qc += double(Q[l + std::size_t(i) * rows]) * C[l + std::size_t(c) * ld];
      else
        qc = C[i + std::size_t(c) * ld];  // rows past the sweep's untouched
      diff = std::max(diff, std::abs(qc - D[i + std::size_t(c) * ld]));
    }
  CHECK(diff / (rows * eps) < 60);
}

}  // namespace

TEST_CASE("hessenberg sweep: triangular R, orthogonal Q with Q R = H, Q^T C from the left") {
  for (auto [rows, cols] : {std::tuple{1, 1}, {2, 1}, {1, 3}, {2, 2}, {5, 5}, {6, 5}, {4, 7}, {60, 59}, {70, 70}, {40, 90}}) {
    check_hessenberg<double>(rows, cols);
    check_hessenberg<float>(rows, cols);
  }
}

TEST_CASE("givens sweeps: generate, then the blocks equal the rotations in order") {
  for (int w : {1, 4, 64})
    for (auto [L, p, base] : {std::tuple{1, 1, 0}, {2, 1, 1}, {10, 1, 9}, {40, 1, 20}, {10, 3, 7}, {40, 5, 35}, {40, 5, 10},
                              {33, 12, 21}, {17, 17, 0}, {100, 30, 70}, {200, 7, 193}}) {
      check_plan<double>(L, p, base, w, 9);
      check_plan<float>(L, p, base, w, 5);
    }
}
