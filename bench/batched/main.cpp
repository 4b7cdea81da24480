// tessera_batched_bench: batched LU and inverse of 2^20 (and 2^16) tiny matrices, n = 1..32, float
// and double, device-resident: Tessera's register-resident kernels against cuBLAS getrfBatched,
// getrfBatched + getriBatched, and matinvBatched, and against a device-to-device copy of the same
// bytes measured in the same run (the memory-bound limit). The solves (--nrhs): GETRS and the fused
// GESV against cuBLAS getrsBatched (after getrfBatched for GESV). Then a host-resident batch streamed
// through the GPU (tessera::batched) against the pinned host-to-device copy.
// Times are the best of --reps runs (CUDA events), rates by LAPACK's flop counts, bandwidth as
// (bytes read + bytes written) / time. A short table is printed last; every figure goes to --csv.
#include <CLI/CLI.hpp>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/machine.hpp"
#include "gpu/fill.hpp"
#include "tessera/batched/batched.hpp"
#include "tessera/batched/check.hpp"
#include "tessera/kernels_gpu/gpu_batched.hpp"
#include "tessera/sched/runtime.hpp"
#include "tessera/sched/trace_export.hpp"

namespace {

namespace bt = tessera::batched;
namespace tk = tessera::kernels;

void ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
void ok(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": " + cublasGetStatusString(s));
}

// Every device-resident measurement takes its buffers from one allocation made once, at the size
// the largest measurement needs. With a cudaMalloc and cudaFree per order, the copy that the kernels
// are compared with got slower as orders went by (H100, n = 32 in double: 5.66 ms run alone, 5.98 to
// 6.56 ms after other orders), while the kernels' times did not move.
struct device_arena {
  char* base = nullptr;
  std::size_t cap = 0, used = 0;
  void reserve(std::size_t bytes) {
    if (bytes <= cap) return;
    if (base) ok(cudaFree(base), "free arena");
    base = nullptr;
    ok(cudaMalloc(&base, bytes), "malloc arena");
    cap = bytes;
  }
  template <class T>
  void take(T*& p, std::size_t count) {
    const std::size_t bytes = (count * sizeof(T) + 255) / 256 * 256;
    if (used + bytes > cap) throw std::runtime_error("device arena: a measurement needs more than was reserved");
    p = reinterpret_cast<T*>(base + used);
    used += bytes;
  }
  void reset() { used = 0; }
  void release() {
    if (base) cudaFree(base);
    base = nullptr;
    cap = used = 0;
  }
};
device_arena arena;

// An upper bound of the arena a measurement of order n with nrhs right-hand sides needs: three
// batches of matrices and right-hand sides, pivots, info, pointer arrays, alignment.
std::size_t arena_bytes(int n, int nrhs, long long count, std::size_t elem) {
  const std::size_t c = static_cast<std::size_t>(count), per = std::size_t(n) * (n + std::size_t(std::max(nrhs, 0)));
  return 3 * c * per * elem + c * (8 * std::size_t(n) + 4 + 2 * sizeof(void*)) + 16 * 256;
}

cublasStatus_t getrf(cublasHandle_t h, int n, float* const* a, int lda, int* p, int* info, int count) {
  return cublasSgetrfBatched(h, n, a, lda, p, info, count);
}
cublasStatus_t getrf(cublasHandle_t h, int n, double* const* a, int lda, int* p, int* info, int count) {
  return cublasDgetrfBatched(h, n, a, lda, p, info, count);
}
cublasStatus_t getri(cublasHandle_t h, int n, float* const* a, int lda, const int* p, float* const* c, int ldc,
                     int* info, int count) {
  return cublasSgetriBatched(h, n, a, lda, p, c, ldc, info, count);
}
cublasStatus_t getri(cublasHandle_t h, int n, double* const* a, int lda, const int* p, double* const* c, int ldc,
                     int* info, int count) {
  return cublasDgetriBatched(h, n, a, lda, p, c, ldc, info, count);
}
cublasStatus_t matinv(cublasHandle_t h, int n, float* const* a, int lda, float* const* c, int ldc, int* info,
                      int count) {
  return cublasSmatinvBatched(h, n, a, lda, c, ldc, info, count);
}
cublasStatus_t matinv(cublasHandle_t h, int n, double* const* a, int lda, double* const* c, int ldc, int* info,
                      int count) {
  return cublasDmatinvBatched(h, n, a, lda, c, ldc, info, count);
}

