// tessera_qr_update: QR updating (tessera/qr/update.hpp) on a random least-squares problem: a
// sequence of updates given on the command line or generated, each timed; --check compares the
// final factors with the matrix the updates made, and checks the least-squares solution. Exit
// status: 0 done, 1 a check or the run failed, 2 bad arguments, 3 not enough memory.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <new>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/kernels_cpu/blas.hpp"
#include "tessera/qr/gpu.hpp"
#include "tessera/qr/update.hpp"
#include "tessera/sched/memory.hpp"
#include "tessera/tools/cli.hpp"

namespace {

using tessera::tools::at_least;
using tessera::tools::positive_real;

namespace qr = tessera::qr;

struct config {
  int rows = 4000, cols = 2000, nrhs = 1, nb = 0;
  std::string precision = "d", device = "auto", q = "full", ops = "random:10", trace;
  bool check = false, json = false;
  unsigned long long seed = 1;
};

struct update_op {
  std::string kind;  // dc, ic, ir, dr, rk
  int k = 0, p = 0;
  double seconds = 0;
};

const char* long_name(const std::string& k) {
  if (k == "dc") return "delete_columns";
  if (k == "ic") return "insert_columns";
  if (k == "ir") return "insert_rows";
  if (k == "dr") return "delete_rows";
  return "rank_update";
}

// "dc:K:P,ic:K:P,ir:K:P,dr:K:P,rk:R" or "random:N".
std::vector<update_op> parse_ops(const std::string& s) {
  std::vector<update_op> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::vector<std::string> f;
    std::stringstream is(item);
    std::string x;
    while (std::getline(is, x, ':')) f.push_back(x);
    auto num = [&](const std::string& v) {
      try {
        std::size_t used = 0;
        const int r = std::stoi(v, &used);
        if (used != v.size()) throw std::invalid_argument(v);
        return r;
      } catch (const std::exception&) {
        throw std::invalid_argument("--ops " + item + ": " + v + " is not a number");
      }
    };
    update_op o;
    if (!f.empty()) o.kind = f[0];
    if (o.kind == "rk" && f.size() == 2) {
      o.p = num(f[1]);
    } else if ((o.kind == "dc" || o.kind == "ic" || o.kind == "ir" || o.kind == "dr") && f.size() == 3) {
      o.k = num(f[1]);
      o.p = num(f[2]);
    } else if (o.kind == "random" && f.size() == 2) {
      o.p = num(f[1]);
      if (o.p < 0) throw std::invalid_argument("--ops " + item + ": a count >= 0");
    } else {
      throw std::invalid_argument("--ops " + item +
                                  ": expected dc:K:P, ic:K:P, ir:K:P, dr:K:P, rk:R or random:N");
    }
    out.push_back(o);
  }
  return out;
}

template <class T>
struct matrix {
  int r = 0, c = 0;
  std::vector<T> a;
  T& operator()(int i, int j) { return a[i + std::size_t(j) * r]; }
  qr::matrix_ref<const T> cref() const { return {a.data(), r, c, std::max(r, 1), qr::memory::host}; }
};

template <class T>
matrix<T> random_matrix(int r, int c, std::mt19937_64& g) {
  matrix<T> m{r, c, std::vector<T>(std::size_t(std::max(r, 1)) * std::max(c, 1))};
  std::uniform_real_distribution<double> u(-1, 1);
  for (auto& x : m.a) x = T(u(g));
  return m;
}

struct outcome {
  std::vector<update_op> done;
  double setup_seconds = 0, residual_qr = -1, residual_orth = -1, residual_ls = -1;
  bool checked = false, passed = true;
  int rows = 0, cols = 0;
};

