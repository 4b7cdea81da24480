// tessera_qr: tile QR of a random m x n matrix, timed (median of --repeat runs), GFLOP/s by LAWN 41,
// optionally checked (--check) and traced (--trace FILE).
// Exit status: 0 done, 1 a check failed (or another failure), 2 bad arguments.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <limits>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "tessera/qr.hpp"
#include "tessera/sched.hpp"

namespace {

struct config {
  int m = 2048, n = 2048, nb = 256, ib = 32;
  std::string precision = "d";
  std::string device = "auto";     // auto: hybrid with a GPU, cpu without
  std::string algorithm = "auto";  // auto: blocked on the GPU (m >= n), else tile; tile, or blocked
  int bulk_columns = tessera::qr::blocked_options{}.bulk_columns;
  int chunked_steps = tessera::qr::blocked_options{}.chunked_steps;
  bool lookahead_given = false;
  bool split_next = true;
  int gpu_rows = tessera::qr::hybrid_options{}.gpu_rows;
  bool pinned = true;
  unsigned gpu_streams = tessera::qr::hybrid_runtime_options().gpu_streams;
  unsigned stream_depth = tessera::qr::hybrid_runtime_options().gpu_stream_depth;
  bool urgent_stream = true;
  unsigned urgent_sms = tessera::qr::hybrid_runtime_options().gpu_urgent_sms;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  bool check = false;
  std::string trace;
  std::uint64_t seed = 1;
  int repeat = 1;
  bool json = false;
  int lookahead = 1;
};

struct result {
  double seconds = 0;   // median
  tessera::transfer_stats transfers;  // of the last run
  std::optional<tessera::qr::qr_residuals> residuals;
};

// The requested device is not there (yet): reported like a bad argument.
struct device_unavailable : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Prints "% of tasks done" to stderr every 2 s while a long run goes on.
class progress_reporter {
 public:
  progress_reporter(const std::atomic<std::uint64_t>& done, std::uint64_t total)
      : _done(done), _total(total), _thread([this] { loop(); }) {}
  ~progress_reporter() {
    {
      std::lock_guard lock(_mutex);
      _stop = true;
    }
    _wake.notify_one();
    _thread.join();
  }

 private:
  void loop() {
    std::unique_lock lock(_mutex);
    while (!_wake.wait_for(lock, std::chrono::seconds(2), [this] { return _stop; })) {
      const double pct = 100.0 * double(_done.load(std::memory_order_relaxed)) / double(_total);
      std::fprintf(stderr, "tessera_qr: %5.1f%% of %llu tasks done\n", pct,
                   static_cast<unsigned long long>(_total));
    }
  }
  const std::atomic<std::uint64_t>& _done;
  std::uint64_t _total;
  std::mutex _mutex;
  std::condition_variable _wake;
  bool _stop = false;
  std::thread _thread;
};

template <class T>
std::vector<T> random_matrix(int m, int n, std::uint64_t seed) {
  // A fixed number of chunks, each with its own generator, filled in parallel: the matrix depends
  // on the seed alone, and 32768^2 takes a second instead of half a minute.
  constexpr std::size_t chunks = 64;
  std::vector<T> a(std::size_t(m) * std::size_t(n));
  const std::size_t per_chunk = (a.size() + chunks - 1) / chunks;
  auto fill = [&](std::size_t chunk) {
    std::mt19937_64 gen(seed * 0x9E3779B97F4A7C15ull + chunk);
    std::uniform_real_distribution<T> dist(T(-1), T(1));
    const std::size_t end = std::min(a.size(), (chunk + 1) * per_chunk);
    for (std::size_t i = chunk * per_chunk; i < end; ++i) a[i] = dist(gen);
  };
  const std::size_t workers = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, chunks);
  std::vector<std::thread> pool;
  for (std::size_t w = 0; w < workers; ++w)
    pool.emplace_back([&, w] {
      for (std::size_t chunk = w; chunk < chunks; chunk += workers) fill(chunk);
    });
  for (std::thread& t : pool) t.join();
  return a;
}

