// tessera_qr_multi_gpu_bench: the blocked QR on one and several GPUs (issue #20) beside cuSOLVER
// GEQRF on one GPU, in one run on the same matrices, and the bytes copied between GPUs per step.
//
//   tessera_qr_multi_gpu_bench [--sizes 16384,32768,65536] [--precision d|s] [--gpus 1,2] [--repeat 3]
//                              [--on-one-device] [--steps] [--no-cusolver]
//
// Every contestant factors the same random n x n matrix from pinned host memory, its copies to the
// device(s) and back timed (cuSOLVER's too: copy in, GEQRF, copy A and tau out). Tessera on G GPUs
// uses CUDA devices 0 .. G-1 (G = 1: blocked_qr_gpu, the one-GPU default); --on-one-device maps
// them all onto device 0, which tests the code paths and measures nothing about several GPUs.
// Figures: medians of --repeat runs after one untimed run each, TFLOP/s by LAWN 41; "first / last":
// the first --gpus entry's time over the last's (with --gpus 1,2: two GPUs' speed-up); peer bytes: the runtime's count for the
// last run, and per step the plan (multi_gpu_peer_bytes), which the tests hold equal to it.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../common/cusolver_geqrf.hpp"
#include "../common/machine.hpp"
#include "tessera/tools/cli.hpp"
#include "tessera/tools/fill.hpp"
#include "tessera/qr.hpp"
#include "tessera/sched.hpp"

