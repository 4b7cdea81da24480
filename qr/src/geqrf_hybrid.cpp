#include "tessera/qr/geqrf_hybrid.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "detail.hpp"
#include "geqrf_tasks.hpp"
#include "tessera/qr/blas_threads.hpp"

#if TESSERA_QR_CUDA
#include <cuda_runtime.h>

#include "tessera/kernels_gpu.hpp"
#include "tessera/sched/memory.hpp"
#include "tessera/sched/cuda.hpp"
#endif

namespace tessera::qr {

int default_gpu_tile_size(int n) noexcept { return n >= 32768 ? 384 : n >= 8192 ? 256 : 192; }

namespace {
// Step k's GPU columns start here (hybrid_options::lookahead: the CPUs' columns before).
int gpu_split(int k, int nt, int lookahead) { return nt - (k + 1) <= lookahead ? nt : k + 1 + lookahead; }
// Which of `gpus` GPUs holds tile column j at a step whose GPU columns start at split; -1: the CPUs'.
int column_gpu(int j, int split, int nt, unsigned gpus) {
  if (j < split) return -1;
  const int w = nt - split;
  for (int g = 0; g < static_cast<int>(gpus); ++g)
    if (j < split + w * (g + 1) / static_cast<int>(gpus)) return g;
  return static_cast<int>(gpus) - 1;
}
}  // namespace

std::vector<std::uint64_t> hybrid_peer_bytes(int m, int n, int nb, int ib, int lookahead, unsigned gpus,
                                             std::size_t elem) {
  std::vector<std::uint64_t> bytes;
  if (m <= 0 || n <= 0 || nb <= 0 || ib <= 0 || gpus == 0) return bytes;
  const int mt = (m + nb - 1) / nb, nt = (n + nb - 1) / nb, kt = std::min(mt, nt);
  auto rows = [&](int i) { return static_cast<std::uint64_t>(std::min(nb, m - i * nb)); };
  auto cols = [&](int j) { return static_cast<std::uint64_t>(std::min(nb, n - j * nb)); };
  for (int k = 0; k < kt; ++k) {
    std::uint64_t b = 0;
    const int split = gpu_split(k, nt, lookahead);
    if (k > 0) {
      const int before = gpu_split(k - 1, nt, lookahead);
      for (int j = split; j < nt; ++j) {
        const int from = column_gpu(j, before, nt, gpus);
        // Its tiles from row k down were last written on `from` at step k - 1.
        if (from >= 0 && from != column_gpu(j, split, nt, gpus))
          b += (static_cast<std::uint64_t>(m) - static_cast<std::uint64_t>(k) * nb) * cols(j) * elem;
      }
    }
    // The panel's V (its diagonal tile's copy, nb columns, and the tiles below) and T tiles go to
    // every GPU with columns this step: from the host to the first, from it to the others.
    int receivers = 0;
    const int w = nt - split, g_all = static_cast<int>(gpus);
    for (int g = 0; g < g_all; ++g) receivers += w * (g + 1) / g_all > w * g / g_all;  // a range not empty
    if (receivers > 1) {
      std::uint64_t panel = rows(k) * static_cast<std::uint64_t>(nb) + static_cast<std::uint64_t>(ib) * cols(k);
      for (int i = k + 1; i < mt; ++i) panel += rows(i) * cols(k) + static_cast<std::uint64_t>(ib) * cols(k);
      b += static_cast<std::uint64_t>(receivers - 1) * panel * elem;
    }
    bytes.push_back(b);
  }
  return bytes;
}

// The GPU is so much faster than the cores that every tile column they update delays the next
// panel (docs/architecture.md).
int default_lookahead(int) noexcept { return 0; }

#if TESSERA_QR_CUDA

namespace {

// The GPUs' tasks: aggregated updates of the columns right of the CPUs' lookahead. Each GPU
// holds A column-major (ldda) and T with ib rows per tile row (lddt), every tile's handle placed
// at the same offset on each, so a tile row over many tile columns is one GEMM operand. With
// several GPUs, step k's GPU columns are cut into one contiguous range per GPU of equal width,
// moved each step as the CPUs take the leftmost column (the runtime carries a column that
// changes GPU, and the panel to every GPU that reads it).
template <class T>
class gpu_update_tasks {
 public:
  gpu_update_tasks(runtime& rt, qr_factors<T>& f, const detail::tile_qr_tasks<T>& cpu, unsigned gpus)
      : _rt(rt), _f(f), _cpu(cpu), _nb(f.nb()), _ib(f.ib()), _ldda(f.a().m()), _lddt(f.t().m()),
        _gpus(gpus), _bounds(gpus + 1, 0) {
    // Every allocation before any placement: a failure leaves no handle placed in freed memory.
    for (unsigned g = 0; g < gpus; ++g) {
      _a_dev.push_back(rt.allocate_device(sizeof(T) * std::size_t(_ldda) * f.a().n(), g));
      _t_dev.push_back(rt.allocate_device(sizeof(T) * std::size_t(_lddt) * f.a().n(), g));
    }
    const tile_matrix<T>& a = f.a();
    for (unsigned g = 0; g < gpus; ++g)
      for (int j = 0; j < a.nt(); ++j)
        for (int i = 0; i < a.mt(); ++i) {
          rt.place_on_device(f.ha()(i, j), tile_a(g, i, j), sizeof(T) * std::size_t(_ldda), g);
          rt.place_on_device(f.ht()(i, j), tile_t(g, i, j), sizeof(T) * std::size_t(_lddt), g);
        }
  }

