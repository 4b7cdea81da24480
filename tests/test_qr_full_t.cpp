// The full T and S of issue #17 through the front door, on every path there is (the CPUs; the GPU
// from host and from device memory where there is one), both precisions: T against LAPACK
// xGEQRT3's, S = V T^T, Q = I - V T V^T orthogonal with A = QR, Q applied in one step against Q
// applied panel by panel, blocks of Q formed and applied against the explicit Q, shapes (square,
// tall, n not a multiple of nb, n < nb, one column), the extreme matrix classes, bad arguments.
// Residuals are scaled as LAPACK's tests scale them and must stay below 60.
// TESSERA_SEED=<seed> replays a run (the seed is logged).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "tessera/kernels_cpu/blas.hpp"
#include "tessera/qr/blocked_qr_gpu.hpp"
#include "tessera/qr/factorize.hpp"
#include "tessera/qr/gpu.hpp"
#include "tessera/qr/matgen.hpp"
#include "tessera/sched/memory.hpp"
#include "test_util.hpp"

namespace qr = tessera::qr;
namespace blas = tessera::blas;
using tessera::testing::invalid_message;
using tessera::testing::random_matrix;

namespace {

constexpr double threshold = 60;

template <class T>
double eps() {
  return blas::lamch<T>('E');
}

template <class T>
double norm1(int m, int n, const T* a, int lda) {
  return m > 0 && n > 0 ? blas::lange('1', m, n, a, lda) : 0.0;
}

template <class T>
using matrix = std::vector<T>;  // column-major, ld = rows

struct path {
  qr::target on;
  qr::memory where;
  const char* name;
  int single_in_double = -1;  // qr::options::single_in_double
};

std::vector<path> paths() {
  std::vector<path> p{{qr::target::cpu, qr::memory::host, "cpu/host"}};
  if (qr::gpu_available()) {
    p.push_back({qr::target::cpu, qr::memory::device, "cpu/device"});  // factored in a host copy
    p.push_back({qr::target::gpu, qr::memory::host, "gpu/host"});
    // Single precision in double (the FP64 tensor cores' path) and in float, whatever this GPU's rule.
    p.push_back({qr::target::gpu, qr::memory::device, "gpu/device in float", 0});
    p.push_back({qr::target::gpu, qr::memory::device, "gpu/device in double", 1});
    p.push_back({qr::target::gpu, qr::memory::host, "gpu/host in float", 0});
    p.push_back({qr::target::gpu, qr::memory::host, "gpu/host in double", 1});
  }
  return p;
}

// One factorization with the full T, on a path, and everything read back to the host.
template <class T>
struct factored {
  int m, n;
  matrix<T> a0, vr, t, s;  // A, then V and R (A's memory after), the full T, S
  std::optional<qr::factorization<T>> f;
  tessera::device_buffer d;

  factored(const path& p, matrix<T> a, int rows, int cols, int nb) : m(rows), n(cols), a0(std::move(a)), vr(a0) {
    qr::options o;
    o.on = p.on;
    o.full_t = true;
    o.nb = nb;
    o.single_in_double = p.single_in_double;
    static tessera::runtime gpu_rt(qr::gpu_available() ? qr::gpu_runtime_options(2) : tessera::runtime_options{});
    static tessera::runtime cpu_rt(tessera::runtime_options{.workers = 2});
    tessera::runtime& rt = p.on == qr::target::cpu ? cpu_rt : gpu_rt;
    qr::matrix_ref<T> ref = qr::host(vr.data(), m, n, m);
    if (p.where == qr::memory::device) {
      d = gpu_rt.allocate_device(sizeof(T) * vr.size());
      ref = qr::device(d.get<T>(), m, n, m);
      qr::copy<T>(qr::host(vr.data(), m, n, m), ref);
    }
    f.emplace(qr::factorize(rt, ref, o));
    REQUIRE(f->full_t());
    REQUIRE(f->blocked());
    // Only a float matrix on the GPU is computed in double, and only when asked or ruled so.
    if (!std::is_same_v<T, float> || p.on == qr::target::cpu || p.single_in_double == 0)
      CHECK_FALSE(f->choice().in_double);
    if (std::is_same_v<T, float> && p.on == qr::target::gpu && p.single_in_double == 1) CHECK(f->choice().in_double);
    t.assign(std::size_t(n) * n, T(-1));
    s.assign(std::size_t(m) * n, T(-1));
    f->copy_t(qr::host(t.data(), n, n, std::max(1, n)));
    f->copy_s(qr::host(s.data(), m, n, m));
    qr::copy<T>(qr::matrix_ref<const T>{f->geqrt_a(), m, n, f->geqrt_lda(), f->where()}, qr::host(vr.data(), m, n, m));
  }