// What moved since `before` (the runtime's counts are cumulative): the last run's transfers.
tessera::transfer_stats since(const tessera::transfer_stats& before, const tessera::transfer_stats& now) {
  return {now.h2d_bytes - before.h2d_bytes, now.d2h_bytes - before.d2h_bytes, now.h2d_copies - before.h2d_copies,
          now.d2h_copies - before.d2h_copies};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

void write_trace(const config& c, tessera::runtime& rt) {
  // Only the last run is traced: drop edges from tasks of earlier runs, which are not in it.
  tessera::trace_data trace = rt.trace();
  std::unordered_set<std::uint64_t> ids;
  for (const auto& t : trace.tasks) ids.insert(t.id);
  std::erase_if(trace.edges, [&](const tessera::trace_edge& e) { return !ids.count(e.from) || !ids.count(e.to); });
  tessera::write_trace_file(trace, c.trace);
  std::ostream& out = c.json ? std::cerr : std::cout;
  out << "trace: " << trace.tasks.size() << " tasks written to " << c.trace << "\n";
  tessera::print_summary(trace, tessera::summarize(trace), out);
}

tessera::runtime_options gpu_runtime_options(const config& c) {
  tessera::runtime_options ro = tessera::qr::hybrid_runtime_options(c.threads);
  ro.gpu_streams = c.gpu_streams;
  ro.gpu_stream_depth = c.stream_depth;
  if (!c.urgent_stream) ro.gpu_urgent_priority = std::numeric_limits<int>::max();
  ro.gpu_urgent_sms = c.urgent_sms;
  return ro;
}

// A pinned host buffer of count elements (the blocked QR works in place on column-major memory).
template <class T>
struct pinned_buffer {
  tessera::qr::tile_allocator alloc = tessera::qr::pinned_allocator();
  std::size_t bytes;
  T* data;
  explicit pinned_buffer(std::size_t count)
      : bytes(sizeof(T) * std::max<std::size_t>(count, 1)),
        data(static_cast<T*>(alloc.allocate ? alloc.allocate(bytes) : ::operator new(bytes))) {}
  ~pinned_buffer() {
    if (alloc.deallocate) alloc.deallocate(data, bytes);
    else ::operator delete(data);
  }
  pinned_buffer(const pinned_buffer&) = delete;
  pinned_buffer& operator=(const pinned_buffer&) = delete;
};

// Runs factor() c.repeat times, prepare() untimed before each, the last run traced with --trace:
// the median time and the last run's transfers.
template <class Prepare, class Factor>
result time_runs(const config& c, tessera::runtime& rt, const std::atomic<std::uint64_t>& done,
                 std::uint64_t total, Prepare prepare, Factor factor) {
  std::vector<double> seconds;
  tessera::transfer_stats before;
  {
    progress_reporter reporter(done, total);
    for (int r = 0; r < c.repeat; ++r) {
      prepare();
      if (!c.trace.empty() && r + 1 == c.repeat) rt.enable_trace(true);
      before = rt.transfers();
      const auto t0 = std::chrono::steady_clock::now();
      factor();
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  if (!c.trace.empty()) {
    rt.enable_trace(false);
    write_trace(c, rt);
  }
  result res;
  res.transfers = since(before, rt.transfers());
  res.seconds = median(seconds);
  return res;
}

// The blocked QR on the GPU: A copied into a pinned column-major buffer outside the timing, then
// factored in place (the copies to the device and back included in the time).
template <class T>
result run_blocked(const config& c) {
  tessera::runtime rt(gpu_runtime_options(c));
  const std::vector<T> a = random_matrix<T>(c.m, c.n, c.seed);
  const std::size_t size = std::size_t(c.m) * std::size_t(c.n);
  pinned_buffer<T> work(size), t(std::size_t(c.nb) * std::size_t(c.n));
  tessera::qr::blocked_options options;
  std::atomic<std::uint64_t> done{0};
  options.nb = c.nb;
  options.ib = c.ib;
  options.bulk_columns = c.bulk_columns;
  options.chunked_steps = c.chunked_steps;
  options.lookahead = c.lookahead;
  options.progress = &done;
  const std::uint64_t total = tessera::qr::geqrt_gpu_task_count(c.m, c.n, options) * std::uint64_t(c.repeat);
  result res = time_runs(
      c, rt, done, total, [&] { std::copy_n(a.data(), size, work.data); },
      [&] { tessera::qr::geqrt_gpu(rt, c.m, c.n, work.data, c.m, t.data, c.nb, options); });
  if (c.check) res.residuals = tessera::qr::check_geqrt(c.m, c.n, c.nb, work.data, c.m, t.data, c.nb, a.data(), c.m);
  return res;
}

// One path for every device: tiles in and factorization timed together (column-major in, like
// LAPACK's GEQRF; the GPU's copies in and out included), tile storage allocated once outside the
// timing (pinned when the GPU takes part).
template <class T>
result run(const config& c) {
  const bool gpu = c.device != "cpu";
  if (gpu && !tessera::qr::hybrid_available())
    throw device_unavailable("--device " + c.device + ": no CUDA device here (or Tessera built without CUDA)");
  if (c.algorithm == "blocked") return run_blocked<T>(c);
  tessera::runtime rt(gpu ? gpu_runtime_options(c) : tessera::runtime_options{.workers = c.threads});
  tessera::qr::qr_factors<T> f(rt, c.m, c.n, c.nb, c.ib,
                               gpu && c.pinned ? tessera::qr::pinned_allocator() : tessera::qr::tile_allocator{});
  const std::vector<T> a = random_matrix<T>(c.m, c.n, c.seed);
  std::fill_n(f.a().data(), f.a().size(), T(0));             // first touch outside the timing

  std::atomic<std::uint64_t> done{0};
  tessera::qr::geqrf_options options;
  options.progress = &done;
  tessera::qr::hybrid_options hybrid;
  hybrid.progress = &done;
  hybrid.lookahead = c.lookahead;
  hybrid.split_next = c.split_next;
  hybrid.gpu_rows = c.gpu_rows;
  const std::uint64_t total = (gpu ? tessera::qr::hybrid_task_count(f.mt(), f.nt(), hybrid)
                                   : tessera::qr::geqrf_task_count(f.mt(), f.nt())) *
                              std::uint64_t(c.repeat);

  tessera::qr::blas_threads single(1);
  result res = time_runs(c, rt, done, total, [] {}, [&] {
    tessera::qr::to_tiles_async(rt, a.data(), c.m, f.a(), f.ha(), "A");
    if (gpu) {
      tessera::qr::geqrf_hybrid(rt, f, hybrid);
    } else {
      tessera::qr::geqrf_async(rt, f, options);
      rt.wait_all();
    }
  });
  if (c.check) res.residuals = tessera::qr::check_qr(rt, f, a.data(), c.m);
  return res;
}

void print_text(const config& c, const result& r, double gflops) {
  std::printf("tessera_qr: %d x %d, nb %d, ib %d, %s, device %s: ", c.m, c.n, c.nb, c.ib,
              c.precision == "s" ? "single" : "double", c.device.c_str());
  if (c.device == "cpu")
    std::printf("running on the CPUs (%u threads)\n", c.threads);
  else if (c.algorithm == "blocked")
    std::printf("blocked QR, panels and updates on the GPU (%s), lookahead %d; %u CPU threads run the runtime\n",
                tessera::qr::gpu_name().c_str(), c.lookahead, c.threads);
  else
    std::printf("running on %u CPU threads and the GPU (%s), lookahead %d\n", c.threads,
                tessera::qr::gpu_name().c_str(), c.lookahead);
  std::printf("  time      %.4f s (median of %d; tiles in + factorization)\n", r.seconds, c.repeat);
  std::printf("  rate      %.2f GFLOP/s (LAWN 41: %.4g flops)\n", gflops,
              tessera::qr::geqrf_flops(c.m, c.n));
  if (c.device != "cpu")
    std::printf("  moved     %.3f GB host->device (%llu copies), %.3f GB device->host (%llu copies), last run\n",
                double(r.transfers.h2d_bytes) * 1e-9, static_cast<unsigned long long>(r.transfers.h2d_copies),
                double(r.transfers.d2h_bytes) * 1e-9, static_cast<unsigned long long>(r.transfers.d2h_copies));
  if (r.residuals) {
    std::printf("  ||A - QR||_1 / (||A||_1 max(m,n) eps) = %.4g\n", r.residuals->qr);
    std::printf("  ||I - Q^T Q||_1 / (max(m,n) eps)      = %.4g\n", r.residuals->orth);
    std::printf("  %s (threshold 60)\n", r.residuals->passed() ? "PASSED" : "FAILED");
  }
}

void print_json(const config& c, const result& r, double gflops) {
  auto number = [](std::optional<double> x) {
    if (!x) return std::string("null");
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", *x);
    return std::string(buf);
  };
  const auto& res = r.residuals;
  std::printf(
      "{\"m\": %d, \"n\": %d, \"nb\": %d, \"ib\": %d, \"precision\": \"%s\", \"device\": \"%s\", "
      "\"algorithm\": \"%s\", "
      "\"threads\": %u, \"lookahead\": %d, \"seconds\": %s, \"gflops\": %s, \"residual_qr\": %s, "
      "\"residual_orth\": %s, \"passed\": %s, \"h2d_bytes\": %llu, \"d2h_bytes\": %llu}\n",
      c.m, c.n, c.nb, c.ib, c.precision.c_str(), c.device.c_str(), c.algorithm.c_str(), c.threads, c.lookahead,
      number(r.seconds).c_str(), number(gflops).c_str(),
      number(res ? std::optional(res->qr) : std::nullopt).c_str(),
      number(res ? std::optional(res->orth) : std::nullopt).c_str(),
      res ? (res->passed() ? "true" : "false") : "null", static_cast<unsigned long long>(r.transfers.h2d_bytes),
      static_cast<unsigned long long>(r.transfers.d2h_bytes));
}

}  // namespace

int main(int argc, char** argv) {
  config c;
  CLI::App app{"tessera_qr: tile QR factorization of a random matrix (LAWN 41 GFLOP/s)"};
  app.option_defaults()->always_capture_default();
  app.add_option("--m", c.m, "rows");
  app.add_option("--n", c.n, "columns");
  app.add_option("--nb", c.nb, "tile size, or panel width of the blocked QR (gpu/hybrid default: tuned per n)");
  app.add_option("--ib", c.ib, "inner block size (divides nb)");
  app.add_option("--precision", c.precision, "s (float) or d (double)")->check(CLI::IsMember({"s", "d"}));
  app.add_option("--device", c.device, "auto (hybrid with a GPU, else cpu), cpu, gpu (lookahead 1) or hybrid")
      ->check(CLI::IsMember({"auto", "cpu", "gpu", "hybrid"}));
  app.add_option("--algorithm", c.algorithm,
                 "auto (blocked on the GPU when m >= n, else tile), tile (the seed's tile QR; hybrid: panels on the "
                 "CPUs) or blocked (gpu/hybrid: LAPACK-style blocked QR, panels on the GPU, LAPACK GEQRT output)")
      ->check(CLI::IsMember({"auto", "tile", "blocked"}));
  app.add_option("--bulk-columns", c.bulk_columns,
                 "blocked: column blocks per bulk update task in the first --chunked-steps steps (0: all)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--chunked-steps", c.chunked_steps, "blocked: steps whose bulk update is split by --bulk-columns")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--threads", c.threads, "CPU workers (default: all cores)")->check(CLI::PositiveNumber);
  app.add_flag("--check", c.check, "compute ||A - QR|| and ||I - Q^T Q|| (threshold 60)");
  app.add_option("--trace", c.trace, "write a trace of the last run: FILE.json, .dot or .svg");
  app.add_option("--seed", c.seed, "random seed of the matrix");
  app.add_option("--repeat", c.repeat, "runs; the median time is reported")->check(CLI::PositiveNumber);
  app.add_flag("--json", c.json, "print one JSON object instead of text");
  app.add_flag("!--no-pinned", c.pinned, "gpu/hybrid: tiles in pageable memory (for comparison)");
  app.add_flag("!--no-split-next", c.split_next,
               "gpu/hybrid: update the GPU column the CPUs take next together with the rest (for comparison)");
  app.add_option("--gpu-rows", c.gpu_rows, "gpu/hybrid: TSQRT rows per GPU task of the bulk update")
      ->check(CLI::PositiveNumber);
  app.add_option("--gpu-streams", c.gpu_streams, "gpu/hybrid: GPU streams for the update")->check(CLI::PositiveNumber);
  app.add_option("--stream-depth", c.stream_depth, "gpu/hybrid: GPU tasks in flight per stream (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("!--no-urgent-stream", c.urgent_stream,
               "gpu/hybrid: no stream of its own for the GPU tasks on the CPUs' path (for comparison)");
  app.add_option("--urgent-sms", c.urgent_sms, "gpu/hybrid: SMs reserved for the urgent stream (0: none)");
  app.add_option("--lookahead", c.lookahead,
                 "hybrid: tile columns the CPUs update ahead of the GPU (tile), or column blocks updated ahead of "
                 "the bulk (blocked, >= 1); default: tuned")
      ->check(CLI::NonNegativeNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  c.lookahead_given = app.count("--lookahead") > 0;
  const bool nb_given = app.count("--nb") > 0;
  if (c.device == "auto") {
    // The blocked QR runs on the GPU alone: without one, say so rather than fall back to the CPUs.
    if (c.algorithm == "blocked") c.device = tessera::qr::hybrid_available() ? "hybrid" : "gpu";
    else c.device = tessera::qr::hybrid_available() ? "hybrid" : "cpu";
    if (c.device == "cpu" && !c.json)
      std::printf("tessera_qr: no CUDA device: running on the CPUs\n");
  }
  // The blocked QR needs m >= n; wider matrices take the tile QR on any device.
  if (c.algorithm == "auto") c.algorithm = c.device == "cpu" || c.m < c.n ? "tile" : "blocked";
  if (c.algorithm == "blocked" && c.device == "cpu") {
    std::fprintf(stderr, "tessera_qr: error: --algorithm blocked runs on the GPU: use --device gpu or hybrid\n");
    return 2;
  }
  const bool blocked = c.algorithm == "blocked";
  if (blocked && c.lookahead_given && c.lookahead < 1) {
    std::fprintf(stderr, "tessera_qr: error: --lookahead %d: the blocked QR needs at least 1\n", c.lookahead);
    return 2;
  }
  if (blocked && c.nb < 1) {  // geqrt_gpu would read 0 as "the default"
    std::fprintf(stderr, "tessera_qr: error: --nb: nb = %d: must be at least 1\n", c.nb);
    return 2;
  }
  if (c.device != "cpu" && !nb_given)
    c.nb = blocked ? tessera::qr::default_blocked_nb(c.n) : tessera::qr::default_gpu_tile_size(c.n);
  if (c.device == "gpu") c.lookahead = 1;  // the seed's "GPU-only": the CPUs keep only the next panel
  else if (c.device == "hybrid" && !c.lookahead_given)
    c.lookahead = blocked ? tessera::qr::default_blocked_lookahead(c.n)
                          : tessera::qr::default_lookahead((c.n + c.nb - 1) / std::max(c.nb, 1));
  try {
    if (!c.trace.empty()) {
      const auto dot = c.trace.rfind('.');
      const std::string ext = dot == std::string::npos ? "" : c.trace.substr(dot);
      if (ext != ".json" && ext != ".dot" && ext != ".svg")
        throw std::invalid_argument("--trace " + c.trace + ": the file must end in .json, .dot or .svg");
    }
    const result r = c.precision == "s" ? run<float>(c) : run<double>(c);
    const double gflops = tessera::qr::geqrf_flops(c.m, c.n) / r.seconds * 1e-9;
    if (c.json) print_json(c, r, gflops);
    else print_text(c, r, gflops);
    return r.residuals && !r.residuals->passed() ? 1 : 0;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "tessera_qr: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera_qr: failed: %s\n", e.what());
    return 1;
  }
}
