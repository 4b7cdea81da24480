// tessera_full_t_bench: QR with the full T of Q = I - V T V^T (issue #17, the seed 001's Table 1
// and Figure 2), Tessera beside its peers on the same matrices in one run.
//
//   tessera_full_t_bench [--sizes 1000,2000,...] [--precision d|s] [--repeat 3] [--max-lapack-n 6000]
//                        [--max-larft-n 16384] [--host-memory pinned|pageable] [--single-in-double -1|0|1]
//                        [--plot FILE.svg] [--no-gpu]
//
// Contestants, each on the same random n x n matrix (uniform in [-1, 1]); setup outside the timing:
//   tessera full T + S (device)   the front door with options::full_t on a matrix already in device
//                                 memory: V, R, the full T and S = V T^T on the GPU;
//   tessera, no T (device)        the same factorization (the same panel width) without them: the
//                                 cost of T and S;
//   tessera full T + S (host)     from pinned host memory, everything back home, transfers timed
//                                 (--host-memory pageable: from a plain std::vector instead);
//   cuSOLVER geqrf + Xlarft       GEQRF, then the full T from V and tau (device-resident);
//   LAPACK geqrt3                 xGEQRT3 on all cores (OpenBLAS): V, R and the full T;
//   LAPACK geqrf + larft          xGEQRF, then xLARFT for the full T, all cores.
// Without a GPU only the CPU contestants and Tessera's CPU path (LAPACK GEQRT, then Algorithm 1's
// steps) run. Figures are medians of --repeat runs. Rates use each contestant's own count: GEQRF's
// (LAWN 41), plus 1/3 n^3 for T and 1/3 n^3 for S (2 m n^2 - 4/3 n^3 together for m x n) where
// the contestant computes them; the seconds are the comparison.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../common/machine.hpp"
#include "../common/svg_chart.hpp"
#include "tessera/tools/cli.hpp"
#include "tessera/kernels_cpu/blas.hpp"
#include "tessera/qr.hpp"
#include "tessera/qr/blocked_qr_gpu.hpp"
#include "tessera/qr/flops.hpp"
#include "tessera/sched.hpp"

#if TESSERA_BENCH_CUDA
#include <cuda_runtime.h>
#include <cusolverDn.h>
#endif

