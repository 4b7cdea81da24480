#include "gpu_backend.hpp"

#include <stdexcept>
#include <string>

#include "detail.hpp"
#include "runtime_impl.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "sm_partition.hpp"
#include "tessera/sched/cuda.hpp"

namespace tessera::detail {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("tessera GPU backend: ") + what + ": " + cudaGetErrorString(e));
}

// Allocations go through here, so that tests can make them fail (detail/testing.hpp).
cudaError_t malloc_async(void** p, std::size_t bytes, cudaStream_t s) {
  if (take_injected(injected_allocation_failures)) return cudaErrorMemoryAllocation;
  return cudaMallocAsync(p, bytes ? bytes : 1, s);
}

// " (out of memory; 123 bytes free of 456 on device 0)": why an allocation failed, and what is left.
std::string allocation_failure(cudaError_t e, int device) {
  cudaGetLastError();
  std::string why = std::string(" (") + cudaGetErrorString(e);
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) == cudaSuccess)
    why += "; " + std::to_string(free) + " bytes free of " + std::to_string(total) + " on device " + std::to_string(device);
  else
    cudaGetLastError();
  return why + ")";
}

// Calls from the user's threads (allocations, frees) work on one of the runtime's devices and leave
// the caller's current device as it was.
class device_scope {
 public:
  explicit device_scope(int device) {
    if (cudaGetDevice(&_previous) != cudaSuccess || _previous == device) _previous = -1;
    else cudaSetDevice(device);
  }
  ~device_scope() {
    if (_previous >= 0) cudaSetDevice(_previous);
  }
  device_scope(const device_scope&) = delete;
  device_scope& operator=(const device_scope&) = delete;

 private:
  int _previous = -1;
};

class cuda_backend;

// The allocator buffers keep: frees go through the backend while it lives (ordered after the
// work on its streams), directly once it has gone (its work all done).
class cuda_memory final : public gpu_memory {
 public:
  cuda_memory(cuda_backend* backend, std::vector<int> physical) : _backend(backend), _physical(std::move(physical)) {}
  void free(void* p, bool pinned, unsigned gpu) noexcept override;
  void detach() noexcept {
    std::lock_guard lock(_mutex);
    _backend = nullptr;
  }

 private:
  std::mutex _mutex;
  cuda_backend* _backend;  // guarded by _mutex
  std::vector<int> _physical;  // the CUDA device of each logical GPU
};

class cuda_backend final : public gpu_backend {
  static constexpr unsigned none = std::numeric_limits<unsigned>::max();  // no stream; no depth limit

  struct launched {
    task_node* task;
    cudaEvent_t end;
    bool ran;  // false: skipped (cancelled sequence), its data untouched
  };
  struct waiting {  // a CPU task waiting for copies to the host, or a GPU task for a stream
    task_node* task;
    std::vector<cudaEvent_t> events;
    std::uint64_t after = 0;  // GPU task: the last copy to its GPU it needs (device_copy::seq)
  };
  struct record {
    trace_task task;
    unsigned gpu;  // whose clock start and end were recorded on
    int track;     // among the backend's tracks
    cudaEvent_t start, end;
  };
  struct scratch_space {
    void* data = nullptr;
    std::size_t bytes = 0;
  };
  // One logical GPU (runtime_options::gpus): its streams are [first_stream, first_stream + streams)
  // of the backend's, the urgent one last; its own copy streams, incoming copy order and queues.
  struct gpu_device {
    int physical = 0;
    unsigned first_stream = 0, regular = 0, streams = 0;
    std::unique_ptr<sm_partition> partition;  // with runtime_options::gpu_urgent_sms
    cudaStream_t h2d = nullptr, d2h = nullptr;  // copies in (from the host or another GPU), copies home
    cudaStream_t mem = nullptr;                 // allocations and frees of runtime::allocate_device
    // Copies to this GPU finish in the order issued (one stream): GPU thread only.
    std::deque<std::pair<std::uint64_t, cudaEvent_t>> h2d_pending;
    std::uint64_t h2d_issued = 0, h2d_arrived = 0;
    std::vector<waiting> copying;  // GPU tasks whose inputs are on their way
    std::vector<waiting> queue;    // ready GPU tasks, a heap by runs_later
    std::vector<void*> pooled;     // data's device copies from the pool
    int first_track = 0;           // its streams' tracks, then H2D, D2H (and peer copies in)
    cudaEvent_t origin = nullptr;  // trace clock
    std::uint64_t origin_host_ns = 0;
  };