  T v(int i, int j) const { return i > j ? vr[i + std::size_t(j) * m] : i == j ? T(1) : T(0); }

  // Q = I - V T V^T, m x m, in the test's own arithmetic (two GEMMs).
  matrix<T> explicit_q() const {
    matrix<T> V(std::size_t(m) * n), W(std::size_t(n) * m), Q(std::size_t(m) * m, T(0));
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) V[i + std::size_t(j) * m] = v(i, j);
    blas::gemm(CblasNoTrans, CblasTrans, n, m, n, T(1), t.data(), n, V.data(), m, T(0), W.data(), n);
    for (int i = 0; i < m; ++i) Q[i + std::size_t(i) * m] = T(1);
    blas::gemm(CblasNoTrans, CblasNoTrans, m, m, n, T(-1), V.data(), m, W.data(), n, T(1), Q.data(), m);
    return Q;
  }
};

// ||I - Q^T Q||_1 / (m eps) and ||A - Q R||_1 / (||A||_1 m eps).
template <class T>
void check_q(const factored<T>& x, const matrix<T>& Q) {
  const int m = x.m, n = x.n;
  matrix<T> E(std::size_t(m) * m, T(0));
  for (int i = 0; i < m; ++i) E[i + std::size_t(i) * m] = T(1);
  blas::syrk(CblasUpper, CblasTrans, m, m, T(-1), Q.data(), m, T(1), E.data(), m);
  for (int j = 0; j < m; ++j)
    for (int i = j + 1; i < m; ++i) E[i + std::size_t(j) * m] = E[j + std::size_t(i) * m];
  const double orth = norm1(m, m, E.data(), m) / (m * eps<T>());
  matrix<T> R(std::size_t(m) * n, T(0)), D(x.a0);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i <= std::min(j, m - 1); ++i) R[i + std::size_t(j) * m] = x.vr[i + std::size_t(j) * m];
  blas::gemm(CblasNoTrans, CblasNoTrans, m, n, m, T(-1), Q.data(), m, R.data(), m, T(1), D.data(), m);
  const double na = norm1(m, n, x.a0.data(), m);
  const double resid = na > 0 ? norm1(m, n, D.data(), m) / (na * m * eps<T>()) : norm1(m, n, D.data(), m);
  INFO("||I - Q^T Q|| = " << orth << ", ||A - QR|| = " << resid);
  CHECK(orth < threshold);
  CHECK(resid < threshold);
}

// S = V T^T: ||S - V T^T||_1 / (||V||_1 ||T||_1 m eps), exact zeros above the diagonal.
template <class T>
void check_s(const factored<T>& x) {
  const int m = x.m, n = x.n;
  matrix<T> V(std::size_t(m) * n), D(x.s);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) V[i + std::size_t(j) * m] = x.v(i, j);
  blas::gemm(CblasNoTrans, CblasTrans, m, n, n, T(-1), V.data(), m, x.t.data(), n, T(1), D.data(), m);
  const double scale = norm1(m, n, V.data(), m) * norm1(n, n, x.t.data(), n);
  const double err = scale > 0 ? norm1(m, n, D.data(), m) / (scale * m * eps<T>()) : norm1(m, n, D.data(), m);
  INFO("||S - V T^T|| = " << err);
  CHECK(err < threshold);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < std::min(j, m); ++i) REQUIRE(x.s[i + std::size_t(j) * m] == T(0));
}

