#include "tessera/qr/blocked_qr_gpu.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "blocked_qr_gpu_in_double.hpp"
#include "detail.hpp"
#include "tessera/qr/gpu.hpp"

#if TESSERA_QR_CUDA
#include <cuda_runtime.h>

#include "blocked_tasks.hpp"
#include "tessera/kernels_gpu.hpp"
#include "tessera/sched/memory.hpp"
#include "tessera/sched/cuda.hpp"
#endif

namespace tessera::qr {

// Measured on an H100 (docs/architecture.md): 512 against 384 and 448 at n = 32768 with the
// CholeskyQR2 panels; smaller matrices want narrower panels.
int default_blocked_nb(int n) noexcept { return n >= 32768 ? 512 : n >= 16384 ? 384 : n >= 4096 ? 256 : 128; }

// Measured on an H100 (docs/architecture.md), device memory, with the full T: nb 512 against 384
// took 0.0349 against 0.0371 s at n = 6000 and 0.0814 against 0.0841 s at 10000 (0.8-1.4% at
// 8000, 12000 and 15000); 640 was no better.
int default_full_t_nb(int n) noexcept { return n >= 4096 ? std::max(512, default_blocked_nb(n)) : default_blocked_nb(n); }

// Measured on an H100 (docs/architecture.md): lookahead 3 is 1-4% faster than 1 from n = 16384 and
// 2-3% slower below.
int default_blocked_lookahead(int n) noexcept { return n >= 16384 ? 3 : 1; }

// Measured on an H100 (docs/architecture.md): from 16384, every step in tasks of 8 column blocks was
// 2-3.5% faster from device memory (32768: 1.088 against 1.115 s; with the full T 1.53 against
// 1.56 s) and no slower from host memory; at 8192 and below no change.
int default_bulk_columns(int n) noexcept { return n >= 16384 ? 8 : 4; }
int default_chunked_steps(int n) noexcept { return n >= 16384 ? std::numeric_limits<int>::max() : 4; }

#if TESSERA_QR_CUDA

namespace {

int panel_width(int n, const blocked_options& o) { return o.nb > 0 ? o.nb : default_blocked_nb(n); }
int lookahead_of(int n, const blocked_options& o) { return o.lookahead > 0 ? o.lookahead : default_blocked_lookahead(n); }
// Column blocks per bulk update task at step k.
int bulk_width(int n, int k, int nt, const blocked_options& o) {
  const int columns = o.bulk_columns >= 0 ? o.bulk_columns : default_bulk_columns(n);
  const int steps = o.chunked_steps >= 0 ? o.chunked_steps : default_chunked_steps(n);
  return columns > 0 && k < steps ? columns : nt;
}

constexpr const char* func = "blocked_qr_gpu";
using detail::ahead_priority;
using detail::bulk_priority;
using detail::panel_priority;

// The device matrix and T, one handle per column block and per T block, the task insertion. With
// a host matrix the device copies live in buffers of this class and the runtime moves the column
// blocks; with a device matrix the handles name the caller's memory and nothing moves. H is the
// host matrix's precision, T the one computed in: with H = float and T = double (host matrices
// only) each host block has a handle of its own, placed in a device buffer of H, and GPU tasks
// convert it to the double matrix as it arrives and back before it goes home.
template <class T, class H = T>
class blocked_qr {
  static constexpr bool mixed = !std::is_same_v<T, H>;