cublasStatus_t getrs(cublasHandle_t h, int n, int nrhs, float* const* a, int lda, const int* p, float* const* b,
                     int ldb, int* info, int count) {
  return cublasSgetrsBatched(h, CUBLAS_OP_N, n, nrhs, a, lda, p, b, ldb, info, count);
}
cublasStatus_t getrs(cublasHandle_t h, int n, int nrhs, double* const* a, int lda, const int* p, double* const* b,
                     int ldb, int* info, int count) {
  return cublasDgetrsBatched(h, CUBLAS_OP_N, n, nrhs, a, lda, p, b, ldb, info, count);
}

struct timer {
  cudaStream_t s;
  cudaEvent_t a, b;
  explicit timer(cudaStream_t st) : s(st) {
    ok(cudaEventCreate(&a), "event");
    ok(cudaEventCreate(&b), "event");
  }
  ~timer() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  // Best of reps of f() in ms; prep() (not timed) runs before each.
  template <class P, class F>
  double best(int reps, P prep, F f) {
    double t = 1e30;
    for (int r = 0; r < reps; ++r) {
      prep();
      ok(cudaEventRecord(a, s), "record");
      f();
      ok(cudaEventRecord(b, s), "record");
      ok(cudaEventSynchronize(b), "sync");
      float ms = 0;
      ok(cudaEventElapsedTime(&ms, a, b), "elapsed");
      t = std::min(t, double(ms));
    }
    return t;
  }
};

struct row {
  std::string prec;
  int n;
  long long count;
  double copy_ms, lu_ms, inv_ms, cu_getrf_ms, cu_getri_ms, cu_matinv_ms;
  double lu_bytes, inv_bytes, copy_bytes;
  long long pivots_differ;
};

template <class T>
row measure(int n, long long count, int reps, cudaStream_t s, cublasHandle_t h, bool cublas_on) {
  const std::size_t nn = std::size_t(n) * n, elems = nn * std::size_t(count);
  T *a0, *a, *x;
  int *piv, *info, *cpiv;
  T **pa, **px;
  arena.reset();
  arena.take(a0, elems);
  arena.take(a, elems);
  arena.take(x, elems);
  arena.take(piv, std::size_t(count) * n);
  arena.take(cpiv, std::size_t(count) * n);
  arena.take(info, std::size_t(count));
  arena.take(pa, std::size_t(count));
  arena.take(px, std::size_t(count));
  {
    std::vector<T*> hp(static_cast<std::size_t>(count)), hx(static_cast<std::size_t>(count));
    for (long long b = 0; b < count; ++b) {
      hp[std::size_t(b)] = a + std::size_t(b) * nn;
      hx[std::size_t(b)] = x + std::size_t(b) * nn;
    }
    ok(cudaMemcpy(pa, hp.data(), hp.size() * sizeof(T*), cudaMemcpyHostToDevice), "pointers");
    ok(cudaMemcpy(px, hx.data(), hx.size() * sizeof(T*), cudaMemcpyHostToDevice), "pointers");
  }
  tessera::bench::fill_uniform(a0, elems, 42, s);
  timer t(s);
  auto restore = [&] { ok(cudaMemcpyAsync(a, a0, elems * sizeof(T), cudaMemcpyDeviceToDevice, s), "restore"); };
  auto none = [] {};
  const tk::gpu_batch<T> A{a, (long long)nn, nullptr, n}, X{x, (long long)nn, nullptr, n};
  row r{};
  r.prec = sizeof(T) == 4 ? "s" : "d";
  r.n = n;
  r.count = count;
  r.copy_bytes = 2.0 * double(elems * sizeof(T));
  r.lu_bytes = 2.0 * double(elems * sizeof(T)) + double(count) * (n + 1) * sizeof(int);
  r.inv_bytes = 2.0 * double(elems * sizeof(T)) + double(count) * sizeof(int);
  r.copy_ms = t.best(reps, none, [&] {
    ok(cudaMemcpyAsync(x, a0, elems * sizeof(T), cudaMemcpyDeviceToDevice, s), "copy");
  });
  r.lu_ms = t.best(reps, restore, [&] { tk::gpu_batched_getrf(n, A, piv, info, count, s); });
  r.inv_ms = t.best(reps, none, [&] {
    tk::gpu_batched_inverse(n, tk::gpu_batch<T>{a0, (long long)nn, nullptr, n}, X, info, count, s);
  });
  r.cu_getrf_ms = r.cu_getri_ms = r.cu_matinv_ms = -1;
  r.pivots_differ = -1;
  if (cublas_on) {
    ok(cublasSetStream(h, s), "set stream");
    r.cu_getrf_ms = t.best(reps, restore, [&] { ok(getrf(h, n, pa, n, cpiv, info, int(count)), "getrfBatched"); });
    // Pivots: Tessera's against cuBLAS's on the same matrices (a count, not a test).
    {
      restore();
      tk::gpu_batched_getrf(n, A, piv, info, count, s);
      ok(cudaStreamSynchronize(s), "sync");
      std::vector<int> p1(std::size_t(count) * n), p2(p1.size());
      ok(cudaMemcpy(p1.data(), piv, p1.size() * sizeof(int), cudaMemcpyDeviceToHost), "piv");
      ok(cudaMemcpy(p2.data(), cpiv, p2.size() * sizeof(int), cudaMemcpyDeviceToHost), "cpiv");
      r.pivots_differ = 0;
      for (long long b = 0; b < count; ++b)
        if (!std::equal(p1.begin() + b * n, p1.begin() + (b + 1) * n, p2.begin() + b * n)) ++r.pivots_differ;
    }
    // getriBatched on getrfBatched's factors (a holds them from the last getrf run).
    restore();
    ok(getrf(h, n, pa, n, cpiv, info, int(count)), "getrfBatched");
    r.cu_getri_ms = t.best(reps, none, [&] { ok(getri(h, n, pa, n, cpiv, px, n, info, int(count)), "getriBatched"); });
    r.cu_matinv_ms = t.best(reps, restore, [&] { ok(matinv(h, n, pa, n, px, n, info, int(count)), "matinvBatched"); });
  }
  return r;
}