template <class T>
outcome run(const config& c, std::vector<update_op> ops) {
  using clock = std::chrono::steady_clock;
  std::mt19937_64 g(c.seed);
  auto A = random_matrix<T>(c.rows, c.cols, g);
  auto B = random_matrix<T>(c.rows, c.nrhs, g);
  qr::update_options o;
  o.on = c.device == "cpu" ? qr::target::cpu : c.device == "gpu" ? qr::target::gpu : qr::target::automatic;
  o.q = c.q == "none" ? qr::q_mode::none : c.q == "thin" ? qr::q_mode::thin : qr::q_mode::full;
  o.nb = c.nb;
  outcome out;
  auto t0 = clock::now();
  auto u = qr::updatable<T>::from_matrix(A.cref(), B.cref(), o);
  u.wait();
  out.setup_seconds = std::chrono::duration<double>(clock::now() - t0).count();
  // random:N expands into N updates of a few percent of the current shape.
  std::vector<update_op> seq;
  for (auto& op : ops) {
    if (op.kind != "random") {
      seq.push_back(op);
      continue;
    }
    for (int i = 0; i < op.p; ++i) seq.push_back({"random", 0, 0, 0});
  }
  // The explicit A, B only when checking (the updates do not need them).
  for (auto& op : seq) {
    const int n = u.rows(), m = u.cols();
    if (op.kind == "random") {
      const char* kinds[] = {"dc", "ic", "ir", "dr", "rk"};
      const bool full = u.mode() == qr::q_mode::full;
      op.kind = kinds[std::uniform_int_distribution<int>(0, full ? 4 : 2)(g) * (full ? 1 : 1)];
      if (!full && op.kind == "ic") op.kind = "ir";
      auto draw = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, std::max(lo, hi))(g); };
      const int pc = std::max(1, m / 20), pr = std::max(1, n / 20);
      if ((op.kind == "ic" || op.kind == "dr") && n - m < 1) op.kind = "ir";
      if (op.kind == "dc" && m < 2) op.kind = full ? "ic" : "ir";
      if (op.kind == "dc") { op.p = draw(1, std::min(pc, m - 1)); op.k = draw(0, m - op.p); }
      if (op.kind == "ic") { op.p = draw(1, std::min(pc, n - m)); op.k = draw(0, m); }
      if (op.kind == "ir") { op.p = draw(1, pr); op.k = draw(0, n); }
      if (op.kind == "dr") { op.p = draw(1, std::min(pr, n - m)); op.k = draw(0, n - op.p); }
      if (op.kind == "rk") { op.p = draw(1, std::min(8, m)); }
    }
    matrix<T> U, V, BU;
    if (op.kind == "ic") U = random_matrix<T>(n, op.p, g);
    if (op.kind == "ir") { U = random_matrix<T>(op.p, m, g); BU = random_matrix<T>(op.p, c.nrhs, g); }
    if (op.kind == "rk") { U = random_matrix<T>(n, op.p, g); V = random_matrix<T>(m, op.p, g); }
    t0 = clock::now();
    if (op.kind == "dc") u.delete_columns(op.k, op.p);
    else if (op.kind == "ic") u.insert_columns(op.k, U.cref());
    else if (op.kind == "ir") u.insert_rows(op.k, U.cref(), BU.cref());
    else if (op.kind == "dr") u.delete_rows(op.k, op.p);
    else u.rank_update(U.cref(), V.cref());
    u.wait();
    op.seconds = std::chrono::duration<double>(clock::now() - t0).count();
    out.done.push_back(op);
    if (c.check) {  // the same change to the explicit A and B
      matrix<T> A2;
      if (op.kind == "dc") {
        A2 = {n, m - op.p, std::vector<T>(std::size_t(n) * (m - op.p))};
        for (int j = 0; j < A2.c; ++j)
          for (int i = 0; i < n; ++i) A2(i, j) = A(i, j < op.k ? j : j + op.p);
      } else if (op.kind == "ic") {
        A2 = {n, m + op.p, std::vector<T>(std::size_t(n) * (m + op.p))};
        for (int j = 0; j < A2.c; ++j)
          for (int i = 0; i < n; ++i)
            A2(i, j) = j < op.k ? A(i, j) : j < op.k + op.p ? U(i, j - op.k) : A(i, j - op.p);
      } else if (op.kind == "ir" || op.kind == "dr") {
        const int n2 = op.kind == "ir" ? n + op.p : n - op.p;
        A2 = {n2, m, std::vector<T>(std::size_t(n2) * m)};
        for (int j = 0; j < m; ++j)
          for (int i = 0; i < n2; ++i)
            A2(i, j) = op.kind == "dr" ? A(i < op.k ? i : i + op.p, j)
                       : i < op.k       ? A(i, j)
                       : i < op.k + op.p ? U(i - op.k, j)
                                         : A(i - op.p, j);
      } else {
        A2 = A;
        tessera::blas::gemm(CblasNoTrans, CblasTrans, n, m, op.p, T(1), U.a.data(), n, V.a.data(), m,
                            T(1), A2.a.data(), n);
      }
      A = std::move(A2);
      if ((op.kind == "ir" || op.kind == "dr") && c.nrhs > 0) {  // B's rows go with A's
        const int n2 = op.kind == "ir" ? n + op.p : n - op.p;
        matrix<T> B2{n2, c.nrhs, std::vector<T>(std::size_t(n2) * c.nrhs)};
        for (int j = 0; j < c.nrhs; ++j)
          for (int i = 0; i < n2; ++i)
            B2(i, j) = op.kind == "dr" ? B(i < op.k ? i : i + op.p, j)
                       : i < op.k       ? B(i, j)
                       : i < op.k + op.p ? BU(i - op.k, j)
                                         : B(i - op.p, j);
        B = std::move(B2);
      }
    }
  }
  out.rows = u.rows();
  out.cols = u.cols();
  if (c.check) {
    const int n = u.rows(), m = u.cols();
    const double e = double(tessera::blas::lamch<T>('E'));
    std::vector<T> R(std::size_t(m) * m);
    u.copy_r(qr::host(R.data(), m, m, m));
    const double an = tessera::blas::lange('F', n, m, A.a.data(), n);
    if (u.mode() != qr::q_mode::none) {
      const int qc = u.mode() == qr::q_mode::full ? n : m;
      std::vector<T> Q(std::size_t(n) * qc), I(std::size_t(qc) * qc, T(0));
      u.copy_q(qr::host(Q.data(), n, qc, n));
      auto D = A.a;
      tessera::blas::gemm(CblasNoTrans, CblasNoTrans, n, m, m, T(-1), Q.data(), n, R.data(), m, T(1),
                          D.data(), n);
      out.residual_qr = double(tessera::blas::lange('F', n, m, D.data(), n)) / (an * n * e);
      for (int i = 0; i < qc; ++i) I[i + std::size_t(i) * qc] = T(1);
      tessera::blas::syrk(CblasUpper, CblasTrans, qc, n, T(-1), Q.data(), n, T(1), I.data(), qc);
      out.residual_orth = double(tessera::blas::lansy('F', 'U', qc, I.data(), qc)) / (n * e);
    } else {  // Q-less: R^T R against A^T A
      std::vector<T> G(std::size_t(m) * m);
      tessera::blas::syrk(CblasUpper, CblasTrans, m, n, T(1), A.a.data(), n, T(0), G.data(), m);
      tessera::blas::syrk(CblasUpper, CblasTrans, m, m, T(-1), R.data(), m, T(1), G.data(), m);
      out.residual_qr = double(tessera::blas::lansy('F', 'U', m, G.data(), m)) / (an * an * n * e);
    }
    if (c.nrhs > 0) {
      // The least-squares solution through Q^T B: ||A^T (B - A X)|| / (||A|| (||B - A X|| + ||A|| ||X||)
      // max(n, m, nrhs) eps), its backward error as LAPACK's xQRT17 measures it.
      std::vector<T> X(std::size_t(m) * c.nrhs), N(std::size_t(m) * c.nrhs);
      u.solve(qr::host(X.data(), m, c.nrhs, m));
      auto Res = B.a;
      tessera::blas::gemm(CblasNoTrans, CblasNoTrans, n, c.nrhs, m, T(-1), A.a.data(), n, X.data(), m, T(1),
                          Res.data(), n);
      tessera::blas::gemm(CblasTrans, CblasNoTrans, m, c.nrhs, n, T(1), A.a.data(), n, Res.data(), n, T(0),
                          N.data(), m);
      const double rn = tessera::blas::lange('F', n, c.nrhs, Res.data(), n),
                   xn = tessera::blas::lange('F', m, c.nrhs, X.data(), m),
                   nn = tessera::blas::lange('F', m, c.nrhs, N.data(), m);
      out.residual_ls = nn / (an * (rn + an * xn) * std::max({n, m, c.nrhs}) * e);
    }
    out.checked = true;
    out.passed = out.residual_qr < 60 && out.residual_orth < 60 && out.residual_ls < 60;
  }
  return out;
}

