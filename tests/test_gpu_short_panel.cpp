// gpu_short_panel_qr (one thread block, the panel in shared memory) against LAPACK on the host,
// float and double: Q R = A and Q^T Q = I for Q = I - V T V^T from the kernel's V and T, |diag R|
// against GEQRT, exact zeros where the kernel writes them (below R, V's upper part, T's lower
// part), a panel from two places (the QR update's [R; U]), a zero column (tau = 0), entries near
// the overflow threshold, a panel that does not fit, argument errors. No device: exit 77.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include <tessera/kernels_gpu/gpu_short_panel_qr.hpp>

#include "gpu_test_util.hpp"

namespace {

using namespace tessera::kernels;
using namespace tessera::testing::gpu;

constexpr double threshold = 60.0;

struct panel_case {
  int h, nb, ht;
  bool triangular_top;  // top's first nb rows upper triangular (the update's R block)
  int zero_col;         // a column zero below its diagonal from the start (-1: none)
  double scale;
};

template <class T>
void check_panel(const panel_case& pc) {
  const int h = pc.h, nb = pc.nb, ht = pc.ht, hb = h - ht;
  const double eps = std::numeric_limits<T>::epsilon();
  INFO("h = " << h << ", nb = " << nb << ", ht = " << ht << ", zero column " << pc.zero_col
                << ", scale " << pc.scale << ", seed " << tessera::testing::seed());
  mat<T> top(ht, nb, 3), bot(std::max(hb, 1), nb, 2);
  top.randomize();
  bot.randomize();
  for (int j = 0; j < nb; ++j) {
    for (int i = 0; i < ht; ++i) {
      if (pc.triangular_top && i > j && i < nb) top(i, j) = T(0);
      top(i, j) = T(top(i, j) * pc.scale);
    }
    for (int i = 0; i < hb; ++i) bot(i, j) = T(bot(i, j) * pc.scale);
  }
  if (pc.zero_col >= 0) {
    for (int i = pc.zero_col + 1; i < ht; ++i) top(i, pc.zero_col) = T(0);
    for (int i = 0; i < hb; ++i) bot(i, pc.zero_col) = T(0);
    // Only the first column stays zero below its diagonal under the earlier reflectors.
    REQUIRE(pc.zero_col == 0);
  }
  // The whole panel, for the references.
  mat<T> A(h, nb);
  for (int j = 0; j < nb; ++j)
    for (int i = 0; i < h; ++i) A(i, j) = i < ht ? top(i, j) : bot(i - ht, j);

  dev<T> dtop(top), dbot(bot);
  mat<T> V(h, nb, 1), Tm(nb, nb, 1);  // all sentinel: every entry must be written
  dev<T> dV(V), dT(Tm);
  blas b;
  REQUIRE(gpu_short_panel_fits<T>(h, nb));
  gpu_short_panel_qr<T>(h, nb, dtop.p, top.ld, ht, hb > 0 ? dbot.p : nullptr, bot.ld, dV.p, V.ld,
                        dT.p, Tm.ld, b.s);
  b.sync();
  mat<T> top2 = top, bot2 = bot;
  dtop.get(top2);
  dbot.get(bot2);
  dV.get(V);
  dT.get(Tm);

  // Exact zeros and units where the kernel writes them; padding untouched.
  int bad = 0;
  for (int j = 0; j < nb; ++j) {
    for (int i = 0; i < ht; ++i)
      if (i > j && top2(i, j) != T(0)) ++bad;
    for (int i = 0; i < hb; ++i)
      if (bot2(i, j) != T(0)) ++bad;
    for (int i = 0; i <= j && i < h; ++i)
      if (V(i, j) != (i == j ? T(1) : T(0))) ++bad;
    for (int i = j + 1; i < nb; ++i)
      if (Tm(i, j) != T(0)) ++bad;
  }
  CHECK(bad == 0);
  CHECK(same_outside(top2, top, 0, ht));
  CHECK(same_outside(V, mat<T>(h, nb, 1), 0, h));
  if (pc.zero_col == 0) CHECK(Tm(0, 0) == T(0));

  // Q = I - V T V^T (h x h), in double.
  std::vector<double> VT(std::size_t(h) * nb, 0.0), Q(std::size_t(h) * h, 0.0);
  for (int j = 0; j < nb; ++j)
    for (int l = 0; l <= j; ++l)
      for (int i = 0; i < h; ++i) VT[i + std::size_t(j) * h] += double(V(i, l)) * double(Tm(l, j));
  for (int c = 0; c < h; ++c) {
    Q[c + std::size_t(c) * h] = 1.0;
    for (int j = 0; j < nb; ++j) {
      const double vcj = double(V(c, j));
      if (vcj == 0.0) continue;
      for (int i = 0; i < h; ++i) Q[i + std::size_t(c) * h] -= VT[i + std::size_t(j) * h] * vcj;
    }
  }
  // ||A - Q [R; 0]|| / (||A|| h eps) and ||I - Q^T Q|| / (h eps), A and R divided by the scale.
  const double s = pc.scale;
  double res = 0, anorm = 0;
  for (int j = 0; j < nb; ++j)
    for (int i = 0; i < h; ++i) {
      double qr = 0;
      for (int l = 0; l <= j; ++l) qr += Q[i + std::size_t(l) * h] * (double(top2(l, j)) / s);
      const double a = double(A(i, j)) / s, e = a - qr;
      res += e * e;
      anorm += a * a;
    }
  res = std::sqrt(res) / (std::sqrt(anorm) * h * eps);
  double orth = 0;
  for (int a = 0; a < h; ++a)
    for (int c = 0; c < h; ++c) {
      double d = a == c ? -1.0 : 0.0;
      for (int i = 0; i < h; ++i) d += Q[i + std::size_t(a) * h] * Q[i + std::size_t(c) * h];
      orth += d * d;
    }
  orth = std::sqrt(orth) / (h * eps);
  CHECK(res < threshold);
  CHECK(orth < threshold);

  // |diag R| against LAPACK GEQRT of the same panel.
  mat<T> F = A, Tl(nb, nb);
  REQUIRE(geqrt<T>(h, nb, nb, F.data(), F.ld, Tl.data(), Tl.ld) == 0);
  double derr = 0, dnorm = 0;
  for (int j = 0; j < nb; ++j) {
    const double f = std::abs(double(F(j, j))) / s, e = std::abs(double(top2(j, j))) / s - f;
    derr += e * e;
    dnorm += f * f;
  }
  CHECK(std::sqrt(derr / dnorm) / (h * eps) < threshold);
}

template <class T>
void every_case() {
  const T big = std::is_same_v<T, float> ? T(1e30) : T(1e200);
  for (const panel_case pc : {panel_case{1, 1, 1, false, -1, 1.0},
                              panel_case{40, 40, 40, false, -1, 1.0},
                              panel_case{84, 64, 84, false, -1, 1.0},     // delete columns, p = 20
                              panel_case{96, 32, 32, true, -1, 1.0},      // add rows: [R; U]
                              panel_case{300, 33, 33, true, -1, 1.0},     // odd width
                              panel_case{532, 32, 532, false, -1, 1.0},   // p = 500
                              panel_case{200, 48, 100, false, 0, 1.0},    // tau = 0
                              panel_case{150, 24, 24, true, -1, double(big)}})
    check_panel<T>(pc);
}

}  // namespace

