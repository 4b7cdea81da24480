// tessera_qr: QR of a test matrix through the front door (tessera::qr::factorize), timed (median of
// --repeat runs), GFLOP/s by LAWN 41, optionally checked (--check) and traced (--trace FILE).
// Exit status: 0 done, 1 a check or the run failed, 2 bad arguments, 3 not enough memory.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "tessera/qr.hpp"
#include "tessera/sched.hpp"
#include "tessera/sched/memory.hpp"
#include "tessera/tools/cli.hpp"

namespace {

using tessera::tools::at_least;
using tessera::tools::positive_real;

namespace qr = tessera::qr;

struct config {
  int m = 2048, n = 2048;
  std::string precision = "d";
  std::string device = "auto", algorithm = "auto", memory = "host", matrix = "random";
  qr::options o;
  qr::matrix_spec spec;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  unsigned gpu_streams = qr::gpu_runtime_options().gpu_streams;
  unsigned stream_depth = qr::gpu_runtime_options().gpu_stream_depth;
  bool urgent_stream = true;
  unsigned urgent_sms = 0;
  bool check = false, json = false;
  std::string trace;
  int repeat = 1;
};

struct result {
  qr::choice choice;
  double seconds = 0;                 // median
  tessera::transfer_stats transfers;  // of the last run
  std::vector<std::uint64_t> peer_per_step;  // several GPUs: bytes between GPUs each step, as planned
  std::optional<qr::qr_residuals> residuals;
};

// Prints the share of inserted tasks done to stderr every 2 s while a long run goes on.
class progress_reporter {
 public:
  explicit progress_reporter(const tessera::runtime& rt) : _rt(rt), _thread([this] { loop(); }) {}
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
      const auto done = _rt.tasks_completed(), total = _rt.tasks_submitted();
      std::fprintf(stderr, "tessera_qr: %llu of %llu tasks inserted so far done\n",
                   static_cast<unsigned long long>(done), static_cast<unsigned long long>(total));
    }
  }
  const tessera::runtime& _rt;
  std::mutex _mutex;
  std::condition_variable _wake;
  bool _stop = false;
  std::thread _thread;
};

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

// The host memory the tool itself needs beside the library's: one copy of the matrix (the tile
// QR's input, the blocked QR's pinned working copy, or the source of a device copy), and with
// --check the original again (when the blocked QR overwrote the only copy), Q and A - QR.
template <class T>
void require_tool_memory(const config& c, const qr::choice& ch) {
  const std::size_t mn = std::size_t(c.m) * std::size_t(c.n), elem = sizeof(T);
  const bool in_place = c.memory == "host" && ch.algo == qr::algorithm::blocked;
  // The full T's check: T, S, V and LAPACK's copy of A beside the rest.
  const std::size_t host = elem * mn * (1 + (c.check ? (in_place ? 3 : 2) + (ch.full_t ? 4 : 0) : 0));
  qr::require_available("tessera_qr", qr::memory::host, host,
                        c.check ? "the test matrix and the check" : "the test matrix");
  if (c.memory == "device")
    qr::require_available("tessera_qr", qr::memory::device, elem * mn, "the matrix in device memory");
}

