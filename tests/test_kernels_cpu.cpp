// The CPU tile kernels against LAPACK references, float and double, full and partial tiles:
// GEQRT/TSQRT by residual, orthogonality and R against GEQRF; ORMQR/TSMQR against the explicitly
// formed Q (LAPACK ORGQR from the kernels' taus) times C by GEMM. Each call also checks that
// nothing outside the documented output (padding rows, the other triangle, the workspace guard)
// is written.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <tessera/kernels_cpu.hpp>
#include <tessera/kernels_cpu/blas.hpp>
#include <tessera/kernels_cpu/check.hpp>
#include <type_traits>
#include <vector>

#include "test_util.hpp"

// The references of the wrapper test: the routines themselves.
#include <cblas.h>
#include <lapacke.h>

namespace {

using namespace tessera::kernels;

// Residuals are scaled by the problem order and eps; LAPACK's own tests use 30-60.
constexpr double threshold = 60.0;

std::mt19937_64& rng() {
  static std::mt19937_64 g(tessera::testing::seed());
  return g;
}

// Column-major m x n matrix with leading dimension ld >= m; the padding rows hold a sentinel so a
// kernel writing past m rows is caught.
template <class T>
struct mat {
  int m, n, ld;
  std::vector<T> a;
  mat(int rows, int cols, int pad = 0)
      : m(rows),
        n(cols),
        ld(std::max(1, rows + pad)),
        a(static_cast<std::size_t>(ld) * std::max(cols, 1), sentinel()) {}
  static T sentinel() { return T(-777.25); }
  T& operator()(int i, int j) { return a[i + static_cast<std::size_t>(j) * ld]; }
  T operator()(int i, int j) const { return a[i + static_cast<std::size_t>(j) * ld]; }
  T* data() { return a.data(); }
  const T* data() const { return a.data(); }
  void randomize() {
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) (*this)(i, j) = T(u(rng()));
  }
  bool padding_intact() const {
    for (int j = 0; j < n; ++j)
      for (int i = m; i < ld; ++i)
        if ((*this)(i, j) != sentinel()) return false;
    return true;
  }
};

template <class T>
double eps() {
  return std::numeric_limits<T>::epsilon();
}

template <class T>
double fro(const mat<T>& A) {
  double s = 0;
  for (int j = 0; j < A.n; ++j)
    for (int i = 0; i < A.m; ++i) s += double(A(i, j)) * double(A(i, j));
  return std::sqrt(s);
}

template <class T>
double fro_diff(const mat<T>& A, const mat<T>& B) {
  REQUIRE(A.m == B.m);
  REQUIRE(A.n == B.n);
  double s = 0;
  for (int j = 0; j < A.n; ++j)
    for (int i = 0; i < A.m; ++i) {
      const double d = double(A(i, j)) - double(B(i, j));
      s += d * d;
    }
  return std::sqrt(s);
}

// op(A) op(B), dense.
template <class T>
mat<T> multiply(const mat<T>& A, bool ta, const mat<T>& B, bool tb) {
  const int m = ta ? A.n : A.m, k = ta ? A.m : A.n, n = tb ? B.m : B.n;
  REQUIRE(k == (tb ? B.n : B.m));
  mat<T> C(m, n);
  if (m > 0 && n > 0) {
    if (k == 0) {
      std::fill(C.a.begin(), C.a.end(), T(0));
    } else {
      tessera::blas::gemm(ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k,
                          T(1), A.data(), A.ld, B.data(), B.ld, T(0), C.data(), C.ld);
    }
  }
  return C;
}

template <class T>
mat<T> submatrix(const mat<T>& A, int i0, int j0, int m, int n) {
  mat<T> S(m, n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) S(i, j) = A(i0 + i, j0 + j);
  return S;
}

// ||I - Q^T Q|| / (n eps)
template <class T>
double orthogonality(const mat<T>& Q) {
  mat<T> G = multiply(Q, true, Q, false);
  for (int i = 0; i < G.m; ++i) G(i, i) -= T(1);
  return fro(G) / (std::max(1, Q.m) * eps<T>());
}

// The taus sit on the diagonal of each ib x ib block of a GEQRT/TPQRT T factor.
template <class T>
std::vector<T> taus(const mat<T>& Tf, int k, int ib) {
  const int b = std::min(ib, k);
  std::vector<T> tau(std::max(k, 1));
  for (int i = 0; i < k; ++i) tau[i] = Tf(i % b, i);
  return tau;
}

// Q (q x q) of the first kk reflectors stored below the diagonal of F (q x >= kk).
template <class T>
mat<T> form_q(const mat<T>& F, int q, int kk, const std::vector<T>& tau) {
  mat<T> Q(q, q);
  std::fill(Q.a.begin(), Q.a.end(), T(0));
  for (int j = 0; j < kk; ++j)
    for (int i = j + 1; i < q; ++i) Q(i, j) = F(i, j);
  if (q > 0) REQUIRE(tessera::blas::orgqr(q, q, kk, Q.data(), Q.ld, tau.data()) == 0);
  return Q;
}

