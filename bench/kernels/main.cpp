// tessera_kernels_bench: one-core rate of each CPU tile kernel at the tile-QR shapes (nb x nb
// tiles, inner block ib, side left / Q^T for the updates) beside one-core GEMM of the same order.
//
//   tessera_kernels_bench [--nb 256] [--ib 32] [--precision d|s] [--repeat 15] [--json]
//
// Each figure is the median (and min) of --repeat timed calls after two warm-ups; inputs are
// restored before every call, outside the timed region. OpenBLAS is held to one thread.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <latch>
#include <limits>
#include <random>
#include <string>
#include <tessera/kernels_cpu.hpp>
#include <tessera/kernels_cpu/blas.hpp>
#include <thread>
#include <type_traits>
#include <vector>

#include "../common/machine.hpp"
#include "flops.hpp"
#include "tsmqr_gemm.hpp"

// OpenBLAS extensions, declared here so any cblas.h will do.
extern "C" {
void openblas_set_num_threads(int num_threads);
char* openblas_get_config(void);
char* openblas_get_corename(void);
}

namespace {

using namespace tessera::kernels;
using namespace tessera::bench;
namespace blas = tessera::blas;

struct options {
  int nb = 256, ib = 32, repeat = 15, threads = 1;
  std::string precision = "d";
  bool json = false;
};

struct row {
  std::string kernel, variant, flop_formula;
  double flops, median_s, min_s;
};

// Times body() --repeat times (after two warm-ups), calling reset() untimed before each call.
std::pair<double, double> time_it(int repeat, const std::function<void()>& reset,
                                  const std::function<void()>& body) {
  std::vector<double> s;
  for (int r = -2; r < repeat; ++r) {
    reset();
    const auto t0 = std::chrono::steady_clock::now();
    body();
    const auto t1 = std::chrono::steady_clock::now();
    if (r >= 0) s.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  return {median(s), *std::min_element(s.begin(), s.end())};
}

template <class T>
std::vector<row> run(const options& o) {
  const int nb = o.nb, ib = o.ib;
  const std::size_t tile = static_cast<std::size_t>(nb) * nb;
  std::mt19937_64 gen(2024);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  auto random_tile = [&] {
    std::vector<T> t(tile);
    for (auto& x : t) x = T(u(gen));
    return t;
  };
  auto copy = [](const std::vector<T>& from, std::vector<T>& to) {
    std::copy(from.begin(), from.end(), to.begin());
  };
  std::vector<T> work(core_workspace_size(nb, ib));
  std::vector<T> Tf(static_cast<std::size_t>(ib) * nb), Tts(Tf.size());
  std::vector<row> rows;
  const double n = nb;

  {  // GEMM C += A B, the yardstick
    const auto A = random_tile(), B = random_tile();
    auto C = random_tile();
    const auto [med, mn] = time_it(
        o.repeat, [] {}, [&] {
          blas::gemm(CblasNoTrans, CblasNoTrans, nb, nb, nb, T(1), A.data(), nb, B.data(), nb, T(1),
                     C.data(), nb);
        });
    rows.push_back({"gemm", "cblas", "2 nb^3", flops_gemm(n, n, n), med, mn});
  }

  // GEQRT of a random tile; its V and T feed ORMQR, its R feeds TSQRT.
  const auto A0 = random_tile();
  auto A = A0;
  {
    const auto [med, mn] = time_it(
        o.repeat, [&] { copy(A0, A); },
        [&] { core_geqrt<T>(nb, nb, ib, A.data(), nb, Tf.data(), ib, work.data()); });
    rows.push_back(
        {"geqrt", "core", "LAWN41 GEQRF: 4/3 nb^3 + 2 nb^2 + 14/3 nb", flops_geqrt(n), med, mn});
    const auto [lmed, lmn] = time_it(
        o.repeat, [&] { copy(A0, A); },
        [&] { blas::geqrt(nb, nb, ib, A.data(), nb, Tf.data(), ib, work.data()); });
    rows.push_back({"geqrt", "LAPACK GEQRT", "LAWN41 GEQRF: 4/3 nb^3 + 2 nb^2 + 14/3 nb",
                    flops_geqrt(n), lmed, lmn});
  }
  {  // ORMQR: C := Q^T C, the row update of tile QR
    const auto C0 = random_tile();
    auto C = C0;
    const auto [med, mn] = time_it(
        o.repeat, [&] { copy(C0, C); },
        [&] {
          core_ormqr<T>(side::left, trans::trans, nb, nb, nb, ib, A.data(), nb, Tf.data(), ib,
                        C.data(), nb, work.data());
        });
    rows.push_back({"ormqr", "core", "LAWN41 ORMQR (m=n=k=nb): 2 nb^3 + 3 nb^2",
                    flops_ormqr(n, n, n), med, mn});
    const auto [lmed, lmn] = time_it(
        o.repeat, [&] { copy(C0, C); },
        [&] {
          blas::gemqrt('L', 'T', nb, nb, nb, ib, A.data(), nb, Tf.data(), ib, C.data(), nb,
                        work.data());
        });
    rows.push_back({"ormqr", "LAPACK GEMQRT", "LAWN41 ORMQR (m=n=k=nb): 2 nb^3 + 3 nb^2",
                    flops_ormqr(n, n, n), lmed, lmn});
  }
  // TSQRT of R over a random tile; its V and T feed TSMQR.
  const auto R0 = A;  // upper triangle is R (TSQRT reads only that)
  auto R = R0;
  const auto B0 = random_tile();
  auto V = B0;
  {
    const auto reset = [&] {
      copy(R0, R);
      copy(B0, V);
    };
    const auto [lmed, lmn] = time_it(o.repeat, reset, [&] {
      blas::tpqrt(nb, nb, 0, ib, R.data(), nb, V.data(), nb, Tts.data(), ib, work.data());
    });
    const auto [med, mn] = time_it(o.repeat, reset, [&] {
      core_tsqrt<T>(nb, nb, ib, R.data(), nb, V.data(), nb, Tts.data(), ib, work.data());
    });
    rows.push_back({"tsqrt", "core", "2 nb^3", flops_tsqrt(n, n), med, mn});
    rows.push_back({"tsqrt", "LAPACK TPQRT", "2 nb^3", flops_tsqrt(n, n), lmed, lmn});
  }
  {  // TSMQR: [A1; A2] := Q^T [A1; A2], the trailing update of tile QR
    const auto A10 = random_tile(), A20 = random_tile();
    auto A1 = A10, A2 = A20;
    const auto reset = [&] {
      copy(A10, A1);
      copy(A20, A2);
    };
    const auto [med, mn] = time_it(o.repeat, reset, [&] {
      core_tsmqr<T>(side::left, trans::trans, nb, nb, nb, nb, nb, ib, A1.data(), nb, A2.data(), nb,
                    V.data(), nb, Tts.data(), ib, work.data());
    });
    rows.push_back({"tsmqr", "core=LAPACK TPMQRT", "4 nb^3", flops_tsmqr(n, n, n), med, mn});
    const auto ref1 = A1, ref2 = A2;

    std::vector<T> gwork(tsmqr_gemm_workspace(nb, nb));
    const auto [gmed, gmn] = time_it(o.repeat, reset, [&] {
      tsmqr_left_trans_gemm<T>(nb, nb, nb, ib, A1.data(), nb, A2.data(), nb, V.data(), nb,
                               Tts.data(), ib, gwork.data());
    });
    // Only a right answer counts: relative difference to TPMQRT's result.
    double d = 0, s = 0;
    for (std::size_t i = 0; i < tile; ++i) {
      d += std::pow(double(A1[i]) - double(ref1[i]), 2) +
           std::pow(double(A2[i]) - double(ref2[i]), 2);
      s += std::pow(double(ref1[i]), 2) + std::pow(double(ref2[i]), 2);
    }
    const double rel = std::sqrt(d / s);
    const bool ok = rel < 100.0 * nb * std::numeric_limits<T>::epsilon();
    rows.push_back({"tsmqr", ok ? "gemm-left-looking" : "gemm-left-looking(WRONG)", "4 nb^3",
                    flops_tsmqr(n, n, n), gmed, gmn});
    if (!ok) std::fprintf(stderr, "tsmqr gemm-left-looking differs from TPMQRT: %.3g\n", rel);
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"One-core rates of the CPU tile kernels beside one-core GEMM"};
  options o;
  app.add_option("--nb", o.nb, "Tile order")->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--ib", o.ib, "Inner block")->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--precision", o.precision, "s or d")
      ->check(CLI::IsMember({"s", "d"}))
      ->capture_default_str();
  app.add_option("--repeat", o.repeat, "Timed runs per kernel (median reported)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--threads", o.threads, "Threads running the kernels at once, each on its own tiles")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_flag("--json", o.json, "One JSON object per line");
  CLI11_PARSE(app, argc, argv);
  o.ib = std::min(o.ib, o.nb);

  openblas_set_num_threads(1);  // one core: the runtime runs one kernel per worker thread
  const std::string cpu = cpu_model();
  const unsigned cores = std::thread::hardware_concurrency();
  const std::string blas = std::string(openblas_get_config()) + " core=" + openblas_get_corename();

  // --threads N: N copies of the whole run at once, each on its own tiles (a worker per core, as
  // in the runtime); per kernel, the median over threads of each thread's median.
  std::vector<std::vector<row>> per_thread(static_cast<std::size_t>(o.threads));
  {
    std::latch start(o.threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < o.threads; ++t)
      pool.emplace_back([&, t] {
        start.arrive_and_wait();
        per_thread[static_cast<std::size_t>(t)] = o.precision == "s" ? run<float>(o) : run<double>(o);
      });
    for (auto& th : pool) th.join();
  }
  std::vector<row> rows = per_thread.front();
  for (std::size_t k = 0; k < rows.size(); ++k) {
    std::vector<double> med, mins;
    for (const auto& pt : per_thread) med.push_back(pt[k].median_s), mins.push_back(pt[k].min_s);
    rows[k].median_s = median(med);
    rows[k].min_s = *std::min_element(mins.begin(), mins.end());
  }
  const double gemm_rate = rows.front().flops / rows.front().median_s;

  if (o.json) {
    for (const auto& r : rows)
      std::printf(
          "{\"bench\":\"kernels\",\"kernel\":\"%s\",\"variant\":\"%s\",\"precision\":\"%s\","
          "\"nb\":%d,\"ib\":%d,\"threads\":%d,\"repeat\":%d,\"flops\":%.0f,\"flop_formula\":\"%s\","
          "\"median_ms\":%.4f,\"min_ms\":%.4f,\"gflops\":%.2f,\"of_gemm\":%.3f,"
          "\"cpu\":\"%s\",\"cores\":%u,\"blas\":\"%s\"}\n",
          r.kernel.c_str(), r.variant.c_str(), o.precision.c_str(), o.nb, o.ib, o.threads, o.repeat, r.flops,
          r.flop_formula.c_str(), r.median_s * 1e3, r.min_s * 1e3, r.flops / r.median_s * 1e-9,
          r.flops / r.median_s / gemm_rate, cpu.c_str(), cores, blas.c_str());
    return 0;
  }
  std::printf("CPU: %s (%u cores seen, 1 BLAS thread, %d kernel thread%s at once)\nBLAS: %s\n", cpu.c_str(),
              cores, o.threads, o.threads > 1 ? "s" : "", blas.c_str());
  std::printf("precision %s, nb = %d, ib = %d, median (min) of %d runs; side left, Q^T\n\n",
              o.precision.c_str(), o.nb, o.ib, o.repeat);
  std::printf("%-7s %-19s %10s %10s %10s %9s %7s  %s\n", "kernel", "variant", "Mflop", "median ms",
              "min ms", "GFLOP/s", "of GEMM", "flop count");
  for (const auto& r : rows)
    std::printf("%-7s %-19s %10.2f %10.3f %10.3f %9.2f %6.0f%%  %s\n", r.kernel.c_str(),
                r.variant.c_str(), r.flops * 1e-6, r.median_s * 1e3, r.min_s * 1e3,
                r.flops / r.median_s * 1e-9, 100 * r.flops / r.median_s / gemm_rate,
                r.flop_formula.c_str());
  return 0;
}