  // Waits for every task (also when insertion or the run failed), then drops the device copies of
  // the tiles; the device buffers go after.
  ~gpu_update_tasks() {
    try {
      _rt.wait_all();
    } catch (...) {  // already reported, or the exception in flight is the one that matters
    }
    const tile_matrix<T>& a = _f.a();
    for (int j = 0; j < a.nt(); ++j)
      for (int i = 0; i < a.mt(); ++i) {
        _rt.release_device(_f.ha()(i, j));
        _rt.release_device(_f.ht()(i, j));
      }
  }

  // Step k's GPU columns are [split, nt): GPU g takes [split + w g / G, split + w (g + 1) / G).
  void divide(int split) {
    const int w = _f.a().nt() - split, gpus = static_cast<int>(_gpus);
    for (int g = 0; g <= gpus; ++g) _bounds[g] = split + w * g / gpus;  // as column_gpu
  }

  // Q_k^T of GEQRT(k) applied to tile row k, tile columns [j0, j1) (the top row of Figure 6a).
  void ormqr(int k, int j0, int j1, int priority) {
    for (unsigned g = 0; g < _gpus; ++g)
      if (const int a = std::max(j0, _bounds[g]), b = std::min(j1, _bounds[g + 1]); a < b) ormqr(g, k, a, b, priority);
  }

  // The TSQRT reflectors of tile rows [i0, i1) of step k applied to those rows and tile row k,
  // tile columns [j0, j1): one task per GPU, each inheriting the dependencies of the CPU TSMQRs it
  // replaces.
  void tsmqr(int k, int i0, int i1, int j0, int j1, int priority) {
    for (unsigned g = 0; g < _gpus; ++g)
      if (const int a = std::max(j0, _bounds[g]), b = std::min(j1, _bounds[g + 1]); a < b)
        tsmqr(g, k, i0, i1, a, b, priority);
  }

 private:
  void ormqr(unsigned g, int k, int j0, int j1, int priority) {
    const tile_matrix<T>& a = _f.a();
    const int mk = a.tile_rows(k), kk = std::min(mk, a.tile_cols(k)), n = columns(j0, j1), ib = _ib;
    const handle hv = _cpu.v_handle(k), htk = _f.ht()(k, k);
    T* c = tile_a(g, k, j0);
    const int ldda = _ldda, lddt = _lddt;
    const T* tkk = tile_t(g, k, k);
    const std::size_t lwork = kernels::gpu_ormqr_workspace_size(mk, n, kk);
    auto b = _rt.task([=](task_context& ctx) {
      const T* v = device_ptr<T>(ctx, hv);
      const int ldv = static_cast<int>(ctx.device_pitch(hv) / sizeof(T));
      kernels::gpu_ormqr(mk, n, kk, ib, v, ldv, tkk, lddt, c, ldda, static_cast<T*>(ctx.scratch(0)), lwork,
                         blas_of(ctx));
    });
    b.gpu(g).read(hv).read(htk);
    for (int j = j0; j < j1; ++j) b.read_write(_f.ha()(k, j));
    b.scratch(sizeof(T) * lwork).priority(priority).label("gpu_ormqr").color(0x17becf).submit();
  }

  void tsmqr(unsigned g, int k, int i0, int i1, int j0, int j1, int priority) {
    const tile_matrix<T>& a = _f.a();
    const int nk = a.tile_cols(k), n = columns(j0, j1), count = i1 - i0, m_last = a.tile_rows(i1 - 1);
    const int nb = _nb, ib = _ib, ldda = _ldda, lddt = _lddt;
    T* a1 = tile_a(g, k, j0);
    T* a2 = tile_a(g, i0, j0);
    const T* v = tile_a(g, i0, k);
    const T* tb = tile_t(g, i0, k);
    const std::size_t lwork = kernels::gpu_sssmqr_workspace_size(count, nb, nk, n);
    auto b = _rt.task([=](task_context& ctx) {
      kernels::gpu_sssmqr(count, nb, m_last, n, nk, ib, a1, ldda, a2, ldda, v, ldda, tb, lddt,
                          std::ptrdiff_t(ib), static_cast<T*>(ctx.scratch(0)), lwork, blas_of(ctx));
    });
    b.gpu(g).scratch(sizeof(T) * lwork);
    // Figure 5b: the dependencies of every CPU task replaced, added in a loop.
    for (int i = i0; i < i1; ++i) {
      b.read(_f.ha()(i, k)).read(_f.ht()(i, k));
      for (int j = j0; j < j1; ++j) b.read_write(_f.ha()(k, j)).read_write(_f.ha()(i, j));
    }
    b.priority(priority).label("gpu_sssmqr").color(0x9467bd).submit();
  }