// Q ((k+mv) x (k+mv)) of TSQRT reflectors: the i-th is [e_i; V(:, i)].
template <class T>
mat<T> form_q_ts(const mat<T>& V, int k, const std::vector<T>& tau) {
  const int q = k + V.m;
  mat<T> Y(q, q);
  std::fill(Y.a.begin(), Y.a.end(), T(0));
  for (int j = 0; j < k; ++j)
    for (int i = 0; i < V.m; ++i) Y(k + i, j) = V(i, j);
  REQUIRE(tessera::blas::orgqr(q, q, k, Y.data(), Y.ld, tau.data()) == 0);
  return Y;
}

// Caller workspace of exactly core_workspace_size(nb, ib) elements plus a guard tail.
template <class T>
struct workspace {
  static constexpr std::size_t guard = 64;
  std::size_t size;
  std::vector<T> w;
  workspace(int nb, int ib) : size(core_workspace_size(nb, ib)), w(size + guard, T(4242)) {}
  T* data() { return w.data(); }
  bool guard_intact() const {
    return std::all_of(w.begin() + static_cast<std::ptrdiff_t>(size), w.end(),
                       [](T x) { return x == T(4242); });
  }
};

template <class F>
void check_bad_argument(F&& f, const std::string& arg) {
  CAPTURE(arg);
  try {
    f();
    FAIL("no std::invalid_argument thrown");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CAPTURE(what);
    CHECK(what.find(": " + arg + " = ") != std::string::npos);
  }
}

const side sides[] = {side::left, side::right};
const trans transes[] = {trans::no_trans, trans::trans};

}  // namespace

TEST_CASE("core_workspace_size") {
  CHECK(core_workspace_size(256, 32) == 256u * 32u);
  CHECK(core_workspace_size(64, 64) == 64u * 64u);
  CHECK(core_workspace_size(16, 64) == 16u * 16u);  // ib beyond nb is clamped like the kernels
  CHECK(core_workspace_size(0, 4) == 0u);
  check_bad_argument([] { (void)core_workspace_size(-1, 4); }, "nb");
  check_bad_argument([] { (void)core_workspace_size(8, 0); }, "ib");
}

TEST_CASE_TEMPLATE("core_geqrt: residual, orthogonality and R against GEQRF", T, float, double) {
  for (int nb : {8, 17, 32, 64}) {
    for (int ib : {1, 4, 8, nb, nb + 3}) {
      const std::pair<int, int> shapes[] = {{nb, nb}, {nb, nb / 2 + 1}, {nb / 2, nb},
                                            {nb, 3},  {3, nb},          {1, nb},
                                            {nb, 1},  {nb - 1, nb - 2}};
      for (auto [m, n] : shapes) {
        CAPTURE(nb);
        CAPTURE(ib);
        CAPTURE(m);
        CAPTURE(n);
        const int k = std::min(m, n);
        mat<T> A(m, n, 3);
        A.randomize();
        const mat<T> A0 = A;
        mat<T> Tf(ib, nb);
        workspace<T> w(nb, ib);
        core_geqrt<T>(m, n, ib, A.data(), A.ld, Tf.data(), Tf.ld, w.data());
        CHECK(A.padding_intact());
        CHECK(w.guard_intact());

        mat<T> R(m, n);
        for (int j = 0; j < n; ++j)
          for (int i = 0; i < m; ++i) R(i, j) = i <= j ? A(i, j) : T(0);
        const mat<T> Q = form_q(A, m, k, taus(Tf, k, ib));
        const double resid =
            fro_diff(A0, multiply(Q, false, R, false)) / (fro(A0) * std::max(m, n) * eps<T>());
        CHECK(resid < threshold);
        CHECK(orthogonality(Q) < threshold);

        // Same Householder convention as GEQRF: R agrees up to rounding (row signs normalised
        // in case an implementation flips them).
        mat<T> Aref = A0;
        std::vector<T> tau_ref(std::max(k, 1));
        REQUIRE(tessera::blas::geqrf(m, n, Aref.data(), Aref.ld, tau_ref.data()) == 0);
        double worst = 0;
        for (int i = 0; i < k; ++i) {
          const double s = (R(i, i) < 0) == (Aref(i, i) < 0) ? 1.0 : -1.0;
          for (int j = i; j < n; ++j)
            worst = std::max(worst, std::abs(s * double(R(i, j)) - double(Aref(i, j))));
        }
        CHECK(worst / (fro(A0) * std::max(m, n) * eps<T>()) < threshold);
      }
    }
  }
}