void write_trace(const std::string& file, const outcome& r) {
  std::ofstream f(file);
  f << "{\"traceEvents\":[\n";
  double ts = 0;
  for (std::size_t i = 0; i < r.done.size(); ++i) {
    const auto& o = r.done[i];
    f << (i ? ",\n" : "") << "{\"name\":\"" << long_name(o.kind) << "\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":"
      << ts << ",\"dur\":" << o.seconds * 1e6 << ",\"args\":{\"k\":" << o.k << ",\"p\":" << o.p << "}}";
    ts += o.seconds * 1e6;
  }
  f << "\n]}\n";
}

}  // namespace

int main(int argc, char** argv) {
  config c;
  CLI::App app{"tessera_qr_update: QR updating on a random least-squares problem"};
  app.add_option("--rows", c.rows, "rows of A (the seed's n)")->check(CLI::Range(1, 1 << 30));
  app.add_option("--cols", c.cols, "columns of A (the seed's m), <= rows")->check(CLI::Range(1, 1 << 30));
  app.add_option("--nrhs", c.nrhs, "right-hand sides")->check(CLI::Range(0, 1 << 20));
  app.add_option("--precision", c.precision, "s (float) or d (double)")->check(CLI::IsMember({"s", "d"}));
  app.add_option("--device", c.device, "auto (the GPU when there is one), cpu or gpu")
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}));
  app.add_option("--q", c.q, "Q kept: full (every update), thin or none (delete columns, insert rows)")
      ->check(CLI::IsMember({"full", "thin", "none"}));
  app.add_option("--ops", c.ops,
                 "updates, comma-separated: dc:K:P (delete P columns at K), ic:K:P (insert P random "
                 "columns before K), ir:K:P (insert P random rows at K), dr:K:P (delete P rows at "
                 "K), rk:R (add a random rank-R U V^T), random:N (N random updates)");
  app.add_option("--nb", c.nb, "panel width of the block Householder updates (0: 64)")->check(CLI::Range(0, 4096));
  app.add_option("--seed", c.seed, "random seed");
  app.add_flag("--check", c.check, "check ||A - QR||/(||A|| n eps), ||I - Q^T Q||/(n eps) and the least-squares solution's backward error (xQRT17's ratio) < 60 at the end");
  app.add_flag("--json", c.json, "print one JSON object instead of text");
  app.add_option("--trace", c.trace, "write the updates' spans as a Chrome trace (FILE.json)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return tessera::tools::parse_failed(app, e);
  }
  return tessera::tools::run_with_exit_codes("tessera_qr_update", [&] {
    if (c.cols > c.rows) throw std::invalid_argument("--cols " + std::to_string(c.cols) + " > --rows " + std::to_string(c.rows));
    if (c.device == "gpu" && !qr::gpu_available())
      throw std::invalid_argument("--device gpu: no CUDA device here (or Tessera built without CUDA)");
    if (!c.trace.empty() && !std::ofstream(c.trace))
      throw std::invalid_argument("--trace " + c.trace + ": cannot write to this file");
    const auto ops = parse_ops(c.ops);
    const bool gpu = c.device == "gpu" || (c.device == "auto" && qr::gpu_available());
    if (!c.json)
      std::printf("tessera_qr_update: %d x %d %s, %d right-hand sides, Q %s, on %s\n", c.rows, c.cols,
                  c.precision == "s" ? "single" : "double", c.nrhs, c.q.c_str(),
                  gpu ? ("the GPU (" + qr::gpu_name() + ")").c_str() : "the CPUs");
    const outcome r = c.precision == "s" ? run<float>(c, ops) : run<double>(c, ops);
    if (!c.trace.empty()) write_trace(c.trace, r);
    double total = 0;
    for (const auto& o : r.done) total += o.seconds;
    if (c.json) {
      std::printf("{\"rows\":%d,\"cols\":%d,\"final_rows\":%d,\"final_cols\":%d,\"nrhs\":%d,\"precision\":\"%s\","
                  "\"device\":\"%s\",\"q\":\"%s\",\"setup_seconds\":%.6f,\"update_seconds\":%.6f,\"updates\":[",
                  c.rows, c.cols, r.rows, r.cols, c.nrhs, c.precision.c_str(), gpu ? "gpu" : "cpu", c.q.c_str(),
                  r.setup_seconds, total);
      for (std::size_t i = 0; i < r.done.size(); ++i)
        std::printf("%s{\"op\":\"%s\",\"k\":%d,\"p\":%d,\"seconds\":%.6f}", i ? "," : "",
                    long_name(r.done[i].kind), r.done[i].k, r.done[i].p, r.done[i].seconds);
      std::printf("]");
      if (r.checked)
        std::printf(",\"residual_qr\":%.3g,\"residual_orth\":%s,\"residual_ls\":%s,\"passed\":%s",
                    r.residual_qr, r.residual_orth >= 0 ? std::to_string(r.residual_orth).c_str() : "null",
                    r.residual_ls >= 0 ? std::to_string(r.residual_ls).c_str() : "null", r.passed ? "true" : "false");
      std::printf("}\n");
    } else {
      std::printf("factorization: %.4f s\n", r.setup_seconds);
      std::printf("%-16s %8s %8s %12s\n", "update", "k", "p", "seconds");
      for (const auto& o : r.done)
        std::printf("%-16s %8d %8d %12.6f\n", long_name(o.kind), o.k, o.p, o.seconds);
      std::printf("final A: %d x %d; updates took %.6f s in all\n", r.rows, r.cols, total);
      if (r.checked) {
        std::printf("check: ||A - QR||/(||A|| n eps) = %.3g", r.residual_qr);
        if (r.residual_orth >= 0) std::printf(", ||I - Q^T Q||/(n eps) = %.3g", r.residual_orth);
        if (r.residual_ls >= 0) std::printf(", least squares %.3g", r.residual_ls);
        std::printf(": %s\n", r.passed ? "passed" : "FAILED");
      }
    }
    return r.passed ? 0 : 1;
  });
}