// The solves with nrhs right-hand sides: GETRS on Tessera's factors, the fused GESV, cuBLAS
// getrsBatched on cuBLAS's factors (and getrfBatched + getrsBatched for GESV), and the copy of the
// bytes GESV reads and writes.
struct solve_row {
  std::string prec;
  int n, nrhs;
  long long count;
  double copy_ms, getrs_ms, gesv_ms, cu_getrs_ms, cu_getrf_ms;
  double getrs_bytes, gesv_bytes, copy_bytes;
};

template <class T>
solve_row measure_solve(int n, int nrhs, long long count, int reps, cudaStream_t s, cublasHandle_t h, bool cublas_on) {
  const std::size_t nn = std::size_t(n) * n, nk = std::size_t(n) * nrhs;
  const std::size_t elems = nn * std::size_t(count), belems = nk * std::size_t(count);
  T *a0, *a, *b0, *b, *x;
  int *piv, *info, *cpiv;
  T **pa, **pb;
  arena.reset();
  arena.take(a0, elems);
  arena.take(a, elems);
  arena.take(b0, belems);
  arena.take(b, belems);
  arena.take(x, elems + belems);
  arena.take(piv, std::size_t(count) * n);
  arena.take(cpiv, std::size_t(count) * n);
  arena.take(info, std::size_t(count));
  arena.take(pa, std::size_t(count));
  arena.take(pb, std::size_t(count));
  {
    std::vector<T*> hp(static_cast<std::size_t>(count)), hb(static_cast<std::size_t>(count));
    for (long long i = 0; i < count; ++i) {
      hp[std::size_t(i)] = a + std::size_t(i) * nn;
      hb[std::size_t(i)] = b + std::size_t(i) * nk;
    }
    ok(cudaMemcpy(pa, hp.data(), hp.size() * sizeof(T*), cudaMemcpyHostToDevice), "pointers");
    ok(cudaMemcpy(pb, hb.data(), hb.size() * sizeof(T*), cudaMemcpyHostToDevice), "pointers");
  }
  tessera::bench::fill_uniform(a0, elems, 42, s);
  tessera::bench::fill_uniform(b0, belems, 43, s);
  timer t(s);
  auto restore_a = [&] { ok(cudaMemcpyAsync(a, a0, elems * sizeof(T), cudaMemcpyDeviceToDevice, s), "restore"); };
  auto restore_b = [&] { ok(cudaMemcpyAsync(b, b0, belems * sizeof(T), cudaMemcpyDeviceToDevice, s), "restore"); };
  auto restore_ab = [&] {
    restore_a();
    restore_b();
  };
  const tk::gpu_batch<T> A{a, (long long)nn, nullptr, n}, B{b, (long long)nk, nullptr, n};
  solve_row r{};
  r.prec = sizeof(T) == 4 ? "s" : "d";
  r.n = n;
  r.nrhs = nrhs;
  r.count = count;
  const double c = double(count);
  r.getrs_bytes = double(elems * sizeof(T)) + 2.0 * double(belems * sizeof(T)) + c * n * sizeof(int);
  r.gesv_bytes = 2.0 * double((elems + belems) * sizeof(T)) + c * (n + 1) * sizeof(int);
  r.copy_bytes = 2.0 * double((elems + belems) * sizeof(T));
  r.copy_ms = t.best(reps, [] {}, [&] {
    ok(cudaMemcpyAsync(x, a0, elems * sizeof(T), cudaMemcpyDeviceToDevice, s), "copy");
    ok(cudaMemcpyAsync(x + elems, b0, belems * sizeof(T), cudaMemcpyDeviceToDevice, s), "copy");
  });
  restore_a();
  tk::gpu_batched_getrf(n, A, piv, info, count, s);  // a: Tessera's factors
  r.getrs_ms = t.best(reps, restore_b, [&] { tk::gpu_batched_getrs(n, nrhs, A, piv, B, count, s); });
  r.gesv_ms = t.best(reps, restore_ab, [&] { tk::gpu_batched_gesv(n, nrhs, A, piv, B, info, count, s); });
  r.cu_getrs_ms = r.cu_getrf_ms = -1;
  if (cublas_on) {
    ok(cublasSetStream(h, s), "set stream");
    r.cu_getrf_ms = t.best(reps, restore_a, [&] { ok(getrf(h, n, pa, n, cpiv, info, int(count)), "getrfBatched"); });
    int host_info = 0;  // a: cuBLAS's factors from the last run
    r.cu_getrs_ms = t.best(reps, restore_b, [&] {
      ok(getrs(h, n, nrhs, pa, n, cpiv, pb, n, &host_info, int(count)), "getrsBatched");
    });
  }
  return r;
}

