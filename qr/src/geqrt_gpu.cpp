#include "tessera/qr/geqrt_gpu.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "detail.hpp"
#include "tessera/qr/geqrf_hybrid.hpp"

#if TESSERA_QR_CUDA
#include <cuda_runtime.h>

#include "gpu_workspace.hpp"
#include "tessera/kernels_gpu.hpp"
#include "tessera/sched/cuda.hpp"
#endif

namespace tessera::qr {

int default_blocked_nb(int n) noexcept {
  // Measured on an H100 at n = 32768 (docs/results/history.md): with CholeskyQR2 panels 1.204 / 1.209 s at nb 512
  // against 1.216 / 1.224 s at 384 and 1.291 s at 448 (alternating runs, medians of 3); with the
  // Householder panels 1.52 s at nb 256, 1.38 s at 384.
  return n >= 32768 ? 512 : n >= 16384 ? 384 : n >= 4096 ? 256 : 128;
}

int default_blocked_lookahead(int n) noexcept {
  // Measured on an H100 (README, "GPU and hybrid QR against cuSOLVER"), medians of 3-5,
  // lookahead 1 / 2 / 3 / 4:
  // 16384 double 0.2068 / 0.2083 / 0.2007 / 0.2012 s, single 0.2136 / 0.1982 / 0.1984 / 0.1999 s;
  // 32768 the same within 1%; 4096 and 8192 2-3% slower with 2-4 than with 1.
  return n >= 16384 ? 3 : 1;
}

namespace {
int panel_width(int n, const blocked_options& o) { return o.nb > 0 ? o.nb : default_blocked_nb(n); }
int lookahead_of(int n, const blocked_options& o) { return o.lookahead > 0 ? o.lookahead : default_blocked_lookahead(n); }
// Column blocks per bulk update task at step k.
int bulk_width(int k, int nt, const blocked_options& o) {
  return o.bulk_columns > 0 && k < o.chunked_steps ? o.bulk_columns : nt;
}
int bulk_tasks(int columns, int per_task) { return (columns + per_task - 1) / per_task; }
}  // namespace

std::uint64_t geqrt_gpu_task_count(int, int n, const blocked_options& options) {
  const int nb = panel_width(n, options), nt = (n + nb - 1) / nb, ahead = lookahead_of(n, options);
  std::uint64_t count = 2 * std::uint64_t(nt);  // the finiteness checks and their verdicts
  for (int k = 0; k < nt; ++k) {
    count += 3;  // panel, fetches of its column block and T
    count += std::uint64_t(std::min(ahead, nt - k - 1));
    if (k + ahead + 1 < nt) count += std::uint64_t(bulk_tasks(nt - k - ahead - 1, bulk_width(k, nt, options)));
  }
  return count;
}

#if TESSERA_QR_CUDA

namespace {

constexpr const char* func = "geqrt_gpu";
// All three go to the urgent stream; among its queued tasks the panel chain goes first.
constexpr int panel_priority = hybrid_urgent_priority + 1, ahead_priority = hybrid_urgent_priority, bulk_priority = 1;

// The device matrix and T, one handle per column block and per T block, the task insertion.
template <class T>
class blocked_qr {
 public:
  blocked_qr(runtime& rt, int m, int n, T* a, int lda, T* t, int ldt, int nb, int ib,
             std::atomic<std::uint64_t>* progress)
      : _rt(rt), _m(m), _n(n), _nb(nb), _ib(ib), _nt((n + nb - 1) / nb), _progress(progress),
        _a_dev(func, std::size_t(m) * n, std::to_string(m) + " x " + std::to_string(n) + " matrix"),
        _t_dev(func, std::size_t(nb) * n, "T factors"),
        _da(_a_dev.get()),
        _dt(_t_dev.get()) {
    for (int j = 0; j < _nt; ++j) {
      const int w = width(j);
      _col.push_back(rt.register_data(a + std::size_t(j) * nb * lda, sizeof(T) * std::size_t(m), w,
                                      sizeof(T) * std::size_t(lda)));
      rt.place_on_device(_col.back(), column(j), sizeof(T) * std::size_t(m));
      _t.push_back(rt.register_data(t + std::size_t(j) * nb * ldt, sizeof(T) * std::size_t(w), w,
                                    sizeof(T) * std::size_t(ldt)));
      rt.place_on_device(_t.back(), t_block(j), sizeof(T) * std::size_t(nb));
    }
    _checked = rt.register_key(reinterpret_cast<std::uintptr_t>(this));
    if (cudaMallocHost(&_counts, sizeof(unsigned) * std::size_t(_nt)) != cudaSuccess) {
      cudaGetLastError();
      throw std::bad_alloc();
    }
    std::fill_n(_counts, _nt, 0u);
  }