TEST_CASE_TEMPLATE("core_tsqrt: residual and orthogonality of [A1; A2] = Q [R; 0]", T, float,
                   double) {
  for (int nb : {8, 24, 64}) {
    for (int ib : {1, 4, 8, nb, nb + 3}) {
      // (m, n): A2 is m x n under the n x n triangle A1; short and narrow partial tiles too.
      const std::pair<int, int> shapes[] = {{nb, nb}, {nb / 2, nb}, {nb, nb / 2 + 1},
                                            {1, nb},  {nb, 1},      {3, 5}};
      for (auto [m, n] : shapes) {
        CAPTURE(nb);
        CAPTURE(ib);
        CAPTURE(m);
        CAPTURE(n);
        mat<T> A1(n, n, 1);
        A1.randomize();
        for (int j = 0; j < n; ++j)
          for (int i = j + 1; i < n; ++i) A1(i, j) = mat<T>::sentinel();  // never read nor written
        mat<T> A2(m, n, 2);
        A2.randomize();

        mat<T> S0(n + m, n);  // [triu(A1); A2]
        for (int j = 0; j < n; ++j) {
          for (int i = 0; i < n; ++i) S0(i, j) = i <= j ? A1(i, j) : T(0);
          for (int i = 0; i < m; ++i) S0(n + i, j) = A2(i, j);
        }

        mat<T> Tf(ib, nb);
        workspace<T> w(nb, ib);
        core_tsqrt<T>(m, n, ib, A1.data(), A1.ld, A2.data(), A2.ld, Tf.data(), Tf.ld, w.data());
        CHECK(A1.padding_intact());
        CHECK(A2.padding_intact());
        CHECK(w.guard_intact());
        bool lower_intact = true;
        for (int j = 0; j < n; ++j)
          for (int i = j + 1; i < n; ++i) lower_intact &= A1(i, j) == mat<T>::sentinel();
        CHECK(lower_intact);

        mat<T> RR(n + m, n);  // [R; 0]
        for (int j = 0; j < n; ++j)
          for (int i = 0; i < n + m; ++i) RR(i, j) = i <= j ? A1(i, j) : T(0);
        const mat<T> Q = form_q_ts(submatrix(A2, 0, 0, m, n), n, taus(Tf, n, ib));
        const double resid =
            fro_diff(S0, multiply(Q, false, RR, false)) / (fro(S0) * (n + m) * eps<T>());
        CHECK(resid < threshold);
        CHECK(orthogonality(Q) < threshold);
      }
    }
  }
}

TEST_CASE_TEMPLATE("core_tsqrt: an empty A2 gives Q = I", T, float, double) {
  const int n = 6, ib = 4;
  mat<T> A1(n, n);
  A1.randomize();
  const mat<T> A1_0 = A1;
  mat<T> A2(0, n);
  mat<T> Tf(ib, n);
  Tf.randomize();
  workspace<T> w(n, ib);
  core_tsqrt<T>(0, n, ib, A1.data(), A1.ld, A2.data(), 1, Tf.data(), Tf.ld, w.data());
  CHECK(fro_diff(A1, A1_0) == 0.0);
  CHECK(fro(Tf) == 0.0);
}

