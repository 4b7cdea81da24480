// The front door: argument checks, the choice, the factorization object and its operations for
// both forms and both memories. The algorithms themselves are the expert functions (geqrf,
// geqrf_hybrid, blocked_qr_gpu, unmqr, ungqr, gels_solve_async).
#include "tessera/qr/factorize.hpp"

#include <algorithm>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "blocked_qr_gpu_in_double.hpp"
#include "detail.hpp"
#include "factorize_gpu.hpp"
#include "memory.hpp"
#include "tessera/kernels_cpu/blas.hpp"
#include "tessera/kernels_cpu/core_full_t.hpp"
#include "tessera/kernels_cpu/trsm_upper.hpp"
#include "tessera/qr/blas_threads.hpp"
#include "tessera/qr/blocked_qr_gpu.hpp"
#include "tessera/qr/blocked_qr_multi_gpu.hpp"
#include "tessera/qr/gels.hpp"
#include "tessera/qr/geqrf_hybrid.hpp"
#include "tessera/qr/gpu.hpp"
#include "tessera/qr/layout.hpp"
#include "tessera/qr/unmqr.hpp"
#include "tessera/sched/memory.hpp"

namespace tessera::qr {

namespace detail {
choice choose(int m, int n, const options& o, bool gpu);
}  // namespace detail

template <class T>
struct factorization<T>::state {
  std::unique_ptr<runtime> own;  // first: goes last, after the handles registered on it
  runtime* rt = nullptr;
  struct choice how;
  int m = 0, n = 0;
  memory where = memory::host;
  std::optional<qr_factors<T>> tiles;  // the tile form
  T* a = nullptr;                      // the blocked form: R and V in the caller's A
  int lda = 1;
  pinned_buffer t_host;  // its T, in A's memory
  device_buffer t_device;
  std::vector<T> a_own, t_own;  // the blocked form on the CPUs: A's host copy (a device A), T
  T* t = nullptr;
  int nbe = 1;  // panel width actually used: min(nb, n)
  // With the full T: T above and S below the diagonal, m x n, ld m, in `where`'s memory.
  pinned_buffer st_host;
  device_buffer st_device;
  std::vector<T> st_own;
  T* st = nullptr;
  bool full_t = false;
};

namespace {

// Declared after the storage that inserted tasks use: if an error leaves the scope before the
// tasks were waited for (an insertion or allocation failing part way), it waits for them first,
// so no task outlives the memory it works on.
class wait_on_error {
 public:
  explicit wait_on_error(runtime& rt) : _rt(rt), _pending(std::uncaught_exceptions()) {}
  ~wait_on_error() {
    if (std::uncaught_exceptions() > _pending) try {
        _rt.wait_all();
      } catch (...) {  // the error in flight is the one to report
      }
  }
  wait_on_error(const wait_on_error&) = delete;
  wait_on_error& operator=(const wait_on_error&) = delete;

