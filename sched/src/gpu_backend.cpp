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

#include "sm_partition.hpp"

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

// Calls from the user's threads (allocations, frees) work on the runtime's device and leave the
// caller's current device as it was.
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
  cuda_memory(cuda_backend* backend, int device) : _backend(backend), _device(device) {}
  void free(void* p, bool pinned) noexcept override;
  void detach() noexcept {
    std::lock_guard lock(_mutex);
    _backend = nullptr;
  }

 private:
  std::mutex _mutex;
  cuda_backend* _backend;  // guarded by _mutex
  int _device;
};

class cuda_backend final : public gpu_backend {
  static constexpr unsigned none = std::numeric_limits<unsigned>::max();  // no stream; no depth limit

 public:
  cuda_backend(runtime_impl& rt, const runtime_options& o)
      : _rt(rt), _device(o.gpu_device), _depth(o.gpu_stream_depth ? o.gpu_stream_depth : none),
        _urgent_priority(o.gpu_urgent_priority),
        _has_urgent(o.gpu_urgent_priority != std::numeric_limits<int>::max()) {
    check(cudaSetDevice(_device), "cudaSetDevice");
    int least = 0, greatest = 0;
    check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
    const unsigned streams = o.gpu_streams + (_has_urgent ? 1 : 0);
    if (_has_urgent && o.gpu_urgent_sms > 0) _partition = std::make_unique<sm_partition>(_device, o.gpu_urgent_sms);
    for (unsigned i = 0; i < streams; ++i) {
      const bool urgent = _has_urgent && i + 1 == streams;
      cudaStream_t s;
      if (_partition) s = _partition->make_stream(urgent, urgent ? greatest : least);
      else check(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, urgent ? greatest : least), "cudaStreamCreate");
      cublasHandle_t b;
      if (cublasCreate(&b) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("tessera GPU backend: cublasCreate failed");
      cublasSetStream(b, s);
      // cuBLAS sizes its grids for the SMs the stream can use; kernels may read it back.
      if (_partition) cublasSetSmCountTarget(b, static_cast<int>(_partition->sms(urgent)));
      _streams.push_back(s);
      _blas.push_back(b);
    }
    _regular = o.gpu_streams;
    _in_flight.assign(streams, 0);
    check(cudaStreamCreateWithFlags(&_h2d, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaStreamCreateWithFlags(&_d2h, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaStreamCreateWithFlags(&_mem, cudaStreamNonBlocking), "cudaStreamCreate");
    _scratch.assign(streams, scratch_space{});
    _memory = std::make_shared<cuda_memory>(this, _device);
    // Keep freed pool memory for reuse instead of returning it at every synchronisation.
    cudaMemPool_t pool;
    if (cudaDeviceGetDefaultMemPool(&pool, _device) == cudaSuccess) {
      std::uint64_t keep = UINT64_MAX;
      cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    }
    _thread = std::thread([this] { loop(); });
  }

  ~cuda_backend() override {
    {
      std::lock_guard lock(_mutex);
      _stop = true;
    }
    _wake.notify_one();
    _thread.join();
    cudaSetDevice(_device);
    // Buffers freed from now on are freed directly; those waiting for their event go now.
    _memory->detach();
    for (auto& [p, done] : _host_frees) {
      cudaEventSynchronize(done);
      cudaEventDestroy(done);
      cudaFreeHost(p);
    }
    for (auto& [p, bytes] : _pinned_cache) cudaFreeHost(p);
    for (void* p : _pooled) cudaFreeAsync(p, _h2d);
    for (unsigned i = 0; i < _scratch.size(); ++i)
      if (_scratch[i].data) cudaFreeAsync(_scratch[i].data, _streams[i]);
    for (auto s : _streams) cudaStreamSynchronize(s);
    cudaStreamSynchronize(_mem);
    cudaStreamSynchronize(_h2d);
    for (cudaEvent_t e : _events) cudaEventDestroy(e);
    for (auto b : _blas) cublasDestroy(b);
    for (auto s : _streams) cudaStreamDestroy(s);
    cudaStreamDestroy(_h2d);
    cudaStreamDestroy(_d2h);
    cudaStreamDestroy(_mem);
    _partition.reset();
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
    c.device_valid = false;
    c.h2d_done = c.d2h_done = nullptr;
    c.h2d_seq = 0;
  }

  void place(handle_state* h, void* device, std::size_t pitch) override {
    std::lock_guard lock(_mutex);  // placement happens before any task touches h on the GPU
    h->copies.device = device;
    h->copies.device_pitch = pitch;
    h->copies.pooled = false;
  }

  transfer_stats stats() const override {
    std::lock_guard lock(_mutex);
    return _stats;
  }
  void* stream(unsigned i) const override { return _streams[i]; }
  void* blas(unsigned i) const override { return _blas[i]; }
  unsigned streams() const override { return static_cast<unsigned>(_streams.size()); }
  void* scratch(unsigned i) const override { return _scratch[i].data; }
  std::shared_ptr<gpu_memory> memory() const override { return _memory; }

  void* allocate(std::size_t bytes, bool pinned) override {
    device_scope on(_device);
    void* p = nullptr;
    if (pinned) {
      const bool injected = take_injected(injected_allocation_failures);
      if (!injected && (p = reuse_pinned(bytes))) return p;
      const cudaError_t e = injected ? cudaErrorMemoryAllocation : cudaMallocHost(&p, bytes ? bytes : 1);
      if (e != cudaSuccess) {
        cudaGetLastError();
        throw out_of_memory("tessera::runtime::allocate_pinned: cannot allocate " + std::to_string(bytes) +
                                 " bytes of pinned host memory (" + cudaGetErrorString(e) + ")");
      }
      std::lock_guard lock(_mutex);
      _pinned_sizes[p] = bytes ? bytes : 1;
      return p;
    }
    // Synchronizing the memory stream (not the device) makes p usable on any stream at once.
    cudaError_t e = malloc_async(&p, bytes, _mem);
    if (e == cudaSuccess) e = cudaStreamSynchronize(_mem);
    if (e != cudaSuccess)
      throw out_of_memory("tessera::runtime::allocate_device: cannot allocate " + std::to_string(bytes) +
                               " bytes of device memory" + allocation_failure(e, _device));
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
      cudaFreeHost(p);
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
      cudaFreeHost(q);
    }
  }

  // Frees p after all the work enqueued so far on the runtime's streams: a task launched before
  // may still be using it. Any thread; cuda_memory serializes the calls.
  void free_later(void* p, bool pinned) noexcept {
    device_scope on(_device);
    std::vector<cudaStream_t> all(_streams);
    all.push_back(_h2d);
    all.push_back(_d2h);
    for (cudaStream_t s : all) {
      cudaEvent_t e;
      if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) continue;
      if (cudaEventRecord(e, s) == cudaSuccess) cudaStreamWaitEvent(_mem, e, 0);
      cudaEventDestroy(e);  // the wait keeps what it needs
    }
    if (!pinned) {
      cudaFreeAsync(p, _mem);
      return;
    }
    cudaEvent_t done;
    if (cudaEventCreateWithFlags(&done, cudaEventDisableTiming) != cudaSuccess || cudaEventRecord(done, _mem) != cudaSuccess) {
      cudaGetLastError();
      cudaStreamSynchronize(_mem);  // cannot tell when: wait for the memory stream only
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
    if (!_origin) check(cudaEventCreate(&_origin), "cudaEventCreate");
    cudaEventRecord(_origin, _h2d);
    cudaEventSynchronize(_origin);
    _origin_host_ns = now_ns();
  }

  void take_trace(std::vector<trace_task>& out, std::vector<std::string>& tracks, int first_track,
                  std::uint64_t origin_ns) override {
    std::lock_guard lock(_mutex);
    for (unsigned i = 0; i < _streams.size(); ++i)
      tracks.push_back("GPU stream " + std::to_string(i) + (i >= _regular ? " (urgent)" : ""));
    tracks.push_back("copy H2D");
    tracks.push_back("copy D2H");
    const double base_us = (static_cast<double>(_origin_host_ns) - static_cast<double>(origin_ns)) * 1e-3;
    for (auto& r : _records) {
      float a = 0, b = 0;
      if (cudaEventElapsedTime(&a, _origin, r.start) != cudaSuccess || cudaEventElapsedTime(&b, _origin, r.end) != cudaSuccess)
        continue;  // not finished or not recorded: leave it out rather than guess
      trace_task t = r.task;
      t.track = first_track + r.track;
      t.start_us = base_us + a * 1e3;
      t.end_us = base_us + b * 1e3;
      out.push_back(std::move(t));
    }
  }

 private:
  struct launched {
    task_node* task;
    cudaEvent_t end;
    bool ran;  // false: skipped (cancelled sequence), its data untouched
  };
  struct waiting {  // a CPU task waiting for copies to the host, or a GPU task for a stream
    task_node* task;
    std::vector<cudaEvent_t> events;
    std::uint64_t after = 0;  // GPU task: the last copy to the device it needs (h2d_seq)
  };
  // Heap order: highest priority on top, then the oldest.
  static bool runs_later(const waiting& a, const waiting& b) {
    return a.task->priority != b.task->priority ? a.task->priority < b.task->priority : a.task->id > b.task->id;
  }
  struct record {
    trace_task task;
    int track;
    cudaEvent_t start, end;
  };

  cudaEvent_t new_event() {
    cudaEvent_t e;
    check(cudaEventCreate(&e), "cudaEventCreate");
    _events.push_back(e);
    return e;
  }

  void ensure_device(handle_state* h, cudaStream_t s) {
    copy_state& c = h->copies;
    if (c.device) return;
    const std::size_t bytes = h->run_bytes * h->runs;
    void* p = nullptr;
    const cudaError_t e = malloc_async(&p, bytes, s);
    if (e != cudaSuccess)
      throw out_of_memory("out of device memory allocating " + std::to_string(bytes) + " bytes for datum " +
                               std::to_string(h->key) + allocation_failure(e, _device));
    c.device = p;
    c.device_pitch = h->run_bytes;
    c.pooled = true;
    _pooled.push_back(p);
  }

  // Copies h to the device on the H2D stream unless the device copy is current; returns the event
  // after which it is, or null.
  cudaEvent_t to_device(handle_state* h, std::uint64_t for_task) {
    copy_state& c = h->copies;
    ensure_device(h, _h2d);
    if (c.device_valid) return static_cast<cudaEvent_t>(c.h2d_done);
    cudaEvent_t start = _tracing ? new_event() : nullptr, end = new_event();
    if (start) cudaEventRecord(start, _h2d);
    check(cudaMemcpy2DAsync(c.device, c.device_pitch, h->data, h->pitch, h->run_bytes, h->runs,
                            cudaMemcpyHostToDevice, _h2d),
          "host-to-device copy");
    cudaEventRecord(end, _h2d);
    c.device_valid = true;
    c.h2d_done = end;
    c.h2d_seq = ++_h2d_issued;
    _h2d_pending.push_back({c.h2d_seq, end});
    {
      std::lock_guard lock(_mutex);
      _stats.h2d_bytes += h->run_bytes * h->runs;
      ++_stats.h2d_copies;
      if (start) _records.push_back({copy_record("H2D", for_task), static_cast<int>(_streams.size()), start, end});
    }
    return end;
  }

  cudaEvent_t to_host(handle_state* h, std::uint64_t for_task) {
    copy_state& c = h->copies;
    if (c.host_valid) return static_cast<cudaEvent_t>(c.d2h_done);
    cudaEvent_t start = _tracing ? new_event() : nullptr, end = new_event();
    if (start) cudaEventRecord(start, _d2h);
    check(cudaMemcpy2DAsync(h->data, h->pitch, c.device, c.device_pitch, h->run_bytes, h->runs,
                            cudaMemcpyDeviceToHost, _d2h),
          "device-to-host copy");
    cudaEventRecord(end, _d2h);
    c.host_valid = true;
    c.d2h_done = end;
    {
      std::lock_guard lock(_mutex);
      _stats.d2h_bytes += h->run_bytes * h->runs;
      ++_stats.d2h_copies;
      if (start) _records.push_back({copy_record("D2H", for_task), static_cast<int>(_streams.size()) + 1, start, end});
    }
    return end;
  }

  trace_task copy_record(const char* label, std::uint64_t for_task) {
    trace_task t;
    t.id = (1ull << 62) + _copy_ids++;  // copies are not tasks: an id space of their own
    t.label = std::string(label) + " for " + std::to_string(for_task);
    t.color = label[0] == 'H' ? 0x7f7f7fu : 0x4f4f4fu;
    t.where = device::gpu;
    t.copy = true;
    return t;
  }

  // A ready GPU task: its inputs start travelling now. It waits in _copying until they have
  // arrived, then for a stream in _queue: a task launched early would wait inside its stream,
  // holding up the tasks queued behind it there (at the start of a blocked QR, the bulk updates
  // sat behind finiteness checks waiting for columns still on their way).
  void enqueue(task_node* t) {
    waiting q{t, {}};
    try {
      if (!t->seq->cancelled.load(std::memory_order_acquire))
        for (auto& [h, mode] : t->accesses)
          if (mode != access::write)
            if (cudaEvent_t ready = to_device(h, t->id)) {
              q.events.push_back(ready);
              q.after = std::max(q.after, h->copies.h2d_seq);
            }
    } catch (const std::exception& e) {
      _rt.record_error(*t->seq, failed(*t, e.what()));
    }
    if (q.after > _h2d_arrived) {
      _copying.push_back(std::move(q));
      return;
    }
    _queue.push_back(std::move(q));
    std::push_heap(_queue.begin(), _queue.end(), runs_later);
  }

  // Copies to the device finish in the order issued (one stream): advances _h2d_arrived and moves
  // the GPU tasks whose inputs are all there to _queue. A failed copy counts as arrived; the
  // task's stream waits on its event and reports the error.
  bool arrived() {
    while (!_h2d_pending.empty()) {
      const cudaError_t e = cudaEventQuery(_h2d_pending.front().second);
      if (e == cudaErrorNotReady) break;
      if (e != cudaSuccess) cudaGetLastError();
      _h2d_arrived = _h2d_pending.front().first;
      _h2d_pending.pop_front();
    }
    bool moved = false;
    for (std::size_t i = 0; i < _copying.size();) {
      if (_copying[i].after > _h2d_arrived) {
        ++i;
        continue;
      }
      _queue.push_back(std::move(_copying[i]));
      std::push_heap(_queue.begin(), _queue.end(), runs_later);
      _copying[i] = std::move(_copying.back());
      _copying.pop_back();
      moved = true;
    }
    return moved;
  }

  // Launches queued tasks while a stream has room: the urgent stream for urgent tasks first, else
  // the regular stream with the fewest in flight.
  void dispatch() {
    while (!_queue.empty()) {
      const task_node* top = _queue.front().task;
      unsigned si = none;
      if (_has_urgent && top->priority >= _urgent_priority && _in_flight[_regular] < _depth) {
        si = _regular;
      } else {
        for (unsigned i = 0; i < _regular; ++i)
          if (_in_flight[i] < _depth && (si == none || _in_flight[i] < _in_flight[si])) si = i;
      }
      if (si == none) return;
      std::pop_heap(_queue.begin(), _queue.end(), runs_later);
      waiting q = std::move(_queue.back());
      _queue.pop_back();
      launch(q, si);
    }
  }

  void launch(const waiting& q, unsigned si) {
    task_node* t = q.task;
    cudaStream_t s = _streams[si];
    t->stream = si;
    ++_in_flight[si];
    cudaEvent_t start = _tracing ? new_event() : nullptr;
    cudaEvent_t end = nullptr;
    try {
      end = new_event();
      if (!t->seq->cancelled.load(std::memory_order_acquire)) {
        if (take_injected(injected_launch_failures))
          throw std::runtime_error("injected launch failure (tessera::detail::testing::fail_gpu_launches)");
        for (auto& [h, mode] : t->accesses) ensure_device(h, s);  // write-only data: room, no copy
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
    if (end) cudaEventRecord(end, s);
    if (start && end && t->traced) {
      trace_task rec;
      rec.id = t->id;
      rec.label = t->label.empty() ? std::string("gpu task") : t->label;
      rec.color = t->color;
      rec.priority = t->priority;
      rec.where = device::gpu;
      rec.skipped = !ran;
      std::lock_guard lock(_mutex);
      _records.push_back({std::move(rec), static_cast<int>(si), start, end});
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
                               std::to_string(si) + allocation_failure(e, _device));
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
        c.device_valid = true;
        c.host_valid = false;
        c.h2d_done = c.d2h_done = nullptr;
        c.h2d_seq = 0;
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

  void loop() {
    cudaSetDevice(_device);
    std::vector<task_node*> batch;
    for (;;) {
      {
        std::unique_lock lock(_mutex);
        if (_launched.empty() && _waiting.empty() && _copying.empty() && _host_frees.empty())
          _wake.wait(lock, [&] { return _stop || !_incoming.empty() || !_host_frees.empty(); });
        if (_stop && _incoming.empty() && _launched.empty() && _waiting.empty() && _copying.empty() &&
            _queue.empty())
          return;
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
      if (!progress && (!_launched.empty() || !_waiting.empty() || !_copying.empty() || freeing)) {
        // Work on the device: check again soon, or as soon as new tasks arrive.
        std::unique_lock lock(_mutex);
        _wake.wait_for(lock, std::chrono::microseconds(5), [&] { return _stop || !_incoming.empty(); });
      }
    }
  }

  runtime_impl& _rt;
  int _device;
  std::unique_ptr<sm_partition> _partition;  // with runtime_options::gpu_urgent_sms
  std::vector<cudaStream_t> _streams;
  std::vector<cublasHandle_t> _blas;
  cudaStream_t _h2d = nullptr, _d2h = nullptr;
  cudaStream_t _mem = nullptr;         // allocations and frees of runtime::allocate_device/_pinned
  struct scratch_space {
    void* data = nullptr;
    std::size_t bytes = 0;
  };
  std::vector<scratch_space> _scratch;  // per stream: GPU tasks' scratch (GPU thread only)
  std::shared_ptr<cuda_memory> _memory;
  std::vector<std::pair<void*, cudaEvent_t>> _host_frees;  // pinned memory to free once its event fires; _mutex
  // Pinned blocks freed and kept for reuse, oldest first (_mutex): cudaMallocHost costs about as
  // much as copying the memory it pins, so a factorization that allocates its T each call (134 MB
  // at n = 32768) would pay tens of ms every time. Bounded by pinned_cache_bytes.
  static constexpr std::size_t pinned_cache_bytes = std::size_t(1) << 30;
  std::vector<std::pair<void*, std::size_t>> _pinned_cache;
  std::size_t _pinned_cached = 0;
  std::unordered_map<void*, std::size_t> _pinned_sizes;  // every pinned block allocated; _mutex
  unsigned _regular = 0;               // streams [0, _regular) are regular; the urgent one follows
  unsigned _depth;
  int _urgent_priority;
  bool _has_urgent;
  std::vector<unsigned> _in_flight;    // GPU thread only, per stream
  std::vector<void*> _pooled;
  std::vector<cudaEvent_t> _events;

  mutable std::mutex _mutex;
  std::condition_variable _wake;
  std::vector<task_node*> _incoming;
  bool _stop = false;
  transfer_stats _stats;

  std::vector<launched> _launched;  // GPU thread only
  std::vector<waiting> _waiting;    // GPU thread only
  std::vector<waiting> _copying;    // GPU thread only: GPU tasks whose inputs are on their way
  std::deque<std::pair<std::uint64_t, cudaEvent_t>> _h2d_pending;  // GPU thread only, issue order
  std::uint64_t _h2d_issued = 0, _h2d_arrived = 0;                 // GPU thread only
  std::vector<waiting> _queue;      // GPU thread only: ready GPU tasks, a heap by runs_later

  bool _tracing = false;
  cudaEvent_t _origin = nullptr;
  std::uint64_t _origin_host_ns = 0;
  std::uint64_t _copy_ids = 0;
  std::vector<record> _records;
  std::thread _thread;
};

void cuda_memory::free(void* p, bool pinned) noexcept {
  std::lock_guard lock(_mutex);
  if (_backend) {
    _backend->free_later(p, pinned);
    return;
  }
  // The runtime has gone, having waited for all its work: nothing of it uses p any more.
  device_scope on(_device);
  if (pinned) cudaFreeHost(p);
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
