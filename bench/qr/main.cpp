// tessera_qr_bench: square QR factorization, Tessera's tile QR on the CPU workers beside LAPACK
// GEQRF (OpenBLAS on all cores), in one run on the same matrices.
//
//   tessera_qr_bench [--sizes 2048,4096,8192,16384] [--precision d|s] [--repeat 3] [--nb 256]
//                    [--ib 32] [--threads N] [--json] [--plot FILE.svg] [--trace FILE.json]
//                    [--max-cpu-n N] [--max-tile-gpu-n N] [--blocked-lookaheads 1,0] [--no-gpu]
//   (--help lists the rest)
//
// Each contestant factors the same random n x n matrix (uniform in [-1, 1]) from column-major
// storage; its setup (copies, allocation, workspace queries) is outside the timing. The tile
// timing includes the conversion to tiles, as a column-major caller would pay it. Figures are
// medians of --repeat runs, GFLOP/s by LAWN 41 (4/3 n^3 + 2 n^2 + 14/3 n for n x n).
// With a GPU (built with CUDA and a device present) the list grows: Tessera's tile hybrid (panels
// on the CPUs; lookahead 1, the seed's "GPU-only", and the tuned one), its blocked QR on the GPU
// from pinned host memory (one contestant per --blocked-lookaheads entry), the front door on a
// matrix already in device memory, cuSOLVER GEQRF twice (from and back to host memory, as
// Tessera's host times are; and on a matrix already on the device, as its own callers have it:
// the ratio column uses this one) and cuBLAS GEMM as the rate ceiling (2 n^3 flops). --plot FILE.svg draws GFLOP/s against n (the seed's Figure 7a).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>


#include "../common/machine.hpp"
#include "../common/svg_chart.hpp"
#include "tessera/tools/cli.hpp"
#include "tessera/kernels_cpu/blas.hpp"
#include "tessera/qr.hpp"
#include "tessera/sched.hpp"

#if TESSERA_BENCH_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include "../common/cusolver_geqrf.hpp"
#include "tessera/kernels_gpu/cublas.hpp"
#endif

extern "C" {
char* openblas_get_config(void);
char* openblas_get_corename(void);
}