  int columns(int j0, int j1) const { return std::min(_f.a().n(), j1 * _nb) - j0 * _nb; }
  T* tile_a(unsigned g, int i, int j) const {
    return _a_dev[g].template get<T>() + std::size_t(i) * _nb + std::size_t(j) * _nb * std::size_t(_ldda);
  }
  T* tile_t(unsigned g, int i, int j) const {
    return _t_dev[g].template get<T>() + std::size_t(i) * _ib + std::size_t(j) * _nb * std::size_t(_lddt);
  }

  runtime& _rt;
  qr_factors<T>& _f;
  const detail::tile_qr_tasks<T>& _cpu;
  int _nb, _ib, _ldda, _lddt;
  unsigned _gpus;
  std::vector<int> _bounds;  // GPU g's tile columns this step: [_bounds[g], _bounds[g + 1])
  std::vector<device_buffer> _a_dev, _t_dev;
};
}  // namespace

template <class T>
void geqrf_hybrid(runtime& rt, qr_factors<T>& f, const hybrid_options& options) {
  constexpr const char* func = "geqrf_hybrid";
  if (&rt != f.owner()) detail::invalid(func, "the factors were made for another runtime");
  if (!rt.has_gpu()) detail::invalid(func, "the runtime has no GPU (runtime_options::gpu_streams)");
  detail::require_at_least(func, "lookahead", options.lookahead, 0);
  detail::require_at_least(func, "gpu_rows", options.gpu_rows, 1);
  if (options.gpus < 1 || options.gpus > rt.gpus())
    detail::invalid(func, "gpus = " + std::to_string(options.gpus) + " but the runtime has " + std::to_string(rt.gpus()) +
                              " (runtime_options::gpus)");
  const int mt = f.mt(), nt = f.nt(), kt = f.kt(), L = options.lookahead;
  blas_threads single(1);
  detail::tile_qr_tasks<T> cpu(rt, f, true);
  {
    gpu_update_tasks<T> gpu(rt, f, cpu, options.gpus);
    for (int k = 0; k < kt; ++k) {
      // Columns [k+1, split) are the CPUs', [split, nt) the GPU's, until the GPU's part is gone.
      const int split = gpu_split(k, nt, L);
      gpu.divide(split);
      cpu.geqrt(k);
      for (int j = k + 1; j < split; ++j) cpu.ormqr(k, j);
      // The GPU's first column passes to the CPUs at the next step: with split_next, it is updated
      // by tasks of its own, so the next panel does not wait for the whole width.
      // That column's tasks are on the CPUs' path: urgent, ahead of the bulk of the update.
      const int next = options.split_next && split + 1 < nt ? split + 1 : nt;
      const int first = next < nt ? urgent_priority : 1, bulk = 1;
      if (split < nt) {
        gpu.ormqr(k, split, next, first);
        if (next < nt) gpu.ormqr(k, next, nt, bulk);
      }
      for (int i = k + 1, group = k + 1; i < mt; ++i) {
        cpu.tsqrt(k, i);
        for (int j = k + 1; j < split; ++j) cpu.tsmqr(k, i, j);
        if (split < nt && options.row_pipelined) {
          gpu.tsmqr(k, i, i + 1, split, next, first);
          // The bulk in groups of rows: batched GEMMs, at the price of starting a little later.
          if (next < nt && (i + 1 - group == options.gpu_rows || i + 1 == mt)) {
            gpu.tsmqr(k, group, i + 1, next, nt, bulk);
            group = i + 1;
          }
        }
      }
      if (split < nt && !options.row_pipelined && k + 1 < mt) {
        gpu.tsmqr(k, k + 1, mt, split, next, first);
        if (next < nt) gpu.tsmqr(k, k + 1, mt, next, nt, bulk);
      }
      // Tile row k of R is final: bring the GPU's part home while the factorization goes on.
      for (int j = split; j < nt; ++j)
        rt.task([] {}).read(f.ha()(k, j)).label("fetch").color(detail::color_copy).submit();
    }
    rt.wait_all();  // errors surface here; the device matrix goes after
  }
}

#else  // built without CUDA


template <class T>
void geqrf_hybrid(runtime&, qr_factors<T>&, const hybrid_options&) {
  throw std::invalid_argument("tessera::qr::geqrf_hybrid: Tessera was built without CUDA");
}

#endif

template void geqrf_hybrid<float>(runtime&, qr_factors<float>&, const hybrid_options&);
template void geqrf_hybrid<double>(runtime&, qr_factors<double>&, const hybrid_options&);

}  // namespace tessera::qr