 public:
  blocked_qr(runtime& rt, int m, int n, H* a, int lda, H* t, int ldt, H* st, int ldst, int nb, int ib,
             bool on_device)
      : _rt(rt), _m(m), _n(n), _nb(nb), _ib(ib), _nt((n + nb - 1) / nb), _mt((m + nb - 1) / nb),
        _on_device(on_device), _full_t(st != nullptr) {
    if (on_device) {
      if constexpr (mixed) {
        detail::invalid(func, "two precisions need a host matrix");
      } else {
        _da = a;
        _ldda = lda;
        _dt = t;
        _lddt = ldt;
        _dst = st;
        _lddst = ldst;
      }
    } else {
      _a_dev = rt.allocate_device(sizeof(T) * std::size_t(m) * n);
      _t_dev = rt.allocate_device(sizeof(T) * std::size_t(nb) * n);
      _da = _a_dev.get<T>();
      _ldda = m;
      _dt = _t_dev.get<T>();
      _lddt = nb;
      if (_full_t) {
        _st_dev = rt.allocate_device(sizeof(T) * std::size_t(m) * n);
        _dst = _st_dev.get<T>();
        _lddst = m;
      }
      if constexpr (mixed) {  // the host blocks' device copies, in H: ld m for A and S, nb for T
        _a_stage = rt.allocate_device(sizeof(H) * std::size_t(m) * n);
        _t_stage = rt.allocate_device(sizeof(H) * std::size_t(nb) * n);
        if (_full_t) _st_stage = rt.allocate_device(sizeof(H) * std::size_t(m) * n);
      }
    }
    // Every allocation before any registration: a failure leaves no handle placed in freed memory.
    _counts = rt.allocate_pinned(sizeof(unsigned) * std::size_t(_nt));
    std::fill_n(_counts.get<unsigned>(), _nt, 0u);
    for (int j = 0; j < _nt; ++j) {
      const int w = width(j);
      if (on_device) {
        _col.push_back(rt.register_device_data(column(j), sizeof(T) * std::size_t(m), w, sizeof(T) * std::size_t(lda)));
        _t.push_back(rt.register_device_data(t_block(j), sizeof(T) * std::size_t(w), w, sizeof(T) * std::size_t(ldt)));
      } else if constexpr (mixed) {
        _col.push_back(rt.register_device_data(column(j), sizeof(T) * std::size_t(m), w, sizeof(T) * std::size_t(_ldda)));
        _t.push_back(rt.register_device_data(t_block(j), sizeof(T) * std::size_t(w), w, sizeof(T) * std::size_t(_lddt)));
        _col_home.push_back(mirror_of(_col.back(), a + std::size_t(j) * nb * lda, lda, _a_stage.get<H>() + std::size_t(j) * nb * m,
                                      m, m, w, column(j), _ldda));
        _t_home.push_back(mirror_of(_t.back(), t + std::size_t(j) * nb * ldt, ldt, _t_stage.get<H>() + std::size_t(j) * nb * nb,
                                    nb, w, w, t_block(j), _lddt));
      } else {
        _col.push_back(rt.register_data(a + std::size_t(j) * nb * lda, sizeof(T) * std::size_t(m), w,
                                        sizeof(T) * std::size_t(lda)));
        rt.place_on_device(_col.back(), column(j), sizeof(T) * std::size_t(_ldda));
        _t.push_back(rt.register_data(t + std::size_t(j) * nb * ldt, sizeof(T) * std::size_t(w), w,
                                      sizeof(T) * std::size_t(ldt)));
        rt.place_on_device(_t.back(), t_block(j), sizeof(T) * std::size_t(_lddt));
      }
    }
    if (_full_t) register_st(st, ldst);
    _checked = rt.register_key(reinterpret_cast<std::uintptr_t>(this));
  }

  // Waits for every task (also when insertion or the run failed), then drops the device copies.
  ~blocked_qr() {
    try {
      _rt.wait_all();
    } catch (...) {  // already reported, or the exception in flight is the one that matters
    }
    if constexpr (mixed) {
      for (const auto* list : {&_col_home, &_t_home, &_st_rows_home, &_t_cols_home})
        for (const mirror& h : *list) _rt.release_device(h.host);
    } else if (!_on_device) {
      for (int j = 0; j < _nt; ++j) {
        _rt.release_device(_col[j]);
        _rt.release_device(_t[j]);
      }
      for (handle h : _st_rows) _rt.release_device(h);
      for (handle h : _t_cols) _rt.release_device(h);
    }
  }

  // Every column block checked for NaN and Inf on the GPU, then judged on the CPUs. A host matrix
  // is checked as it arrives (a pass over host memory on the CPUs took seconds at n = 32768) and no
  // column block goes home before every check passed, so the message can name the first bad entry
  // from the untouched host copy. A device matrix is factored in place, so its checks must all
  // pass before any task writes to it: wait_for_checks() is then called before the panels.
  void check_finite(const H* a, int lda) {
    for (int j = 0; j < _nt; ++j) {
      if constexpr (mixed) convert(_col_home[j], true);  // the host block in, as T
      unsigned* count = _counts.get<unsigned>() + j;
      const handle verdict = _rt.register_key(reinterpret_cast<std::uintptr_t>(count));
      _rt.task([=, this](task_context& ctx) {
           kernels::gpu_count_non_finite(_m, width(j), column(j), _ldda, count, stream_of(ctx));
         })
          .on(device::gpu)
          .read(_col[j])
          .write(verdict)
          .label("gpu_check")
          .color(detail::color_copy)
          .submit();
      const H* host = _on_device ? nullptr : a + std::size_t(j) * _nb * lda;
      detail::submit_verdict(_rt, func, count, _m, width(j), host, lda, j * _nb, verdict, _checked);
    }
  }