// T against LAPACK's: xLARFT on the same reflectors (V and T's diagonal) on every path, and on the
// CPUs, whose panels are LAPACK's, xGEQRT3 on the same A too (the GPU's CholeskyQR2 panels choose
// other, equally valid, reflectors). ||T - T_LAPACK||_1 / (||T_LAPACK||_1 m eps), zeros below.
template <class T>
void check_t_against_lapack(const factored<T>& x, bool geqrt3) {
  const int m = x.m, n = x.n;
  matrix<T> a(x.vr), tl(std::size_t(n) * std::size_t(n), T(0)), tau(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) tau[i] = x.t[i + std::size_t(i) * n];
  REQUIRE(blas::larft('F', 'C', m, n, a.data(), m, tau.data(), tl.data(), n) == 0);
  const auto error = [&](matrix<T> ref) {
    for (int j = 0; j < n; ++j)
      for (int i = j + 1; i < n; ++i) ref[i + std::size_t(j) * n] = T(0);
    matrix<T> D(x.t);
    for (std::size_t i = 0; i < D.size(); ++i) D[i] -= ref[i];
    const double nr = norm1(n, n, ref.data(), n);  // 0 for the zero matrix: all tau = 0
    return norm1(n, n, D.data(), n) / ((nr > 0 ? nr : 1.0) * m * eps<T>());
  };
  const double e_larft = error(tl);
  INFO("||T - T_LARFT|| = " << e_larft);
  CHECK(e_larft < threshold);
  if (geqrt3) {
    matrix<T> a3(x.a0), t3(std::size_t(n) * n, T(0));
    REQUIRE(blas::geqrt3(m, n, a3.data(), m, t3.data(), n) == 0);
    const double e3 = error(t3);
    INFO("||T - T_GEQRT3|| = " << e3);
    CHECK(e3 < threshold);
  }
  for (int j = 0; j < n; ++j)
    for (int i = j + 1; i < n; ++i) REQUIRE(x.t[i + std::size_t(j) * n] == T(0));
}

// Blocks of Q formed and applied (both ways) against the explicit Q's: max error / (m eps).
template <class T>
void check_blocks(factored<T>& x, const matrix<T>& Q) {
  const int m = x.m, n = x.n;
  struct block {
    int r0, c0, rb, cb;
  };
  const std::vector<block> blocks{{0, 0, m, m},         {0, 0, std::min(m, 5), std::min(m, 7)},
                                  {m / 3, m / 2, m / 3, m / 4}, {m - std::min(m, 9), 0, std::min(m, 9), std::min(n, 6)},
                                  {0, std::max(0, n - 2), std::min(m, 4), std::min(m, m - std::max(0, n - 2))},
                                  {m / 2, m / 2, 0, 3}};
  for (const block& b : blocks) {
    CAPTURE(b.r0);
    CAPTURE(b.c0);
    CAPTURE(b.rb);
    CAPTURE(b.cb);
    matrix<T> qb(std::size_t(std::max(b.rb, 1)) * std::max(b.cb, 1), T(-3));
    x.f->form_q_block(b.r0, b.c0, qr::host(qb.data(), b.rb, b.cb, std::max(1, b.rb)));
    double err = 0;
    for (int j = 0; j < b.cb; ++j)
      for (int i = 0; i < b.rb; ++i)
        err = std::max(err, double(std::abs(qb[i + std::size_t(j) * std::max(1, b.rb)] -
                                            Q[b.r0 + i + std::size_t(b.c0 + j) * m])));
    CHECK(err / (m * eps<T>()) < threshold);
    // Y = Qb X and Y = Qb^T X with three right-hand sides.
    for (const bool t : {false, true}) {
      const int in = t ? b.rb : b.cb, out = t ? b.cb : b.rb, k = 3;
      matrix<T> X = random_matrix<T>(in, k, std::max(1, in), 7 + (t ? 1 : 0));
      matrix<T> Y(std::size_t(std::max(out, 1)) * k, T(-5)), R(std::size_t(std::max(out, 1)) * k, T(0));
      x.f->apply_q_block(t ? qr::trans::trans : qr::trans::no_trans, b.r0, b.c0, b.rb, b.cb,
                         qr::host<const T>(X.data(), in, k, std::max(1, in)), qr::host(Y.data(), out, k, std::max(1, out)));
      for (int c = 0; c < k; ++c)
        for (int i = 0; i < out; ++i) {
          double acc = 0;
          for (int p = 0; p < in; ++p) {
            const int qi = t ? b.r0 + p : b.r0 + i, qj = t ? b.c0 + i : b.c0 + p;
            acc += double(Q[qi + std::size_t(qj) * m]) * double(X[p + std::size_t(c) * std::max(1, in)]);
          }
          R[i + std::size_t(c) * std::max(1, out)] = T(acc);
        }
      double e = 0;
      for (std::size_t i = 0; i < std::size_t(out) * k; ++i) e = std::max(e, double(std::abs(Y[i] - R[i])));
      INFO((t ? "Qb^T X" : "Qb X") << ": max error " << e);
      CHECK(e / (std::max(in, 1) * eps<T>()) < threshold);
    }
  }
}