 private:
  runtime& _rt;
  int _pending;
};

// "<func>: <name>.ld = 3: must be >= max(1, m) (= 10)": the caller's argument named.
template <class T>
void require_matrix(const char* func, const char* name, matrix_ref<T> x) {
  const std::string arg(name);
  detail::require_at_least(func, (arg + ".m").c_str(), x.m, 0);
  detail::require_at_least(func, (arg + ".n").c_str(), x.n, 0);
  detail::require_at_least(func, (arg + ".ld").c_str(), x.ld, std::max(1, x.m), "max(1, m)");
  if (!x.data && x.m > 0 && x.n > 0) detail::invalid(func, arg + " is null");
  if (x.where == memory::device && !gpu_available())
    detail::invalid(func, arg + " is in device memory, but there is no CUDA device (or Tessera was built without CUDA)");
}

template <class T>
void require_rows(const char* func, const char* name, matrix_ref<T> x, int rows, const char* rows_text) {
  require_matrix(func, name, x);
  if (x.m != rows)
    detail::invalid(func, std::string(name) + ".m = " + std::to_string(x.m) + ": must be " + rows_text + " (= " +
                              std::to_string(rows) + ")");
}

}  // namespace

template <class T>
factorization<T>::factorization(std::unique_ptr<state> s) noexcept : _s(std::move(s)) {}
template <class T>
factorization<T>::factorization(factorization&&) noexcept = default;
template <class T>
factorization<T>& factorization<T>::operator=(factorization&&) noexcept = default;
template <class T>
factorization<T>::~factorization() = default;

template <class T>
int factorization<T>::m() const noexcept { return _s->m; }
template <class T>
int factorization<T>::n() const noexcept { return _s->n; }
template <class T>
const choice& factorization<T>::choice() const noexcept { return _s->how; }
template <class T>
bool factorization<T>::blocked() const noexcept { return _s->how.algo == algorithm::blocked; }
template <class T>
memory factorization<T>::where() const noexcept { return _s->where; }
template <class T>
const qr_factors<T>* factorization<T>::tiles() const noexcept { return _s->tiles ? &*_s->tiles : nullptr; }
template <class T>
const T* factorization<T>::geqrt_a() const noexcept { return _s->a; }
template <class T>
int factorization<T>::geqrt_lda() const noexcept { return _s->lda; }
template <class T>
const T* factorization<T>::geqrt_t() const noexcept { return _s->t; }
template <class T>
const T* factorization<T>::geqrt_st() const noexcept { return _s->st; }
template <class T>
bool factorization<T>::full_t() const noexcept { return _s->full_t; }
template <class T>
runtime& factorization<T>::owner() const noexcept { return *_s->rt; }

template <class T>
void factorization<T>::apply_q(trans op, matrix_ref<T> c) {
  constexpr const char* func = "factorization::apply_q";
  state& s = *_s;
  require_rows(func, "C", c, s.m, "m");
  const int k = std::min(s.m, s.n);
  if (c.n == 0 || k == 0) return;
  if (s.tiles) {
    detail::staged<T> h(*s.rt, c, memory::host, true);
    const wait_on_error drain(*s.rt);
    unmqr(*s.rt, op, *s.tiles, c.n, h.view().data, h.view().ld);
    h.finish();
  } else if (s.st && s.where == memory::host) {  // one step with the full T: LAPACK LARFB with all n reflectors
    detail::staged<T> h(*s.rt, c, memory::host, true);
    std::vector<T> work(std::size_t(k) * std::size_t(c.n));
    const int info = blas::larfb('L', op == trans::trans ? 'T' : 'N', s.m, c.n, k, s.a, s.lda, s.st, s.m,
                                 h.view().data, h.view().ld, work.data(), c.n);
    if (info != 0) detail::invalid(func, "LAPACK LARFB rejected argument " + std::to_string(-info));
    h.finish();
  } else if (s.st) {
    detail::staged<T> d(*s.rt, c, memory::device, true);
    const wait_on_error drain(*s.rt);
    detail::apply_q_full_t_device(*s.rt, op, s.m, k, s.a, s.lda, s.st, s.m, d.view());
    d.finish();
  } else if (s.where == memory::host) {
    detail::staged<T> h(*s.rt, c, memory::host, true);
    const wait_on_error drain(*s.rt);
    std::vector<T> work(std::size_t(s.nbe) * std::size_t(c.n));
    const int info = blas::gemqrt('L', op == trans::trans ? 'T' : 'N', s.m, c.n, k, s.nbe, s.a, s.lda, s.t, s.nbe,
                                  h.view().data, h.view().ld, work.data());
    if (info != 0) detail::invalid(func, "LAPACK GEMQRT rejected argument " + std::to_string(-info));
    h.finish();
  } else {
    detail::staged<T> d(*s.rt, c, memory::device, true);
    const wait_on_error drain(*s.rt);
    detail::apply_q_device(*s.rt, op, s.m, k, s.nbe, s.a, s.lda, s.t, s.nbe, d.view());
    d.finish();
  }
}

template <class T>
void factorization<T>::form_q(q_shape shape, matrix_ref<T> q) {
  constexpr const char* func = "factorization::form_q";
  const int cols = shape == q_shape::full ? _s->m : std::min(_s->m, _s->n);
  require_rows(func, "Q", q, _s->m, "m");
  if (q.n != cols)
    detail::invalid(func, std::string("Q.n = ") + std::to_string(q.n) + ": must be " +
                              (shape == q_shape::full ? "m" : "min(m, n)") + " (= " + std::to_string(cols) + ")");
  if (_s->tiles && q.where == memory::host) {
    ungqr(*_s->rt, *_s->tiles, shape, q.data, q.ld);  // skips the tiles known to stay zero
    return;
  }
  detail::set_identity(q);
  apply_q(trans::no_trans, q);
}

template <class T>
void factorization<T>::copy_r(matrix_ref<T> r) {
  constexpr const char* func = "factorization::copy_r";
  state& s = *_s;
  const int k = std::min(s.m, s.n);
  require_rows(func, "R", r, k, "min(m, n)");
  if (r.n != s.n)
    detail::invalid(func, "R.n = " + std::to_string(r.n) + ": must be n (= " + std::to_string(s.n) + ")");
  if (k == 0 || s.n == 0) return;
  if (s.tiles) {
    detail::staged<T> h(*s.rt, r, memory::host, false);
    const matrix_ref<T> v = h.view();
    for (int c = 0; c < s.n; ++c)
      for (int i = 0; i < k; ++i) v.data[i + std::size_t(c) * v.ld] = i <= c ? (*s.tiles).a()(i, c) : T(0);
    h.finish();
  } else {
    detail::copy_matrix(k, s.n, s.a, s.lda, s.where, r.data, r.ld, r.where);
    detail::zero_below_diagonal(r);
  }
}

namespace {

template <class T>
void require_full_t(const char* func, const typename factorization<T>::state& s) {
  if (!s.full_t) detail::invalid(func, "the factorization has no full T: factor with options::full_t = true");
}

}  // namespace

template <class T>
void factorization<T>::copy_t(matrix_ref<T> t) {
  constexpr const char* func = "factorization::copy_t";
  state& s = *_s;
  require_full_t<T>(func, s);
  require_rows(func, "T", t, s.n, "n");
  if (t.n != s.n) detail::invalid(func, "T.n = " + std::to_string(t.n) + ": must be n (= " + std::to_string(s.n) + ")");
  if (s.n == 0) return;
  detail::copy_matrix(s.n, s.n, s.st, s.m, s.where, t.data, t.ld, t.where);
  detail::zero_below_diagonal(t);
}

template <class T>
void factorization<T>::copy_s(matrix_ref<T> out) {
  constexpr const char* func = "factorization::copy_s";
  state& s = *_s;
  require_full_t<T>(func, s);
  require_rows(func, "S", out, s.m, "m");
  if (out.n != s.n)
    detail::invalid(func, "S.n = " + std::to_string(out.n) + ": must be n (= " + std::to_string(s.n) + ")");
  if (s.n == 0) return;
  detail::copy_matrix(s.m, s.n, s.st, s.m, s.where, out.data, out.ld, out.where);
  detail::zero_above_diagonal(out);
}

template <class T>
void factorization<T>::form_q_block(int r0, int c0, matrix_ref<T> qb) {
  constexpr const char* func = "factorization::form_q_block";
  state& s = *_s;
  require_full_t<T>(func, s);
  require_matrix(func, "Qb", qb);
  detail::require_at_least(func, "r0", r0, 0);
  detail::require_at_least(func, "c0", c0, 0);
  detail::require_at_most(func, "r0 + Qb.m", static_cast<long long>(r0) + qb.m, s.m, "m");
  detail::require_at_most(func, "c0 + Qb.n", static_cast<long long>(c0) + qb.n, s.m, "m");
  if (qb.m == 0 || qb.n == 0) return;
  detail::staged<T> y(*s.rt, qb, s.where, false);
  const matrix_ref<T> v = y.view();
  if (s.where == memory::host) {
    std::vector<T> work(kernels::core_q_block_workspace_size(s.n, r0, qb.m, c0, qb.n, 0));
    kernels::core_q_block(s.m, s.n, r0, qb.m, c0, qb.n, s.a, s.lda, s.st, s.m, v.data, v.ld, work.data());
  } else {
    const wait_on_error drain(*s.rt);
    detail::q_block_device(*s.rt, s.m, s.n, r0, c0, s.a, s.lda, s.st, s.m, v);
  }
  y.finish();
}

template <class T>
void factorization<T>::apply_q_block(trans op, int r0, int c0, int rows, int cols, matrix_ref<const T> x,
                                     matrix_ref<T> y) {
  constexpr const char* func = "factorization::apply_q_block";
  state& s = *_s;
  require_full_t<T>(func, s);
  detail::require_at_least(func, "r0", r0, 0);
  detail::require_at_least(func, "c0", c0, 0);
  detail::require_at_least(func, "rows", rows, 0);
  detail::require_at_least(func, "cols", cols, 0);
  detail::require_at_most(func, "r0 + rows", static_cast<long long>(r0) + rows, s.m, "m");
  detail::require_at_most(func, "c0 + cols", static_cast<long long>(c0) + cols, s.m, "m");
  const bool t = op == trans::trans;
  require_rows(func, "X", x, t ? rows : cols, t ? "rows" : "cols");
  require_rows(func, "Y", y, t ? cols : rows, t ? "cols" : "rows");
  if (y.n != x.n) detail::invalid(func, "Y.n = " + std::to_string(y.n) + ": must be X.n (= " + std::to_string(x.n) + ")");
  if (y.m == 0 || y.n == 0) return;
  if (x.where == memory::host && x.m > 0) detail::require_finite_block("X", x.m, x.n, x.data, x.ld);
  detail::staged<T> in(*s.rt, x, s.where);
  detail::staged<T> out(*s.rt, y, s.where, false);
  const matrix_ref<const T> xv = in.view();
  const matrix_ref<T> yv = out.view();
  if (s.where == memory::host) {
    std::vector<T> work(kernels::core_q_block_workspace_size(s.n, r0, rows, c0, cols, x.n));
    kernels::core_apply_q_block(t ? 'T' : 'N', s.m, s.n, r0, rows, c0, cols, x.n, s.a, s.lda, s.st, s.m, xv.data,
                                xv.ld, yv.data, yv.ld, work.data());
  } else {
    const wait_on_error drain(*s.rt);
    detail::apply_q_block_device(*s.rt, op, s.m, s.n, r0, c0, rows, cols, s.a, s.lda, s.st, s.m, xv, yv);
  }
  out.finish();
}

template <class T>
void factorization<T>::solve(matrix_ref<T> b) {
  constexpr const char* func = "factorization::solve";
  state& s = *_s;
  require_rows(func, "B", b, s.m, "m");
  if (s.m < s.n)
    detail::invalid(func, "m = " + std::to_string(s.m) + " < n = " + std::to_string(s.n) +
                              ": least squares needs m >= n (full column rank)");
  if (b.n == 0 || s.n == 0) return;
  if (s.tiles) {
    detail::staged<T> h(*s.rt, b, memory::host, true);
    const wait_on_error drain(*s.rt);
    tile_matrix<T> bt(s.m, b.n, s.tiles->nb());
    const tile_handles hb = register_tiles(*s.rt, bt);
    blas_threads single(1);
    to_tiles_async(*s.rt, h.view().data, h.view().ld, bt, hb, "B");
    gels_solve_async(*s.rt, *s.tiles, bt, hb);
    s.rt->wait_all();  // errors (a zero on R's diagonal) surface before b is touched
    to_lapack_async(*s.rt, bt, hb, h.view().data, h.view().ld);
    s.rt->wait_all();
    h.finish();
    return;
  }
  // R's diagonal first: a zero means no unique solution, and b stays as it was.
  std::vector<T> diagonal(std::size_t(s.n));
  detail::copy_matrix(1, s.n, s.a, s.lda + 1, s.where, diagonal.data(), 1, memory::host);
  for (int i = 0; i < s.n; ++i)
    if (diagonal[i] == T(0))
      throw std::runtime_error("tessera::qr::factorization::solve: R(" + std::to_string(i) + ", " + std::to_string(i) +
                               ") = 0: A is rank deficient, no unique least squares solution");
  const memory where = s.where;
  detail::staged<T> w(*s.rt, b, where, true);
  const wait_on_error drain(*s.rt);
  apply_q(trans::trans, w.view());
  if (where == memory::host) {
    kernels::trsm_upper(s.n, b.n, s.a, s.lda, w.view().data, w.view().ld);
  } else if (kernels::has_tiny_diagonal(s.n, diagonal.data(), 1)) {
    // cuBLAS's TRSM multiplies by reciprocals of the diagonal too (Inf below 1 / the largest
    // number, where the solution is finite): this rare case is solved on the host.
    require_available("tessera::qr::factorization::solve", memory::host,
                      sizeof(T) * (std::size_t(s.n) * s.n + std::size_t(s.n) * b.n),
                      "R and B on the host (a pivot of R below the safe minimum)");
    s.rt->wait_all();
    std::vector<T> r(std::size_t(s.n) * s.n), x(std::size_t(s.n) * b.n);
    detail::copy_matrix(s.n, s.n, s.a, s.lda, where, r.data(), s.n, memory::host);
    detail::copy_matrix(s.n, b.n, w.view().data, w.view().ld, where, x.data(), s.n, memory::host);
    kernels::trsm_upper(s.n, b.n, r.data(), s.n, x.data(), s.n);
    detail::copy_matrix(s.n, b.n, x.data(), s.n, memory::host, w.view().data, w.view().ld, where);
  } else {
    detail::trsm_device(*s.rt, s.n, b.n, s.a, s.lda, w.view());
  }
  w.finish();
}

template <class T>
factorization<T> factorize(runtime& rt, matrix_ref<T> a, const options& o) {
  constexpr const char* func = "factorize";
  require_matrix(func, "A", a);
  auto s = std::make_unique<typename factorization<T>::state>();
  s->rt = &rt;
  s->how = detail::choose(a.m, a.n, o, rt.has_gpu());
  s->m = a.m;
  s->n = a.n;
  s->full_t = s->how.full_t;
  const choice& c = s->how;
  if (a.m == 0 || a.n == 0) {  // nothing to factor: Q = I, R empty
    s->where = a.where;
    s->how.algo = algorithm::blocked;
    s->a = a.data;
    s->lda = a.ld;
    return factorization<T>(std::move(s));
  }
  const std::size_t elem = sizeof(T), mn = std::size_t(a.m) * std::size_t(a.n);
  const std::string matrix = std::to_string(a.m) + " x " + std::to_string(a.n) + " matrix";
  // Tiles of A and T (ib rows per tile row).
  const std::size_t tiles = elem * (mn + mn / std::size_t(c.nb) * std::size_t(c.ib) + std::size_t(c.nb) * a.n);
  if (c.algo == algorithm::tile && c.on == target::cpu && a.where == memory::host &&
      available_bytes(memory::host) < tiles) {
    // A safer path, not a refusal: the tiles would not fit beside A, A itself does.
    s->how.algo = algorithm::blocked;
    s->how.nb = s->how.ib = o.nb > 0 ? o.nb : 32;
    s->how.reason += "; the tiles would not fit in host memory beside A: LAPACK's blocked QR in A's memory instead";
  }
  if (c.algo == algorithm::blocked && c.on == target::cpu) {  // LAPACK xGEQRT in place
    const int k = std::min(a.m, a.n);
    s->nbe = std::min(c.nb, k);
    const std::size_t t_elems = std::size_t(s->nbe) * std::size_t(k);
    require_available("tessera::qr::factorize", memory::host,
                      elem * (t_elems + std::size_t(s->nbe) * a.n + (a.where == memory::device ? mn : 0) +
                              (c.full_t ? mn + 2 * std::size_t(s->nbe) * a.n : 0)),
                      (c.full_t ? "T, the full T and S and the workspace of the " : "T and the workspace of the ") +
                          matrix);
    s->where = memory::host;
    if (a.where == memory::device) {  // factored in a host copy: the device matrix stays as it was
      s->a_own.resize(mn);
      detail::copy_matrix(a.m, a.n, a.data, a.ld, a.where, s->a_own.data(), a.m, memory::host);
      s->a = s->a_own.data();
      s->lda = a.m;
    } else {
      s->a = a.data;
      s->lda = a.ld;
    }
    detail::require_finite_block("A", a.m, a.n, s->a, s->lda);
    s->t_own.assign(t_elems, T(0));
    s->t = s->t_own.data();
    std::vector<T> work(std::size_t(s->nbe) * std::size_t(a.n));
    const int info = blas::geqrt(a.m, a.n, s->nbe, s->a, s->lda, s->t, s->nbe, work.data());
    if (info != 0) detail::invalid(func, "LAPACK GEQRT rejected argument " + std::to_string(-info));
    if (c.full_t) {  // Algorithm 1's steps after the panels: the same flops as interleaved, on multithreaded BLAS
      s->st_own.assign(mn, T(0));
      s->st = s->st_own.data();
      work.resize(kernels::core_full_t_step_workspace_size(a.n, s->nbe));
      kernels::core_full_t(a.m, a.n, s->nbe, s->a, s->lda, s->t, s->nbe, s->st, a.m, work.data());
    }
    return factorization<T>(std::move(s));
  }
  if (c.algo == algorithm::tile) {
    // And the host copy of a device A.
    require_available("tessera::qr::factorize", memory::host, tiles + (a.where == memory::device ? elem * mn : 0),
                      "the tiles of the " + matrix);
    if (c.on == target::hybrid) require_available("tessera::qr::factorize", memory::device, tiles, "the tiles of the " + matrix);
    s->where = memory::host;
    s->tiles.emplace(rt, a.m, a.n, c.nb, c.ib, c.on == target::hybrid ? pinned_allocator() : tile_allocator{});
    qr_factors<T>& f = *s->tiles;
    detail::staged<T> h(rt, a, memory::host, true);  // a device matrix passes through the host
    const wait_on_error drain(rt);
    blas_threads single(1);
    to_tiles_async(rt, h.view().data, h.view().ld, f.a(), f.ha(), "A");
    if (c.on == target::cpu) {
      geqrf_async(rt, f);
      rt.wait_all();
    } else {
      hybrid_options ho;
      ho.lookahead = c.lookahead;
      ho.gpu_rows = c.gpu_rows;
      ho.gpus = c.gpus;
      if (rt.gpus() < c.gpus)
        detail::invalid("factorize", "gpus = " + std::to_string(c.gpus) + " but the runtime has " + std::to_string(rt.gpus()) +
                                     " (runtime_options_for sets runtime_options::gpus)");
      geqrf_hybrid(rt, f, ho);
    }
    return factorization<T>(std::move(s));
  }
  s->where = a.where;
  s->a = a.data;
  s->lda = a.ld;
  s->nbe = std::min(c.nb, a.n);
  const std::size_t t_bytes = elem * std::size_t(s->nbe) * std::size_t(a.n);
  // The panel's and the updates' workspace: about m x 2 nb per stream; the full T's steps: 2 n x nb.
  const std::size_t work = elem * std::size_t(a.m) * std::size_t(2 * s->nbe) * 4 +
                           (c.full_t ? elem * 2 * std::size_t(a.n) * std::size_t(s->nbe) * 4 : 0);
  const std::size_t st_bytes = c.full_t ? elem * mn : 0;  // T and S, m x n
  require_available("tessera::qr::factorize", a.where, t_bytes + st_bytes,
                    (c.full_t ? "T and the full T and S of the " : "T of the ") + matrix);
  require_available("tessera::qr::factorize", memory::device,
                    (a.where == memory::host ? elem * mn + st_bytes : 0) + t_bytes + work,
                    "the " + matrix + " on the device, T" + (c.full_t ? ", the full T and S" : "") + " and the workspace");
  if constexpr (std::is_same_v<T, float>) {
    if (c.gpus <= 1 && o.single_in_double != 0 && (o.single_in_double == 1 || detail::double_outruns_single(rt))) {
      // A, T (and T and S) in double beside the float ones (a device matrix's, or the host
      // blocks' device copies), and the double QR's workspace.
      const bool host = a.where == memory::host;
      if (available_bytes(memory::device) >=
          (host ? 0 : t_bytes + st_bytes) + detail::in_double_bytes(a.m, a.n, s->nbe, c.full_t, host) + 2 * work) {
        s->how.in_double = true;
        s->how.reason += "; single precision computed in double (FP64 tensor cores)";
      } else {
        s->how.reason += "; single precision stays in float: its double copies would not fit in device memory";
      }
    }
  }
  if (a.where == memory::host) {
    s->t_host = rt.allocate_pinned(t_bytes);
    s->t = s->t_host.template get<T>();
    if (c.full_t) {
      s->st_host = rt.allocate_pinned(st_bytes);
      s->st = s->st_host.template get<T>();
    }
  } else {
    s->t_device = rt.allocate_device(t_bytes);
    s->t = s->t_device.template get<T>();
    if (c.full_t) {
      s->st_device = rt.allocate_device(st_bytes);
      s->st = s->st_device.template get<T>();
    }
  }
  blocked_options bo;
  bo.nb = s->nbe;
  bo.ib = std::min(c.ib, s->nbe);
  bo.lookahead = c.lookahead;
  bo.bulk_columns = c.bulk_columns;
  bo.chunked_steps = c.chunked_steps;
  bo.device_matrix = a.where == memory::device;
  // The runtime moves a host A block by block: page-locked, those copies overlap the work.
  const detail::host_registration pinned(a.where == memory::host ? a.data : nullptr,
                                         elem * (std::size_t(a.ld) * std::size_t(a.n - 1) + std::size_t(a.m)));
  if (c.gpus > 1) {
    if (rt.gpus() < c.gpus)
      detail::invalid("factorize", "gpus = " + std::to_string(c.gpus) + " but the runtime has " + std::to_string(rt.gpus()) +
                               " (runtime_options_for sets runtime_options::gpus)");
    blocked_qr_multi_gpu(rt, a.m, a.n, a.data, a.ld, s->t, s->nbe, bo);
  } else if (s->how.in_double) {
    if constexpr (std::is_same_v<T, float>) detail::blocked_qr_gpu_in_double(rt, a.m, a.n, a.data, a.ld, s->t, s->nbe, s->st, a.m, bo);
  } else {
    blocked_qr_gpu(rt, a.m, a.n, a.data, a.ld, s->t, s->nbe, s->st, a.m, bo);
  }
  return factorization<T>(std::move(s));
}

template <class T>
factorization<T> factorize(matrix_ref<T> a, const options& o) {
  require_matrix("factorize", "A", a);
  auto rt = std::make_unique<runtime>(runtime_options_for(choose(a.m, a.n, o), o.threads));
  factorization<T> f = factorize(*rt, a, o);
  f._s->own = std::move(rt);
  return f;
}

template class factorization<float>;
template class factorization<double>;
template factorization<float> factorize<float>(runtime&, matrix_ref<float>, const options&);
template factorization<double> factorize<double>(runtime&, matrix_ref<double>, const options&);
template factorization<float> factorize<float>(matrix_ref<float>, const options&);
template factorization<double> factorize<double>(matrix_ref<double>, const options&);

}  // namespace tessera::qr