  void panel(int k) {
    const int rows = _m - k * _nb, w = width(k), ib = std::min(_ib, w);
    T* a = column(k) + std::size_t(k) * _nb;
    T* tk = t_block(k);
    detail::panel_task(_rt, rows, w, ib, a, _ldda, tk, _lddt).on(device::gpu).read_write(_col[k]).write(_t[k]).submit();
  }

  // Q_k^T applied to column blocks [j0, j1), rows k*nb.. : one task inheriting each block's hazards.
  void update(int k, int j0, int j1, int priority) {
    const int rows = _m - k * _nb, w = width(k), cols = std::min(_n, j1 * _nb) - j0 * _nb;
    const T* v = column(k) + std::size_t(k) * _nb;
    const T* tk = t_block(k);
    T* c = column(j0) + std::size_t(k) * _nb;
    const int ldda = _ldda, lddt = _lddt;
    const std::size_t lwork = kernels::gpu_larfb_workspace_size(rows, cols, w);
    auto b = _rt.task([=](task_context& ctx) {
      kernels::gpu_larfb(rows, cols, w, v, ldda, tk, lddt, c, ldda, static_cast<T*>(ctx.scratch(0)), lwork,
                         blas_of(ctx));
    });
    b.on(device::gpu).read(_col[k]).read(_t[k]);
    for (int j = j0; j < j1; ++j) b.read_write(_col[j]);
    b.scratch(sizeof(T) * lwork).priority(priority).label("gpu_larfb").color(detail::color_tsmqr).submit();
  }

  // Step k of the full T and S (Algorithm 1) beside the trailing update: it reads only panel k's
  // V and T_k, writes T's block column k and S's row blocks k.. (every row block's first
  // touch, at step 0, is a write: nothing travels to the device for it).
  void full_t(int k) {
    if (!_full_t) return;
    const int w = width(k), r0 = k * _nb, m = _m, ldda = _ldda, lddt = _lddt, lddst = _lddst;
    const T* a = _da;
    const T* tk = t_block(k);
    T* st = _dst;
    const std::size_t lwork = kernels::gpu_full_t_step_workspace_size(m, r0, w);
    auto b = _rt.task([=](task_context& ctx) {
      kernels::gpu_full_t_step(m, r0, w, a, ldda, tk, lddt, st, lddst, static_cast<T*>(ctx.scratch(0)), lwork,
                               blas_of(ctx));
    });
    b.on(device::gpu).read(_col[k]).read(_t[k]);
    if (k > 0) b.write(_t_cols[k - 1]);
    for (int i = k; i < _mt; ++i)
      if (k == 0) b.write(_st_rows[i]);
      else b.read_write(_st_rows[i]);
    b.scratch(sizeof(T) * std::max<std::size_t>(lwork, 1)).priority(bulk_priority).label("gpu_full_t_step")
        .color(detail::color_tsmqr).submit();
  }

  // Column block k and T_k are final: home while the factorization goes on, once A is known finite;
  // with the full T, T's block column k and S's row block k too (the last step: every row block
  // left).
  void fetch(int k) {
    if (_on_device) return;
    if constexpr (mixed) {  // rounded to H on the device, then home
      std::vector<const mirror*> final_now{&_col_home[k], &_t_home[k]};
      if (_full_t) {
        if (k > 0) final_now.push_back(&_t_cols_home[k - 1]);
        for (int i = k; i < (k + 1 == _nt ? _mt : k + 1); ++i) final_now.push_back(&_st_rows_home[i]);
      }
      for (const mirror* h : final_now) {
        convert(*h, false);
        _rt.task([] {}).read(h->host).read(_checked).label("fetch").color(detail::color_copy).submit();
      }
      return;
    }
    std::vector<handle> final_now{_col[k], _t[k]};
    if (_full_t) {
      if (k > 0) final_now.push_back(_t_cols[k - 1]);
      for (int i = k; i < (k + 1 == _nt ? _mt : k + 1); ++i) final_now.push_back(_st_rows[i]);
    }
    for (handle h : final_now)
      _rt.task([] {}).read(h).read(_checked).label("fetch").color(detail::color_copy).submit();
  }