// Q applied in one step with the full T against the same matrix factored without it (panel by panel).
template <class T>
void check_one_step_apply(const path& p, factored<T>& x, int nb) {
  const int m = x.m, k = 4;
  qr::options o;
  o.on = p.on;
  o.nb = nb;
  o.algo = qr::algorithm::blocked;
  matrix<T> a(x.a0);
  auto g = qr::factorize(qr::host(a.data(), m, x.n, m), o);
  REQUIRE_FALSE(g.full_t());
  for (const qr::trans op : {qr::trans::no_trans, qr::trans::trans}) {
    matrix<T> c1 = random_matrix<T>(m, k, m, 11), c2 = c1;
    x.f->apply_q(op, qr::host(c1.data(), m, k, m));
    g.apply_q(op, qr::host(c2.data(), m, k, m));
    double e = 0;
    for (std::size_t i = 0; i < c1.size(); ++i) e = std::max(e, double(std::abs(c1[i] - c2[i])));
    INFO("one step against panel by panel: " << e);
    CHECK(e / (m * eps<T>()) < threshold);
  }
}

struct shape {
  int m, n, nb;
};

}  // namespace

TEST_CASE_TEMPLATE("full T and S: T as LAPACK xGEQRT3's, S = V T^T, Q orthogonal, A = QR, blocks of Q", T, float,
                   double) {
  const std::vector<shape> shapes{{64, 64, 16}, {100, 37, 16}, {45, 10, 16}, {130, 130, 32},
                                  {300, 100, 32}, {20, 1, 8},   {33, 33, 64}};
  int salt = 0;
  for (const path& p : paths())
    for (const shape& s : shapes) {
      const std::string path_name = p.name;
      CAPTURE(path_name);
      CAPTURE(s.m);
      CAPTURE(s.n);
      CAPTURE(s.nb);
      factored<T> x(p, random_matrix<T>(s.m, s.n, s.m, 100 + salt++), s.m, s.n, s.nb);
      check_t_against_lapack(x, p.on == qr::target::cpu);
      check_s(x);
      const matrix<T> Q = x.explicit_q();
      check_q(x, Q);
      check_blocks(x, Q);
      check_one_step_apply(p, x, s.nb);
      // form_q (through the one-step apply) against the explicit Q.
      matrix<T> q(std::size_t(s.m) * s.m);
      x.f->form_q(qr::q_shape::full, qr::host(q.data(), s.m, s.m, s.m));
      double e = 0;
      for (std::size_t i = 0; i < q.size(); ++i) e = std::max(e, double(std::abs(q[i] - Q[i])));
      CHECK(e / (s.m * eps<T>()) < threshold);
    }
}

