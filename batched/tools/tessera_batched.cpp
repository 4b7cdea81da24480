// tessera_batched: LU, inverse or solve of a batch of random tiny matrices through the front door
// (tessera::batched), timed (median of --repeat runs), GFLOP/s by LAPACK's counts, optionally
// checked (--check) against LAPACK's test ratios.
// Exit status: 0 done, 1 a check or the run failed, 2 bad arguments, 3 not enough memory.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tessera/batched/batched.hpp"
#include "tessera/batched/check.hpp"
#include "tessera/sched/memory.hpp"
#include "tessera/sched/runtime.hpp"
#include "tessera/tools/cli.hpp"
#include "tessera/tools/fill.hpp"

namespace {

using tessera::tools::at_least;
using tessera::tools::positive_real;

namespace bt = tessera::batched;

struct config {
  std::string op = "lu";
  int n = 32, nrhs = 1;
  long long count = 1 << 16;
  std::string precision = "d", device = "auto", layout = "strided";
  std::uint64_t seed = 1;
  int repeat = 1, depth = bt::options{}.depth;
  std::size_t memory_cap = 0, chunk_bytes = 0;
  double cpu_share = bt::options{}.cpu_share;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  bool check = false, json = false;
};

using tessera::tools::parallel_ranges;
using tessera::tools::uniform_at;

struct result {
  bt::report report;
  double seconds = 0;  // median
  double worst = -1;   // largest residual (checks)
  long long failed = 0;
};

template <class T>
result run(const config& c) {
  const auto n = static_cast<std::size_t>(c.n), count = static_cast<std::size_t>(c.count);
  const std::size_t nn = n * n, nb = n * static_cast<std::size_t>(c.nrhs);
  const bool solve = c.op == "solve", inv = c.op == "inv";
  // Host memory: A and its original, the inverse or B and its original; checked before allocating.
  const std::size_t need = count * (2 * nn + (inv ? nn : 0) + (solve ? 2 * nb : 0)) * sizeof(T) +
                           count * (n + 1) * sizeof(int);
  const std::size_t avail = std::size_t(sysconf(_SC_AVPHYS_PAGES)) * std::size_t(sysconf(_SC_PAGE_SIZE));
  if (need > avail)
    throw tessera::out_of_memory("tessera_batched: the batch needs " + std::to_string(need) +
                                 " bytes of host memory; " + std::to_string(avail) + " are available");
  std::vector<T> a0(count * nn), a(count * nn), x(inv ? count * nn : 0), b0(solve ? count * nb : 0),
      b(solve ? count * nb : 0);
  std::vector<int> ipiv(count * n), info(count);
  parallel_ranges(c.threads, c.count, [&](long long f, long long l) {
    for (std::size_t i = std::size_t(f) * nn; i < std::size_t(l) * nn; ++i) a0[i] = T(uniform_at(c.seed, i));
    for (std::size_t i = std::size_t(f) * nb; solve && i < std::size_t(l) * nb; ++i)
      b0[i] = T(uniform_at(c.seed + 1, i));
  });
  std::vector<T*> pa(count), px(count), pb(count);
  for (std::size_t i = 0; i < count; ++i) {
    pa[i] = a.data() + i * nn;
    if (inv) px[i] = x.data() + i * nn;
    if (solve) pb[i] = b.data() + i * nb;
  }
  const bool ptrs = c.layout == "pointers";
  auto batch_of = [&](std::vector<T>& v, std::vector<T*>& p, int cols) {
    return ptrs ? bt::pointer_array<T>(p.data(), c.n, cols, c.n, c.count)
                : bt::strided<T>(v.data(), c.n, cols, c.n, static_cast<long long>(n) * cols, c.count);
  };
  // One runtime for every repeat: threads, streams and pinned staging are made once.
  tessera::runtime_options ro;
  ro.workers = c.threads;
  if (c.device != "cpu" && bt::gpu_available()) ro.gpu_streams = 2;
  tessera::runtime rt(ro);
  bt::options o;
  o.rt = &rt;
  o.on = c.device == "cpu" ? bt::target::cpu : c.device == "gpu" ? bt::target::gpu : bt::target::automatic;
  o.device_memory_cap = c.memory_cap;
  o.depth = c.depth;
  o.chunk_bytes = c.chunk_bytes;
  o.cpu_share = c.cpu_share;
  o.threads = c.threads;
  result r;
  std::vector<double> times;
  for (int rep = 0; rep < c.repeat; ++rep) {
    parallel_ranges(c.threads, c.count, [&](long long f, long long l) {  // the inputs again (in place)
      std::copy(a0.begin() + f * long(nn), a0.begin() + l * long(nn), a.begin() + f * long(nn));
      if (solve) std::copy(b0.begin() + f * long(nb), b0.begin() + l * long(nb), b.begin() + f * long(nb));
    });
    const auto t0 = std::chrono::steady_clock::now();
    if (c.op == "lu") r.report = bt::lu(batch_of(a, pa, c.n), ipiv.data(), info.data(), o);
    else if (inv) r.report = bt::inverse(batch_of(a, pa, c.n), batch_of(x, px, c.n), info.data(), o);
    else r.report = bt::gesv(batch_of(a, pa, c.n), ipiv.data(), batch_of(b, pb, c.nrhs), info.data(), o);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  r.seconds = times[times.size() / 2];
  if (c.check) {
    std::vector<double> worst(c.threads, 0.0);
    std::atomic<long long> failed{0};
    std::atomic<unsigned> slot{0};
    parallel_ranges(c.threads, c.count, [&](long long f, long long l) {
      const unsigned me = slot++;
      for (long long i = f; i < l; ++i) {
        const std::size_t o_ = std::size_t(i);
        if (info[o_] != 0) {  // random matrices are not singular: count it as a failure
          ++failed;
          continue;
        }
        const T* ai = a0.data() + o_ * nn;
        const double res = c.op == "lu" ? bt::lu_residual(c.n, ai, c.n, a.data() + o_ * nn, c.n, ipiv.data() + o_ * n)
                           : inv ? bt::inverse_residual(c.n, ai, c.n, x.data() + o_ * nn, c.n)
                                 : bt::solve_residual(c.n, c.nrhs, ai, c.n, b.data() + o_ * nb, c.n,
                                                      b0.data() + o_ * nb, c.n);
        worst[me] = std::max(worst[me], res);
        if (!(res < bt::threshold)) ++failed;
      }
    });
    r.worst = *std::max_element(worst.begin(), worst.end());
    r.failed = failed;
  }
  return r;
}

double flops(const config& c) {
  const double n = c.n;
  const double one = c.op == "lu" ? bt::getrf_flops(n)
                     : c.op == "inv" ? bt::inverse_flops(n)
                                     : bt::getrf_flops(n) + bt::getrs_flops(n, c.nrhs);
  return one * double(c.count);
}

}  // namespace

int main(int argc, char** argv) {
  config c;
  CLI::App app{"tessera_batched: batched LU, inverse or solve of random tiny matrices (LAPACK flop counts)"};
  app.option_defaults()->always_capture_default();
  app.add_option("operation", c.op, "lu (GETRF), inv (the inverse), solve (GESV)")
      ->check(CLI::IsMember({"lu", "inv", "solve"}));
  app.add_option("--n", c.n, "order of each matrix, 1 to 32")->check(at_least(1));
  app.add_option("--count", c.count, "matrices in the batch")->check(at_least(0));
  app.add_option("--nrhs", c.nrhs, "solve: right-hand sides per matrix")->check(at_least(0));
  app.add_option("--precision", c.precision, "s (float) or d (double)")->check(CLI::IsMember({"s", "d"}));
  app.add_option("--device", c.device, "auto (the GPU when there is one), cpu or gpu")
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}));
  app.add_option("--layout", c.layout, "strided (one allocation) or pointers (an array of pointers)")
      ->check(CLI::IsMember({"strided", "pointers"}));
  app.add_option("--seed", c.seed, "random seed of the batch");
  app.add_option("--repeat", c.repeat, "runs; the median time is reported")->check(at_least(1));
  app.add_option("--memory-cap", c.memory_cap, "GPU: bytes of device memory the streamed batch may use (0: 80% of free)");
  app.add_option("--depth", c.depth, "GPU: chunks in flight")->check(at_least(2));
  app.add_option("--chunk-bytes", c.chunk_bytes, "GPU: bytes of staging a streamed chunk (0: the library's default)");
  app.add_option("--cpu-share", c.cpu_share,
                 "GPU, host batch: share the CPUs factor while the rest streams (negative: measured; 0: none)")
      ->check(CLI::Range(-1.0, 1.0));
  app.add_option("--threads", c.threads, "CPU threads (default: all cores)")->check(at_least(1));
  app.add_flag("--check", c.check, "LAPACK's test ratios for every matrix (threshold 60)");
  app.add_flag("--json", c.json, "print one JSON object instead of text");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return tessera::tools::parse_failed(app, e);
  }
  return tessera::tools::run_with_exit_codes("tessera_batched", [&] {
    if (c.n > bt::max_n)
      throw std::invalid_argument("--n " + std::to_string(c.n) + ": must be <= " + std::to_string(bt::max_n));
    if (!c.json) {
      if (!bt::gpu_available() && c.device == "auto") std::printf("tessera_batched: no CUDA device: running on the CPUs\n");
      std::printf("tessera_batched: %s of %lld matrices %d x %d, %s, %s layout\n", c.op.c_str(), c.count, c.n, c.n,
                  c.precision == "s" ? "single" : "double", c.layout.c_str());
      std::fflush(stdout);
    }
    const result r = c.precision == "s" ? run<float>(c) : run<double>(c);
    const double gflops = r.seconds > 0 ? flops(c) / r.seconds * 1e-9 : 0;
    const bool gpu = r.report.ran_on == bt::target::gpu;
    if (c.json) {
      std::printf(
          "{\"operation\": \"%s\", \"n\": %d, \"count\": %lld, \"nrhs\": %d, \"precision\": \"%s\", \"device\": \"%s\", "
          "\"layout\": \"%s\", \"seconds\": %.9g, \"gflops\": %.6g, \"chunks\": %lld, \"matrices_per_chunk\": %lld, "
          "\"cpu_matrices\": %lld, \"h2d_bytes\": %zu, \"d2h_bytes\": %zu, \"singular\": %lld, \"worst_residual\": %s, \"failed\": %lld, "
          "\"passed\": %s, \"reason\": \"%s\"}\n",
          c.op.c_str(), c.n, c.count, c.nrhs, c.precision.c_str(), gpu ? "gpu" : "cpu", c.layout.c_str(), r.seconds,
          gflops, r.report.chunks, r.report.matrices_per_chunk, r.report.cpu_matrices, r.report.h2d_bytes, r.report.d2h_bytes,
          r.report.singular, c.check ? std::to_string(r.worst).c_str() : "null", r.failed,
          c.check ? (r.failed == 0 ? "true" : "false") : "null", r.report.reason.c_str());
    } else {
      std::printf("tessera_batched: %s%s%s\n", r.report.reason.c_str(), gpu ? ": " : "",
                  gpu ? bt::gpu_name().c_str() : "");
      std::printf("time %.6f s (median of %d), %.2f GFLOP/s (LAPACK counts)", r.seconds, c.repeat, gflops);
      if (r.report.chunks)
        std::printf(", %lld chunks of %lld matrices, %.1f GB/s host->device", r.report.chunks,
                    r.report.matrices_per_chunk, double(r.report.h2d_bytes) / r.seconds * 1e-9);
      if (r.report.cpu_matrices)
        std::printf(", %lld matrices (%.1f%%) on the CPUs", r.report.cpu_matrices,
                    100.0 * double(r.report.cpu_matrices) / double(std::max(1LL, c.count)));
      std::printf("\n");
      if (c.check)
        std::printf("check: worst %s ratio %.3g (threshold %.0f), %lld of %lld failed: %s\n",
                    c.op == "lu" ? "||PA-LU||" : c.op == "inv" ? "||I-A*inv(A)||" : "||B-AX||", r.worst,
                    bt::threshold, r.failed, c.count, r.failed == 0 ? "passed" : "FAILED");
    }
    return c.check && r.failed != 0 ? 1 : 0;
  });
}