namespace {

using tessera::bench::median;

struct options {
  std::vector<int> sizes{16384, 32768, 65536};
  std::vector<unsigned> gpus{1, 2};
  std::string precision = "d";
  int repeat = 3;
  bool on_one_device = false;
  bool steps = false;  // print the planned peer bytes of every step
  bool cusolver = true;
};

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Pinned host memory that goes with its owner.
template <class T>
struct pinned {
  T* p = nullptr;
  explicit pinned(std::size_t count) { cuda_check(cudaMallocHost(&p, sizeof(T) * std::max<std::size_t>(count, 1)), "cudaMallocHost"); }
  ~pinned() { cudaFreeHost(p); }
  pinned(const pinned&) = delete;
  pinned& operator=(const pinned&) = delete;
};

struct timing {
  double seconds = 0;
  tessera::transfer_stats moved;  // of the last run
};

// Tessera's blocked QR on g GPUs (runtime_options::gpus), from pinned host memory.
template <class T>
timing tessera_qr(const options& o, const T* a, T* work, T* t, int n, unsigned g) {
  tessera::runtime_options ro = tessera::qr::gpu_runtime_options();
  if (g > 1)
    for (unsigned i = 0; i < g; ++i) ro.gpus.push_back(o.on_one_device ? 0 : static_cast<int>(i));
  tessera::runtime rt(ro);
  tessera::qr::blocked_options b;
  b.nb = tessera::qr::default_blocked_nb(n);
  b.lookahead = tessera::qr::default_blocked_lookahead(n);
  std::vector<double> s;
  timing r;
  // One untimed run first: CUDA loads kernel modules and the pools grow on first use.
  for (int rep = -1; rep < o.repeat; ++rep) {
    tessera::tools::parallel_ranges(std::thread::hardware_concurrency(), static_cast<long long>(n) * n,
                                    [a, work](long long first, long long last) {
                                      std::copy(a + first, a + last, work + first);
                                    });
    const auto before = rt.transfers();
    const auto t0 = std::chrono::steady_clock::now();
    if (g > 1) tessera::qr::blocked_qr_multi_gpu(rt, n, n, work, n, t, b.nb, b);
    else tessera::qr::blocked_qr_gpu(rt, n, n, work, n, t, b.nb, b);
    if (rep < 0) continue;
    s.push_back(seconds_since(t0));
    const auto after = rt.transfers();
    r.moved = {after.h2d_bytes - before.h2d_bytes, after.d2h_bytes - before.d2h_bytes, after.h2d_copies - before.h2d_copies,
               after.d2h_copies - before.d2h_copies, after.peer_bytes - before.peer_bytes,
               after.peer_copies - before.peer_copies, after.staged_peer_copies - before.staged_peer_copies};
  }
  r.seconds = median(s);
  return r;
}

template <class T>
int run(const options& o) {
  int devices = 0;
  cuda_check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  for (unsigned g : o.gpus)
    if (!o.on_one_device && static_cast<int>(g) > devices)
      throw std::invalid_argument("--gpus " + std::to_string(g) + " but this machine has " + std::to_string(devices) +
                                  " CUDA devices (--on-one-device maps them onto device 0)");
  std::printf("tessera_qr_multi_gpu_bench: %s, %d CUDA device%s (%s)%s\n", tessera::bench::cpu_model().c_str(), devices,
              devices == 1 ? "" : "s", tessera::qr::gpu_name().c_str(),
              o.on_one_device ? "; --on-one-device: every GPU is device 0, no timing here is a several-GPU result" : "");
  std::printf("%s precision, n x n, median of %d, TFLOP/s by LAWN 41, host memory in and out timed\n\n",
              o.precision == "d" ? "double" : "single", o.repeat);
  std::printf("%7s", "n");
  for (unsigned g : o.gpus) std::printf(" | tessera %u GPU%s s   TFLOP/s  peer GB", g, g == 1 ? " " : "s");
  std::printf(" | cuSOLVER 1 GPU s  TFLOP/s | best / cuSOLVER | first / last\n");
  for (int n : o.sizes) {
    const std::size_t count = std::size_t(n) * n;
    pinned<T> a(count), work(count), t(std::size_t(tessera::qr::default_blocked_nb(n)) * n);
    tessera::tools::parallel_ranges(std::thread::hardware_concurrency(), static_cast<long long>(count),
                                    [&a, n](long long first, long long last) {
                                      for (long long i = first; i < last; ++i)
                                        a.p[i] = T(tessera::tools::uniform_at(std::uint64_t(n), std::uint64_t(i)));
                                    });
    const double flops = tessera::qr::geqrf_flops(n, n);
    std::vector<timing> ts;
    std::printf("%7d", n);
    for (unsigned g : o.gpus) {
      ts.push_back(tessera_qr<T>(o, a.p, work.p, t.p, n, g));
      std::printf(" | %17.4f %9.2f %8.3f", ts.back().seconds, flops / ts.back().seconds * 1e-12,
                  double(ts.back().moved.peer_bytes) * 1e-9);
    }
    double best = ts.front().seconds;
    for (const auto& x : ts) best = std::min(best, x.seconds);
    if (o.cusolver) {
      std::vector<double> c;
      tessera::bench::cusolver_geqrf_seconds<T>(a.p, work.p, n, false);  // untimed, as Tessera's first run
      for (int rep = 0; rep < o.repeat; ++rep) c.push_back(tessera::bench::cusolver_geqrf_seconds<T>(a.p, work.p, n, false));
      const double cs = median(c);
      std::printf(" | %16.4f %8.2f | %14.2fx", cs, flops / cs * 1e-12, cs / best);
    } else {
      std::printf(" | %16s %8s | %15s", "-", "-", "-");
    }
    std::printf(" | %.2fx\n", ts.front().seconds / ts.back().seconds);
    if (o.steps)
      for (std::size_t i = 0; i < o.gpus.size(); ++i) {
        const unsigned g = o.gpus[i];
        if (g < 2) continue;
        const auto plan = tessera::qr::multi_gpu_peer_bytes(n, n, tessera::qr::default_blocked_nb(n), g, sizeof(T));
        std::printf("        peer bytes per step on %u GPUs (plan, total %llu; the runtime counted %llu):", g,
                    static_cast<unsigned long long>(std::accumulate(plan.begin(), plan.end(), std::uint64_t(0))),
                    static_cast<unsigned long long>(ts[i].moved.peer_bytes));
        for (auto b : plan) std::printf(" %llu", static_cast<unsigned long long>(b));
        std::printf("\n");
      }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  CLI::App app{"tessera_qr_multi_gpu_bench: the blocked QR on one and several GPUs beside cuSOLVER on one"};
  app.add_option("--sizes", o.sizes, "matrix orders n (n x n)")->delimiter(',')->check(CLI::PositiveNumber);
  app.add_option("--gpus", o.gpus, "GPU counts, one Tessera contestant each (1: the one-GPU blocked QR)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  app.add_option("--precision", o.precision, "s or d")->check(CLI::IsMember({"s", "d"}));
  app.add_option("--repeat", o.repeat, "runs per size and contestant (median)")->check(CLI::PositiveNumber);
  app.add_flag("--on-one-device", o.on_one_device, "every GPU is CUDA device 0 (tests the code, measures nothing)");
  app.add_flag("--steps", o.steps, "print the bytes between GPUs of every step");
  app.add_flag("!--no-cusolver", o.cusolver, "skip cuSOLVER (its two runs take 20 s at n = 65536 in double)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return tessera::tools::parse_failed(app, e);
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each size's line as soon as it is done (a call may time out)
  return tessera::tools::run_with_exit_codes("tessera_qr_multi_gpu_bench", [&] {
    if (!tessera::qr::gpu_available()) {
      std::printf("tessera_qr_multi_gpu_bench: no CUDA device\n");
      return 0;
    }
    return o.precision == "s" ? run<float>(o) : run<double>(o);
  });
}