  int tiles() const { return _nt; }

 private:
  int width(int j) const { return std::min(_nb, _n - j * _nb); }
  T* column(int j) const { return _da + std::size_t(j) * _nb * _ldda; }
  T* t_block(int j) const { return _dt + std::size_t(j) * _nb * _lddt; }

  // A host block in H (handle host; rows x cols), its device copy in H (stage, ld_stage), and the
  // block of the device matrix in T that it becomes (handle device; dev, ld_dev).
  struct mirror {
    handle host, device;
    H* stage;
    int ld_stage, rows, cols;
    T* dev;
    int ld_dev;
  };
  mirror mirror_of(handle device, H* host, int ld, H* stage, int ld_stage, int rows, int cols, T* dev, int ld_dev) {
    const handle h = _rt.register_data(host, sizeof(H) * std::size_t(rows), std::size_t(cols), sizeof(H) * std::size_t(ld));
    _rt.place_on_device(h, stage, sizeof(H) * std::size_t(ld_stage));
    return {h, device, stage, ld_stage, rows, cols, dev, ld_dev};
  }
  // in: the host block's device copy rounded up to T; else T's block rounded to H in that copy.
  void convert(const mirror& x, bool in) {
    auto b = in ? _rt.task([x](task_context& ctx) {
      kernels::gpu_convert(x.rows, x.cols, x.stage, x.ld_stage, x.dev, x.ld_dev, stream_of(ctx));
    })
                : _rt.task([x](task_context& ctx) {
                    kernels::gpu_convert(x.rows, x.cols, x.dev, x.ld_dev, x.stage, x.ld_stage, stream_of(ctx));
                  });
    b.on(device::gpu);
    if (in) b.read(x.host).write(x.device).priority(panel_priority);
    else b.read(x.device).write(x.host);
    b.label(in ? "convert in" : "convert out").color(detail::color_copy).submit();
  }

  // ST's handles, which cover it without overlap: row block i (rows i*nb.., columns up to the end
  // of its diagonal block), final after step i; T's block column j above its diagonal block (rows
  // 0..j*nb), final after step j (j >= 1).
  void register_st(H* st, int ldst) {
    const auto handle_of = [&](int r0, int rows, int c0, int cols) {
      const std::size_t run = sizeof(T) * std::size_t(rows), pitch_dev = sizeof(T) * std::size_t(_lddst);
      T* dev = _dst + r0 + std::size_t(c0) * _lddst;
      if (_on_device) return _rt.register_device_data(dev, run, std::size_t(cols), pitch_dev);
      if constexpr (mixed) {
        const handle d = _rt.register_device_data(dev, run, std::size_t(cols), pitch_dev);
        (c0 == 0 ? _st_rows_home : _t_cols_home)
            .push_back(mirror_of(d, st + r0 + std::size_t(c0) * ldst, ldst, _st_stage.get<H>() + r0 + std::size_t(c0) * _m,
                                 _m, rows, cols, dev, _lddst));
        return d;
      }
      const handle h = _rt.register_data(st + r0 + std::size_t(c0) * ldst, run, std::size_t(cols),
                                         sizeof(T) * std::size_t(ldst));
      _rt.place_on_device(h, dev, pitch_dev);
      return h;
    };
    for (int i = 0; i < _mt; ++i) {
      const int r0 = i * _nb;
      _st_rows.push_back(handle_of(r0, std::min(_nb, _m - r0), 0, std::min(_n, r0 + _nb)));
    }
    for (int j = 1; j < _nt; ++j) _t_cols.push_back(handle_of(0, j * _nb, j * _nb, width(j)));
  }