 public:
  cuda_backend(runtime_impl& rt, const runtime_options& o)
      : _rt(rt), _depth(o.gpu_stream_depth ? o.gpu_stream_depth : none), _urgent_priority(o.gpu_urgent_priority),
        _has_urgent(o.gpu_urgent_priority != std::numeric_limits<int>::max()) {
    const std::vector<int> ids = o.gpus.empty() ? std::vector<int>{o.gpu_device} : o.gpus;
    int count = 0;
    check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    if (ids.size() >= any_gpu) throw std::invalid_argument("tessera::runtime: runtime_options::gpus names too many GPUs");
    for (int id : ids)
      if (id < 0 || id >= count)
        throw std::invalid_argument("tessera::runtime: runtime_options::gpus names CUDA device " + std::to_string(id) +
                                    " but this machine has " + std::to_string(count));
    const bool several = ids.size() > 1;
    _devices.resize(ids.size());
    for (unsigned g = 0; g < ids.size(); ++g) {
      gpu_device& d = _devices[g];
      d.physical = ids[g];
      check(cudaSetDevice(d.physical), "cudaSetDevice");
      int least = 0, greatest = 0;
      check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
      d.first_stream = static_cast<unsigned>(_streams.size());
      d.regular = o.gpu_streams;
      d.streams = o.gpu_streams + (_has_urgent ? 1 : 0);
      if (_has_urgent && o.gpu_urgent_sms > 0) d.partition = std::make_unique<sm_partition>(d.physical, o.gpu_urgent_sms);
      for (unsigned i = 0; i < d.streams; ++i) {
        const bool urgent = _has_urgent && i + 1 == d.streams;
        cudaStream_t s;
        if (d.partition) s = d.partition->make_stream(urgent, urgent ? greatest : least);
        else check(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, urgent ? greatest : least), "cudaStreamCreate");
        cublasHandle_t b;
        if (cublasCreate(&b) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("tessera GPU backend: cublasCreate failed");
        cublasSetStream(b, s);
        // cuBLAS sizes its grids for the SMs the stream can use; kernels may read it back.
        if (d.partition) cublasSetSmCountTarget(b, static_cast<int>(d.partition->sms(urgent)));
        _streams.push_back(s);
        _blas.push_back(b);
      }
      check(cudaStreamCreateWithFlags(&d.h2d, cudaStreamNonBlocking), "cudaStreamCreate");
      check(cudaStreamCreateWithFlags(&d.d2h, cudaStreamNonBlocking), "cudaStreamCreate");
      check(cudaStreamCreateWithFlags(&d.mem, cudaStreamNonBlocking), "cudaStreamCreate");
      // Keep freed pool memory for reuse instead of returning it at every synchronisation.
      cudaMemPool_t pool;
      if (cudaDeviceGetDefaultMemPool(&pool, d.physical) == cudaSuccess) {
        std::uint64_t keep = UINT64_MAX;
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
      }
      d.first_track = _tracks;
      _tracks += static_cast<int>(d.streams) + 2 + (several ? 1 : 0);
    }
    _in_flight.assign(_streams.size(), 0);
    _scratch.assign(_streams.size(), scratch_space{});
    // Direct copies between two logical GPUs: the same physical GPU, or peer access (enabled here,
    // process-wide, as CUDA has it); otherwise, or when asked to, through pinned host memory.
    const std::size_t n = _devices.size();
    _direct.assign(n * n, false);
    for (unsigned a = 0; a < n; ++a)
      for (unsigned b = 0; b < n; ++b) {
        if (a == b || o.gpu_copies_through_host) continue;
        const int pa = _devices[a].physical, pb = _devices[b].physical;
        int can = pa == pb ? 1 : 0;
        if (!can && cudaDeviceCanAccessPeer(&can, pa, pb) == cudaSuccess && can) {
          cudaSetDevice(pa);
          const cudaError_t e = cudaDeviceEnablePeerAccess(pb, 0);
          if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) can = 0;
          cudaGetLastError();
          // Peer access does not reach stream-ordered pools: pb's pool (where the runtime puts its
          // copies) grants pa access of its own, else a direct copy fails with "invalid argument".
          cudaMemPool_t pool;
          cudaMemAccessDesc access{};
          access.location.type = cudaMemLocationTypeDevice;
          access.location.id = pa;
          access.flags = cudaMemAccessFlagsProtReadWrite;
          if (can && (cudaDeviceGetDefaultMemPool(&pool, pb) != cudaSuccess ||
                      cudaMemPoolSetAccess(pool, &access, 1) != cudaSuccess))
            can = 0;
          cudaGetLastError();
        }
        _direct[a * n + b] = can != 0;
      }
    check(cudaSetDevice(_devices[0].physical), "cudaSetDevice");
    _memory = std::make_shared<cuda_memory>(this, ids);
    _thread = std::thread([this] { loop(); });
  }

  ~cuda_backend() override {
    {
      std::lock_guard lock(_mutex);
      _stop = true;
    }
    _wake.notify_one();
    _thread.join();
    // Buffers freed from now on are freed directly; those waiting for their event go now.
    _memory->detach();
    for (auto& [p, done] : _host_frees) {
      cudaEventSynchronize(done);
      cudaEventDestroy(done);
      pinned_host_free(p);
    }
    for (auto& [p, bytes] : _pinned_cache) pinned_host_free(p);
    for (gpu_device& d : _devices) {
      cudaSetDevice(d.physical);
      for (void* p : d.pooled) cudaFreeAsync(p, d.h2d);
      for (unsigned i = d.first_stream; i < d.first_stream + d.streams; ++i)
        if (_scratch[i].data) cudaFreeAsync(_scratch[i].data, _streams[i]);
    }
    for (gpu_device& d : _devices) {
      cudaSetDevice(d.physical);
      for (unsigned i = d.first_stream; i < d.first_stream + d.streams; ++i) cudaStreamSynchronize(_streams[i]);
      cudaStreamSynchronize(d.mem);
      cudaStreamSynchronize(d.h2d);
      cudaStreamSynchronize(d.d2h);
    }
    for (cudaEvent_t e : _events) cudaEventDestroy(e);
    for (gpu_device& d : _devices) {
      cudaSetDevice(d.physical);
      for (unsigned i = d.first_stream; i < d.first_stream + d.streams; ++i) {
        cublasDestroy(_blas[i]);
        cudaStreamDestroy(_streams[i]);
      }
      cudaStreamDestroy(d.h2d);
      cudaStreamDestroy(d.d2h);
      cudaStreamDestroy(d.mem);
      if (d.origin) cudaEventDestroy(d.origin);
      d.partition.reset();
    }
    cudaSetDevice(_devices[0].physical);
  }

  void submit(task_node* t) override {
    {
      std::lock_guard lock(_mutex);
      _incoming.push_back(t);
    }
    _wake.notify_one();
  }

  void cpu_wrote(handle_state* h) override {
    copy_state& c = h->copies;
    c.host_valid = true;
    c.d2h_done = nullptr;
    for (unsigned g = 0; g < _devices.size(); ++g) invalidate(c.on(g));
  }

  void place(handle_state* h, void* device, std::size_t pitch, unsigned gpu) override {
    std::lock_guard lock(_mutex);  // placement happens before any task touches h on the GPU
    device_copy& c = h->copies.on(gpu);
    c.data = device;
    c.pitch = pitch;
    c.pooled = false;
  }

  transfer_stats stats() const override {
    std::lock_guard lock(_mutex);
    return _stats;
  }
  void* stream(unsigned i) const override { return _streams[i]; }
  void* blas(unsigned i) const override { return _blas[i]; }
  unsigned streams() const override { return static_cast<unsigned>(_streams.size()); }
  unsigned gpus() const override { return static_cast<unsigned>(_devices.size()); }
  void* scratch(unsigned i) const override { return _scratch[i].data; }
  std::shared_ptr<gpu_memory> memory() const override { return _memory; }

  void* allocate(std::size_t bytes, bool pinned, unsigned gpu) override {
    const gpu_device& d = _devices[pinned ? 0 : gpu];
    device_scope on(d.physical);
    void* p = nullptr;
    if (pinned)
      return new_pinned(bytes, "tessera::runtime::allocate_pinned: cannot allocate ", "",
                        take_injected(injected_allocation_failures));
    // Synchronizing the memory stream (not the device) makes p usable on any stream at once.
    cudaError_t e = malloc_async(&p, bytes, d.mem);
    if (e == cudaSuccess) e = cudaStreamSynchronize(d.mem);
    if (e != cudaSuccess)
      throw out_of_memory("tessera::runtime::allocate_device: cannot allocate " + std::to_string(bytes) +
                               " bytes of device memory" + allocation_failure(e, d.physical));
    return p;
  }

  // A cached pinned block of at least `bytes` and at most twice that, or null.
  void* reuse_pinned(std::size_t bytes) {
    std::lock_guard lock(_mutex);
    std::size_t best = _pinned_cache.size();
    for (std::size_t i = 0; i < _pinned_cache.size(); ++i) {
      const std::size_t size = _pinned_cache[i].second;
      if (size >= bytes && size / 2 <= bytes && (best == _pinned_cache.size() || size < _pinned_cache[best].second))
        best = i;
    }
    if (best == _pinned_cache.size()) return nullptr;
    void* p = _pinned_cache[best].first;
    _pinned_cached -= _pinned_cache[best].second;
    _pinned_cache.erase(_pinned_cache.begin() + std::ptrdiff_t(best));
    return p;
  }

  // A pinned block no work uses any more: kept for reuse while the cache stays under its bound
  // (the oldest go first), else freed. Under _mutex.
  void release_pinned(void* p) {
    const auto it = _pinned_sizes.find(p);
    const std::size_t size = it == _pinned_sizes.end() ? pinned_cache_bytes + 1 : it->second;
    if (size > pinned_cache_bytes) {
      pinned_host_free(p);
      if (it != _pinned_sizes.end()) _pinned_sizes.erase(it);
      return;
    }
    _pinned_cache.emplace_back(p, size);
    _pinned_cached += size;
    while (_pinned_cached > pinned_cache_bytes) {
      auto [q, bytes] = _pinned_cache.front();
      _pinned_cache.erase(_pinned_cache.begin());
      _pinned_cached -= bytes;
      _pinned_sizes.erase(q);
      pinned_host_free(q);
    }
  }

  // Frees p after all the work enqueued so far on the runtime's streams, every GPU's (a copy to
  // another GPU reads it from that GPU's stream): a task launched before may still be using it.
  // Any thread; cuda_memory serializes the calls.
  void free_later(void* p, bool pinned, unsigned gpu) noexcept {
    const gpu_device& owner = _devices[pinned ? 0 : gpu];
    device_scope on(owner.physical);
    for (const gpu_device& d : _devices) {
      if (_devices.size() > 1) cudaSetDevice(d.physical);
      std::vector<cudaStream_t> all(_streams.begin() + d.first_stream, _streams.begin() + d.first_stream + d.streams);
      all.push_back(d.h2d);
      all.push_back(d.d2h);
      for (cudaStream_t s : all) {
        cudaEvent_t e;
        if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) continue;
        if (cudaEventRecord(e, s) == cudaSuccess) cudaStreamWaitEvent(owner.mem, e, 0);
        cudaEventDestroy(e);  // the wait keeps what it needs
      }
    }
    if (_devices.size() > 1) cudaSetDevice(owner.physical);
    if (!pinned) {
      cudaFreeAsync(p, owner.mem);
      return;
    }
    cudaEvent_t done;
    if (cudaEventCreateWithFlags(&done, cudaEventDisableTiming) != cudaSuccess || cudaEventRecord(done, owner.mem) != cudaSuccess) {
      cudaGetLastError();
      cudaStreamSynchronize(owner.mem);  // cannot tell when: wait for the memory stream only
      std::lock_guard lock(_mutex);
      release_pinned(p);
      return;
    }
    {
      std::lock_guard lock(_mutex);
      _host_frees.emplace_back(p, done);
    }
    _wake.notify_one();
  }

  void start_trace() override {
    std::lock_guard lock(_mutex);
    _tracing = true;
    _records.clear();
    // Events time only against events of their own device: one origin per GPU.
    for (gpu_device& d : _devices) {
      device_scope on(d.physical);
      if (!d.origin) check(cudaEventCreate(&d.origin), "cudaEventCreate");
      cudaEventRecord(d.origin, d.h2d);
      cudaEventSynchronize(d.origin);
      d.origin_host_ns = now_ns();
    }
  }

  void take_trace(std::vector<trace_task>& out, std::vector<std::string>& tracks, int first_track,
                  std::uint64_t origin_ns) override {
    std::lock_guard lock(_mutex);
    const bool several = _devices.size() > 1;
    for (unsigned g = 0; g < _devices.size(); ++g) {
      const gpu_device& d = _devices[g];
      // One GPU keeps the names it always had; several name each GPU and the CUDA device behind it.
      const std::string gpu =
          several ? "GPU " + std::to_string(g) + " (CUDA device " + std::to_string(d.physical) + ") " : "";
      for (unsigned i = 0; i < d.streams; ++i)
        tracks.push_back(gpu + (several ? "stream " : "GPU stream ") + std::to_string(i) + (i >= d.regular ? " (urgent)" : ""));
      tracks.push_back(gpu + "copy H2D");
      tracks.push_back(gpu + "copy D2H");
      if (several) tracks.push_back(gpu + "peer copies in");
    }
    for (auto& r : _records) {
      const gpu_device& d = _devices[r.gpu];
      float a = 0, b = 0;
      if (cudaEventElapsedTime(&a, d.origin, r.start) != cudaSuccess || cudaEventElapsedTime(&b, d.origin, r.end) != cudaSuccess) {
        cudaGetLastError();
        continue;  // not finished or not recorded: leave it out rather than guess
      }
      const double base_us = (static_cast<double>(d.origin_host_ns) - static_cast<double>(origin_ns)) * 1e-3;
      trace_task t = r.task;
      t.track = first_track + r.track;
      t.start_us = base_us + a * 1e3;
      t.end_us = base_us + b * 1e3;
      out.push_back(std::move(t));
    }
  }

 private:
  // Heap order: highest priority on top, then the oldest.
  static bool runs_later(const waiting& a, const waiting& b) {
    return a.task->priority != b.task->priority ? a.task->priority < b.task->priority : a.task->id > b.task->id;
  }

  // The GPU thread's current device: set only when it changes (several logical GPUs).
  void use(unsigned gpu) {
    const int p = _devices[gpu].physical;
    if (p != _current) {
      check(cudaSetDevice(p), "cudaSetDevice");
      _current = p;
    }
  }

  static void invalidate(device_copy& c) noexcept {
    c.valid = false;
    c.arrived = nullptr;
    c.seq = 0;
  }

  cudaEvent_t new_event() {  // on the current device
    cudaEvent_t e;
    check(cudaEventCreate(&e), "cudaEventCreate");
    _events.push_back(e);
    return e;
  }

  bool direct(unsigned to, unsigned from) const { return _direct[to * _devices.size() + from]; }

  // Room for h on GPU g (the current device), from the pool unless placed.
  void ensure_device(handle_state* h, unsigned g, cudaStream_t s) {
    device_copy& c = h->copies.on(g);
    if (c.data) return;
    const std::size_t bytes = h->run_bytes * h->runs;
    void* p = nullptr;
    const cudaError_t e = malloc_async(&p, bytes, s);
    if (e != cudaSuccess)
      throw out_of_memory("out of device memory allocating " + std::to_string(bytes) + " bytes for datum " +
                               std::to_string(h->key) + allocation_failure(e, _devices[g].physical));
    c.data = p;
    c.pitch = h->run_bytes;
    c.pooled = true;
    _devices[g].pooled.push_back(p);
  }

  // The copy now issued on GPU g's incoming stream, ending at `end`: h's copy there is current
  // once it has arrived.
  void arriving(device_copy& c, gpu_device& d, cudaEvent_t end) {
    c.valid = true;
    c.arrived = end;
    c.seq = ++d.h2d_issued;
    d.h2d_pending.push_back({c.seq, end});
  }

  // Makes h current on GPU g unless it is: from another GPU where one holds it and the copy is
  // direct (or the host holds none), else from the host. Returns the event after which it is
  // current there, or null.
  cudaEvent_t to_device(handle_state* h, unsigned g, std::uint64_t for_task) {
    copy_state& cs = h->copies;
    gpu_device& d = _devices[g];
    device_copy& c = cs.on(g);
    use(g);
    ensure_device(h, g, d.h2d);
    if (c.valid) return static_cast<cudaEvent_t>(c.arrived);
    unsigned from = none;
    for (unsigned e = 0; e < _devices.size(); ++e)
      if (e != g && cs.on(e).valid && (from == none || (direct(g, e) && !direct(g, from)))) from = e;
    if (from != none && (direct(g, from) || !cs.host_valid)) return from_gpu(h, from, g, for_task);
    cudaEvent_t start = _tracing ? new_event() : nullptr, end = new_event();
    if (start) cudaEventRecord(start, d.h2d);
    check(cudaMemcpy2DAsync(c.data, c.pitch, h->data, h->pitch, h->run_bytes, h->runs, cudaMemcpyHostToDevice, d.h2d),
          "host-to-device copy");
    cudaEventRecord(end, d.h2d);
    arriving(c, d, end);
    {
      std::lock_guard lock(_mutex);
      _stats.h2d_bytes += h->run_bytes * h->runs;
      ++_stats.h2d_copies;
      if (start) _records.push_back({copy_record("H2D", for_task), g, d.first_track + static_cast<int>(d.streams), start, end});
    }
    return end;
  }

  // h from GPU `from` to GPU `to`, on `to`'s incoming stream: directly (a peer copy between two
  // physical devices, a device-to-device copy within one), or through pinned host memory in two
  // copies, `from`'s copy stream then `to`'s.
  cudaEvent_t from_gpu(handle_state* h, unsigned from, unsigned to, std::uint64_t for_task) {
    gpu_device &src_gpu = _devices[from], &dst_gpu = _devices[to];
    const device_copy& src = h->copies.on(from);
    device_copy& dst = h->copies.on(to);
    const std::size_t bytes = h->run_bytes * h->runs;
    const bool is_direct = direct(to, from);
    const std::string label = "peer " + std::to_string(from) + "->" + std::to_string(to);
    cudaEvent_t start = nullptr, end = nullptr;
    if (is_direct) {
      use(to);
      start = _tracing ? new_event() : nullptr;
      end = new_event();
      if (src.arrived) check(cudaStreamWaitEvent(dst_gpu.h2d, static_cast<cudaEvent_t>(src.arrived), 0), "cudaStreamWaitEvent");
      if (start) cudaEventRecord(start, dst_gpu.h2d);
      if (src_gpu.physical == dst_gpu.physical) {
        check(cudaMemcpy2DAsync(dst.data, dst.pitch, src.data, src.pitch, h->run_bytes, h->runs,
                                cudaMemcpyDeviceToDevice, dst_gpu.h2d),
              "copy between GPUs");
      } else {  // cudaMemcpy2DAsync does not copy between two devices; the 3-D peer copy does
        cudaMemcpy3DPeerParms p{};
        p.srcPtr = make_cudaPitchedPtr(const_cast<void*>(src.data), src.pitch, h->run_bytes, h->runs);
        p.srcDevice = src_gpu.physical;
        p.dstPtr = make_cudaPitchedPtr(dst.data, dst.pitch, h->run_bytes, h->runs);
        p.dstDevice = dst_gpu.physical;
        p.extent = make_cudaExtent(h->run_bytes, h->runs, 1);
        check(cudaMemcpy3DPeerAsync(&p, dst_gpu.h2d), "copy between GPUs");
      }
      cudaEventRecord(end, dst_gpu.h2d);
    } else {
      void* staging = pinned_staging(bytes);
      use(from);
      cudaEvent_t out_start = _tracing ? new_event() : nullptr, out = new_event();
      if (src.arrived) check(cudaStreamWaitEvent(src_gpu.d2h, static_cast<cudaEvent_t>(src.arrived), 0), "cudaStreamWaitEvent");
      if (out_start) cudaEventRecord(out_start, src_gpu.d2h);
      check(cudaMemcpy2DAsync(staging, h->run_bytes, src.data, src.pitch, h->run_bytes, h->runs, cudaMemcpyDeviceToHost,
                              src_gpu.d2h),
            "copy between GPUs (to pinned host memory)");
      cudaEventRecord(out, src_gpu.d2h);
      use(to);
      start = _tracing ? new_event() : nullptr;
      end = new_event();
      check(cudaStreamWaitEvent(dst_gpu.h2d, out, 0), "cudaStreamWaitEvent");
      if (start) cudaEventRecord(start, dst_gpu.h2d);
      check(cudaMemcpy2DAsync(dst.data, dst.pitch, staging, h->run_bytes, h->run_bytes, h->runs, cudaMemcpyHostToDevice,
                              dst_gpu.h2d),
            "copy between GPUs (from pinned host memory)");
      cudaEventRecord(end, dst_gpu.h2d);
      cudaEvent_t freed;  // the staging goes back to the pinned cache once the second copy is done
      check(cudaEventCreateWithFlags(&freed, cudaEventDisableTiming), "cudaEventCreate");
      cudaEventRecord(freed, dst_gpu.h2d);
      std::lock_guard lock(_mutex);
      _host_frees.emplace_back(staging, freed);
      if (out_start)
        _records.push_back({copy_record((label + " via host, out").c_str(), for_task), from,
                            src_gpu.first_track + static_cast<int>(src_gpu.streams) + 1, out_start, out});
    }
    arriving(dst, dst_gpu, end);
    std::lock_guard lock(_mutex);
    _stats.peer_bytes += bytes;
    ++_stats.peer_copies;
    if (!is_direct) ++_stats.staged_peer_copies;
    if (start)
      _records.push_back({copy_record((is_direct ? label : label + " via host, in").c_str(), for_task), to,
                          dst_gpu.first_track + static_cast<int>(dst_gpu.streams) + 2, start, end});
    return end;
  }

  // Pinned memory for a copy between GPUs through the host.
  void* pinned_staging(std::size_t bytes) {
    return new_pinned(bytes, "cannot allocate ", " for a copy between GPUs", false);
  }

  // Pinned host memory from the cache, else new (injected: fail as if there were none); the error
  // reads before + "<bytes> bytes of pinned host memory" + after + " (CUDA's reason)".
  void* new_pinned(std::size_t bytes, const char* before, const char* after, bool injected) {
    void* p = nullptr;
    if (!injected && (p = reuse_pinned(bytes))) return p;
    const cudaError_t e = injected ? cudaErrorMemoryAllocation : pinned_host_alloc(&p, bytes);
    if (e != cudaSuccess) {
      cudaGetLastError();
      throw out_of_memory(before + std::to_string(bytes) + " bytes of pinned host memory" + after + " (" +
                          cudaGetErrorString(e) + ")");
    }
    std::lock_guard lock(_mutex);
    _pinned_sizes[p] = bytes ? bytes : 1;
    return p;
  }

  // Copies h home from a GPU that holds it, on that GPU's D2H stream; returns the event after
  // which the host copy is current, or null.
  cudaEvent_t to_host(handle_state* h, std::uint64_t for_task) {
    copy_state& cs = h->copies;
    if (cs.host_valid) return static_cast<cudaEvent_t>(cs.d2h_done);
    unsigned g = 0;
    for (unsigned e = 0; e < _devices.size(); ++e)
      if (cs.on(e).valid && (!cs.on(g).valid || (cs.on(g).arrived && !cs.on(e).arrived))) g = e;
    const device_copy& c = cs.on(g);
    gpu_device& d = _devices[g];
    use(g);
    cudaEvent_t start = _tracing ? new_event() : nullptr, end = new_event();
    if (c.arrived) check(cudaStreamWaitEvent(d.d2h, static_cast<cudaEvent_t>(c.arrived), 0), "cudaStreamWaitEvent");
    if (start) cudaEventRecord(start, d.d2h);
    check(cudaMemcpy2DAsync(h->data, h->pitch, c.data, c.pitch, h->run_bytes, h->runs, cudaMemcpyDeviceToHost, d.d2h),
          "device-to-host copy");
    cudaEventRecord(end, d.d2h);
    cs.host_valid = true;
    cs.d2h_done = end;
    {
      std::lock_guard lock(_mutex);
      _stats.d2h_bytes += h->run_bytes * h->runs;
      ++_stats.d2h_copies;
      if (start)
        _records.push_back({copy_record("D2H", for_task), g, d.first_track + static_cast<int>(d.streams) + 1, start, end});
    }
    return end;
  }

  trace_task copy_record(const char* label, std::uint64_t for_task) {
    trace_task t;
    t.id = (1ull << 62) + _copy_ids++;  // copies are not tasks: an id space of their own
    t.label = std::string(label) + " for " + std::to_string(for_task);
    t.color = label[0] == 'H' ? 0x7f7f7fu : label[0] == 'p' ? 0x2f6f9fu : 0x4f4f4fu;
    t.where = device::gpu;
    t.copy = true;
    return t;
  }

  // A ready GPU task: its inputs start travelling to its GPU now. It waits in that GPU's copying
  // list until they have arrived, then for a stream in its queue: a task launched early would wait
  // inside its stream, holding up the tasks queued behind it there (at the start of a blocked QR,
  // the bulk updates sat behind finiteness checks waiting for columns still on their way).
  void enqueue(task_node* t) {
    waiting q{t, {}};
    gpu_device& d = _devices[t->gpu];
    try {
      if (!t->seq->cancelled.load(std::memory_order_acquire))
        for (auto& [h, mode] : t->accesses)
          if (mode != access::write)
            if (cudaEvent_t ready = to_device(h, t->gpu, t->id)) {
              q.events.push_back(ready);
              q.after = std::max(q.after, h->copies.on(t->gpu).seq);
            }
    } catch (const out_of_memory& e) {  // keeps its type: callers tell resource errors apart
      _rt.record_error(*t->seq, std::make_exception_ptr(out_of_memory("tessera GPU " + task_name(*t) + " failed: " + e.what())));
    } catch (const std::exception& e) {
      _rt.record_error(*t->seq, failed(*t, e.what()));
    }
    if (q.after > d.h2d_arrived) {
      d.copying.push_back(std::move(q));
      return;
    }
    d.queue.push_back(std::move(q));
    std::push_heap(d.queue.begin(), d.queue.end(), runs_later);
  }

  // Each GPU's incoming copies finish in the order issued (one stream): advances h2d_arrived and
  // moves the GPU tasks whose inputs are all there to the queue. A failed copy counts as arrived;
  // the task's stream waits on its event and reports the error.
  bool arrived() {
    bool moved = false;
    for (gpu_device& d : _devices) {
      while (!d.h2d_pending.empty()) {
        const cudaError_t e = cudaEventQuery(d.h2d_pending.front().second);
        if (e == cudaErrorNotReady) break;
        if (e != cudaSuccess) cudaGetLastError();
        d.h2d_arrived = d.h2d_pending.front().first;
        d.h2d_pending.pop_front();
      }
      for (std::size_t i = 0; i < d.copying.size();) {
        if (d.copying[i].after > d.h2d_arrived) {
          ++i;
          continue;
        }
        d.queue.push_back(std::move(d.copying[i]));
        std::push_heap(d.queue.begin(), d.queue.end(), runs_later);
        d.copying[i] = std::move(d.copying.back());
        d.copying.pop_back();
        moved = true;
      }
    }
    return moved;
  }

  // Launches queued tasks while a stream of their GPU has room: the urgent stream for urgent tasks
  // first, else the regular stream with the fewest in flight.
  void dispatch() {
    for (gpu_device& d : _devices) {
      while (!d.queue.empty()) {
        const task_node* top = d.queue.front().task;
        const unsigned urgent = d.first_stream + d.regular;
        unsigned si = none;
        if (_has_urgent && top->priority >= _urgent_priority && _in_flight[urgent] < _depth) {
          si = urgent;
        } else {
          for (unsigned i = d.first_stream; i < urgent; ++i)
            if (_in_flight[i] < _depth && (si == none || _in_flight[i] < _in_flight[si])) si = i;
        }
        if (si == none) break;
        std::pop_heap(d.queue.begin(), d.queue.end(), runs_later);
        waiting q = std::move(d.queue.back());
        d.queue.pop_back();
        launch(q, si);
      }
    }
  }

  void launch(const waiting& q, unsigned si) {
    task_node* t = q.task;
    cudaStream_t s = _streams[si];
    t->stream = si;
    ++_in_flight[si];
    use(t->gpu);  // the body launches on the current device
    cudaEvent_t start = _tracing ? new_event() : nullptr;
    cudaEvent_t end = nullptr;
    try {
      end = new_event();
      if (!t->seq->cancelled.load(std::memory_order_acquire)) {
        if (take_injected(injected_launch_failures))
          throw std::runtime_error("injected launch failure (tessera::detail::testing::fail_gpu_launches)");
        for (auto& [h, mode] : t->accesses) ensure_device(h, t->gpu, s);  // write-only data: room, no copy
        for (cudaEvent_t ready : q.events) check(cudaStreamWaitEvent(s, ready, 0), "cudaStreamWaitEvent");
        if (t->extras && !t->scratch_bytes.empty()) ensure_scratch(si, *t);
      }
    } catch (const out_of_memory& e) {  // keeps its type: callers tell resource errors apart
      _rt.record_error(*t->seq, std::make_exception_ptr(out_of_memory("tessera GPU " + task_name(*t) + " failed: " + e.what())));
    } catch (const std::exception& e) {
      _rt.record_error(*t->seq, failed(*t, e.what()));
    }
    if (start) cudaEventRecord(start, s);
    cudaGetLastError();  // what is left from before is not this body's
    const bool ran = _rt.run_body(t, _rt.workers);  // the body enqueues on s
    // A CUDA call of the body that failed without the body noticing (a kernel launch, say).
    if (const cudaError_t e = cudaGetLastError(); ran && e != cudaSuccess)
      _rt.record_error(*t->seq, failed(*t, std::string("a CUDA call in its body failed: ") + cudaGetErrorString(e)));
    if (_devices.size() > 1) _current = -1;  // a body may have changed the device: set it again next time
    if (end) {
      use(t->gpu);
      cudaEventRecord(end, s);
    }
    if (start && end && t->traced) {
      trace_task rec;
      rec.id = t->id;
      rec.label = t->label.empty() ? std::string("gpu task") : t->label;
      rec.color = t->color;
      rec.priority = t->priority;
      rec.where = device::gpu;
      rec.skipped = !ran;
      std::lock_guard lock(_mutex);
      _records.push_back({std::move(rec), t->gpu, _devices[t->gpu].first_track + static_cast<int>(si - _devices[t->gpu].first_stream),
                          start, end});
    }
    _launched.push_back({t, end, ran});
  }

  static std::exception_ptr failed(const task_node& t, const std::string& why) {
    return std::make_exception_ptr(std::runtime_error("tessera GPU " + task_name(t) + " failed: " + why));
  }

  // Stream si's scratch, grown to what t asks for. Stream-ordered: the old workspace goes after
  // the tasks that used it, the new one is there for the tasks after.
  void ensure_scratch(unsigned si, const task_node& t) {
    std::size_t need = 0;
    for (std::size_t b : t.scratch_bytes) need += align_up(b, device_scratch_align);
    scratch_space& sp = _scratch[si];
    if (need <= sp.bytes) return;
    void* p = nullptr;
    const cudaError_t e = malloc_async(&p, need, _streams[si]);
    if (e != cudaSuccess)
      throw out_of_memory("out of device memory allocating " + std::to_string(need) + " bytes of scratch on stream " +
                               std::to_string(si) + allocation_failure(e, _devices[t.gpu].physical));
    if (sp.data) cudaFreeAsync(sp.data, _streams[si]);
    sp = {p, need};
  }

  void prepare_cpu(task_node* t) {
    waiting w{t, {}};
    try {
      if (!t->seq->cancelled.load(std::memory_order_acquire))
        for (auto& [h, mode] : t->accesses) {
          if (mode == access::write) {
            continue;
          }
          if (cudaEvent_t e = to_host(h, t->id)) w.events.push_back(e);
        }
    } catch (const std::exception& e) {
      _rt.record_error(*t->seq, std::make_exception_ptr(std::runtime_error(
                                    "tessera: copying the data of CPU " + task_name(*t) + " home failed: " + e.what())));
    }
    _waiting.push_back(std::move(w));
  }

  void finish_gpu(task_node* t, bool ran) {
    // A skipped task wrote nothing: its data's copies stay as they were (its device copy may not
    // even exist, or hold what a failed copy left).
    if (ran) {
      for (handle_state* h : t->written) {
        copy_state& c = h->copies;
        for (unsigned g = 0; g < _devices.size(); ++g) invalidate(c.on(g));
        c.on(t->gpu).valid = true;
        c.host_valid = false;
        c.d2h_done = nullptr;
      }
    }
    _rt.complete(t, _rt.workers);  // the GPU thread's worker index
  }

  // Returns true when it did something.
  bool poll() {
    bool progress = arrived();
    for (std::size_t i = 0; i < _launched.size();) {
      const cudaError_t e = _launched[i].end ? cudaEventQuery(_launched[i].end) : cudaSuccess;
      if (e == cudaErrorNotReady) {
        ++i;
        continue;
      }
      task_node* t = _launched[i].task;
      const bool ran = _launched[i].ran;
      --_in_flight[t->stream];
      if (e != cudaSuccess) {
        cudaGetLastError();
        _rt.record_error(*t->seq, failed(*t, cudaGetErrorString(e)));
      }
      _launched[i] = _launched.back();
      _launched.pop_back();
      finish_gpu(t, ran);
      progress = true;
    }
    for (std::size_t i = 0; i < _waiting.size();) {
      bool ready = true;
      for (cudaEvent_t e : _waiting[i].events) {
        const cudaError_t q = cudaEventQuery(e);
        if (q == cudaErrorNotReady) {
          ready = false;
          break;
        }
        if (q != cudaSuccess) {
          cudaGetLastError();
          _rt.record_error(*_waiting[i].task->seq,
                           std::make_exception_ptr(std::runtime_error("tessera: copying the data of CPU " +
                                                                      task_name(*_waiting[i].task) +
                                                                      " home failed: " + cudaGetErrorString(q))));
        }
      }
      if (!ready) {
        ++i;
        continue;
      }
      task_node* t = _waiting[i].task;
      _waiting[i] = std::move(_waiting.back());
      _waiting.pop_back();
      _rt.make_ready_cpu(t);
      progress = true;
    }
    return progress;
  }

  // Pinned buffers whose event has fired; returns whether some still wait.
  bool free_host() {
    std::lock_guard lock(_mutex);
    for (std::size_t i = 0; i < _host_frees.size();) {
      auto [p, done] = _host_frees[i];
      const cudaError_t e = cudaEventQuery(done);
      if (e == cudaErrorNotReady) {
        ++i;
        continue;
      }
      if (e != cudaSuccess) cudaGetLastError();
      cudaEventDestroy(done);
      release_pinned(p);
      _host_frees[i] = _host_frees.back();
      _host_frees.pop_back();
    }
    return !_host_frees.empty();
  }

  bool copying() const {
    for (const gpu_device& d : _devices)
      if (!d.copying.empty()) return true;
    return false;
  }
  bool queued() const {
    for (const gpu_device& d : _devices)
      if (!d.queue.empty()) return true;
    return false;
  }

  void loop() {
    _current = -1;
    use(0);
    std::vector<task_node*> batch;
    for (;;) {
      {
        std::unique_lock lock(_mutex);
        if (_launched.empty() && _waiting.empty() && !copying() && _host_frees.empty())
          _wake.wait(lock, [&] { return _stop || !_incoming.empty() || !_host_frees.empty(); });
        if (_stop && _incoming.empty() && _launched.empty() && _waiting.empty() && !copying() && !queued()) return;
        batch.swap(_incoming);
      }
      for (task_node* t : batch) {
        if (t->where == device::gpu) enqueue(t);
        else prepare_cpu(t);
      }
      batch.clear();
      dispatch();
      const bool progress = poll();
      if (progress) dispatch();
      const bool freeing = free_host();
      if (!progress && (!_launched.empty() || !_waiting.empty() || copying() || freeing)) {
        // Work on the device: check again soon, or as soon as new tasks arrive.
        std::unique_lock lock(_mutex);
        _wake.wait_for(lock, std::chrono::microseconds(5), [&] { return _stop || !_incoming.empty(); });
      }
    }
  }

  runtime_impl& _rt;
  std::vector<gpu_device> _devices;    // the logical GPUs
  std::vector<bool> _direct;           // [to * GPUs + from]: copies between them need no host staging
  std::vector<cudaStream_t> _streams;  // every GPU's, GPU 0's first
  std::vector<cublasHandle_t> _blas;
  std::vector<scratch_space> _scratch;  // per stream: GPU tasks' scratch (GPU thread only)
  std::shared_ptr<cuda_memory> _memory;
  std::vector<std::pair<void*, cudaEvent_t>> _host_frees;  // pinned memory to free once its event fires; _mutex
  // Pinned blocks freed and kept for reuse, oldest first (_mutex): pinning costs several times
  // what copying the memory does (pinned_host_alloc, tessera/sched/cuda.hpp), so a factorization
  // that allocates its T each call (134 MB at n = 32768) would pay for it every time. Bounded by
  // pinned_cache_bytes.
  static constexpr std::size_t pinned_cache_bytes = std::size_t(1) << 30;
  std::vector<std::pair<void*, std::size_t>> _pinned_cache;
  std::size_t _pinned_cached = 0;
  std::unordered_map<void*, std::size_t> _pinned_sizes;  // every pinned block allocated; _mutex
  unsigned _depth;
  int _urgent_priority;
  bool _has_urgent;
  int _tracks = 0;                     // trace tracks of all GPUs
  int _current = -1;                   // GPU thread only: its current CUDA device
  std::vector<unsigned> _in_flight;    // GPU thread only, per stream
  std::vector<cudaEvent_t> _events;

  mutable std::mutex _mutex;
  std::condition_variable _wake;
  std::vector<task_node*> _incoming;
  bool _stop = false;
  transfer_stats _stats;

  std::vector<launched> _launched;  // GPU thread only
  std::vector<waiting> _waiting;    // GPU thread only

  bool _tracing = false;
  std::uint64_t _copy_ids = 0;
  std::vector<record> _records;
  std::thread _thread;
};