// Pinned copy bandwidths (GB/s) of `bytes`, best of 3: host to device, device to host, and both
// at once on two streams (each way), the link the streamed runs share.
struct link_rates {
  double h2d = 0, d2h = 0, both = 0;
};
link_rates pinned_link(std::size_t bytes, cudaStream_t s) {
  void *h, *h2, *d, *d2;
  ok(cudaMallocHost(&h, bytes), "pinned");
  ok(cudaMallocHost(&h2, bytes), "pinned");
  ok(cudaMalloc(&d, bytes), "malloc");
  ok(cudaMalloc(&d2, bytes), "malloc");
  std::memset(h, 0, bytes);
  std::memset(h2, 0, bytes);
  cudaStream_t s2;
  ok(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), "stream");
  cudaEvent_t joined;
  ok(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming), "event");
  timer t(s);
  link_rates r;
  r.h2d = double(bytes) / t.best(3, [] {}, [&] { ok(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s), "h2d"); }) * 1e-6;
  r.d2h = double(bytes) / t.best(3, [] {}, [&] { ok(cudaMemcpyAsync(h2, d2, bytes, cudaMemcpyDeviceToHost, s), "d2h"); }) * 1e-6;
  r.both = double(bytes) / t.best(3, [] {}, [&] {
    ok(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s), "h2d");
    ok(cudaMemcpyAsync(h2, d2, bytes, cudaMemcpyDeviceToHost, s2), "d2h");
    ok(cudaEventRecord(joined, s2), "record");
    ok(cudaStreamWaitEvent(s, joined, 0), "wait");
  }) * 1e-6;
  cudaEventDestroy(joined);
  cudaStreamDestroy(s2);
  for (void* p : {h, h2}) cudaFreeHost(p);
  for (void* p : {d, d2}) cudaFree(p);
  return r;
}