  // Waits for every task (also when insertion or the run failed), drops the device copies, frees.
  ~blocked_qr() {
    try {
      _rt.wait_all();
    } catch (...) {  // already reported, or the exception in flight is the one that matters
    }
    for (int j = 0; j < _nt; ++j) {
      _rt.release_device(_col[j]);
      _rt.release_device(_t[j]);
    }
    cudaDeviceSynchronize();
    cudaFreeHost(_counts);
  }

  // Every column block checked for NaN and Inf on the GPU as it arrives (a pass over host memory
  // on the CPUs took seconds at n = 32768), then judged on the CPUs: the message names the first
  // bad entry, found in the host copy, which nothing has overwritten, since no column block goes
  // home before every check passed.
  void check_finite(const T* a, int lda) {
    for (int j = 0; j < _nt; ++j) {
      unsigned* count = _counts + j;
      const handle verdict = _rt.register_key(reinterpret_cast<std::uintptr_t>(count));
      _rt.task([=, this](task_context& ctx) {
           kernels::gpu_count_non_finite(_m, width(j), column(j), _m, count, stream_of(ctx));
           detail::tick(_progress);
         })
          .on(device::gpu)
          .read(_col[j])
          .write(verdict)
          .label("gpu_check")
          .color(detail::color_copy)
          .submit();
      _rt.task([=, this] {
           if (*count) {
             detail::require_finite_block("A", _m, width(j), a + std::size_t(j) * _nb * lda, lda, 0, j * _nb);
             detail::invalid(func, "A has non-finite entries in columns from " + std::to_string(j * _nb));
           }
           detail::tick(_progress);
         })
          .read(verdict)
          .accumulate(_checked)
          .label("verdict")
          .color(detail::color_copy)
          .submit();
    }
  }

  void panel(int k) {
    const int rows = _m - k * _nb, w = width(k), ib = std::min(_ib, w);
    T* a = column(k) + std::size_t(k) * _nb;
    T* tk = t_block(k);
    _rt.task([=, this](task_context& ctx) {
         const std::size_t lwork = kernels::gpu_geqrt_workspace_size(rows, w, ib);
         kernels::gpu_geqrt(rows, w, ib, a, _m, tk, _nb, _work.get(ctx, lwork), lwork, blas_of(ctx));
         detail::tick(_progress);
       })
        .on(device::gpu)
        .read_write(_col[k])
        .write(_t[k])
        .priority(panel_priority)
        .label("gpu_geqrt")
        .color(detail::color_geqrt)
        .submit();
  }

  // Q_k^T applied to column blocks [j0, j1), rows k*nb.. : one task inheriting each block's hazards.
  void update(int k, int j0, int j1, int priority) {
    const int rows = _m - k * _nb, w = width(k), cols = std::min(_n, j1 * _nb) - j0 * _nb;
    const T* v = column(k) + std::size_t(k) * _nb;
    const T* tk = t_block(k);
    T* c = column(j0) + std::size_t(k) * _nb;
    auto b = _rt.task([=, this](task_context& ctx) {
      const std::size_t lwork = kernels::gpu_larfb_workspace_size(rows, cols, w);
      kernels::gpu_larfb(rows, cols, w, v, _m, tk, _nb, c, _m, _work.get(ctx, lwork), lwork, blas_of(ctx));
      detail::tick(_progress);
    });
    b.on(device::gpu).read(_col[k]).read(_t[k]);
    for (int j = j0; j < j1; ++j) b.read_write(_col[j]);
    b.priority(priority).label("gpu_larfb").color(detail::color_tsmqr).submit();
  }