TEST_CASE_TEMPLATE("full T and S on the extreme matrix classes, near underflow and overflow", T, float, double) {
  const double tiny = std::is_same_v<T, float> ? 1e-36 : 1e-300, huge = std::is_same_v<T, float> ? 1e36 : 1e300;
  const int m = 60, n = 40, nb = 16;
  for (const path& p : paths())
    for (const qr::matrix_kind kind : qr::all_matrix_kinds)
      for (const double scale : {tiny, 1.0, huge}) {
        const std::string path_name = p.name, kind_name = qr::name(kind);
        CAPTURE(path_name);
        CAPTURE(kind_name);
        CAPTURE(scale);
        qr::matrix_spec spec;
        spec.kind = kind;
        spec.scale = scale;
        spec.seed = tessera::testing::seed();
        matrix<T> a(std::size_t(m) * n);
        qr::generate<T>(spec, m, n, a.data(), m);
        factored<T> x(p, a, m, n, nb);
        check_s(x);
        check_q(x, x.explicit_q());
        check_t_against_lapack(x, kind == qr::matrix_kind::random_uniform && p.on == qr::target::cpu);
      }
}

TEST_CASE("full T: bad arguments name the argument and the problem") {
  std::vector<double> a = random_matrix<double>(30, 20, 30, 3), t(400), q(900);
  const auto opt = [](qr::algorithm algo, qr::target on) {
    qr::options o;
    o.full_t = true;
    o.algo = algo;
    o.on = on;
    return o;
  };
  CHECK(invalid_message([&] { qr::choose(20, 30, opt(qr::algorithm::automatic, qr::target::cpu)); })
            .find("full T needs m >= n") != std::string::npos);
  CHECK(invalid_message([&] { qr::choose(30, 20, opt(qr::algorithm::tile, qr::target::cpu)); })
            .find("full_t with algorithm tile") != std::string::npos);
  CHECK(invalid_message([&] { qr::choose(30, 20, opt(qr::algorithm::automatic, qr::target::hybrid)); })
            .find("full_t with target hybrid") != std::string::npos);
  const qr::choice c = qr::choose(30, 20, opt(qr::algorithm::automatic, qr::target::cpu));
  CHECK(c.algo == qr::algorithm::blocked);
  CHECK(c.reason.find("full T") != std::string::npos);
  if (qr::gpu_available()) {  // wider panels with the full T
    const qr::choice g = qr::choose(8192, 8192, opt(qr::algorithm::automatic, qr::target::automatic));
    CHECK(g.on == qr::target::gpu);
    CHECK(g.nb == qr::default_full_t_nb(8192));
  }

  qr::options plain;
  plain.on = qr::target::cpu;
  std::vector<double> b(a);
  auto g = qr::factorize(qr::host(b.data(), 30, 20, 30), plain);
  CHECK(invalid_message([&] { g.copy_t(qr::host(t.data(), 20, 20, 20)); }).find("options::full_t") != std::string::npos);

  auto f = qr::factorize(qr::host(a.data(), 30, 20, 30), opt(qr::algorithm::automatic, qr::target::cpu));
  CHECK(invalid_message([&] { f.copy_t(qr::host(t.data(), 19, 20, 20)); }).find("T.m = 19") != std::string::npos);
  CHECK(invalid_message([&] { f.copy_s(qr::host(q.data(), 30, 21, 30)); }).find("S.n = 21") != std::string::npos);
  CHECK(invalid_message([&] { f.form_q_block(25, 0, qr::host(q.data(), 6, 3, 6)); }).find("r0 + Qb.m = 31") !=
        std::string::npos);
  CHECK(invalid_message([&] { f.form_q_block(-1, 0, qr::host(q.data(), 6, 3, 6)); }).find("r0 = -1") !=
        std::string::npos);
  CHECK(invalid_message([&] {
          f.apply_q_block(qr::trans::no_trans, 0, 0, 5, 4, qr::host<const double>(q.data(), 5, 2, 5),
                          qr::host(t.data(), 5, 2, 5));
        }).find("X.m = 5: must be cols (= 4)") != std::string::npos);
  q[1] = std::nan("");
  CHECK(invalid_message([&] {
          f.apply_q_block(qr::trans::no_trans, 0, 0, 5, 4, qr::host<const double>(q.data(), 4, 2, 4),
                          qr::host(t.data(), 5, 2, 5));
        }).find("NaN") != std::string::npos);
  std::vector<double> bad(a);
  bad[7] = INFINITY;
  CHECK(invalid_message([&] {
          qr::factorize(qr::host(bad.data(), 30, 20, 30), opt(qr::algorithm::automatic, qr::target::cpu));
        }).find("Inf") != std::string::npos);
}