struct stream_row {
  std::string op, prec, memory;
  int n;
  long long count;
  double seconds, gbs_each_way, link_gbs, chunks;
  int depth;
  std::size_t chunk_bytes;
  double cpu_share;            // asked (negative: the library's measured choice)
  long long cpu_matrices = 0;  // what the CPUs did
};

// Where a streamed run's time went, from the runtime's trace of its last repetition: busy time of
// each track (workers, GPU streams, the H2D and D2H copy streams) and of each task label.
void print_stream_trace(const tessera::trace_data& tr, const std::string& path) {
  const tessera::trace_summary sm = tessera::summarize(tr);
  std::printf("trace of the last run: span %.1f ms; busy of span by track:", sm.span_us * 1e-3);
  for (std::size_t i = 0; i < tr.tracks.size() && i < sm.busy_us.size(); ++i)
    if (tr.tracks[i].find("worker") == std::string::npos || i < 2)
      std::printf(" %s %.0f%%", tr.tracks[i].c_str(), 100 * sm.busy_us[i] / sm.span_us);
  double workers = 0;
  for (std::size_t i = 0; i < tr.tracks.size() && i < sm.busy_us.size(); ++i)
    if (tr.tracks[i].find("worker") != std::string::npos) workers += sm.busy_us[i];
  std::printf("; all workers %.1f busy cores\n", workers / sm.span_us);
  for (const tessera::label_stats& l : sm.labels)
    std::printf("  %-16s %6zu  total %8.1f ms  median %7.1f us  max %7.1f us\n", l.label.c_str(), l.tasks,
                l.total_us * 1e-3, l.median_us, l.max_us);
  if (!path.empty()) tessera::write_trace_file(tr, path);
}

// A host batch in pageable memory (std::vector's) or pinned (cudaMallocHost: then the library
// copies it in place, report::copied_in_place).
template <class T>
struct host_batch {
  T* p = nullptr;
  std::size_t n = 0;
  bool pinned = false;
  std::vector<T> v;
  host_batch(std::size_t elems, bool pin) : n(elems), pinned(pin) {
    if (pin) ok(cudaMallocHost(reinterpret_cast<void**>(&p), sizeof(T) * std::max<std::size_t>(elems, 1)), "cudaMallocHost");
    else p = (v = std::vector<T>(elems)).data();
  }
  ~host_batch() {
    if (pinned) cudaFreeHost(p);
  }
  host_batch(const host_batch&) = delete;
  host_batch& operator=(const host_batch&) = delete;
  std::size_t size() const { return n; }
  T& operator[](std::size_t i) { return p[i]; }
  T* data() { return p; }
};