  // Column block k and T_k are final: home while the factorization goes on, once A is known finite.
  void fetch(int k) {
    for (handle h : {_col[k], _t[k]})
      _rt.task([this] { detail::tick(_progress); }).read(h).read(_checked).label("fetch").color(detail::color_copy).submit();
  }

  int tiles() const { return _nt; }

 private:
  int width(int j) const { return std::min(_nb, _n - j * _nb); }
  T* column(int j) const { return _da + std::size_t(j) * _nb * _m; }
  T* t_block(int j) const { return _dt + std::size_t(j) * _nb * _nb; }

  runtime& _rt;
  int _m, _n, _nb, _ib, _nt;
  std::atomic<std::uint64_t>* _progress;
  detail::device_buffer<T> _a_dev, _t_dev;
  T* _da;  // m x n, leading dimension m
  T* _dt;  // nb x n
  unsigned* _counts = nullptr;  // pinned: non-finite entries per column block
  std::vector<handle> _col, _t;
  handle _checked;
  detail::gpu_workspace<T> _work{func};
};

}  // namespace

template <class T>
void geqrt_gpu(runtime& rt, int m, int n, T* a, int lda, T* t, int ldt, const blocked_options& options) {
  if (!rt.has_gpu()) detail::invalid(func, "the runtime has no GPU (runtime_options::gpu_streams)");
  detail::require_at_least(func, "n", n, 0);
  detail::require_at_least(func, "m", m, n, "n");
  const int nb = panel_width(n, options);
  detail::require_at_least(func, "nb", nb, 1);
  detail::require_at_least(func, "ib", options.ib, 1);
  if (options.ib > kernels::gpu_geqrt_max_ib)
    detail::invalid(func, "ib = " + std::to_string(options.ib) + ": must be <= " +
                              std::to_string(kernels::gpu_geqrt_max_ib));
  detail::require_at_least(func, "lookahead", options.lookahead, 0);
  detail::require_at_least(func, "bulk_columns", options.bulk_columns, 0);
  detail::require_at_least(func, "chunked_steps", options.chunked_steps, 0);
  detail::require_at_least(func, "lda", lda, std::max(1, m), "max(1, m)");
  detail::require_at_least(func, "ldt", ldt, std::max(1, std::min(nb, n)), "max(1, min(nb, n))");
  if (n == 0) return;
  if (!a) detail::invalid(func, "A is null");
  if (!t) detail::invalid(func, "T is null");

  blocked_qr<T> qr(rt, m, n, a, lda, t, ldt, std::min(nb, n), options.ib, options.progress);
  const int nt = qr.tiles(), ahead = lookahead_of(n, options);
  qr.check_finite(a, lda);
  for (int k = 0; k < nt; ++k) {
    qr.panel(k);
    qr.fetch(k);
    // Lookahead: the next panel's column first, then the next ahead - 1, on the urgent stream;
    // then the rest in bulk.
    for (int j = k + 1; j < std::min(nt, k + 1 + ahead); ++j)
      qr.update(k, j, j + 1, j == k + 1 ? panel_priority : ahead_priority);
    const int width = bulk_width(k, nt, options);
    for (int j = k + 1 + ahead; j < nt; j += width) qr.update(k, j, std::min(nt, j + width), bulk_priority);
  }
  rt.wait_all();  // errors surface here; the device memory goes after
}

#else  // built without CUDA

template <class T>
void geqrt_gpu(runtime&, int, int, T*, int, T*, int, const blocked_options&) {
  throw std::invalid_argument("tessera::qr::geqrt_gpu: Tessera was built without CUDA");
}

#endif

template void geqrt_gpu<float>(runtime&, int, int, float*, int, float*, int, const blocked_options&);
template void geqrt_gpu<double>(runtime&, int, int, double*, int, double*, int, const blocked_options&);

}  // namespace tessera::qr