TEST_CASE("gpu_short_panel_qr: QR of short panels against LAPACK (double)") { every_case<double>(); }
TEST_CASE("gpu_short_panel_qr: QR of short panels against LAPACK (float)") { every_case<float>(); }

TEST_CASE("gpu_short_panel_qr: panels that do not fit, bad arguments") {
  CHECK_FALSE(gpu_short_panel_fits<double>(100000, 64));
  CHECK_FALSE(gpu_short_panel_fits<double>(100, gpu_short_panel_max_nb + 1));
  CHECK_FALSE(gpu_short_panel_fits<double>(10, 20));
  dev<double> d(std::size_t(100000) * 64);
  blas b;
  CHECK_THROWS_AS(gpu_short_panel_qr<double>(100000, 64, d.p, 100000, 100000, nullptr, 1, d.p,
                                             100000, d.p, 64, b.s),
                  std::invalid_argument);
  CHECK_THROWS_AS(gpu_short_panel_qr<double>(100, 64, d.p, 100, 32, d.p, 68, d.p, 100, d.p, 64, b.s),
                  std::invalid_argument);  // ht < nb
  CHECK_THROWS_AS(gpu_short_panel_qr<double>(100, 64, d.p, 50, 100, nullptr, 1, d.p, 100, d.p, 64, b.s),
                  std::invalid_argument);  // ldtop < ht
}
