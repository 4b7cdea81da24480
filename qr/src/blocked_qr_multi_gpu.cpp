#include "tessera/qr/blocked_qr_multi_gpu.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "detail.hpp"
#include "tessera/qr/gpu.hpp"

#if TESSERA_QR_CUDA
#include <cuda_runtime.h>

#include "blocked_tasks.hpp"
#include "tessera/kernels_gpu.hpp"
#include "tessera/sched/cuda.hpp"
#include "tessera/sched/memory.hpp"
#endif

namespace tessera::qr {

std::vector<std::uint64_t> multi_gpu_peer_bytes(int m, int n, int nb, unsigned gpus, std::size_t elem) {
  std::vector<std::uint64_t> bytes;
  if (n <= 0 || nb <= 0 || gpus == 0) return bytes;
  const int nt = (n + nb - 1) / nb;
  for (int k = 0; k < nt; ++k) {
    const std::uint64_t w = static_cast<std::uint64_t>(std::min(nb, n - k * nb));
    // GPUs other than panel k's owner that own a column block right of it.
    const unsigned receivers = std::min<unsigned>(gpus - 1, static_cast<unsigned>(nt - 1 - k));
    bytes.push_back(receivers * (static_cast<std::uint64_t>(m - k * nb) * w + w * w) * elem);
  }
  return bytes;
}

#if TESSERA_QR_CUDA

namespace {

constexpr const char* func = "blocked_qr_multi_gpu";
using detail::ahead_priority;
using detail::bulk_priority;
using detail::panel_priority;

// Column block j lives on GPU j mod G, in that GPU's own m x (its columns) device matrix, where its
// owner's blocks sit side by side: every GPU's trailing columns are one GEMM operand. Column block j
// has two handles, its rows above the diagonal block (top, final after step j - 1) and from it down
// (bottom: the panel, the only part other GPUs read), so the panel broadcast moves only V.
template <class T>
class multi_gpu_qr {
 public:
  multi_gpu_qr(runtime& rt, int m, int n, T* a, int lda, T* t, int ldt, int nb, int ib)
      : _rt(rt), _m(m), _n(n), _nb(nb), _ib(ib), _nt((n + nb - 1) / nb), _gpus(rt.gpus()) {
    for (unsigned g = 0; g < _gpus; ++g) {
      int cols = 0;
      for (int j = static_cast<int>(g); j < _nt; j += static_cast<int>(_gpus)) cols += width(j);
      _a_dev.push_back(rt.allocate_device(sizeof(T) * std::size_t(m) * std::size_t(std::max(cols, 1)), g));
      _t_dev.push_back(rt.allocate_device(sizeof(T) * std::size_t(nb) * std::size_t(std::max(cols, 1)), g));
    }
    // Every allocation before any registration: a failure leaves no handle placed in freed memory.
    _counts = rt.allocate_pinned(sizeof(unsigned) * std::size_t(_nt));
    std::fill_n(_counts.get<unsigned>(), _nt, 0u);
    const std::size_t pitch = sizeof(T) * std::size_t(lda), dpitch = sizeof(T) * std::size_t(m);
    for (int j = 0; j < _nt; ++j) {
      const int w = width(j), r0 = j * nb;
      const unsigned g = owner(j);
      T* col = a + std::size_t(r0) * lda;
      if (r0 > 0) {
        _top.push_back(rt.register_data(col, sizeof(T) * std::size_t(r0), w, pitch));
        rt.place_on_device(_top.back(), column(j), dpitch, g);
      } else {
        _top.emplace_back();
      }
      _bottom.push_back(rt.register_data(col + r0, sizeof(T) * std::size_t(m - r0), w, pitch));
      rt.place_on_device(_bottom.back(), column(j) + r0, dpitch, g);
      _t.push_back(rt.register_data(t + std::size_t(r0) * ldt, sizeof(T) * std::size_t(w), w, sizeof(T) * std::size_t(ldt)));
      rt.place_on_device(_t.back(), t_block(j), sizeof(T) * std::size_t(nb), g);
    }
    _checked = rt.register_key(reinterpret_cast<std::uintptr_t>(this));
  }