  runtime& _rt;
  int _m, _n, _nb, _ib, _nt, _mt;
  bool _on_device, _full_t;
  device_buffer _a_dev, _t_dev, _st_dev;  // the device copies of a host matrix
  device_buffer _a_stage, _t_stage, _st_stage;  // two precisions: the host blocks' copies in H
  T* _da = nullptr;   // m x n, leading dimension _ldda
  T* _dt = nullptr;   // nb x n, leading dimension _lddt
  T* _dst = nullptr;  // m x n, leading dimension _lddst (with the full T)
  int _ldda = 0, _lddt = 0, _lddst = 0;
  pinned_buffer _counts;  // non-finite entries per column block
  std::vector<handle> _col, _t, _st_rows, _t_cols;
  std::vector<mirror> _col_home, _t_home, _st_rows_home, _t_cols_home;  // two precisions: the host blocks
  handle _checked;
};

}  // namespace

template <class T>
void blocked_qr_gpu(runtime& rt, int m, int n, T* a, int lda, T* t, int ldt, const blocked_options& options) {
  blocked_qr_gpu<T>(rt, m, n, a, lda, t, ldt, nullptr, std::max(1, m), options);
}

namespace {

// The factorization computed in T of a matrix held in H (blocked_qr's two precisions).
template <class T, class H>
void factor_blocked(runtime& rt, int m, int n, H* a, int lda, H* t, int ldt, H* st, int ldst, const blocked_options& options) {
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
  detail::require_at_least(func, "bulk_columns", options.bulk_columns, -1);
  detail::require_at_least(func, "chunked_steps", options.chunked_steps, -1);
  detail::require_at_least(func, "lda", lda, std::max(1, m), "max(1, m)");
  detail::require_at_least(func, "ldt", ldt, std::max(1, std::min(nb, n)), "max(1, min(nb, n))");
  detail::require_at_least(func, "ldst", ldst, std::max(1, m), "max(1, m)");
  if (n == 0) return;
  if (!a) detail::invalid(func, "A is null");
  if (!t) detail::invalid(func, "T is null");

  blocked_qr<T, H> qr(rt, m, n, a, lda, t, ldt, st, ldst, std::min(nb, n), options.ib, options.device_matrix);
  const int nt = qr.tiles(), ahead = lookahead_of(n, options);
  qr.check_finite(a, lda);
  if (options.device_matrix) rt.wait_all();  // in place: nothing is written before A is known finite
  for (int k = 0; k < nt; ++k) {
    qr.panel(k);
    qr.full_t(k);
    qr.fetch(k);
    // Lookahead: the next panel's column first, then the next ahead - 1, on the urgent stream;
    // then the rest in bulk.
    for (int j = k + 1; j < std::min(nt, k + 1 + ahead); ++j)
      qr.update(k, j, j + 1, j == k + 1 ? panel_priority : ahead_priority);
    const int width = bulk_width(n, k, nt, options);
    for (int j = k + 1 + ahead; j < nt; j += width) qr.update(k, j, std::min(nt, j + width), bulk_priority);
  }
  rt.wait_all();  // errors surface here; the device memory goes after
}

}  // namespace

template <class T>
void blocked_qr_gpu(runtime& rt, int m, int n, T* a, int lda, T* t, int ldt, T* st, int ldst,
                    const blocked_options& options) {
  factor_blocked<T, T>(rt, m, n, a, lda, t, ldt, st, ldst, options);
}

namespace detail {

void blocked_qr_gpu_host_in_double(runtime& rt, int m, int n, float* a, int lda, float* t, int ldt, float* st,
                                   int ldst, const blocked_options& options) {
  if (options.device_matrix) invalid(func, "blocked_qr_gpu_host_in_double takes a host matrix");
  factor_blocked<double, float>(rt, m, n, a, lda, t, ldt, st, ldst, options);
}

}  // namespace detail

#else  // built without CUDA

namespace detail {
void blocked_qr_gpu_host_in_double(runtime&, int, int, float*, int, float*, int, float*, int, const blocked_options&) {
  throw std::invalid_argument("tessera::qr::blocked_qr_gpu: Tessera was built without CUDA");
}
}  // namespace detail

template <class T>
void blocked_qr_gpu(runtime&, int, int, T*, int, T*, int, const blocked_options&) {
  throw std::invalid_argument("tessera::qr::blocked_qr_gpu: Tessera was built without CUDA");
}
template <class T>
void blocked_qr_gpu(runtime&, int, int, T*, int, T*, int, T*, int, const blocked_options&) {
  throw std::invalid_argument("tessera::qr::blocked_qr_gpu: Tessera was built without CUDA");
}

#endif

template void blocked_qr_gpu<float>(runtime&, int, int, float*, int, float*, int, const blocked_options&);
template void blocked_qr_gpu<double>(runtime&, int, int, double*, int, double*, int, const blocked_options&);
template void blocked_qr_gpu<float>(runtime&, int, int, float*, int, float*, int, float*, int,
                                    const blocked_options&);
template void blocked_qr_gpu<double>(runtime&, int, int, double*, int, double*, int, double*, int,
                                     const blocked_options&);

}  // namespace tessera::qr