template <class T>
result run(const config& c) {
  result res;
  res.choice = qr::choose(c.m, c.n, c.o);
  require_tool_memory<T>(c, res.choice);
  tessera::runtime_options ro = qr::runtime_options_for(res.choice, c.threads);
  if (ro.gpu_streams > 0) {
    ro.gpu_streams = c.gpu_streams;
    ro.gpu_stream_depth = c.stream_depth;
    if (!c.urgent_stream) ro.gpu_urgent_priority = std::numeric_limits<int>::max();
    ro.gpu_urgent_sms = c.urgent_sms;
  }
  std::optional<tessera::runtime> made;
  try {
    made.emplace(ro);
  } catch (const std::invalid_argument& e) {  // the runtime's bound on workers: name the option
    throw std::invalid_argument("--threads " + std::to_string(c.threads) + ": " + e.what());
  }
  tessera::runtime& rt = *made;

  // One host copy of the matrix at a time. The blocked QR factors host memory in place (the GPU's
  // from a pinned buffer, LAPACK's on the CPUs from a itself), so the matrix is generated there
  // before each run (untimed) and, for --check, once more into a buffer of its own; the tile QR
  // reads a (its tiles are the library's copy; when they would not fit, factorize takes LAPACK's
  // blocked QR in a instead, which the loop notices); a device matrix is copied from a.
  const int ld = std::max(1, c.m);
  const std::size_t count = std::size_t(c.m) * std::size_t(c.n);
  auto generate = [&](T* dst) { qr::generate(c.spec, c.m, c.n, dst, ld); };
  const qr::memory where = c.memory == "device" ? qr::memory::device : qr::memory::host;
  const bool pinned_work = where == qr::memory::host && res.choice.algo == qr::algorithm::blocked &&
                           res.choice.on != qr::target::cpu;
  std::vector<T> a(pinned_work ? 0 : count);
  tessera::pinned_buffer pinned;
  tessera::device_buffer on_device;
  T* work = a.data();
  if (where == qr::memory::device) {
    on_device = rt.allocate_device(sizeof(T) * count);
    work = on_device.get<T>();
  } else if (pinned_work) {
    pinned = rt.allocate_pinned(sizeof(T) * std::max<std::size_t>(count, 1));
    work = pinned.get<T>();
  }
  const qr::matrix_ref<T> w{work, c.m, c.n, ld, where};
  bool stale = true;  // work no longer holds the matrix (never generated, or factored in place)
  auto prepare = [&] {
    if (where == qr::memory::device) {
      if (a.size() && stale) generate(a.data());
      stale = false;
      qr::copy<T>(qr::host(a.data(), c.m, c.n, ld), w);
    } else if (stale) {
      generate(work);
      stale = false;
    }
  };

  std::optional<qr::factorization<T>> f;
  std::vector<double> seconds;
  tessera::transfer_stats before;
  {
    progress_reporter reporter(rt);
    for (int r = 0; r < c.repeat; ++r) {
      f.reset();
      prepare();
      if (!c.trace.empty() && r + 1 == c.repeat) rt.enable_trace(true);
      before = rt.transfers();
      const auto t0 = std::chrono::steady_clock::now();
      f.emplace(qr::factorize(rt, w, c.o));
      stale = where == qr::memory::host && f->blocked();
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  res.choice = f->choice();  // what ran: factorize may take a safer path, or single precision in double
  if (!c.trace.empty()) {
    rt.enable_trace(false);
    write_trace(c, rt);
  }
  const tessera::transfer_stats now = rt.transfers();
  res.transfers = {now.h2d_bytes - before.h2d_bytes, now.d2h_bytes - before.d2h_bytes,
                   now.h2d_copies - before.h2d_copies, now.d2h_copies - before.d2h_copies,
                   now.peer_bytes - before.peer_bytes, now.peer_copies - before.peer_copies,
                   now.staged_peer_copies - before.staged_peer_copies};
  if (res.choice.gpus > 1)
    res.peer_per_step = res.choice.on == qr::target::hybrid
                            ? qr::hybrid_peer_bytes(c.m, c.n, res.choice.nb, res.choice.ib, res.choice.lookahead,
                                                     res.choice.gpus, sizeof(T))
                            : qr::multi_gpu_peer_bytes(c.m, c.n, std::min(res.choice.nb, c.n), res.choice.gpus, sizeof(T));
  res.seconds = median(seconds);
  if (c.check) {
    std::vector<T> original;
    if (stale) {  // the factors are in a or the pinned buffer
      original.resize(count);
      generate(original.data());
    }
    res.residuals = qr::check(*f, stale ? original.data() : a.data(), ld);
  }
  return res;
}

void print_text(const config& c, const result& r, double gflops) {
  std::printf("  time      %.4f s (median of %d; the factorization from column-major %s memory, transfers included)\n",
              r.seconds, c.repeat, c.memory.c_str());
  if (r.choice.full_t)
    std::printf("  rate      %.2f GFLOP/s (LAWN 41: %.4g flops, and %.4g for the full T and S)\n", gflops,
                qr::geqrf_flops(c.m, c.n), qr::full_t_flops(c.m, c.n));
  else
    std::printf("  rate      %.2f GFLOP/s (LAWN 41: %.4g flops)\n", gflops, qr::geqrf_flops(c.m, c.n));
  if (r.choice.in_double)
    std::printf("  precision single, computed in double on the GPU (--single-in-double; R, V and T in float)\n");
  if (r.choice.on != qr::target::cpu)
    std::printf("  moved     %.3f GB host->device (%llu copies), %.3f GB device->host (%llu copies), last run\n",
                double(r.transfers.h2d_bytes) * 1e-9, static_cast<unsigned long long>(r.transfers.h2d_copies),
                double(r.transfers.d2h_bytes) * 1e-9, static_cast<unsigned long long>(r.transfers.d2h_copies));
  if (r.choice.gpus > 1)
    std::printf("  gpus      %u: %.3f GB between GPUs (%llu copies, %llu through the host), last run\n", r.choice.gpus,
                double(r.transfers.peer_bytes) * 1e-9, static_cast<unsigned long long>(r.transfers.peer_copies),
                static_cast<unsigned long long>(r.transfers.staged_peer_copies));
  if (r.residuals) {
    std::printf("  ||A - QR||_1 / (||A||_1 max(m,n) eps) = %.4g\n", r.residuals->qr);
    std::printf("  ||I - Q^T Q||_1 / (max(m,n) eps)      = %.4g\n", r.residuals->orth);
    if (r.residuals->s_error) {
      std::printf("  ||S - V T^T||_1 / (||V|| ||T|| max(m,n) eps) = %.4g\n", *r.residuals->s_error);
      std::printf("  ||T - T_LAPACK||_1 / (||T_LAPACK|| max(m,n) eps) = %.4g (xLARFT on the same reflectors)\n",
                  *r.residuals->t_error);
    }
    std::printf("  %s (threshold 60)\n", r.residuals->passed() ? "PASSED" : "FAILED");
  }
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

void print_json(const config& c, const result& r, double gflops) {
  auto number = [](std::optional<double> x) {
    if (!x) return std::string("null");
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", *x);
    return std::string(buf);
  };
  const auto& res = r.residuals;
  const qr::choice& ch = r.choice;
  std::string steps = "[";
  for (std::size_t k = 0; k < r.peer_per_step.size(); ++k)
    steps += (k ? ", " : "") + std::to_string(r.peer_per_step[k]);
  steps += "]";
  std::printf(
      "{\"m\": %d, \"n\": %d, \"nb\": %d, \"ib\": %d, \"precision\": \"%s\", \"device\": \"%s\", "
      "\"algorithm\": \"%s\", \"memory\": \"%s\", \"matrix\": \"%s\", \"cond\": %s, \"scale\": %s, "
      "\"threads\": %u, \"lookahead\": %d, \"seconds\": %s, \"gflops\": %s, \"residual_qr\": %s, "
      "\"residual_orth\": %s, \"full_t\": %s, \"residual_s\": %s, \"error_t_lapack\": %s, \"passed\": %s, "
      "\"h2d_bytes\": %llu, \"d2h_bytes\": %llu, \"gpus\": %u, \"peer_bytes\": %llu, \"peer_bytes_per_step\": %s, "
      "\"in_double\": %s, \"reason\": %s}\n",
      c.m, c.n, ch.nb, ch.ib, c.precision.c_str(), qr::name(ch.on), qr::name(ch.algo), c.memory.c_str(),
      c.matrix.c_str(), number(c.spec.cond).c_str(), number(c.spec.scale).c_str(), c.threads, ch.lookahead,
      number(r.seconds).c_str(), number(gflops).c_str(), number(res ? std::optional(res->qr) : std::nullopt).c_str(),
      number(res ? std::optional(res->orth) : std::nullopt).c_str(), ch.full_t ? "true" : "false",
      number(res ? res->s_error : std::nullopt).c_str(), number(res ? res->t_error : std::nullopt).c_str(),
      res ? (res->passed() ? "true" : "false") : "null", static_cast<unsigned long long>(r.transfers.h2d_bytes),
      static_cast<unsigned long long>(r.transfers.d2h_bytes), ch.on == qr::target::cpu ? 0u : ch.gpus,
      static_cast<unsigned long long>(r.transfers.peer_bytes), steps.c_str(), ch.in_double ? "true" : "false",
      json_string(ch.reason).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  config c;
  CLI::App app{"tessera_qr: QR factorization of a test matrix (LAWN 41 GFLOP/s)"};
  app.option_defaults()->always_capture_default();
  app.add_option("--m", c.m, "rows")->check(at_least(0));
  app.add_option("--n", c.n, "columns")->check(at_least(0));
  app.add_option("--precision", c.precision, "s (float) or d (double)")->check(CLI::IsMember({"s", "d"}));
  app.add_option("--device", c.device,
                 "where the flops run: cpu (tile QR on the CPUs), gpu (blocked QR, every flop on the GPU), hybrid "
                 "(tile QR, panels on the CPUs, updates on the GPU); auto: gpu when there is one and m >= n")
      ->check(CLI::IsMember({"auto", "cpu", "gpu", "hybrid"}));
  app.add_option("--algorithm", c.algorithm, "tile or blocked; auto: blocked on the GPU, else tile")
      ->check(CLI::IsMember({"auto", "tile", "blocked"}));
  app.add_option("--memory", c.memory, "where the input matrix lives: host or device")
      ->check(CLI::IsMember({"host", "device"}));
  std::vector<std::string> kinds;
  for (qr::matrix_kind k : qr::all_matrix_kinds) kinds.emplace_back(qr::name(k));
  app.add_option("--matrix", c.matrix, "test matrix: singular values by mode (xLATMS), or special")
      ->check(CLI::IsMember(kinds));
  app.add_option("--cond", c.spec.cond, "condition number of the spectrum modes, grading of graded")
      ->check(positive_real());
  app.add_option("--scale", c.spec.scale, "largest |a_ij| (anywhere in the precision's range)")->check(positive_real());
  app.add_option("--seed", c.spec.seed, "random seed of the matrix");
  app.add_option("--nb", c.o.nb, "tile size, or panel width of the blocked QR (0: measured default)")
      ->check(at_least(0));
  app.add_option("--ib", c.o.ib, "inner block size (tile: divides nb; blocked: <= 32; 0: default)")
      ->check(at_least(0));
  app.add_option("--lookahead", c.o.lookahead,
                 "hybrid: tile columns the CPUs update ahead of the GPU; gpu: column blocks updated ahead of the bulk "
                 "(>= 1); -1: measured default")
      ->check(at_least(-1));
  app.add_option("--threads", c.threads, "CPU workers (default: all cores)")->check(at_least(1));
  app.add_flag("--full-t", c.o.full_t,
               "also the full T of Q = I - V T V^T (n x n) and S = V T^T (the blocked QR; m >= n)");
  app.add_flag("--check", c.check,
               "compute ||A - QR|| and ||I - Q^T Q|| (threshold 60); with --full-t also ||S - V T^T|| (threshold "
               "60) and ||T - T_LAPACK|| (xLARFT on the same reflectors, threshold 60)");
  app.add_option("--trace", c.trace, "write a trace of the last run: FILE.json, .dot or .svg");
  app.add_option("--repeat", c.repeat, "runs; the median time is reported")->check(at_least(1));
  app.add_flag("--json", c.json, "print one JSON object instead of text");
  app.add_option("--bulk-columns", c.o.bulk_columns,
                 "gpu: column blocks per bulk update task in the first --chunked-steps steps (0: all)")
      ->check(at_least(0));
  app.add_option("--chunked-steps", c.o.chunked_steps, "gpu: steps whose bulk update is split by --bulk-columns")
      ->check(at_least(0));
  app.add_option("--gpu-rows", c.o.gpu_rows, "hybrid: TSQRT rows per GPU task of the bulk update")->check(at_least(1));
  app.add_option("--gpu-streams", c.gpu_streams, "GPU streams")->check(at_least(1));
  app.add_option("--gpus", c.o.gpus,
                 "gpu, blocked: GPUs that split the trailing matrix; hybrid: GPUs that share the GPU's columns "
                 "(default 1; more than the machine has is an error)")
      ->check(at_least(1));
  app.add_option("--single-in-double", c.o.single_in_double,
                 "single precision, blocked QR on the GPU: -1 computed in double where the GPU's rule says "
                 "(compute capability 9.0), 0 never, 1 always")
      ->check(CLI::Range(-1, 1));
  app.add_flag("--gpus-on-one-device", c.o.gpus_on_one_device,
               "tests: every one of --gpus is CUDA device 0 (the several-GPU code on one GPU; no speed-up)");
  app.add_option("--stream-depth", c.stream_depth, "GPU tasks in flight per stream (0: no limit)")->check(at_least(0));
  app.add_flag("!--no-urgent-stream", c.urgent_stream, "no stream of its own for the critical path (for comparison)");
  app.add_option("--urgent-sms", c.urgent_sms, "SMs reserved for the urgent stream (0: none)")->check(at_least(0));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return tessera::tools::parse_failed(app, e);
  }
  if (app.count("--bulk-columns") == 0) c.o.bulk_columns = -1;
  if (app.count("--chunked-steps") == 0) c.o.chunked_steps = -1;
  c.o.on = c.device == "cpu"      ? qr::target::cpu
           : c.device == "gpu"    ? qr::target::gpu
           : c.device == "hybrid" ? qr::target::hybrid
                                  : qr::target::automatic;
  c.o.algo = c.algorithm == "tile" ? qr::algorithm::tile
             : c.algorithm == "blocked" ? qr::algorithm::blocked
                                        : qr::algorithm::automatic;
  c.o.threads = c.threads;
  c.spec.kind = *qr::parse_matrix_kind(c.matrix);

  return tessera::tools::run_with_exit_codes("tessera_qr", [&] {
    if (!c.trace.empty()) {
      const auto dot = c.trace.rfind('.');
      const std::string ext = dot == std::string::npos ? "" : c.trace.substr(dot);
      if (ext != ".json" && ext != ".dot" && ext != ".svg")
        throw std::invalid_argument("--trace " + c.trace + ": the file must end in .json, .dot or .svg");
      // Fail now, not after the whole factorization, when the file cannot be written.
      if (!std::ofstream(c.trace)) throw std::invalid_argument("--trace " + c.trace + ": cannot write to this file");
    }
    if (c.memory == "device" && !qr::gpu_available())
      throw std::invalid_argument("--memory device: no CUDA device here (or Tessera built without CUDA)");
    qr::choice ch;
    try {
      ch = qr::choose(c.m, c.n, c.o);
    } catch (const std::invalid_argument& e) {  // name the command line's arguments too
      throw std::invalid_argument("--device " + c.device + " --algorithm " + c.algorithm + ": " + e.what());
    }
    if (!c.json) {
      if (!qr::gpu_available()) std::printf("tessera_qr: no CUDA device: running on the CPUs\n");
      std::printf("tessera_qr: %d x %d %s, %s matrix, nb %d, ib %d: %s", c.m, c.n,
                  c.precision == "s" ? "single" : "double", c.matrix.c_str(), ch.nb, ch.ib, ch.reason.c_str());
      if (ch.on == qr::target::cpu) std::printf(" (running on the CPUs: %u threads)\n", c.threads);
      else std::printf(" (%s; %u CPU threads, lookahead %d)\n", qr::gpu_name().c_str(), c.threads, ch.lookahead);
      std::fflush(stdout);
    }
    const result r = c.precision == "s" ? run<float>(c) : run<double>(c);
    const double flops = qr::geqrf_flops(c.m, c.n) + (r.choice.full_t ? qr::full_t_flops(c.m, c.n) : 0);
    const double gflops = r.seconds > 0 ? flops / r.seconds * 1e-9 : 0;
    if (c.json) print_json(c, r, gflops);
    else print_text(c, r, gflops);
    return r.residuals && !r.residuals->passed() ? 1 : 0;
  });
}