template <class T>
stream_row streamed(const std::string& op, int n, long long count, double link, unsigned threads, int depth,
                    std::size_t chunk_bytes, const std::string& trace, const std::string& memory, double cpu_share) {
  const std::size_t nn = std::size_t(n) * n;
  host_batch<T> a(nn * std::size_t(count), memory == "pinned"), x(op == "inv" ? nn * std::size_t(count) : 0, memory == "pinned");
  {  // filled on all threads: gigabytes
    std::vector<std::thread> pool;
    const std::size_t per = a.size() / threads + 1;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&a, per, t] {
        for (std::size_t i = t * per; i < std::min(a.size(), (t + 1) * per); ++i)
          a[i] = T(double((i * 2654435761u) % 2001) / 1000.0 - 1.0);
      });
    for (auto& th : pool) th.join();
  }
  std::vector<int> piv(static_cast<std::size_t>(count) * n), info(static_cast<std::size_t>(count));
  tessera::runtime_options ro;
  ro.workers = threads;
  ro.gpu_streams = 2;
  tessera::runtime rt(ro);  // made once: the first run below warms it (threads, streams, pinned staging)
  bt::options o;
  o.on = bt::target::gpu;
  o.rt = &rt;
  o.depth = depth;
  o.chunk_bytes = chunk_bytes;
  o.cpu_share = cpu_share;
  double best = 1e30;
  bt::report r;
  for (int rep = 0; rep < 3; ++rep) {
    rt.enable_trace(!trace.empty() && rep == 2);
    const auto t0 = std::chrono::steady_clock::now();
    if (op == "lu") r = bt::lu(bt::strided(a.data(), n, count), piv.data(), info.data(), o);
    else r = bt::inverse(bt::strided(a.data(), n, count), bt::strided(x.data(), n, count), info.data(), o);
    if (rep > 0) best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  stream_row sr{op, sizeof(T) == 4 ? "s" : "d", memory + (r.copied_in_place ? " (in place)" : ""), n, count, best,
                double(a.size() * sizeof(T)) / best * 1e-9, link, double(r.chunks), depth, chunk_bytes, cpu_share,
                r.cpu_matrices};
  if (!trace.empty()) {
    rt.enable_trace(false);
    std::printf("streamed %s %s n=%d depth %d chunk %zu: %.1f GB/s each way\n", op.c_str(), sr.prec.c_str(), n, depth,
                chunk_bytes, sr.gbs_each_way);
    print_stream_trace(rt.trace(), trace == "-" ? std::string() : trace + "_" + op + sr.prec + std::to_string(n) + ".json");
  }
  return sr;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tessera_batched_bench: batched LU, inverse and solves of tiny matrices against cuBLAS"};
  std::vector<int> ns;
  std::vector<long long> counts{1 << 20, 1 << 16};
  std::string precisions = "sd", csv = "batched_bench.csv";
  int reps = 3;
  bool cublas_on = true;
  std::vector<int> stream_ns{8, 32};
  long long stream_count = 1 << 19;
  unsigned threads = 16;
  std::vector<int> stream_depths{bt::options{}.depth};
  std::vector<std::size_t> stream_chunks{0};
  std::string stream_trace;
  std::vector<std::string> stream_ops{"lu", "inv"};
  std::vector<std::string> stream_memory{"pageable"};
  std::vector<double> stream_cpu_shares{0};
  std::vector<int> nrhs_list{1}, solve_ns;
  app.add_option("--n", ns, "orders (default 1..32)")->delimiter(',');
  app.add_option("--counts", counts, "batch sizes")->delimiter(',');
  app.add_option("--precisions", precisions, "s, d or sd");
  app.add_option("--reps", reps, "runs per figure (best is kept)");
  app.add_flag("!--no-cublas", cublas_on, "skip cuBLAS");
  app.add_option("--stream-n", stream_ns, "orders of the streamed host-resident runs (none: -1)")->delimiter(',');
  app.add_option("--stream-count", stream_count, "matrices of the streamed runs");
  app.add_option("--threads", threads, "CPU threads of the streamed runs");
  app.add_option("--stream-depth", stream_depths, "chunks in flight in the streamed runs (a list: each is run)")
      ->delimiter(',');
  app.add_option("--stream-chunk", stream_chunks, "bytes a chunk in the streamed runs (0: the library's; a list)")
      ->delimiter(',');
  app.add_option("--stream-memory", stream_memory, "host memory of the streamed batches: pageable, pinned (a list)")
      ->delimiter(',');
  app.add_option("--stream-cpu-share", stream_cpu_shares,
                 "share of the streamed batch the CPUs do (options::cpu_share; negative: the library measures it; a list)")
      ->delimiter(',');
  app.add_option("--stream-ops", stream_ops, "operations of the streamed runs: lu, inv")
      ->delimiter(',')
      ->check(CLI::IsMember({"lu", "inv"}));
  app.add_option("--stream-trace", stream_trace,
                 "trace each streamed run's last repetition: print where the time went, and write PREFIX_<op><prec><n>.json "
                 "(-: print only)");
  app.add_option("--nrhs", nrhs_list, "right-hand sides of the solve runs (GETRS, GESV; none: 0; a list)")->delimiter(',');
  app.add_option("--solve-n", solve_ns, "orders of the solve runs (default: --n's)")->delimiter(',');
  app.add_option("--csv", csv, "where every figure goes");
  CLI11_PARSE(app, argc, argv);
  if (ns.empty())
    for (int n = 1; n <= 32; ++n) ns.push_back(n);
  if (solve_ns.empty()) solve_ns = ns;
  int dev = 0;
  cudaDeviceProp prop;
  ok(cudaGetDevice(&dev), "device");
  ok(cudaGetDeviceProperties(&prop, dev), "properties");
  cudaStream_t s;
  ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  cublasHandle_t h;
  ok(cublasCreate(&h), "cublas");
  std::ofstream out(csv);
  std::printf("# %s, %d SMs; host %s\n", prop.name, prop.multiProcessorCount, tessera::bench::cpu_model().c_str());
  out << "# " << prop.name << "; host " << tessera::bench::cpu_model() << "\n";
  out << "precision,n,count,copy_ms,copy_GBs,lu_ms,lu_GBs,lu_GFLOPs,inv_ms,inv_GBs,inv_GFLOPs,cublas_getrf_ms,"
         "cublas_getri_ms,cublas_matinv_ms,lu_pivots_differ_from_cublas\n";
  {
    std::size_t need = 0;
    const std::size_t elem = precisions.find('d') != std::string::npos ? sizeof(double) : sizeof(float);
    for (long long count : counts) {
      for (int n : ns) need = std::max(need, arena_bytes(n, 0, count, elem));
      if (!nrhs_list.empty() && nrhs_list[0] > 0)
        for (int k : nrhs_list)
          for (int n : solve_ns) need = std::max(need, arena_bytes(n, k, count, elem));
    }
    arena.reserve(need);
  }
  std::vector<row> rows;
  for (long long count : counts)
    for (char p : precisions)
      for (int n : ns) {
        const row r = p == 's' ? measure<float>(n, count, reps, s, h, cublas_on) : measure<double>(n, count, reps, s, h, cublas_on);
        rows.push_back(r);
        const double c = double(count);
        char line[512];
        std::snprintf(line, sizeof line, "%s,%d,%lld,%.4f,%.1f,%.4f,%.1f,%.1f,%.4f,%.1f,%.1f,%.4f,%.4f,%.4f,%lld",
                      r.prec.c_str(), n, count, r.copy_ms, r.copy_bytes / r.copy_ms * 1e-6, r.lu_ms,
                      r.lu_bytes / r.lu_ms * 1e-6, bt::getrf_flops(n) * c / r.lu_ms * 1e-6, r.inv_ms,
                      r.inv_bytes / r.inv_ms * 1e-6, bt::inverse_flops(n) * c / r.inv_ms * 1e-6, r.cu_getrf_ms,
                      r.cu_getri_ms, r.cu_matinv_ms, r.pivots_differ);
        out << line << "\n";
        out.flush();
        std::fprintf(stderr, "%s\n", line);
      }
  std::vector<solve_row> solves;
  if (!nrhs_list.empty() && nrhs_list[0] > 0) {
    out << "# solve: precision,n,count,nrhs,copy_ms,getrs_ms,getrs_GBs,gesv_ms,gesv_GBs,cublas_getrs_ms,cublas_getrf_ms\n";
    for (long long count : counts)
      for (char p : precisions)
        for (int k : nrhs_list)
          for (int n : solve_ns) {
            const solve_row r = p == 's' ? measure_solve<float>(n, k, count, reps, s, h, cublas_on)
                                         : measure_solve<double>(n, k, count, reps, s, h, cublas_on);
            solves.push_back(r);
            char line[512];
            std::snprintf(line, sizeof line, "# solve,%s,%d,%lld,%d,%.4f,%.4f,%.1f,%.4f,%.1f,%.4f,%.4f", r.prec.c_str(), n,
                          count, k, r.copy_ms, r.getrs_ms, r.getrs_bytes / r.getrs_ms * 1e-6, r.gesv_ms,
                          r.gesv_bytes / r.gesv_ms * 1e-6, r.cu_getrs_ms, r.cu_getrf_ms);
            out << line << "\n";
            out.flush();
            std::fprintf(stderr, "%s\n", line + 2);
          }
  }
  arena.release();  // the streamed runs size their staging to the device memory left
  std::vector<stream_row> srows;
  if (!stream_ns.empty() && stream_ns[0] > 0) {
    const link_rates link = pinned_link(std::size_t(1) << 30, s);
    std::printf("pinned copies of 1 GiB: H2D %.1f GB/s, D2H %.1f GB/s, both at once %.1f GB/s each way\n", link.h2d,
                link.d2h, link.both);
    out << "# pinned H2D " << link.h2d << " GB/s, D2H " << link.d2h << " GB/s, both at once " << link.both
        << " GB/s each way\n";
    for (char p : precisions)
      for (int n : stream_ns)
        for (const std::string& op : stream_ops)
          for (int depth : stream_depths)
            for (std::size_t chunk : stream_chunks)
              for (const std::string& mem : stream_memory)
                for (double share : stream_cpu_shares) {
              const stream_row r =
                  p == 's' ? streamed<float>(op, n, stream_count, link.h2d, threads, depth, chunk, stream_trace, mem, share)
                           : streamed<double>(op, n, stream_count, link.h2d, threads, depth, chunk, stream_trace, mem, share);
              srows.push_back(r);
              std::fprintf(stderr, "streamed %s %s n=%d %s depth %d chunk %zu: %.4f s, %.1f GB/s each way\n", r.op.c_str(),
                           r.prec.c_str(), r.n, r.memory.c_str(), depth, chunk, r.seconds, r.gbs_each_way);
              out << "# streamed," << r.op << "," << r.prec << "," << r.memory << "," << r.n << "," << r.count << ",depth " << depth
                  << ",chunk " << chunk << "," << r.seconds << "s," << r.gbs_each_way << " GB/s each way, pinned H2D "
                  << r.link_gbs << " GB/s, " << r.chunks << " chunks, cpu share " << r.cpu_share << ", cpu matrices "
                  << r.cpu_matrices << "\n";
            }
  }
  // The short table, last.
  std::printf("\n%-4s %3s %8s | %8s %8s %8s | %7s %7s | %9s %9s %9s | %6s %6s\n", "prec", "n", "count", "copy ms",
              "LU ms", "inv ms", "LU %cp", "inv %cp", "cu getrf", "cu +getri", "cu matinv", "LU x", "inv x");
  for (const row& r : rows) {
    const double bw = r.copy_bytes / r.copy_ms;
    std::printf("%-4s %3d %8lld | %8.3f %8.3f %8.3f | %6.0f%% %6.0f%% | %9.3f %9.3f %9.3f | %6.2f %6.2f\n",
                r.prec.c_str(), r.n, r.count, r.copy_ms, r.lu_ms, r.inv_ms, 100 * r.lu_bytes / r.lu_ms / bw,
                100 * r.inv_bytes / r.inv_ms / bw, r.cu_getrf_ms, r.cu_getrf_ms + r.cu_getri_ms, r.cu_matinv_ms,
                r.cu_getrf_ms / r.lu_ms, (r.cu_getrf_ms + r.cu_getri_ms) / r.inv_ms);
  }
  if (!solves.empty())
    std::printf("\n%-4s %3s %4s %8s | %8s %8s %8s | %8s %7s | %9s %9s | %7s %7s\n", "prec", "n", "nrhs", "count",
                "copy ms", "GETRS ms", "GESV ms", "GETRS%cp", "GESV%cp", "cu getrs", "cu rf+rs", "GETRS x", "GESV x");
  for (const solve_row& r : solves) {
    const double bw = r.copy_bytes / r.copy_ms;
    std::printf("%-4s %3d %4d %8lld | %8.3f %8.3f %8.3f | %7.0f%% %6.0f%% | %9.3f %9.3f | %7.2f %7.2f\n", r.prec.c_str(),
                r.n, r.nrhs, r.count, r.copy_ms, r.getrs_ms, r.gesv_ms, 100 * r.getrs_bytes / r.getrs_ms / bw,
                100 * r.gesv_bytes / r.gesv_ms / bw, r.cu_getrs_ms, r.cu_getrf_ms + r.cu_getrs_ms,
                r.cu_getrs_ms / r.getrs_ms, (r.cu_getrf_ms + r.cu_getrs_ms) / r.gesv_ms);
  }
  for (const stream_row& r : srows)
    std::printf("streamed %s %s n=%d %s count=%lld depth %d chunk %zu, %u threads, cpu share %g (%.1f%% done there): %.3f s, %.1f GB/s each way = %.0f%% of pinned H2D %.1f GB/s (%g chunks)\n",
                r.op.c_str(), r.prec.c_str(), r.n, r.memory.c_str(), r.count, r.depth, r.chunk_bytes, threads, r.cpu_share,
                100.0 * double(r.cpu_matrices) / double(r.count), r.seconds, r.gbs_each_way,
                100 * r.gbs_each_way / r.link_gbs, r.link_gbs, r.chunks);
  cublasDestroy(h);
  cudaStreamDestroy(s);
  return 0;
}