void cuda_memory::free(void* p, bool pinned, unsigned gpu) noexcept {
  std::lock_guard lock(_mutex);
  if (_backend) {
    _backend->free_later(p, pinned, gpu);
    return;
  }
  // The runtime has gone, having waited for all its work: nothing of it uses p any more.
  device_scope on(_physical[pinned ? 0 : gpu]);
  if (pinned) pinned_host_free(p);
  else cudaFreeAsync(p, nullptr);
}

bool cuda_available() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return n > 0;
}

std::unique_ptr<gpu_backend> cuda_create(runtime_impl& rt, const runtime_options& options) {
  if (!cuda_available()) throw std::runtime_error("tessera::runtime: gpu_streams > 0 but there is no CUDA device");
  return std::make_unique<cuda_backend>(rt, options);
}

constexpr gpu_backend_entry cuda_entry{cuda_available, cuda_create};

}  // namespace
}  // namespace tessera::detail

namespace tessera {

bool enable_gpu_backend() noexcept {
  detail::register_gpu_backend(detail::cuda_entry);
  return true;
}

namespace {
// Linking this file (Tessera::sched_cuda asks the linker for it) is enough to register it.
[[maybe_unused]] const bool registered_at_load = enable_gpu_backend();
}  // namespace

}  // namespace tessera