  // Waits for every task (also when insertion or the run failed), then drops the device copies.
  ~multi_gpu_qr() {
    try {
      _rt.wait_all();
    } catch (...) {  // already reported, or the exception in flight is the one that matters
    }
    for (int j = 0; j < _nt; ++j) {
      if (_top[j]) _rt.release_device(_top[j]);
      _rt.release_device(_bottom[j]);
      _rt.release_device(_t[j]);
    }
  }

  // Every column block checked for NaN and Inf on its GPU as it arrives, judged on the CPUs; no
  // column block goes home before every check passed (blocked_qr_gpu's rule).
  void check_finite(const T* a, int lda) {
    for (int j = 0; j < _nt; ++j) {
      unsigned* count = _counts.get<unsigned>() + j;
      const handle verdict = _rt.register_key(reinterpret_cast<std::uintptr_t>(count));
      const int m = _m, w = width(j);
      T* col = column(j);
      auto b = _rt.task([=](task_context& ctx) { kernels::gpu_count_non_finite(m, w, col, m, count, stream_of(ctx)); });
      b.gpu(owner(j));
      if (_top[j]) b.read(_top[j]);
      b.read(_bottom[j]).write(verdict).label("gpu_check").color(detail::color_copy).submit();
      const T* host = a + std::size_t(j) * _nb * lda;
      detail::submit_verdict(_rt, func, count, _m, width(j), host, lda, j * _nb, verdict, _checked);
    }
  }

  void panel(int k) {
    const int rows = _m - k * _nb, w = width(k), ib = std::min(_ib, w);
    detail::panel_task(_rt, rows, w, ib, column(k) + std::size_t(k) * _nb, _m, t_block(k), _nb)
        .gpu(owner(k))
        .read_write(_bottom[k])
        .write(_t[k])
        .submit();
  }

  // Q_k^T applied, rows k nb.., to the column blocks `blocks` (all on one GPU, side by side there):
  // one task inheriting each block's hazards. V and T_k come from the task's GPU's copy of them:
  // panel k's own memory on its owner, the runtime's copy elsewhere.
  void update(int k, const std::vector<int>& blocks, int priority) {
    if (blocks.empty()) return;
    const int rows = _m - k * _nb, w = width(k), ldc = _m;
    int cols = 0;
    for (int j : blocks) cols += width(j);
    T* c = column(blocks.front()) + std::size_t(k) * _nb;
    const handle v = _bottom[k], tk = _t[k];
    const std::size_t lwork = kernels::gpu_larfb_workspace_size(rows, cols, w);
    auto b = _rt.task([=](task_context& ctx) {
      const int ldv = static_cast<int>(ctx.device_pitch(v) / sizeof(T)), ldt = static_cast<int>(ctx.device_pitch(tk) / sizeof(T));
      kernels::gpu_larfb(rows, cols, w, device_ptr<const T>(ctx, v), ldv, device_ptr<const T>(ctx, tk), ldt, c, ldc,
                         static_cast<T*>(ctx.scratch(0)), lwork, blas_of(ctx));
    });
    b.gpu(owner(blocks.front())).read(v).read(tk);
    for (int j : blocks) {
      b.read_write(_top[j]);  // j > k: its rows k nb .. j nb
      b.read_write(_bottom[j]);
    }
    b.scratch(sizeof(T) * lwork).priority(priority).label("gpu_larfb").color(detail::color_tsmqr).submit();
  }

  // Step k: the next `ahead` column blocks first, one urgent task each on its owner; then each GPU's
  // other trailing column blocks in one task.
  void updates(int k, int ahead) {
    for (int j = k + 1; j < std::min(_nt, k + 1 + ahead); ++j) update(k, {j}, j == k + 1 ? panel_priority : ahead_priority);
    for (unsigned g = 0; g < _gpus; ++g) {
      std::vector<int> blocks;
      for (int j = k + 1 + ahead; j < _nt; ++j)
        if (owner(j) == g) blocks.push_back(j);
      update(k, blocks, bulk_priority);
    }
  }