TEST_CASE_TEMPLATE("core_ormqr: against Q formed by ORGQR times C", T, float, double) {
  for (int nb : {8, 33, 64}) {
    for (int ib : {1, 4, 8, nb}) {
      // (q, kf): the factored tile is q x kf; q is the order of Q. other: C's other dimension.
      const std::pair<int, int> factors[] = {{nb, nb}, {nb, nb / 2}, {nb / 2 + 1, nb}};
      for (auto [q, kf] : factors) {
        mat<T> F(q, kf, 1);
        F.randomize();
        mat<T> Tf(ib, nb);
        workspace<T> w(nb, ib);
        core_geqrt<T>(q, kf, ib, F.data(), F.ld, Tf.data(), Tf.ld, w.data());
        const int kmax = std::min(q, kf);
        const std::vector<T> tau = taus(Tf, kmax, ib);
        for (int k : {kmax, kmax / 2}) {  // all reflectors, or only the leading ones
          const mat<T> Q = form_q(F, q, k, tau);
          for (int other : {nb, 5}) {
            for (side s : sides) {
              for (trans t : transes) {
                const bool left = s == side::left, tr = t == trans::trans;
                const int m = left ? q : other, n = left ? other : q;
                CAPTURE(nb);
                CAPTURE(ib);
                CAPTURE(q);
                CAPTURE(k);
                CAPTURE(m);
                CAPTURE(n);
                CAPTURE(left);
                CAPTURE(tr);
                mat<T> C(m, n, 2);
                C.randomize();
                const mat<T> C0 = submatrix(C, 0, 0, m, n);
                const mat<T> ref = left ? multiply(Q, tr, C0, false) : multiply(C0, false, Q, tr);
                workspace<T> wk(nb, ib);
                core_ormqr<T>(s, t, m, n, k, ib, F.data(), F.ld, Tf.data(), Tf.ld, C.data(), C.ld,
                              wk.data());
                CHECK(C.padding_intact());
                CHECK(wk.guard_intact());
                const double err =
                    fro_diff(submatrix(C, 0, 0, m, n), ref) / (fro(C0) * std::max(q, 1) * eps<T>());
                CHECK(err < threshold);
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE_TEMPLATE("core_tsmqr: against Q formed by ORGQR times [A1; A2] or [A1 A2]", T, float,
                   double) {
  for (int nb : {8, 24, 64}) {
    for (int ib : {1, 4, 8, nb}) {
      // (mv, k): the TSQRT that made V factored a k x k triangle over an mv x k tile.
      const std::pair<int, int> factors[] = {{nb, nb}, {nb / 2, nb}, {nb, nb / 2 + 1}};
      for (auto [mv, k] : factors) {
        mat<T> F1(k, k);
        F1.randomize();
        mat<T> V(mv, k, 1);
        V.randomize();
        mat<T> Tf(ib, nb);
        workspace<T> w(nb, ib);
        core_tsqrt<T>(mv, k, ib, F1.data(), F1.ld, V.data(), V.ld, Tf.data(), Tf.ld, w.data());
        const mat<T> Q = form_q_ts(submatrix(V, 0, 0, mv, k), k, taus(Tf, k, ib));
        const int q = k + mv;
        for (int other : {nb, 7}) {
          for (side s : sides) {
            for (trans t : transes) {
              const bool left = s == side::left, tr = t == trans::trans;
              // A1 has two rows (left) or columns (right) beyond k that must stay untouched.
              const int m1 = left ? k + 2 : other, n1 = left ? other : k + 2;
              const int m2 = left ? mv : other, n2 = left ? other : mv;
              CAPTURE(nb);
              CAPTURE(ib);
              CAPTURE(mv);
              CAPTURE(k);
              CAPTURE(other);
              CAPTURE(left);
              CAPTURE(tr);
              mat<T> A1(m1, n1, 1);
              A1.randomize();
              mat<T> A2(m2, n2, 3);
              A2.randomize();
              const mat<T> A1_0 = A1;
              mat<T> S = left ? mat<T>(k + m2, n2) : mat<T>(m1, k + n2);
              if (left) {
                for (int j = 0; j < n2; ++j) {
                  for (int i = 0; i < k; ++i) S(i, j) = A1(i, j);
                  for (int i = 0; i < m2; ++i) S(k + i, j) = A2(i, j);
                }
              } else {
                for (int i = 0; i < m1; ++i) {
                  for (int j = 0; j < k; ++j) S(i, j) = A1(i, j);
                  for (int j = 0; j < n2; ++j) S(i, k + j) = A2(i, j);
                }
              }
              const mat<T> ref = left ? multiply(Q, tr, S, false) : multiply(S, false, Q, tr);

              workspace<T> wk(nb, ib);
              core_tsmqr<T>(s, t, m1, n1, m2, n2, k, ib, A1.data(), A1.ld, A2.data(), A2.ld,
                            V.data(), V.ld, Tf.data(), Tf.ld, wk.data());
              CHECK(A1.padding_intact());
              CHECK(A2.padding_intact());
              CHECK(wk.guard_intact());

              mat<T> got = S;
              bool rest_intact = true;
              if (left) {
                for (int j = 0; j < n2; ++j) {
                  for (int i = 0; i < k; ++i) got(i, j) = A1(i, j);
                  for (int i = 0; i < m2; ++i) got(k + i, j) = A2(i, j);
                  for (int i = k; i < m1; ++i) rest_intact &= A1(i, j) == A1_0(i, j);
                }
              } else {
                for (int i = 0; i < m1; ++i) {
                  for (int j = 0; j < k; ++j) got(i, j) = A1(i, j);
                  for (int j = 0; j < n2; ++j) got(i, k + j) = A2(i, j);
                  for (int j = k; j < n1; ++j) rest_intact &= A1(i, j) == A1_0(i, j);
                }
              }
              CHECK(rest_intact);
              const double err = fro_diff(got, ref) / (fro(S) * q * eps<T>());
              CHECK(err < threshold);
            }
          }
        }
      }
    }
  }
}

TEST_CASE("kernels: bad arguments throw std::invalid_argument naming the argument") {
  std::vector<double> A(64 * 64, 0.0), B(64 * 64, 0.0), Tf(64 * 64, 0.0), W(64 * 64, 0.0);
  double *a = A.data(), *b = B.data(), *t = Tf.data(), *w = W.data();
  const auto L = side::left, R = side::right;
  const auto N = trans::no_trans;

  check_bad_argument([&] { core_geqrt<double>(-1, 4, 2, a, 4, t, 2, w); }, "m");
  check_bad_argument([&] { core_geqrt<double>(4, -1, 2, a, 4, t, 2, w); }, "n");
  check_bad_argument([&] { core_geqrt<double>(4, 4, 0, a, 4, t, 2, w); }, "ib");
  check_bad_argument([&] { core_geqrt<double>(8, 4, 2, a, 7, t, 2, w); }, "lda");
  check_bad_argument([&] { core_geqrt<double>(0, 4, 2, a, 0, t, 2, w); }, "lda");
  check_bad_argument([&] { core_geqrt<double>(8, 4, 4, a, 8, t, 3, w); }, "ldt");

  check_bad_argument([&] { core_tsqrt<double>(-2, 4, 2, a, 4, b, 4, t, 2, w); }, "m");
  check_bad_argument([&] { core_tsqrt<double>(4, -2, 2, a, 4, b, 4, t, 2, w); }, "n");
  check_bad_argument([&] { core_tsqrt<double>(4, 4, 0, a, 4, b, 4, t, 2, w); }, "ib");
  check_bad_argument([&] { core_tsqrt<double>(8, 6, 2, a, 5, b, 8, t, 2, w); }, "lda1");
  check_bad_argument([&] { core_tsqrt<double>(8, 6, 2, a, 6, b, 7, t, 2, w); }, "lda2");
  check_bad_argument([&] { core_tsqrt<double>(8, 6, 4, a, 6, b, 8, t, 2, w); }, "ldt");

  check_bad_argument([&] { core_ormqr<double>(L, N, -1, 4, 2, 2, a, 4, t, 2, b, 4, w); }, "m");
  check_bad_argument([&] { core_ormqr<double>(L, N, 4, -1, 2, 2, a, 4, t, 2, b, 4, w); }, "n");
  check_bad_argument([&] { core_ormqr<double>(L, N, 4, 4, -1, 2, a, 4, t, 2, b, 4, w); }, "k");
  check_bad_argument([&] { core_ormqr<double>(L, N, 4, 8, 5, 2, a, 4, t, 2, b, 4, w); }, "k");
  check_bad_argument([&] { core_ormqr<double>(R, N, 8, 4, 5, 2, a, 4, t, 2, b, 8, w); }, "k");
  check_bad_argument([&] { core_ormqr<double>(L, N, 4, 4, 4, 0, a, 4, t, 2, b, 4, w); }, "ib");
  check_bad_argument([&] { core_ormqr<double>(L, N, 8, 4, 4, 2, a, 7, t, 2, b, 8, w); }, "ldv");
  check_bad_argument([&] { core_ormqr<double>(R, N, 4, 8, 4, 2, a, 4, t, 2, b, 4, w); }, "ldv");
  check_bad_argument([&] { core_ormqr<double>(L, N, 8, 4, 4, 4, a, 8, t, 2, b, 8, w); }, "ldt");
  check_bad_argument([&] { core_ormqr<double>(R, N, 8, 4, 4, 2, a, 4, t, 2, b, 7, w); }, "ldc");

  // core_tsmqr(side, trans, m1, n1, m2, n2, k, ib, A1, lda1, A2, lda2, V, ldv, T, ldt, work)
  auto tsmqr = [&](side s, int m1, int n1, int m2, int n2, int k, int ib, int lda1, int lda2,
                   int ldv, int ldt) {
    core_tsmqr<double>(s, N, m1, n1, m2, n2, k, ib, a, lda1, b, lda2, b, ldv, t, ldt, w);
  };
  check_bad_argument([&] { tsmqr(L, -1, 4, 4, 4, 4, 2, 4, 4, 4, 2); }, "m1");
  check_bad_argument([&] { tsmqr(L, 4, -1, 4, 4, 4, 2, 4, 4, 4, 2); }, "n1");
  check_bad_argument([&] { tsmqr(L, 4, 4, -1, 4, 4, 2, 4, 4, 4, 2); }, "m2");
  check_bad_argument([&] { tsmqr(L, 4, 4, 4, -1, 4, 2, 4, 4, 4, 2); }, "n2");
  check_bad_argument([&] { tsmqr(L, 4, 4, 4, 4, -1, 2, 4, 4, 4, 2); }, "k");
  check_bad_argument([&] { tsmqr(L, 4, 4, 4, 4, 4, 0, 4, 4, 4, 2); }, "ib");
  check_bad_argument([&] { tsmqr(L, 4, 4, 4, 5, 4, 2, 4, 4, 4, 2); }, "n2");
  check_bad_argument([&] { tsmqr(L, 3, 4, 4, 4, 4, 2, 4, 4, 4, 2); }, "m1");
  check_bad_argument([&] { tsmqr(R, 4, 4, 5, 4, 4, 2, 4, 5, 4, 2); }, "m2");
  check_bad_argument([&] { tsmqr(R, 4, 3, 4, 4, 4, 2, 4, 4, 4, 2); }, "n1");
  check_bad_argument([&] { tsmqr(L, 6, 4, 4, 4, 4, 2, 5, 4, 4, 2); }, "lda1");
  check_bad_argument([&] { tsmqr(L, 4, 4, 6, 4, 4, 2, 4, 5, 6, 2); }, "lda2");
  check_bad_argument([&] { tsmqr(L, 4, 4, 6, 4, 4, 2, 4, 6, 5, 2); }, "ldv");
  check_bad_argument([&] { tsmqr(R, 4, 4, 4, 6, 4, 2, 4, 4, 5, 2); }, "ldv");
  check_bad_argument([&] { tsmqr(L, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3); }, "ldt");

  // Empty tiles are legal and leave everything alone.
  A.assign(A.size(), 1.5);
  core_geqrt<double>(0, 5, 4, a, 1, t, 4, w);
  core_ormqr<double>(L, N, 5, 0, 0, 4, a, 5, t, 4, a, 5, w);
  core_tsmqr<double>(L, N, 5, 5, 0, 5, 5, 4, a, 5, b, 1, b, 1, t, 4, w);
  CHECK(std::all_of(A.begin(), A.end(), [](double x) { return x == 1.5; }));
}

// --- tessera/kernels_cpu/check.hpp ---------------------------------------------------------------

namespace {

// The message of the exception of type E that f throws ("" if none).
template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("check: messages name the function, the caller's argument and its value") {
  namespace check = tessera::check;
  using ia = std::invalid_argument;
  CHECK(message_of<ia>([] { check::require_ge("f", "lda", 3, "max(1, m)", 4); }) ==
        "f: lda = 3: must be >= max(1, m) (= 4)");
  CHECK(message_of<ia>([] { check::require_ge("f", "nb", -1, "0", 0); }) ==
        "f: nb = -1: must be >= 0");
  CHECK(message_of<ia>([] { check::require_ge("f", "nb", 0, nullptr, 1); }) ==
        "f: nb = 0: must be >= 1");
  CHECK(message_of<ia>([] { check::require_le("g", "k", 9, "m", 8); }) ==
        "g: k = 9: must be <= m (= 8)");
  CHECK(message_of<ia>([] { check::require_eq("h", "n2", 5, "n1", 4); }) ==
        "h: n2 = 5: must be == n1 (= 4)");
  // long long all the way: workspace sizes beyond int.
  CHECK(message_of<ia>([] { check::require_ge("f", "lwork", 5000000000LL, "the workspace size",
                                              6000000000LL); }) ==
        "f: lwork = 5000000000: must be >= the workspace size (= 6000000000)");
  CHECK(message_of<ia>([] { check::require_ptr("f", "A", nullptr); }) == "f: A is null");
  CHECK(message_of<ia>([] { check::invalid("f", "C has 3 rows"); }) == "f: C has 3 rows");
  const std::string info =
      message_of<std::logic_error>([] { check::lapack_info("f", "GEMQRT", -3); });
  CHECK(info.find("f: LAPACK GEMQRT returned info = -3") == 0);

  // Satisfied bounds throw nothing.
  int x = 0;
  CHECK_NOTHROW(check::require_ge("f", "m", 4, "0", 0));
  CHECK_NOTHROW(check::require_le("f", "k", 4, "m", 4));
  CHECK_NOTHROW(check::require_eq("f", "n2", 4, "n1", 4));
  CHECK_NOTHROW(check::require_ptr("f", "A", &x));
  CHECK_NOTHROW(check::lapack_info("f", "GEMQRT", 0));

  // A kernel's own message: its qualified name, the argument as the caller wrote it.
  std::vector<double> a(64, 0.0), t(64, 0.0), w(64, 0.0);
  CHECK(message_of<ia>([&] { core_geqrt<double>(8, 4, 2, a.data(), 7, t.data(), 2, w.data()); }) ==
        "tessera::kernels::core_geqrt: lda = 7: must be >= max(1, m) (= 8)");
}

TEST_CASE_TEMPLATE("check: the first non-finite element, by row and column of the whole matrix", T,
                   float, double) {
  namespace check = tessera::check;
  const int rows = 5, cols = 4, lda = 7;
  std::vector<T> a(std::size_t(lda) * cols, T(1));
  CHECK(check::find_non_finite(rows, cols, a.data(), lda) == std::pair<int, int>(-1, -1));
  CHECK_NOTHROW(check::require_finite("f", "A", rows, cols, a.data(), lda));
  a[5 + 0 * lda] = std::numeric_limits<T>::quiet_NaN();  // padding row: not part of the block
  CHECK_NOTHROW(check::require_finite("f", "A", rows, cols, a.data(), lda));

  a[3 + 2 * lda] = std::numeric_limits<T>::infinity();
  a[1 + 3 * lda] = std::numeric_limits<T>::quiet_NaN();
  CHECK(check::find_non_finite(rows, cols, a.data(), lda) == std::pair<int, int>(3, 2));
  CHECK(message_of<std::invalid_argument>([&] {
          check::require_finite("f", "A", rows, cols, a.data(), lda, 10, 20);
        }) == "f: A(13, 22) is Inf: the input matrix must be finite");
  a[3 + 2 * lda] = T(1);
  CHECK(message_of<std::invalid_argument>([&] {
          check::require_finite("tessera::qr", "B", rows, cols, a.data(), lda);
        }) == "tessera::qr: B(1, 3) is NaN: the input matrix must be finite");
}

// --- tessera/kernels_cpu/blas.hpp ----------------------------------------------------------------

namespace {

// The routine of T's precision, for the direct reference calls: direct<T>(cblas_sgemm, cblas_dgemm).
template <class T, class S, class D>
auto direct(S s, D d) {
  if constexpr (std::is_same_v<T, float>)
    return s;
  else
    return d;
}

template <class T>
std::vector<T> random_vector(std::size_t n) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<T> v(n);
  for (T& x : v) x = T(u(rng()));
  return v;
}

}  // namespace

// Same routine, same data: the results must be identical, which a swapped argument would break.
TEST_CASE_TEMPLATE("blas: the wrapper's overloads against direct CBLAS and LAPACKE calls", T, float,
                   double) {
  namespace blas = tessera::blas;
  INFO("TESSERA_SEED=" << tessera::testing::seed());
  constexpr int ld = 16, m = 13, n = 7, k = 5, nb = 3;
  const std::size_t size = std::size_t(ld) * ld;
  std::vector<T> A = random_vector<T>(size), B = random_vector<T>(size),
                 C = random_vector<T>(size);
  for (int i = 0; i < ld; ++i) A[i + std::size_t(i) * ld] += T(4);  // well-conditioned triangles
  std::vector<T> work1(size), work2(size);

  SUBCASE("level 1") {
    CHECK(blas::dot(n, A.data(), 2, B.data(), 1) ==
          direct<T>(cblas_sdot, cblas_ddot)(n, A.data(), 2, B.data(), 1));
    std::vector<T> y1 = C, y2 = C;
    blas::axpy(n, T(-0.75), A.data(), 1, y1.data(), 2);
    direct<T>(cblas_saxpy, cblas_daxpy)(n, T(-0.75), A.data(), 1, y2.data(), 2);
    CHECK(y1 == y2);
  }

  SUBCASE("level 3") {
    for (CBLAS_TRANSPOSE ta : {CblasNoTrans, CblasTrans})
      for (CBLAS_TRANSPOSE tb : {CblasNoTrans, CblasTrans}) {
        std::vector<T> c1 = C, c2 = C;
        blas::gemm(ta, tb, m, n, k, T(0.5), A.data(), ld, B.data(), ld, T(-1.25), c1.data(), ld);
        direct<T>(cblas_sgemm, cblas_dgemm)(CblasColMajor, ta, tb, m, n, k, T(0.5), A.data(), ld,
                                            B.data(), ld, T(-1.25), c2.data(), ld);
        CHECK(c1 == c2);
      }
    for (CBLAS_UPLO uplo : {CblasUpper, CblasLower})
      for (CBLAS_TRANSPOSE t : {CblasNoTrans, CblasTrans}) {
        std::vector<T> c1 = C, c2 = C;
        blas::syrk(uplo, t, n, k, T(-1), A.data(), ld, T(0.5), c1.data(), ld);
        direct<T>(cblas_ssyrk, cblas_dsyrk)(CblasColMajor, uplo, t, n, k, T(-1), A.data(), ld,
                                            T(0.5), c2.data(), ld);
        CHECK(c1 == c2);
      }
    for (CBLAS_SIDE s : {CblasLeft, CblasRight})
      for (CBLAS_UPLO uplo : {CblasUpper, CblasLower})
        for (CBLAS_TRANSPOSE t : {CblasNoTrans, CblasTrans})
          for (CBLAS_DIAG d : {CblasNonUnit, CblasUnit}) {
            std::vector<T> b1 = B, b2 = B, b3 = B, b4 = B;
            blas::trmm(s, uplo, t, d, m, n, T(1.5), A.data(), ld, b1.data(), ld);
            direct<T>(cblas_strmm, cblas_dtrmm)(CblasColMajor, s, uplo, t, d, m, n, T(1.5),
                                                A.data(), ld, b2.data(), ld);
            CHECK(b1 == b2);
            blas::trsm(s, uplo, t, d, m, n, T(1.5), A.data(), ld, b3.data(), ld);
            direct<T>(cblas_strsm, cblas_dtrsm)(CblasColMajor, s, uplo, t, d, m, n, T(1.5),
                                                A.data(), ld, b4.data(), ld);
            CHECK(b3 == b4);
          }
  }

  SUBCASE("LAPACK auxiliaries") {
    for (char c : {'E', 'S', 'P'})
      CHECK(blas::lamch<T>(c) == direct<T>(LAPACKE_slamch, LAPACKE_dlamch)(c));
    for (char norm : {'M', '1', 'I', 'F'}) {
      CHECK(blas::lange(norm, m, n, A.data(), ld) ==
            direct<T>(LAPACKE_slange, LAPACKE_dlange)(LAPACK_COL_MAJOR, norm, m, n, A.data(), ld));
      for (char uplo : {'U', 'L'})
        CHECK(blas::lansy(norm, uplo, n, A.data(), ld) ==
              direct<T>(LAPACKE_slansy, LAPACKE_dlansy)(LAPACK_COL_MAJOR, norm, uplo, n, A.data(),
                                                        ld));
    }
    std::vector<T> x1 = A, x2 = A;
    T tau1 = 0, tau2 = 0;
    CHECK(blas::larfg(m, &x1[0], &x1[1], 1, &tau1) ==
          direct<T>(LAPACKE_slarfg_work, LAPACKE_dlarfg_work)(m, &x2[0], &x2[1], 1, &tau2));
    CHECK(x1 == x2);
    CHECK(tau1 == tau2);
  }

  SUBCASE("QR factorizations and their Q") {
    // GEQRT, GEMQRT from both sides and both ways, LARFT on GEQRT2's reflectors.
    std::vector<T> a1 = A, a2 = A, t1(size), t2(size);
    CHECK(blas::geqrt(m, n, nb, a1.data(), ld, t1.data(), ld, work1.data()) ==
          direct<T>(LAPACKE_sgeqrt_work, LAPACKE_dgeqrt_work)(LAPACK_COL_MAJOR, m, n, nb, a2.data(),
                                                              ld, t2.data(), ld, work2.data()));
    CHECK(a1 == a2);
    CHECK(t1 == t2);
    for (char side : {'L', 'R'})
      for (char trans : {'N', 'T'}) {
        std::vector<T> c1 = C, c2 = C;
        const int cm = side == 'L' ? m : k, cn = side == 'L' ? k : m;
        CHECK(blas::gemqrt(side, trans, cm, cn, n, nb, a1.data(), ld, t1.data(), ld, c1.data(), ld,
                           work1.data()) ==
              direct<T>(LAPACKE_sgemqrt_work, LAPACKE_dgemqrt_work)(
                  LAPACK_COL_MAJOR, side, trans, cm, cn, n, nb, a1.data(), ld, t1.data(), ld,
                  c2.data(), ld, work2.data()));
        CHECK(c1 == c2);
      }
    a1 = A, a2 = A;
    CHECK(blas::geqrt2(m, n, a1.data(), ld, t1.data(), ld) ==
          direct<T>(LAPACKE_sgeqrt2_work, LAPACKE_dgeqrt2_work)(LAPACK_COL_MAJOR, m, n, a2.data(),
                                                                ld, t2.data(), ld));
    CHECK(a1 == a2);
    CHECK(t1 == t2);
    std::vector<T> tau(n);
    for (int i = 0; i < n; ++i) tau[i] = t1[i + std::size_t(i) * ld];
    std::vector<T> f1(size), f2(size);
    CHECK(blas::larft('F', 'C', m, n, a1.data(), ld, tau.data(), f1.data(), ld) ==
          direct<T>(LAPACKE_slarft_work, LAPACKE_dlarft_work)(
              LAPACK_COL_MAJOR, 'F', 'C', m, n, a1.data(), ld, tau.data(), f2.data(), ld));
    CHECK(f1 == f2);

    // TPQRT and TPQRT2 of [R; B] (R: A's upper triangle), TPMQRT from the left.
    std::vector<T> r1 = A, r2 = A, b1 = B, b2 = B;
    CHECK(blas::tpqrt(m, n, 0, nb, r1.data(), ld, b1.data(), ld, t1.data(), ld, work1.data()) ==
          direct<T>(LAPACKE_stpqrt_work, LAPACKE_dtpqrt_work)(LAPACK_COL_MAJOR, m, n, 0, nb,
                                                              r2.data(), ld, b2.data(), ld,
                                                              t2.data(), ld, work2.data()));
    CHECK(r1 == r2);
    CHECK(b1 == b2);
    CHECK(t1 == t2);
    for (char trans : {'N', 'T'}) {
      std::vector<T> c1 = C, c2 = C, d1 = A, d2 = A;
      CHECK(blas::tpmqrt('L', trans, m, k, n, 0, nb, b1.data(), ld, t1.data(), ld, c1.data(), ld,
                         d1.data(), ld, work1.data()) ==
            direct<T>(LAPACKE_stpmqrt_work, LAPACKE_dtpmqrt_work)(
                LAPACK_COL_MAJOR, 'L', trans, m, k, n, 0, nb, b1.data(), ld, t1.data(), ld,
                c2.data(), ld, d2.data(), ld, work2.data()));
      CHECK(c1 == c2);
      CHECK(d1 == d2);
    }
    r1 = A, r2 = A, b1 = B, b2 = B;
    CHECK(blas::tpqrt2(m, n, 0, r1.data(), ld, b1.data(), ld, t1.data(), ld) ==
          direct<T>(LAPACKE_stpqrt2_work, LAPACKE_dtpqrt2_work)(LAPACK_COL_MAJOR, m, n, 0,
                                                                r2.data(), ld, b2.data(), ld,
                                                                t2.data(), ld));
    CHECK(r1 == r2);
    CHECK(b1 == b2);
    CHECK(t1 == t2);
  }

  SUBCASE("references: GEQRF, ORGQR, GELS") {
    std::vector<T> a1 = A, a2 = A, tau1(n), tau2(n);
    CHECK(blas::geqrf(m, n, a1.data(), ld, tau1.data()) ==
          direct<T>(LAPACKE_sgeqrf, LAPACKE_dgeqrf)(LAPACK_COL_MAJOR, m, n, a2.data(), ld,
                                                    tau2.data()));
    CHECK(a1 == a2);
    CHECK(tau1 == tau2);
    CHECK(blas::orgqr(m, n, n, a1.data(), ld, tau1.data()) ==
          direct<T>(LAPACKE_sorgqr, LAPACKE_dorgqr)(LAPACK_COL_MAJOR, m, n, n, a2.data(), ld,
                                                    tau2.data()));
    CHECK(a1 == a2);
    a1 = A, a2 = A;
    std::vector<T> b1 = B, b2 = B;
    CHECK(blas::gels('N', m, n, 2, a1.data(), ld, b1.data(), ld) ==
          direct<T>(LAPACKE_sgels, LAPACKE_dgels)(LAPACK_COL_MAJOR, 'N', m, n, 2, a2.data(), ld,
                                                  b2.data(), ld));
    CHECK(a1 == a2);
    CHECK(b1 == b2);
  }
}
