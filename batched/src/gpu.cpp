// The GPU path: a device-resident batch in place, or a host-resident one streamed through the GPU
// in chunks as tasks on the runtime (pack into pinned staging, the runtime's copies, the kernel,
// the copies back, unpack), several chunks in flight so that copies overlap kernels, while the
// CPUs factor a measured share of the batch themselves (options::cpu_share).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <optional>
#include <string>
#include <vector>

#include "detail.hpp"
#include "tessera/kernels_cpu/blas_threads.hpp"
#include "tessera/kernels_cpu/check.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#if TESSERA_BATCHED_CUDA
#include <cuda_runtime.h>

#include "tessera/kernels_gpu/common.hpp"
#include "tessera/kernels_gpu/gpu_batched.hpp"
#include "tessera/sched/cuda.hpp"
#endif

namespace tessera::batched {

#if TESSERA_BATCHED_CUDA

bool gpu_available() { return runtime::gpu_available(); }

std::string gpu_name() { return runtime::gpu_available() ? kernels::gpu_device_name() : std::string(); }

namespace detail {
namespace {

constexpr std::size_t align = 256;
constexpr std::size_t default_chunk_bytes = std::size_t(8) << 20;
std::size_t round_up(std::size_t x) { return (x + align - 1) / align * align; }

// Enqueues the operation on matrices [0, count) of device batches a and b.
template <class T>
void launch(const job<T>& j, kernels::gpu_batch<T> a, kernels::gpu_batch<T> b, int* ipiv, int* info,
            long long count, cudaStream_t s) {
  switch (j.what) {
    case op::lu: kernels::gpu_batched_getrf(j.n, a, ipiv, info, count, s); break;
    case op::inverse: kernels::gpu_batched_inverse(j.n, a, b, info, count, s); break;
    case op::getrs: kernels::gpu_batched_getrs(j.n, j.nrhs, a, ipiv, b, count, s); break;
    case op::gesv: kernels::gpu_batched_gesv(j.n, j.nrhs, a, ipiv, b, info, count, s); break;
  }
}

// The caller's runtime, or one made for this call.
runtime& runtime_for(const options& o, std::optional<runtime>& own, unsigned workers, const char* fn) {
  if (o.rt) {
    if (!o.rt->has_gpu()) check::invalid(fn, "options.rt has no GPU streams (runtime_options::gpu_streams = 0)");
    return *o.rt;
  }
  runtime_options ro;
  ro.workers = workers;
  ro.gpu_streams = 2;
  return own.emplace(ro);
}

template <class T>
void run_device(const job<T>& j, const options& o, report& r) {
  std::optional<runtime> own;
  runtime& rt = runtime_for(o, own, 1, j.fn);
  rt.task([&j](task_context& ctx) {
      launch(j, ref(j.a), ref(j.b), j.ipiv, j.info, j.count, stream_of(ctx));
    })
      .on(device::gpu)
      .label("batched_gpu")
      .submit();
  rt.wait_all();
  if (j.info && j.what != op::getrs) {
    std::vector<int> info(static_cast<std::size_t>(j.count));
    if (cudaMemcpy(info.data(), j.info, info.size() * sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess)
      r.singular = std::count_if(info.begin(), info.end(), [](int v) { return v > 0; });
  }
}

// Copies for the unpack, into the caller's memory: with SSE2, non-temporal stores, so that the
// cores do not first read the destination lines they overwrite (host memory bandwidth is what the
// streamed path runs out of; with the copy engines busy, a scratch pipeline on the H100 machine's
// host streamed up to 70% faster so and never slower, although a plain memory-to-memory copy
// is faster with memcpy).
void store_out(void* dst, const void* src, std::size_t bytes) {
#if defined(__SSE2__)
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  if (bytes >= 256) {
    const std::size_t head = (16 - reinterpret_cast<std::uintptr_t>(d) % 16) % 16;
    std::memcpy(d, s, head);
    d += head;
    s += head;
    bytes -= head;
    for (; bytes >= 64; bytes -= 64, d += 64, s += 64) {
      const __m128i x0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
      const __m128i x1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16));
      const __m128i x2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 32));
      const __m128i x3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(d), x0);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16), x1);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + 32), x2);
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + 48), x3);
    }
  }
  std::memcpy(d, s, bytes);
