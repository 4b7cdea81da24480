// tessera_qr_bench: square QR factorization, Tessera's tile QR on the CPU workers beside LAPACK
// GEQRF (OpenBLAS on all cores), in one run on the same matrices.
//
//   tessera_qr_bench [--sizes 2048,4096,8192,16384] [--precision d|s] [--repeat 3] [--nb 256]
//                    [--ib 32] [--threads N] [--json]
//
// Each contestant factors the same random n x n matrix (uniform in [-1, 1]) from column-major
// storage; its setup (copies, allocation, workspace queries) is outside the timing. The tile
// timing includes the conversion to tiles, as a column-major caller would pay it. Figures are
// medians of --repeat runs, GFLOP/s by LAWN 41 (4/3 n^3 + 2 n^2 + 14/3 n for n x n).
// Contestants are a list: the GPU issue adds cuSOLVER and the gpu/hybrid tile QR beside these.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <lapacke.h>

#include "tessera/qr.hpp"
#include "tessera/sched.hpp"

extern "C" {
char* openblas_get_config(void);
char* openblas_get_corename(void);
}

namespace {

struct options {
  std::vector<int> sizes{2048, 4096, 8192, 16384};
  std::string precision = "d";
  int repeat = 3, nb = 256, ib = 32;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  bool json = false;
};

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One side of the comparison: times one factorization of the n x n column-major a.
template <class T>
struct contestant {
  std::string name;
  std::function<double(const std::vector<T>& a, int n)> time_one;
};

template <class T>
lapack_int lapack_geqrf(int m, int n, T* a, int lda, T* tau, T* work, lapack_int lwork) {
  if constexpr (std::is_same_v<T, float>) return LAPACKE_sgeqrf_work(LAPACK_COL_MAJOR, m, n, a, lda, tau, work, lwork);
  else return LAPACKE_dgeqrf_work(LAPACK_COL_MAJOR, m, n, a, lda, tau, work, lwork);
}

template <class T>
contestant<T> tessera_cpu(tessera::runtime& rt, const options& o) {
  return {"tessera tile (cpu, " + std::to_string(rt.workers()) + " workers)",
          [&rt, o](const std::vector<T>& a, int n) {
            tessera::qr::qr_factors<T> f(rt, n, n, o.nb, o.ib);
            std::fill_n(f.a().data(), f.a().size(), T(0));   // first touch outside the timing
            tessera::qr::blas_threads single(1);
            const auto t0 = std::chrono::steady_clock::now();
            tessera::qr::to_tiles_async(rt, a.data(), n, f.a(), f.ha(), "A");
            tessera::qr::geqrf_async(rt, f);
            rt.wait_all();
            return seconds_since(t0);
          }};
}

template <class T>
contestant<T> lapack() {
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  return {"LAPACK geqrf (OpenBLAS, " + std::to_string(cores) + " threads)",
          [cores](const std::vector<T>& a, int n) {
            std::vector<T> w(a), tau(static_cast<std::size_t>(n));
            T query = 0;
            lapack_geqrf<T>(n, n, w.data(), n, tau.data(), &query, -1);
            std::vector<T> work(std::size_t(query) + 1);
            tessera::qr::blas_threads all(cores);
            const auto t0 = std::chrono::steady_clock::now();
            const lapack_int info = lapack_geqrf<T>(n, n, w.data(), n, tau.data(), work.data(),
                                                    lapack_int(work.size()));
            const double s = seconds_since(t0);
            if (info != 0) throw std::runtime_error("LAPACK geqrf failed: info = " + std::to_string(info));
            return s;
          }};
}

struct result_row {
  int n;
  std::vector<double> seconds;   // median per contestant
};

template <class T>
int run(const options& o) {
  tessera::runtime rt({.workers = o.threads});
  tessera::qr::qr_factors<T>(rt, 1, 1, o.nb, o.ib);   // bad nb/ib fail here, before any output
  // The baseline last: ratios are against it.
  std::vector<contestant<T>> contestants{tessera_cpu<T>(rt, o), lapack<T>()};
  const std::size_t base = contestants.size() - 1;

  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const char* prec = std::is_same_v<T, float> ? "single" : "double";
  if (!o.json) {
    std::printf("tessera_qr_bench: %s, %u cores; %s (core %s)%s%s\n", cpu_model().c_str(), cores,
                openblas_get_config(), openblas_get_corename(), coretype ? ", OPENBLAS_CORETYPE=" : "",
                coretype ? coretype : "");
    std::printf("%s precision GEQRF n x n, nb %d, ib %d, median of %d runs, GFLOP/s by LAWN 41\n\n",
                prec, o.nb, o.ib, o.repeat);
    std::printf("%7s", "n");
    for (const auto& c : contestants) std::printf(" | %-36s", c.name.c_str());
    std::printf(" | tile / LAPACK\n%7s", "");
    for (std::size_t i = 0; i < contestants.size(); ++i) std::printf(" | %12s %12s %10s", "seconds", "GFLOP/s", "");
    std::printf(" |\n");
  }

  std::vector<result_row> rows;
  for (int n : o.sizes) {
    std::mt19937_64 gen(std::uint64_t(n) * 7919u + 1);
    std::uniform_real_distribution<T> dist(T(-1), T(1));
    std::vector<T> a(std::size_t(n) * std::size_t(n));
    for (T& x : a) x = dist(gen);
    // Runs interleaved (A B A B ...), so a load change on a shared machine hits both sides alike.
    std::vector<std::vector<double>> runs(contestants.size());
    for (int r = 0; r < o.repeat; ++r)
      for (std::size_t c = 0; c < contestants.size(); ++c) runs[c].push_back(contestants[c].time_one(a, n));
    result_row row{n, {}};
    for (const auto& r : runs) row.seconds.push_back(median(r));
    const double flops = tessera::qr::geqrf_flops(n, n);
    if (!o.json) {
      std::printf("%7d", n);
      for (double s : row.seconds) std::printf(" | %12.4f %12.2f %10s", s, flops / s * 1e-9, "");
      std::printf(" | %.2fx\n", row.seconds[base] / row.seconds[0]);
      std::fflush(stdout);
    }
    rows.push_back(row);
  }

  if (o.json) {
    std::printf("{\"cpu\": \"%s\", \"cores\": %u, \"openblas\": \"%s\", \"openblas_coretype\": %s%s%s, "
                "\"precision\": \"%s\", \"nb\": %d, \"ib\": %d, \"repeat\": %d, \"results\": [",
                cpu_model().c_str(), cores, openblas_get_config(), coretype ? "\"" : "",
                coretype ? coretype : "null", coretype ? "\"" : "", o.precision.c_str(), o.nb, o.ib,
                o.repeat);
    bool first = true;
    for (const auto& row : rows) {
      const double flops = tessera::qr::geqrf_flops(row.n, row.n);
      for (std::size_t i = 0; i < contestants.size(); ++i) {
        std::printf("%s{\"n\": %d, \"contestant\": \"%s\", \"seconds\": %.6g, \"gflops\": %.6g}",
                    first ? "" : ", ", row.n, contestants[i].name.c_str(), row.seconds[i],
                    flops / row.seconds[i] * 1e-9);
        first = false;
      }
    }
    std::printf("]}\n");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  CLI::App app{"tessera_qr_bench: tile QR on the CPUs beside LAPACK GEQRF (OpenBLAS)"};
  app.option_defaults()->always_capture_default();
  app.add_option("--sizes", o.sizes, "matrix orders n (n x n)")->delimiter(',')->check(CLI::PositiveNumber);
  app.add_option("--precision", o.precision, "s or d")->check(CLI::IsMember({"s", "d"}));
  app.add_option("--repeat", o.repeat, "runs per size and contestant (median)")->check(CLI::PositiveNumber);
  app.add_option("--nb", o.nb, "tile size");
  app.add_option("--ib", o.ib, "inner block size (divides nb)");
  app.add_option("--threads", o.threads, "tile QR workers (default: all cores)")->check(CLI::PositiveNumber);
  app.add_flag("--json", o.json, "print one JSON object");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    return o.precision == "s" ? run<float>(o) : run<double>(o);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "tessera_qr_bench: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera_qr_bench: failed: %s\n", e.what());
    return 1;
  }
}