  // Home once final and A is known finite: panel k's V, R's diagonal block and T_k after the panel;
  // column block k + 1's rows above its diagonal block after step k's updates.
  void fetch(handle h) {
    _rt.task([] {}).read(h).read(_checked).label("fetch").color(detail::color_copy).submit();
  }
  void fetch_panel(int k) {
    fetch(_bottom[k]);
    fetch(_t[k]);
  }
  void fetch_top(int j) {
    if (j < _nt && _top[j]) fetch(_top[j]);
  }

  int tiles() const { return _nt; }

 private:
  int width(int j) const { return std::min(_nb, _n - j * _nb); }
  unsigned owner(int j) const { return static_cast<unsigned>(j) % _gpus; }
  // Only a GPU's last block may be narrower than nb, so its blocks before j are all nb wide.
  T* column(int j) const {
    return _a_dev[owner(j)].template get<T>() + std::size_t(j / static_cast<int>(_gpus)) * _nb * _m;
  }
  T* t_block(int j) const {
    return _t_dev[owner(j)].template get<T>() + std::size_t(j / static_cast<int>(_gpus)) * _nb * _nb;
  }

  runtime& _rt;
  int _m, _n, _nb, _ib, _nt;
  unsigned _gpus;
  std::vector<device_buffer> _a_dev, _t_dev;  // per GPU: its column blocks (m x cols) and their T (nb x cols)
  pinned_buffer _counts;                      // non-finite entries per column block
  std::vector<handle> _top, _bottom, _t;
  handle _checked;
};

}  // namespace

template <class T>
void blocked_qr_multi_gpu(runtime& rt, int m, int n, T* a, int lda, T* t, int ldt, const blocked_options& options) {
  if (!rt.has_gpu()) detail::invalid(func, "the runtime has no GPU (runtime_options::gpu_streams)");
  if (options.device_matrix)
    detail::invalid(func, "device_matrix: the several-GPU QR factors host matrices (each GPU holds its own columns)");
  detail::require_at_least(func, "n", n, 0);
  detail::require_at_least(func, "m", m, n, "n");
  const int nb = options.nb > 0 ? options.nb : default_blocked_nb(n);
  detail::require_at_least(func, "ib", options.ib, 1);
  if (options.ib > kernels::gpu_geqrt_max_ib)
    detail::invalid(func, "ib = " + std::to_string(options.ib) + ": must be <= " + std::to_string(kernels::gpu_geqrt_max_ib));
  detail::require_at_least(func, "lookahead", options.lookahead, 0);
  detail::require_at_least(func, "lda", lda, std::max(1, m), "max(1, m)");
  detail::require_at_least(func, "ldt", ldt, std::max(1, std::min(nb, n)), "max(1, min(nb, n))");
  if (n == 0) return;
  if (!a) detail::invalid(func, "A is null");
  if (!t) detail::invalid(func, "T is null");

  multi_gpu_qr<T> qr(rt, m, n, a, lda, t, ldt, std::min(nb, n), options.ib);
  const int nt = qr.tiles(), ahead = options.lookahead > 0 ? options.lookahead : 1;
  qr.check_finite(a, lda);
  for (int k = 0; k < nt; ++k) {
    qr.panel(k);
    qr.fetch_panel(k);
    qr.updates(k, ahead);
    qr.fetch_top(k + 1);
  }
  rt.wait_all();  // errors surface here; the device memory goes after
}

#else  // built without CUDA

template <class T>
void blocked_qr_multi_gpu(runtime&, int, int, T*, int, T*, int, const blocked_options&) {
  throw std::invalid_argument("tessera::qr::blocked_qr_multi_gpu: Tessera was built without CUDA");
}

#endif

template void blocked_qr_multi_gpu<float>(runtime&, int, int, float*, int, float*, int, const blocked_options&);
template void blocked_qr_multi_gpu<double>(runtime&, int, int, double*, int, double*, int, const blocked_options&);

}  // namespace tessera::qr