#else
  std::memcpy(dst, src, bytes);
#endif
}
// Orders the non-temporal stores before the task's completion is published to other threads.
void stores_done() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

// Copies matrices [first, first + m) of a user batch (rows x cols, ld) into packed staging
// (ld = rows): one copy when they lie back to back in the caller's memory.
template <class T>
void pack_range(const batch<T>& u, long long first, long long m, int rows, int cols, T* dst) {
  const auto per = static_cast<std::size_t>(rows) * cols;
  if (!u.pointers && u.ld == rows && u.stride == static_cast<long long>(per)) {
    std::memcpy(dst, u.data + first * u.stride, sizeof(T) * per * static_cast<std::size_t>(m));
    return;
  }
  for (long long i = 0; i < m; ++i) {
    const T* src = u.pointers ? u.pointers[first + i] : u.data + (first + i) * u.stride;
    T* d = dst + static_cast<std::size_t>(i) * per;
    if (u.ld == rows) {
      std::memcpy(d, src, sizeof(T) * per);
      continue;
    }
    for (int c = 0; c < cols; ++c)
      std::memcpy(d + static_cast<std::size_t>(c) * rows, src + static_cast<std::size_t>(c) * u.ld,
                  sizeof(T) * static_cast<std::size_t>(rows));
  }
}
// The reverse: packed staging into matrices [first, first + m) of a user batch.
template <class T>
void unpack_range(const T* src, const batch<T>& u, long long first, long long m, int rows, int cols) {
  const auto per = static_cast<std::size_t>(rows) * cols;
  if (!u.pointers && u.ld == rows && u.stride == static_cast<long long>(per)) {
    store_out(u.data + first * u.stride, src, sizeof(T) * per * static_cast<std::size_t>(m));
    return;
  }
  for (long long i = 0; i < m; ++i) {
    T* dst = u.pointers ? u.pointers[first + i] : u.data + (first + i) * u.stride;
    const T* s = src + static_cast<std::size_t>(i) * per;
    if (u.ld == rows) {
      store_out(dst, s, sizeof(T) * per);
      continue;
    }
    for (int c = 0; c < cols; ++c)
      store_out(dst + static_cast<std::size_t>(c) * u.ld, s + static_cast<std::size_t>(c) * rows,
                sizeof(T) * static_cast<std::size_t>(rows));
  }
}

// Where the sections of one chunk's staging lie: [A][ipiv][B][info], each 256-byte aligned, so
// that GETRS's read-only inputs (A, ipiv) come first and the outputs after them.
struct sections {
  std::size_t a = 0, piv = 0, b = 0, info = 0, in_bytes = 0, total = 0;
  sections(long long per_chunk, int n, int nrhs, std::size_t es, op what) {
    const auto c = static_cast<std::size_t>(per_chunk), un = static_cast<std::size_t>(n);
    const bool has_piv = what != op::inverse, has_b = what == op::getrs || what == op::gesv;
    piv = round_up(c * un * un * es);
    b = piv + (has_piv ? round_up(c * un * sizeof(int)) : 0);
    info = b + (has_b ? round_up(c * un * static_cast<std::size_t>(nrhs) * es) : 0);
    total = info + (what != op::getrs ? round_up(c * sizeof(int)) : 0);
    in_bytes = what == op::getrs ? b : 0;
  }
};