namespace {

using tessera::bench::cpu_model;
using tessera::bench::median;

struct options {
  std::vector<int> sizes{2048, 4096, 8192, 16384};
  std::string precision = "d";
  int repeat = 3, nb = 256, ib = 32;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  bool json = false;
  int lookahead = -1;                // hybrid; -1: tessera::qr::default_lookahead
  int gpu_nb = 0;                    // tile size of the GPU contestants; 0: tessera_qr's default per n
  int blocked_nb = 0;                // panel width of the blocked GPU QR; 0: qr::default_blocked_nb per n
  int bulk_columns = tessera::qr::blocked_options{}.bulk_columns;    // blocked: see blocked_options
  int chunked_steps = tessera::qr::blocked_options{}.chunked_steps;
  std::vector<int> blocked_lookaheads{1, 0};  // one blocked contestant each; 0: default_blocked_lookahead
  int urgent_sms = -1;               // SMs reserved for the urgent stream; -1: gpu_runtime_options's
  int max_cpu_n = 16384;             // CPU-only contestants skip larger n (they take minutes there)
  int max_tile_gpu_n = 1 << 30;      // the tile gpu and hybrid modes skip larger n
  bool gpu = true;                   // GPU contestants when a device is present
  std::string plot;                  // SVG of GFLOP/s against n
  std::string trace;                 // trace of one more run of the largest n (hybrid, else cpu tile)
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One side of the comparison: times one factorization of the n x n column-major a.
template <class T>
struct contestant {
  std::string name;
  std::function<double(const std::vector<T>& a, int n)> time_one;
  int max_n = 1 << 30;      // larger n: skipped
  bool gemm_flops = false;  // rated by 2 n^3 (a GEMM reference), not the GEQRF count
};


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

#if TESSERA_BENCH_CUDA
void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// Tessera's tile QR on the CPU workers and the GPU; tiles pinned and allocated once per n.
template <class T>
contestant<T> tessera_gpu(tessera::runtime& rt, const options& o, int lookahead, const char* mode) {
  auto cache = std::make_shared<std::pair<int, std::unique_ptr<tessera::qr::qr_factors<T>>>>();
  const std::string nb_label = o.gpu_nb ? std::to_string(o.gpu_nb) : "per n";
  return {std::string("tessera tile ") + mode + " (nb " + nb_label + ", lookahead " + std::to_string(lookahead) + ")",
          [&rt, o, lookahead, cache](const std::vector<T>& a, int n) {
            if (cache->first != n) {
              cache->second.reset();
              const int nb = o.gpu_nb ? o.gpu_nb : tessera::qr::default_gpu_tile_size(n);
              cache->second = std::make_unique<tessera::qr::qr_factors<T>>(rt, n, n, nb, o.ib,
                                                                           tessera::qr::pinned_allocator());
              std::fill_n(cache->second->a().data(), cache->second->a().size(), T(0));
              cache->first = n;
            }
            auto& f = *cache->second;
            tessera::qr::hybrid_options h;
            h.lookahead = lookahead;
            tessera::qr::blas_threads single(1);
            const auto t0 = std::chrono::steady_clock::now();
            tessera::qr::to_tiles_async(rt, a.data(), n, f.a(), f.ha(), "A");
            tessera::qr::geqrf_hybrid(rt, f, h);
            return seconds_since(t0);
          }};
}

// Tessera's blocked QR with the panels on the GPU (LAPACK GEQRT form), in place on a pinned
// column-major copy of a made outside the timing; the copies to the device and back are timed.
template <class T>
contestant<T> tessera_blocked(tessera::runtime& rt, const options& o, int lookahead) {
  struct pinned {
    int n = 0;
    T* a = nullptr;
    T* t = nullptr;
    ~pinned() { release(); }
    void release() {
      cudaFreeHost(a);
      cudaFreeHost(t);
      a = t = nullptr;
    }
  };
  auto cache = std::make_shared<pinned>();
  const std::string nb_label = o.blocked_nb ? std::to_string(o.blocked_nb) : "per n";
  const std::string lookahead_label = lookahead > 0 ? std::to_string(lookahead) : "per n";
  return {std::string("tessera blocked gpu (nb ") + nb_label +
              ", lookahead " + lookahead_label + ")",
          [&rt, o, lookahead, cache](const std::vector<T>& a, int n) {
            const int nb = o.blocked_nb ? o.blocked_nb : tessera::qr::default_blocked_nb(n);
            if (cache->n != n) {
              cache->release();
              cuda_check(cudaMallocHost(&cache->a, sizeof(T) * std::size_t(n) * n), "cudaMallocHost");
              cuda_check(cudaMallocHost(&cache->t, sizeof(T) * std::size_t(nb) * n), "cudaMallocHost");
              cache->n = n;
            }
            std::copy(a.begin(), a.end(), cache->a);
            tessera::qr::blocked_options b;
            b.nb = nb;
            b.bulk_columns = o.bulk_columns;
            b.chunked_steps = o.chunked_steps;
            b.lookahead = lookahead;
            const auto t0 = std::chrono::steady_clock::now();
            tessera::qr::blocked_qr_gpu(rt, n, n, cache->a, n, cache->t, nb, b);
            return seconds_since(t0);
          }};
}

// The front door with the matrix already in device memory (its copy in is not timed), as
// cuSOLVER's device-resident callers have it: qr::factorize chooses the blocked QR on the GPU
// and factors in place; nothing travels.
template <class T>
contestant<T> tessera_device(tessera::runtime& rt, const options& o) {
  struct cached {
    int n = 0;
    tessera::device_buffer a;
  };
  auto cache = std::make_shared<cached>();
  return {"tessera factorize (device-resident)", [&rt, o, cache](const std::vector<T>& a, int n) {
            if (cache->n != n) {
              cache->a = tessera::device_buffer();
              cache->a = rt.allocate_device(sizeof(T) * a.size());
              cache->n = n;
            }
            const auto d = tessera::qr::device(cache->a.template get<T>(), n, n, n);
            tessera::qr::copy<T>(tessera::qr::host(a.data(), n, n, n), d);
            tessera::qr::options fo;
            fo.nb = o.blocked_nb;
            fo.bulk_columns = o.bulk_columns;
            fo.chunked_steps = o.chunked_steps;
            const auto t0 = std::chrono::steady_clock::now();
            auto f = tessera::qr::factorize(rt, d, fo);
            return seconds_since(t0);
          }};
}

// cuSOLVER GEQRF. device_resident: on a matrix already on the device (its copy in is not timed),
// as its own callers have it; otherwise as a caller with the matrix in host memory (as Tessera's
// callers have it) would run it: copy in, factor, copy A and tau out, all timed.
template <class T>
contestant<T> cusolver(bool device_resident) {
  return {device_resident ? "cuSOLVER geqrf (device-resident)" : "cuSOLVER geqrf (host copies in/out)",
          [device_resident](const std::vector<T>& a, int n) {
            return tessera::bench::cusolver_geqrf_seconds<T>(a.data(), nullptr, n, device_resident);
          }};
}

// cuBLAS GEMM n x n x n on the device: the rate ceiling the issue compares against.
template <class T>
contestant<T> cublas_gemm() {
  contestant<T> c{"cuBLAS gemm (2n^3, ceiling)", [](const std::vector<T>& a, int n) {
                    cublasHandle_t h;
                    cublasCreate(&h);
                    T *da = nullptr, *dc = nullptr;
                    cuda_check(cudaMalloc(&da, sizeof(T) * a.size()), "cudaMalloc");
                    cuda_check(cudaMalloc(&dc, sizeof(T) * a.size()), "cudaMalloc");
                    cuda_check(cudaMemcpy(da, a.data(), sizeof(T) * a.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
                    auto gemm = [&] {
                      tessera::cublas::check("tessera_qr_bench", "gemm",
                                             tessera::cublas::gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, T(1), da, n,
                                                                   da, n, T(0), dc, n));
                    };
                    gemm();  // warm-up
                    cuda_check(cudaDeviceSynchronize(), "gemm");
                    const auto t0 = std::chrono::steady_clock::now();
                    gemm();
                    cuda_check(cudaDeviceSynchronize(), "gemm");
                    const double s = seconds_since(t0);
                    cudaFree(da);
                    cudaFree(dc);
                    cublasDestroy(h);
                    return s;
                  }};
  c.gemm_flops = true;
  return c;
}
#endif

template <class T>
contestant<T> lapack() {
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  return {"LAPACK geqrf (OpenBLAS, " + std::to_string(cores) + " threads)",
          [cores](const std::vector<T>& a, int n) {
            std::vector<T> w(a), tau(static_cast<std::size_t>(n));
            T query = 0;
            tessera::blas::geqrf(n, n, w.data(), n, tau.data(), &query, -1);
            std::vector<T> work(std::size_t(query) + 1);
            tessera::qr::blas_threads all(cores);
            const auto t0 = std::chrono::steady_clock::now();
            const int info = tessera::blas::geqrf(n, n, w.data(), n, tau.data(), work.data(),
                                                  int(work.size()));
            const double s = seconds_since(t0);
            if (info != 0) throw std::runtime_error("LAPACK geqrf failed: info = " + std::to_string(info));
            return s;
          }};
}

template <class T>
double rate(const contestant<T>& c, int n, double seconds) {
  const double flops = c.gemm_flops ? 2.0 * double(n) * double(n) * double(n) : tessera::qr::geqrf_flops(n, n);
  return flops / seconds * 1e-9;
}

struct result_row {
  int n;
  std::vector<double> seconds;   // median per contestant
};

template <class T>
int run(const options& o) {
  tessera::runtime rt({.workers = o.threads});
  tessera::qr::qr_factors<T>(rt, 1, 1, o.nb, o.ib);   // bad nb/ib fail here, before any output
  // The baselines last: ratios are against LAPACK (CPU) and cuSOLVER (GPU).
  std::vector<contestant<T>> contestants{tessera_cpu<T>(rt, o)};
  contestants[0].max_n = o.max_cpu_n;
  const bool gpu = o.gpu && tessera::qr::gpu_available();
  std::unique_ptr<tessera::runtime> rt_gpu;
  std::size_t traced_hybrid = 2;  // with --trace and a GPU: the first blocked hybrid, else the tile hybrid
#if TESSERA_BENCH_CUDA
  if (gpu) {
    tessera::runtime_options ro = tessera::qr::gpu_runtime_options(o.threads);
    if (o.urgent_sms >= 0) ro.gpu_urgent_sms = static_cast<unsigned>(o.urgent_sms);
    rt_gpu = std::make_unique<tessera::runtime>(ro);
    const int nt_max = (*std::max_element(o.sizes.begin(), o.sizes.end()) + o.nb - 1) / o.nb;
    contestants.push_back(tessera_gpu<T>(*rt_gpu, o, 1, "hybrid"));
    contestants.push_back(tessera_gpu<T>(*rt_gpu, o, o.lookahead >= 0 ? o.lookahead : tessera::qr::default_lookahead(nt_max), "hybrid"));
    for (std::size_t c = contestants.size() - 2; c < contestants.size(); ++c) contestants[c].max_n = o.max_tile_gpu_n;
    for (int lookahead : o.blocked_lookaheads) {
      if (lookahead != 1 && traced_hybrid == 2) traced_hybrid = contestants.size();
      contestants.push_back(tessera_blocked<T>(*rt_gpu, o, lookahead));
    }
    contestants.push_back(tessera_device<T>(*rt_gpu, o));
  }
#endif
  contestants.push_back(lapack<T>());
  contestants.back().max_n = o.max_cpu_n;
  const std::size_t base = contestants.size() - 1;
  std::size_t gpu_base = 0;
#if TESSERA_BENCH_CUDA
  if (gpu) {
    contestants.push_back(cusolver<T>(false));
    contestants.push_back(cusolver<T>(true));
    gpu_base = contestants.size() - 1;
    contestants.push_back(cublas_gemm<T>());
  }
#endif

  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const char* prec = std::is_same_v<T, float> ? "single" : "double";
  if (!o.json) {
    std::printf("tessera_qr_bench: %s, %u cores; %s (core %s)%s%s\n", cpu_model().c_str(), cores,
                openblas_get_config(), openblas_get_corename(), coretype ? ", OPENBLAS_CORETYPE=" : "",
                coretype ? coretype : "");
    if (gpu) std::printf("GPU: %s\n", tessera::qr::gpu_name().c_str());
    std::printf("%s precision GEQRF n x n, nb %d, ib %d, median of %d runs, GFLOP/s by LAWN 41; '-': skipped\n\n",
                prec, o.nb, o.ib, o.repeat);
    std::printf("%7s", "n");
    for (const auto& c : contestants) std::printf(" | %-36s", c.name.c_str());
    std::printf(" | tile / LAPACK%s\n%7s", gpu ? " | best tessera GPU / cuSOLVER" : "", "");
    for (std::size_t i = 0; i < contestants.size(); ++i) std::printf(" | %12s %12s %10s", "seconds", "GFLOP/s", "");
    std::printf(" |\n");
  }

  std::vector<result_row> rows;
  std::string trace_text;
  const int largest = *std::max_element(o.sizes.begin(), o.sizes.end());
  for (int n : o.sizes) {
    std::mt19937_64 gen(std::uint64_t(n) * 7919u + 1);
    std::uniform_real_distribution<T> dist(T(-1), T(1));
    std::vector<T> a(std::size_t(n) * std::size_t(n));
    for (T& x : a) x = dist(gen);
    // Runs interleaved (A B A B ...), so a load change on a shared machine hits both sides alike.
    std::vector<std::vector<double>> runs(contestants.size());
    for (int r = 0; r < o.repeat; ++r)
      for (std::size_t c = 0; c < contestants.size(); ++c)
        runs[c].push_back(n <= contestants[c].max_n ? contestants[c].time_one(a, n) : std::nan(""));
    if (!o.trace.empty() && n == largest) {
      // One more run, traced (not timed): the hybrid QR's when there is a GPU (the blocked one's,
      // else the tile one's), else the CPU tile QR's.
      tessera::runtime& traced = gpu ? *rt_gpu : rt;
      const std::size_t c = gpu ? traced_hybrid : 0;
      if (n <= contestants[c].max_n) {
        traced.enable_trace(true);
        contestants[c].time_one(a, n);
        traced.enable_trace(false);
        const tessera::trace_data& data = traced.trace();
        tessera::write_trace_file(data, o.trace);
        std::ostringstream text;
        text << "trace of " << contestants[c].name << " at n = " << n << ": " << o.trace << "\n";
        tessera::print_summary(data, tessera::summarize(data), text);
        trace_text = text.str();
      }
    }
    result_row row{n, {}};
    for (const auto& r : runs) row.seconds.push_back(median(r));
    if (!o.json) {
      std::printf("%7d", n);
      for (std::size_t c = 0; c < contestants.size(); ++c) {
        const double s = row.seconds[c];
        if (std::isnan(s)) std::printf(" | %12s %12s %10s", "-", "-", "");
        else std::printf(" | %12.4f %12.2f %10s", s, rate(contestants[c], n, s), "");
      }
      if (std::isnan(row.seconds[0]) || std::isnan(row.seconds[base])) std::printf(" | %13s", "-");
      else std::printf(" | %12.2fx", row.seconds[base] / row.seconds[0]);
      if (gpu) {
        double best = std::nan("");  // the fastest Tessera GPU contestant that ran at this n
        for (std::size_t c = 1; c < base; ++c)
          if (!std::isnan(row.seconds[c]) && !(row.seconds[c] >= best)) best = row.seconds[c];
        std::printf(" | %.2fx", row.seconds[gpu_base] / best);
      }
      std::printf("\n");
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
      for (std::size_t i = 0; i < contestants.size(); ++i) {
        std::printf("%s{\"n\": %d, \"contestant\": \"%s\", \"seconds\": %.6g, \"gflops\": %.6g}",
                    first ? "" : ", ", row.n, contestants[i].name.c_str(), row.seconds[i],
                    rate(contestants[i], row.n, row.seconds[i]));
        first = false;
      }
    }
    std::printf("]}\n");
  }
  if (!o.plot.empty()) {
    std::vector<tessera::bench::series> lines;
    for (std::size_t c = 0; c < contestants.size(); ++c) {
      tessera::bench::series s{contestants[c].name, {}, {}};
      for (const auto& row : rows) {
        s.x.push_back(row.n);
        s.y.push_back(std::isnan(row.seconds[c]) ? std::nan("") : rate(contestants[c], row.n, row.seconds[c]));
      }
      lines.push_back(std::move(s));
    }
    tessera::bench::write_line_chart(o.plot, std::string(prec) + " precision QR (GEQRF n x n), " +
                                                 (gpu ? tessera::qr::gpu_name() + " + " : std::string()) +
                                                 std::to_string(cores) + " cores",
                                     "n", "GFLOP/s (LAWN 41; GEMM: 2n^3)", lines);
    if (!o.json) std::printf("plot: %s\n", o.plot.c_str());
  }
  if (!trace_text.empty()) {
    if (o.json) std::fputs(trace_text.c_str(), stderr);
    else std::printf("\n%s", trace_text.c_str());
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
  app.add_option("--lookahead", o.lookahead, "hybrid lookahead (default: tessera::qr::default_lookahead)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--gpu-nb", o.gpu_nb, "tile size of the GPU contestants (default: qr::default_gpu_tile_size per n)");
  app.add_option("--blocked-nb", o.blocked_nb, "panel width of the blocked GPU QR (default: qr::default_blocked_nb per n)");
  app.add_option("--bulk-columns", o.bulk_columns, "blocked: column blocks per early bulk update task (0: all)");
  app.add_option("--blocked-lookaheads", o.blocked_lookaheads,
                 "blocked: one contestant per lookahead (1: gpu, deeper: hybrid; 0: default_blocked_lookahead)")
      ->delimiter(',')
      ->check(CLI::NonNegativeNumber);
  app.add_option("--chunked-steps", o.chunked_steps, "blocked: steps whose bulk update is split by --bulk-columns");
  app.add_option("--urgent-sms", o.urgent_sms, "SMs reserved for the urgent GPU stream (default: gpu_runtime_options)");
  app.add_option("--max-cpu-n", o.max_cpu_n, "skip the CPU-only contestants above this n");
  app.add_option("--max-tile-gpu-n", o.max_tile_gpu_n, "skip the tile gpu and hybrid contestants above this n");
  app.add_flag("!--no-gpu", o.gpu, "leave out the GPU contestants");
  app.add_option("--plot", o.plot, "write GFLOP/s against n as SVG");
  app.add_option("--trace", o.trace,
                 "write the trace of one more (untimed) run at the largest n: hybrid with a GPU, else cpu tile "
                 "(FILE.json, .dot or .svg), and print its summary")
      ->check(CLI::Validator(
          [](std::string& path) -> std::string {
            for (const char* ext : {".json", ".dot", ".svg"})
              if (path.size() > std::string_view(ext).size() && path.ends_with(ext)) return {};
            return "the file must end in .json, .dot or .svg";
          },
          "FILE.json|.dot|.svg"));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return tessera::tools::parse_failed(app, e);
  }
  return tessera::tools::run_with_exit_codes("tessera_qr_bench", [&] {
    return o.precision == "s" ? run<float>(o) : run<double>(o);
  });
}