namespace {

namespace qr = tessera::qr;
using tessera::bench::median;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct options {
  std::vector<int> sizes{1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000, 11000, 12000, 13000, 14000,
                         15000, 16384, 32768};
  std::string precision = "d";
  int repeat = 3;
  int max_lapack_n = 6000;   // the CPU contestants take seconds to minutes beyond
  int max_larft_n = 16384;   // cuSOLVER's Xlarft beyond: minutes
  int max_host_n = 1 << 30;
  bool pageable = false;  // the host contestant's matrix in pageable memory
  int single_in_double = -1;  // qr::options::single_in_double for the device contestants
  bool gpu = true;
  std::string plot;
};

double t_flops(double n) { return n * n * n / 3; }  // the full T alone, n x n

template <class T>
struct contestant {
  std::string name;
  std::function<double(const std::vector<T>&, int)> time_one;
  std::function<double(double)> flops;
  int max_n = 1 << 30;
};

template <class T>
contestant<T> lapack_geqrt3() {
  return {"LAPACK geqrt3 (full T)",
          [](const std::vector<T>& a, int n) {
            std::vector<T> w(a), t(std::size_t(n) * n);
            const auto t0 = std::chrono::steady_clock::now();
            if (tessera::blas::geqrt3(n, n, w.data(), n, t.data(), n) != 0) throw std::runtime_error("geqrt3 failed");
            return seconds_since(t0);
          },
          [](double n) { return qr::geqrf_flops(n, n) + t_flops(n); }};
}

template <class T>
contestant<T> lapack_geqrf_larft() {
  return {"LAPACK geqrf + larft (full T)",
          [](const std::vector<T>& a, int n) {
            std::vector<T> w(a), tau(static_cast<std::size_t>(n)), t(std::size_t(n) * std::size_t(n));
            T query = 0;
            tessera::blas::geqrf(n, n, w.data(), n, tau.data(), &query, -1);
            std::vector<T> work(std::size_t(query) + 1);
            const auto t0 = std::chrono::steady_clock::now();
            if (tessera::blas::geqrf(n, n, w.data(), n, tau.data(), work.data(), int(work.size())) != 0)
              throw std::runtime_error("geqrf failed");
            if (tessera::blas::larft('F', 'C', n, n, w.data(), n, tau.data(), t.data(), n) != 0)
              throw std::runtime_error("larft failed");
            return seconds_since(t0);
          },
          [](double n) { return qr::geqrf_flops(n, n) + t_flops(n); }};
}

// The front door; device: the matrix already in device memory (its copy in untimed).
template <class T>
contestant<T> tessera_front_door(tessera::runtime& rt, qr::target on, qr::memory where, bool full_t,
                                 bool pageable = false, int single_in_double = -1) {
  struct cached {
    int n = 0;
    tessera::device_buffer d;
    tessera::pinned_buffer h;
  };
  auto cache = std::make_shared<cached>();
  const std::string name = std::string("tessera ") + (full_t ? "full T + S" : "no T") + " (" + qr::name(on) + ", " +
                           (pageable ? "pageable " : "") + qr::name(where) + ")" +
                           (std::is_same_v<T, float> && single_in_double >= 0 ? single_in_double ? " in double" : " in float"
                                                                               : "");
  return {name,
          [&rt, on, where, full_t, pageable, single_in_double, cache](const std::vector<T>& a, int n) {
            const std::size_t bytes = sizeof(T) * a.size();
            if (cache->n != n) {
              cache->d = tessera::device_buffer();
              cache->h = tessera::pinned_buffer();
              if (where == qr::memory::device) cache->d = rt.allocate_device(bytes);
              else cache->h = on == qr::target::cpu || pageable ? tessera::pinned_buffer() : rt.allocate_pinned(bytes);
              cache->n = n;
            }
            std::vector<T> plain;
            qr::matrix_ref<T> ref;
            if (where == qr::memory::device) {
              ref = qr::device(cache->d.template get<T>(), n, n, n);
              qr::copy<T>(qr::host(a.data(), n, n, n), ref);
            } else if (cache->h) {
              std::copy(a.begin(), a.end(), cache->h.template get<T>());
              ref = qr::host(cache->h.template get<T>(), n, n, n);
            } else {
              plain = a;
              ref = qr::host(plain.data(), n, n, n);
            }
            qr::options o;
            o.on = on;
            o.algo = qr::algorithm::blocked;
            o.full_t = full_t;
            o.single_in_double = single_in_double;
            // Without T on the panel width the full T takes: the cost of T and S alone.
            if (on == qr::target::gpu) o.nb = qr::default_full_t_nb(n);
            const auto t0 = std::chrono::steady_clock::now();
            auto f = qr::factorize(rt, ref, o);
            return seconds_since(t0);
          },
          [full_t](double n) { return qr::geqrf_flops(n, n) + (full_t ? qr::full_t_flops(n, n) : 0); }};
}

#if TESSERA_BENCH_CUDA
void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
void cusolver_check(cusolverStatus_t s, const char* what) {
  if (s != CUSOLVER_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + " failed: " + std::to_string(int(s)));
}

// cuSOLVER GEQRF then Xlarft for the full T, device-resident (the matrix's copy in untimed).
template <class T>
contestant<T> cusolver_geqrf_larft() {
  return {"cuSOLVER geqrf + Xlarft (device)",
          [](const std::vector<T>& a, int n) {
            constexpr cudaDataType type = std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_64F;
            cusolverDnHandle_t h;
            cusolver_check(cusolverDnCreate(&h), "cusolverDnCreate");
            cusolverDnParams_t params;
            cusolver_check(cusolverDnCreateParams(&params), "cusolverDnCreateParams");
            T *da = nullptr, *dtau = nullptr, *dt = nullptr;
            void *dwork = nullptr, *dwork2 = nullptr;
            int* dinfo = nullptr;
            const std::size_t nn = std::size_t(n) * n;
            cuda_check(cudaMalloc(&da, sizeof(T) * nn), "cudaMalloc");
            cuda_check(cudaMalloc(&dt, sizeof(T) * nn), "cudaMalloc");
            cuda_check(cudaMalloc(&dtau, sizeof(T) * std::size_t(n)), "cudaMalloc");
            cuda_check(cudaMalloc(&dinfo, sizeof(int)), "cudaMalloc");
            std::size_t dbytes = 0, hbytes = 0, dbytes2 = 0, hbytes2 = 0;
            cusolver_check(cusolverDnXgeqrf_bufferSize(h, params, n, n, type, da, n, type, dtau, type, &dbytes, &hbytes),
                           "Xgeqrf_bufferSize");
            cusolver_check(cusolverDnXlarft_bufferSize(h, params, CUBLAS_DIRECT_FORWARD, CUBLAS_STOREV_COLUMNWISE, n, n,
                                                       type, da, n, type, dtau, type, dt, n, type, &dbytes2, &hbytes2),
                           "Xlarft_bufferSize");
            cuda_check(cudaMalloc(&dwork, std::max<std::size_t>(dbytes, 1)), "cudaMalloc");
            cuda_check(cudaMalloc(&dwork2, std::max<std::size_t>(dbytes2, 1)), "cudaMalloc");
            std::vector<char> hwork(std::max(hbytes, hbytes2) + 1);
            cuda_check(cudaMemcpy(da, a.data(), sizeof(T) * nn, cudaMemcpyHostToDevice), "cudaMemcpy");
            cuda_check(cudaDeviceSynchronize(), "sync");
            const auto t0 = std::chrono::steady_clock::now();
            cusolver_check(cusolverDnXgeqrf(h, params, n, n, type, da, n, type, dtau, type, dwork, dbytes, hwork.data(),
                                            hbytes, dinfo),
                           "Xgeqrf");
            cusolver_check(cusolverDnXlarft(h, params, CUBLAS_DIRECT_FORWARD, CUBLAS_STOREV_COLUMNWISE, n, n, type, da, n,
                                            type, dtau, type, dt, n, type, dwork2, dbytes2, hwork.data(), hbytes2),
                           "Xlarft");
            cuda_check(cudaDeviceSynchronize(), "cusolver geqrf + larft");
            const double s = seconds_since(t0);
            for (void* p : {static_cast<void*>(da), static_cast<void*>(dt), static_cast<void*>(dtau), dwork, dwork2,
                            static_cast<void*>(dinfo)})
              cudaFree(p);
            cusolverDnDestroyParams(params);
            cusolverDnDestroy(h);
            return s;
          },
          [](double n) { return qr::geqrf_flops(n, n) + t_flops(n); }};
}
#endif

template <class T>
int run(const options& o) {
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  const bool gpu = o.gpu && qr::gpu_available();
  tessera::runtime cpu_rt(tessera::runtime_options{});
  std::optional<tessera::runtime> gpu_rt;
  std::vector<contestant<T>> cs;
  if (gpu) {
    gpu_rt.emplace(qr::gpu_runtime_options());
    cs.push_back(tessera_front_door<T>(*gpu_rt, qr::target::gpu, qr::memory::device, true, false, o.single_in_double));
    cs.push_back(tessera_front_door<T>(*gpu_rt, qr::target::gpu, qr::memory::device, false, false, o.single_in_double));
    cs.push_back(tessera_front_door<T>(*gpu_rt, qr::target::gpu, qr::memory::host, true, o.pageable));
    cs.back().max_n = o.max_host_n;
#if TESSERA_BENCH_CUDA
    cs.push_back(cusolver_geqrf_larft<T>());
    cs.back().max_n = o.max_larft_n;
#endif
  } else {
    cs.push_back(tessera_front_door<T>(cpu_rt, qr::target::cpu, qr::memory::host, true));
    cs.back().max_n = o.max_lapack_n;
  }
  cs.push_back(lapack_geqrt3<T>());
  cs.back().max_n = o.max_lapack_n;
  cs.push_back(lapack_geqrf_larft<T>());
  cs.back().max_n = o.max_lapack_n;

  const char* prec = std::is_same_v<T, float> ? "single" : "double";
  std::printf("tessera_full_t_bench: %s precision, n x n, median of %d runs; %s%s, %d cores (%s)\n", prec, o.repeat,
              gpu ? qr::gpu_name().c_str() : "no GPU", gpu ? " +" : ";", cores, tessera::bench::cpu_model().c_str());
  std::vector<std::vector<double>> table(o.sizes.size(), std::vector<double>(cs.size(), std::nan("")));
  for (std::size_t i = 0; i < o.sizes.size(); ++i) {
    const int n = o.sizes[i];
    std::vector<T> a(std::size_t(n) * n);
    std::mt19937_64 gen(std::uint64_t(n) * 7919);
    std::uniform_real_distribution<T> dist(T(-1), T(1));
    for (T& x : a) x = dist(gen);
    for (std::size_t c = 0; c < cs.size(); ++c) {
      if (n > cs[c].max_n) continue;
      std::vector<double> runs;
      for (int r = 0; r < o.repeat; ++r) runs.push_back(cs[c].time_one(a, n));
      table[i][c] = median(runs);
      std::printf("n %6d  %-38s %10.4f s  %8.2f GFLOP/s\n", n, cs[c].name.c_str(), table[i][c],
                  cs[c].flops(n) / table[i][c] * 1e-9);
      std::fflush(stdout);
    }
  }
  // The short table: seconds per contestant, and the ratios.
  std::printf("\n| n |");
  for (const auto& c : cs) std::printf(" %s |", c.name.c_str());
  const bool ratios = gpu && cs.size() >= 4;
  if (ratios) std::printf(" T+S cost over no T | x LAPACK geqrt3 | x cuSOLVER geqrf+Xlarft |");
  std::printf("\n|---|");
  for (std::size_t c = 0; c < cs.size() + (ratios ? 3 : 0); ++c) std::printf("---|");
  std::printf("\n");
  const std::size_t geqrt3 = cs.size() - 2;
  for (std::size_t i = 0; i < o.sizes.size(); ++i) {
    std::printf("| %d |", o.sizes[i]);
    for (double s : table[i]) std::isnan(s) ? std::printf(" - |") : std::printf(" %.4f |", s);
    if (ratios) {
      const double full = table[i][0], none = table[i][1];
      std::printf(" %+.1f%% |", (full / none - 1) * 100);
      std::isnan(table[i][geqrt3]) ? std::printf(" - |") : std::printf(" %.1fx |", table[i][geqrt3] / full);
      std::isnan(table[i][3]) ? std::printf(" - |") : std::printf(" %.2fx |", table[i][3] / full);
    }
    std::printf("\n");
  }
  if (!o.plot.empty()) {
    std::vector<tessera::bench::series> lines;
    for (std::size_t c = 0; c < cs.size(); ++c) {
      tessera::bench::series s{cs[c].name, {}, {}};
      for (std::size_t i = 0; i < o.sizes.size(); ++i) {
        s.x.push_back(o.sizes[i]);
        s.y.push_back(std::isnan(table[i][c]) ? std::nan("") : cs[c].flops(o.sizes[i]) / table[i][c] * 1e-9);
      }
      lines.push_back(std::move(s));
    }
    tessera::bench::write_line_chart(o.plot, std::string(prec) + " precision QR with the full T, " +
                                                 (gpu ? qr::gpu_name() + " + " : std::string()) + std::to_string(cores) +
                                                 " cores",
                                     "n", "GFLOP/s (GEQRF + 1/3 n^3 T + 1/3 n^3 S where computed)", lines);
    std::printf("plot: %s\n", o.plot.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  CLI::App app{"tessera_full_t_bench: QR with the full T, Tessera beside LAPACK and cuSOLVER"};
  app.option_defaults()->always_capture_default();
  app.add_option("--sizes", o.sizes, "matrix orders n (n x n)")->delimiter(',')->check(CLI::PositiveNumber);
  app.add_option("--precision", o.precision, "s or d")->check(CLI::IsMember({"s", "d"}));
  app.add_option("--repeat", o.repeat, "runs per size and contestant (median)")->check(CLI::PositiveNumber);
  app.add_option("--max-lapack-n", o.max_lapack_n, "skip the LAPACK contestants above this n");
  app.add_option("--max-larft-n", o.max_larft_n, "skip cuSOLVER geqrf + Xlarft above this n");
  app.add_option("--max-host-n", o.max_host_n, "skip Tessera from host memory above this n");
  app.add_option_function<std::string>(
         "--host-memory", [&o](const std::string& v) { o.pageable = v == "pageable"; },
         "the host contestant's matrix: pinned (default) or pageable (a plain std::vector)")
      ->check(CLI::IsMember({"pinned", "pageable"}));
  app.add_option("--single-in-double", o.single_in_double,
                 "single precision on device memory: -1 the front door's rule, 0 in float, 1 in double")
      ->check(CLI::Range(-1, 1));
  app.add_flag("!--no-gpu", o.gpu, "leave out the GPU contestants");
  app.add_option("--plot", o.plot, "write GFLOP/s against n as SVG (the seed's Figure 2)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return tessera::tools::parse_failed(app, e);
  }
  return tessera::tools::run_with_exit_codes("tessera_full_t_bench", [&] {
    return o.precision == "s" ? run<float>(o) : run<double>(o);
  });
}