// Whether b is packed (matrix i at data + i n^2) in page-locked host memory, which the copy engines
// read and write at the link's speed, so that its chunks need no staging.
template <class T>
bool packed_and_pinned(const batch<T>& b, int n) {
  if (!b.data || b.pointers || b.ld != n || b.stride != static_cast<long long>(n) * n || b.count <= 0) return false;
  auto pinned = [](const void* p) {
    cudaPointerAttributes at{};
    if (cudaPointerGetAttributes(&at, p) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return at.type == cudaMemoryTypeHost;
  };
  return pinned(b.data) && pinned(b.data + (b.count * b.stride - 1));
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One-way host-to-device bandwidth (bytes/s) of pinned memory, timed on a copy of this call's
// staging; kept from the first call that copies at least 4 MiB (shorter copies are latency).
double link_bytes_per_s(const void* host, void* dev, std::size_t bytes) {
  static std::atomic<double> kept{0};
  if (const double v = kept.load(); v > 0) return v;
  bytes = std::min<std::size_t>(bytes, std::size_t(64) << 20);
  double best = 0;
  for (int i = 0; i < 2; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    if (cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    best = std::max(best, static_cast<double>(bytes) / std::max(seconds_since(t0), 1e-9));
  }
  if (bytes >= (std::size_t(4) << 20)) kept.store(best);
  return best;
}

// The CPUs' rate in matrices per second, timed on the batch's last matrices (done, not wasted):
// rounds of one task a worker, each on k matrices, k doubling from 4 until a round takes 1 ms or
// the sample reaches `limit` matrices. Timed together, not one core times the workers: 16 workers
// calling LAPACK did several times less than one core's sample promised on the H100 machine.
struct cpu_sample {
  long long done = 0;
  double rate = 0;  // all workers together
};
template <class T>
cpu_sample sample_cpu(const job<T>& j, runtime& rt, long long limit) {
  cpu_sample r;
  const long long w = std::max(1u, rt.workers());
  for (long long k = 4; r.done + w * k <= limit; k *= 2) {
    const auto t0 = std::chrono::steady_clock::now();
    for (long long t = 0; t < w; ++t) {
      const long long last = j.count - r.done - t * k;
      rt.task([&j, last, k] { cpu_range(j, last - k, last); }).label("batched_cpu_sample").submit();
    }
    rt.wait_all();
    const double spent = seconds_since(t0);
    r.done += w * k;
    r.rate = static_cast<double>(w * k) / std::max(spent, 1e-9);
    if (spent >= 1e-3) break;
  }
  return r;
}

// sample_cpu, its rate kept per operation, order, precision and workers for the process's
// later calls (a sample costs a few milliseconds in which the GPU waits).
template <class T>
cpu_sample sample_cpu_kept(const job<T>& j, runtime& rt, long long limit) {
  static std::mutex m;
  static std::map<std::tuple<int, int, int, std::size_t, unsigned>, double> kept;
  const auto key = std::make_tuple(static_cast<int>(j.what), j.n, j.nrhs, sizeof(T), rt.workers());
  {
    const std::lock_guard<std::mutex> lock(m);
    if (const auto it = kept.find(key); it != kept.end()) return {0, it->second};
  }
  const cpu_sample c = sample_cpu(j, rt, limit);
  if (c.rate > 0) {
    const std::lock_guard<std::mutex> lock(m);
    kept[key] = c.rate;
  }
  return c;
}

// The measured CPU share (options::cpu_share < 0): the CPUs' sampled rate, with two workers left to
// the copies' tasks and 70% of it while the copies stream (alone, the sample promised more: a 9.4%
// share made the double inverse of order 32 13% slower on the H100 machine), against the GPU's
// when the link bounds it (the in-place path reaches about 75% of one-way H2D each way at once).
// None below 5%, where a misjudged rate costs more than the share can gain, and none for a staged
// batch, whose packing already holds the cores (there every fixed share of 20-60% was slower).
template <class T>
double measured_cpu_share(const job<T>& j, unsigned workers, bool direct, double link, const cpu_sample& c) {
  if (!direct || workers <= 2 || link <= 0 || c.rate <= 0) return 0;
  const double each_way = static_cast<double>(j.n) * j.n * static_cast<double>(sizeof(T));
  const double gpu = 0.75 * link / each_way;
  const double cpu = 0.7 * c.rate * (workers - 2) / workers;
  const double share = cpu / (cpu + gpu);
  return share >= 0.05 ? share : 0;
}

template <class T>
void run_streamed(const job<T>& j, const options& o, report& r) {
  const int n = j.n, nrhs = j.what == op::inverse ? 0 : j.nrhs;
  const int depth = o.depth;
  std::size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
    cudaGetLastError();
    free_b = 0;
  }
  const std::size_t cap = o.device_memory_cap ? std::min(o.device_memory_cap, free_b) : free_b / 5 * 4;
  // The smallest staging that works: depth chunks of one matrix; checked before allocating.
  const std::size_t need_min = static_cast<std::size_t>(depth) * sections(1, n, nrhs, sizeof(T), j.what).total;
  if (cap < need_min)
    throw out_of_memory(std::string(j.fn) + ": streaming needs at least " + std::to_string(need_min) +
                        " bytes of device memory (" + std::to_string(depth) +
                        " chunks of one matrix in flight); the cap allows " + std::to_string(cap) +
                        " (device memory free: " + std::to_string(free_b) + " bytes)");
  // Chunks of chunk_bytes (default 8 MiB: on the H100 machine 2 MiB chunks streamed about 20% slower,
  // their copies running at 32 GB/s against 41-47, and 16 MiB or deeper pipelines were no faster,
  // the cores' copying already saturating host memory); at least `depth` chunks when the batch allows.
  const std::size_t per_matrix = staging_bytes_per_matrix(n, nrhs, sizeof(T));
  const std::size_t chunk_bytes = o.chunk_bytes ? o.chunk_bytes : default_chunk_bytes;
  long long per_chunk = static_cast<long long>(std::min<std::size_t>(
      std::max<std::size_t>(chunk_bytes / per_matrix, 1), (cap / static_cast<std::size_t>(depth) - 4 * align) / per_matrix));
  per_chunk = std::max(1LL, std::min(per_chunk, (j.count + depth - 1) / depth));
  while (per_chunk > 1 && static_cast<std::size_t>(depth) * sections(per_chunk, n, nrhs, sizeof(T), j.what).total > cap)
    --per_chunk;
  const sections sec(per_chunk, n, nrhs, sizeof(T), j.what);
  const int slots = static_cast<int>(std::min<long long>(depth, (j.count + per_chunk - 1) / per_chunk));

  std::optional<runtime> own;
  runtime& rt = runtime_for(o, own, o.threads, j.fn);
  const transfer_stats before = rt.transfers();
  // LU and the inverse of a packed batch in pinned memory: each chunk's matrices are registered
  // where they lie and placed in the slot's device section, so the runtime copies them straight in
  // and out (the cores' packing had held the staged path to 58-71% of the link); pivots and info
  // still pass through staging. A slot token orders the chunks that share a slot.
  const bool in_place_out = j.what == op::inverse && j.b.data == j.a.data;
  const bool direct = (j.what == op::lu || j.what == op::inverse) && packed_and_pinned(j.a, n) &&
                      (j.what == op::lu || in_place_out || packed_and_pinned(j.b, n));
  r.copied_in_place = direct;
  device_buffer dev = rt.allocate_device(sec.total * static_cast<std::size_t>(slots));
  pinned_buffer pin = rt.allocate_pinned(sec.total * static_cast<std::size_t>(slots));

  // The CPUs' share: the batch's last cpu_count matrices, factored in the caller's memory.
  const blas::blas_threads one(1);
  long long cpu_count = 0;
  cpu_sample sampled;
  if (o.cpu_share > 0) {
    cpu_count = std::llround(o.cpu_share * static_cast<double>(j.count));
  } else if (o.cpu_share < 0 && direct) {
    const double link = link_bytes_per_s(pin.get<char>(), dev.get<char>(), sec.total * static_cast<std::size_t>(slots));
    sampled = sample_cpu_kept(j, rt, j.count / 16);
    cpu_count = std::llround(measured_cpu_share(j, rt.workers(), direct, link, sampled) * static_cast<double>(j.count));
  }
  cpu_count = std::clamp(std::max(cpu_count, sampled.done), 0LL, j.count);
  const long long gpu_count = j.count - cpu_count;
  const long long chunks = (gpu_count + per_chunk - 1) / per_chunk;
  r.cpu_matrices = cpu_count;
  // One task a core, workers - 2 of them, before the chunks: the two other workers keep the
  // copies' tasks going (tasks of a millisecond interleaved with the chunks had started late, the
  // runtime holding back insertion until the chunks ahead of them ran).
  const long long cpu_todo = cpu_count - sampled.done;
  const long long cpu_tasks = std::min(cpu_todo, std::max(1LL, static_cast<long long>(rt.workers()) - 2));
  for (long long t = 0; t < cpu_tasks; ++t) {
    const long long first = gpu_count + cpu_todo * t / cpu_tasks, last = gpu_count + cpu_todo * (t + 1) / cpu_tasks;
    rt.task([&j, first, last] { cpu_range(j, first, last); }).priority(-1).label("batched_cpu").submit();
  }
  std::vector<handle> h_in(static_cast<std::size_t>(slots)), h_io(static_cast<std::size_t>(slots));
  for (int s = 0; s < slots; ++s) {
    char* host = pin.get<char>() + sec.total * static_cast<std::size_t>(s);
    char* devp = dev.get<char>() + sec.total * static_cast<std::size_t>(s);
    if (sec.in_bytes) {
      h_in[static_cast<std::size_t>(s)] = rt.register_data(host, sec.in_bytes);
      rt.place_on_device(h_in[static_cast<std::size_t>(s)], devp, sec.in_bytes);
    }
    h_io[static_cast<std::size_t>(s)] = rt.register_data(host + sec.in_bytes, sec.total - sec.in_bytes);
    rt.place_on_device(h_io[static_cast<std::size_t>(s)], devp + sec.in_bytes, sec.total - sec.in_bytes);
  }

  std::vector<handle> chunk_handles, small(static_cast<std::size_t>(slots)), token(static_cast<std::size_t>(slots));
  if (direct)
    for (int s = 0; s < slots; ++s) {
      const auto su = static_cast<std::size_t>(s);
      char* host = pin.get<char>() + sec.total * su;
      char* devp = dev.get<char>() + sec.total * su;
      small[su] = rt.register_data(host + sec.piv, sec.total - sec.piv);  // [ipiv][info] or [info]
      rt.place_on_device(small[su], devp + sec.piv, sec.total - sec.piv);
      token[su] = rt.register_key(reinterpret_cast<std::uintptr_t>(devp));
    }
  for (long long c = 0; c < chunks && direct; ++c) {
    const auto s = static_cast<std::size_t>(c % slots);
    const long long first = c * per_chunk, m = std::min(per_chunk, gpu_count - first);
    char* host = pin.get<char>() + sec.total * s;
    char* devp = dev.get<char>() + sec.total * s;
    const std::size_t bytes = sizeof(T) * static_cast<std::size_t>(m) * static_cast<std::size_t>(n) * n;
    const handle in = rt.register_data(j.a.data + first * j.a.stride, bytes);
    rt.place_on_device(in, devp + sec.a, bytes);
    handle out = in;
    if (!(j.what == op::lu || in_place_out)) {
      out = rt.register_data(j.b.data + first * j.b.stride, bytes);
      rt.place_on_device(out, devp + sec.a, bytes);  // the inverse in place on the device, then home to b
    }
    chunk_handles.push_back(in);
    if (out != in) chunk_handles.push_back(out);
    auto gpu = rt.task([&j, sec, m, n, devp](task_context& ctx) {
      const long long nn = static_cast<long long>(n) * n;
      kernels::gpu_batch<T> a{reinterpret_cast<T*>(devp + sec.a), nn, nullptr, n};
      launch(j, a, a, reinterpret_cast<int*>(devp + sec.piv), reinterpret_cast<int*>(devp + sec.info), m,
             stream_of(ctx));
    });
    gpu.on(device::gpu);
    if (out == in) gpu.read_write(in);
    else gpu.read(in).write(out);
    gpu.write(small[s]).read_write(token[s]).label("batched_kernel").submit();
    // Reading the outputs on the CPUs brings them home: the matrices into the caller's memory.
    rt.task([&j, sec, host, first, m, n] {
        if (j.what == op::lu)
          std::memcpy(j.ipiv + first * n, host + sec.piv, sizeof(int) * static_cast<std::size_t>(m) * n);
        std::memcpy(j.info + first, host + sec.info, sizeof(int) * static_cast<std::size_t>(m));
      })
        .read(out)
        .read(small[s])
        .read_write(token[s])
        .label("batched_unpack")
        .submit();
  }
  for (long long c = 0; c < chunks && !direct; ++c) {
    const auto s = static_cast<std::size_t>(c % slots);
    const long long first = c * per_chunk, m = std::min(per_chunk, gpu_count - first);
    char* host = pin.get<char>() + sec.total * s;
    // Pack: the chunk's inputs into pinned staging.
    auto pack = rt.task([&j, sec, host, first, m, n] {
      pack_range(j.a, first, m, n, n, reinterpret_cast<T*>(host + sec.a));
      if ((j.what == op::getrs || j.what == op::gesv) && j.nrhs > 0)
        pack_range(j.b, first, m, n, j.nrhs, reinterpret_cast<T*>(host + sec.b));
      if (j.what == op::getrs)
        std::memcpy(host + sec.piv, j.ipiv + first * n, sizeof(int) * static_cast<std::size_t>(m) * n);
    });
    if (sec.in_bytes) pack.write(h_in[s]);
    pack.write(h_io[s]).label("batched_pack").submit();
    // The kernel on the chunk's device copy.
    auto gpu = rt.task([&j, sec, m, n, hi = h_in[s], ho = h_io[s]](task_context& ctx) {
      // The in and in-out parts are adjacent on the device (place_on_device above).
      char* base = hi ? device_ptr<char>(ctx, hi) : device_ptr<char>(ctx, ho);
      const long long nn = static_cast<long long>(n) * n, nb = static_cast<long long>(n) * j.nrhs;
      kernels::gpu_batch<T> a{reinterpret_cast<T*>(base + sec.a), nn, nullptr, n};
      kernels::gpu_batch<T> b = a;  // the inverse in place
      if (j.what == op::getrs || j.what == op::gesv) b = {reinterpret_cast<T*>(base + sec.b), nb, nullptr, n};
      launch(j, a, b, reinterpret_cast<int*>(base + sec.piv), reinterpret_cast<int*>(base + sec.info), m,
             stream_of(ctx));
    });
    gpu.on(device::gpu);
    if (sec.in_bytes) gpu.read(h_in[s]);
    gpu.read_write(h_io[s]).label("batched_kernel").submit();
    // Unpack: the outputs back where the caller wants them.
    rt.task([&j, sec, host, first, m, n] {
        const T* a = reinterpret_cast<const T*>(host + sec.a);
        if (j.what == op::lu || j.what == op::gesv) unpack_range(a, j.a, first, m, n, n);
        if (j.what == op::inverse) unpack_range(a, j.b, first, m, n, n);
        if ((j.what == op::getrs || j.what == op::gesv) && j.nrhs > 0)
          unpack_range(reinterpret_cast<const T*>(host + sec.b), j.b, first, m, n, j.nrhs);
        if (j.what == op::lu || j.what == op::gesv)
          std::memcpy(j.ipiv + first * n, host + sec.piv, sizeof(int) * static_cast<std::size_t>(m) * n);
        if (j.what != op::getrs)
          std::memcpy(j.info + first, host + sec.info, sizeof(int) * static_cast<std::size_t>(m));
        stores_done();
      })
        .read(h_io[s])
        .label("batched_unpack")
        .submit();
  }
  rt.wait_all();
  for (int s = 0; s < slots; ++s) {
    if (h_in[static_cast<std::size_t>(s)]) rt.release_device(h_in[static_cast<std::size_t>(s)]);
    rt.release_device(h_io[static_cast<std::size_t>(s)]);
    if (small[static_cast<std::size_t>(s)]) rt.release_device(small[static_cast<std::size_t>(s)]);
  }
  for (handle h : chunk_handles) rt.release_device(h);
  const transfer_stats t = rt.transfers();
  r.h2d_bytes = t.h2d_bytes - before.h2d_bytes;
  r.d2h_bytes = t.d2h_bytes - before.d2h_bytes;
  r.chunks = chunks;
  r.matrices_per_chunk = per_chunk;
}

}  // namespace

template <class T>
void run_gpu(const job<T>& j, const options& o, report& r) {
  if (j.a.where == memory::device)
    run_device(j, o, r);
  else
    run_streamed(j, o, r);
}

}  // namespace detail

#else  // no CUDA in this build

bool gpu_available() { return false; }
std::string gpu_name() { return {}; }

namespace detail {
template <class T>
void run_gpu(const job<T>& j, const options&, report&) {
  check::invalid(j.fn, "this build of Tessera has no CUDA");
}
}  // namespace detail

#endif

template void detail::run_gpu<float>(const detail::job<float>&, const options&, report&);
template void detail::run_gpu<double>(const detail::job<double>&, const options&, report&);

}  // namespace tessera::batched
