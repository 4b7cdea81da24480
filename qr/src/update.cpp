// tessera::qr::updatable (tessera/qr/update.hpp): argument checks, construction, solve and the
// copies; the updates themselves are qr/src/update_*.cpp, on either backend.
#include "tessera/qr/update.hpp"

#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#if TESSERA_QR_CUDA
#include <cuda_runtime.h>

#include "tessera/kernels_gpu/gpu_geqrt.hpp"
#include "tessera/kernels_gpu/gpu_tpqrt.hpp"
#endif

#include "tessera/kernels_cpu/blas_threads.hpp"
#include "tessera/kernels_cpu/check.hpp"
#include "tessera/sched/memory.hpp"
#include "tessera/qr/gpu.hpp"
#include "update_state.hpp"

namespace tessera::qr {

const char* name(q_mode q) noexcept {
  switch (q) {
    case q_mode::none: return "none";
    case q_mode::thin: return "thin";
    case q_mode::full: return "full";
  }
  return "?";
}

namespace {

constexpr const char* who = "tessera::qr::updatable";

#if TESSERA_QR_CUDA
static_assert(detail::rows_form_max == kernels::gpu_tpqrt_chain_max_rows,
              "deleting columns as inserted rows is measured up to the persistent kernel's rows");
#endif

// Whether a rows x 32 panel is one kernel on the GPU, at the sizes it holds in registers unspilled
// (kernels::gpu_geqrt_one_kernel_rows): no in-panel update, no T to assemble, and its reflectors
// go on in one more kernel (gpu_tsmqr_fused, gpu_larfb_fused).
bool one_kernel_panel(target on, int rows, bool single) {
#if TESSERA_QR_CUDA
  return on == target::gpu &&
         rows <= (single ? kernels::gpu_geqrt_one_kernel_rows<float> : kernels::gpu_geqrt_one_kernel_rows<double>);
#else
  (void)on, (void)rows, (void)single;  // no GPU target without CUDA
  return false;
#endif
}

// The width of the block Householder panels: update_options::nb (given) when set, else 64.
// Deleting columns in the band's form (detail::retriangularize_as_rows: more than 512, or up to 32 with Q):
// p >= 200 columns on the GPU uses 128, because on the H100 it measured as fast or up to
// 15% faster at every k and Q mode there while p = 100 was up to 4.5% slower with full Q
// (docs/results/2026-11-24-qr-update-nb-h100.md). delete_p: the p of a column deletion, else 0.
// Deleting columns on the GPU without Q uses 32 where the (32 + p) x 32 panel is one kernel, 7-24%
// faster on the H100 (docs/results/2026-11-24-update-launches-h100.md).
int panel_width(int given, target on, int delete_p = 0, bool q_kept = true, bool single = false) {
  if (given > 0) return given;
  if (delete_p > 0 && !q_kept && one_kernel_panel(on, 32 + delete_p, single)) return 32;
  return on == target::gpu && delete_p >= 200 ? 128 : 64;
}

// Adding p rows on the GPU: 32, the persistent kernel's width (kernels::gpu_tpqrt_chain), where
// it runs with U's rows in `chains` blocks (detail::tp_chains: without Q, blocks of 64, so any p);
// else 32 where the (32 + p) x 32 panel is one kernel, else the default 64
// (docs/results/2026-11-24-insert-rows-fused-h100.md).
int insert_rows_width(int given, target on, int p, bool single, int chains, int otherwise) {
  if (given > 0) return given;
#if TESSERA_QR_CUDA
  if (on == target::gpu && p <= detail::tp_chain_p_max && (single ? kernels::gpu_tpqrt_chain_runs<float>(p, chains)
                                   : kernels::gpu_tpqrt_chain_runs<double>(p, chains)))
    return 32;
#else
  (void)chains;
#endif
  return one_kernel_panel(on, 32 + p, single) ? 32 : otherwise;
}
// insert_rows_width for p rows of an update's state (adding rows, and the forms that go as added
// rows: deleting columns, a rank-k update's band).
template <class St>
int insert_rows_width(const St& st, target on, int p) {
  constexpr bool single = std::is_same_v<typename St::value_type, float>;
  return insert_rows_width(st.nb_given, on, p, single, detail::tp_chains(st, p), st.nb);
}

template <class T>
void require_host(const char* fn, const char* arg, matrix_ref<const T> a) {
  if (a.where != memory::host)
    check::invalid(fn, std::string(arg) + " must be in host memory");
}

template <class T>
void require_shape(const char* fn, const char* arg, matrix_ref<const T> a, int rows, int cols,
                   bool device_ok = false) {
  const std::string r = std::string(arg) + ".rows", c = std::string(arg) + ".cols";
  check::require_eq(fn, r.c_str(), a.m, nullptr, rows);
  check::require_eq(fn, c.c_str(), a.n, nullptr, cols);
  if (rows > 0 && cols > 0) {
    check::require_ptr(fn, arg, a.data);
    const std::string l = std::string(arg) + ".ld";
    check::require_ge(fn, l.c_str(), a.ld, "rows", rows);
    // Device memory: an update checks it with require_finite_on_device; from_factors takes the
    // factors of a GPU factorization as they are.
    if (device_ok && a.where == memory::device) return;
    require_host(fn, arg, a);
    check::require_finite(fn, arg, rows, cols, a.data, a.ld);
  }
}

// An update's input in device memory (accepted where the factorization is on the GPU): its NaN
// and Inf are counted there before anything changes, and the first one is then found on the host
// for the message the host path gives.
template <class T, class Impl>
void require_finite_on_device(const char* fn, const char* arg, matrix_ref<const T> a, Impl& s) {
  if (a.where != memory::device || a.m <= 0 || a.n <= 0) return;
  s.visit([&](auto& st) {
    if constexpr (std::decay_t<decltype(st.be)>::on_gpu) {
      if (st.be.count_non_finite(a.m, a.n, a.data, a.ld) == 0) return;
      std::vector<T> h(std::size_t(a.m) * a.n);
      st.be.download(detail::lane_r, a.m, a.n, a.data, a.ld, h.data(), a.m);
      check::require_finite(fn, arg, a.m, a.n, h.data(), a.m);
      check::invalid(fn, std::string(arg) + " has NaN or Inf entries");  // changed while read
    }
  });
}

}  // namespace

template <class T>
struct updatable<T>::impl {
  std::variant<detail::update_state<detail::host_backend, T>
#if TESSERA_QR_CUDA
               ,
               detail::update_state<detail::gpu_backend, T>
#endif
               >
      st;
  target on = target::cpu;

  template <class F>
  decltype(auto) visit(F&& f) {
    return std::visit(std::forward<F>(f), st);
  }
  template <class F>
  decltype(auto) visit(F&& f) const {
    return std::visit(std::forward<F>(f), const_cast<impl*>(this)->st);
  }
  // visit for the updates: on the CPUs with BLAS single-threaded for the duration
  // (host_backend::split parallelizes; OpenBLAS's own threads, left spinning between calls, took
  // cores from the pieces). The solve's one TRSM keeps OpenBLAS's threads.
  template <class F>
  decltype(auto) run(F&& f) const {
    std::optional<blas::blas_threads> one;
    if (on == target::cpu) one.emplace(1);
    return visit(std::forward<F>(f));
  }
  int n() const { return visit([](auto& s) { return s.n; }); }
  int m() const { return visit([](auto& s) { return s.m; }); }
  int nrhs() const { return visit([](auto& s) { return s.nrhs; }); }
  q_mode mode() const { return visit([](auto& s) { return s.mode; }); }
};

template <class T>
updatable<T>::updatable(std::unique_ptr<impl> s) noexcept : _s(std::move(s)) {}
template <class T>
updatable<T>::updatable(updatable&&) noexcept = default;
template <class T>
updatable<T>& updatable<T>::operator=(updatable&&) noexcept = default;
template <class T>
updatable<T>::~updatable() = default;

template <class T>
updatable<T> updatable<T>::from_factors(matrix_ref<const T> q, matrix_ref<const T> r,
                                        matrix_ref<const T> qtb, int rows,
                                        const update_options& o) {
  constexpr const char* fn = "tessera::qr::updatable::from_factors";
  target on = o.on;
  if (on == target::automatic) on = gpu_available() ? target::gpu : target::cpu;
  if (on != target::cpu && on != target::gpu) check::invalid(fn, "options.on must be cpu or gpu");
#if !TESSERA_QR_CUDA
  if (on == target::gpu) check::invalid(fn, "options.on = gpu: this build has no CUDA");
#else
  if (on == target::gpu && !gpu_available()) check::invalid(fn, "options.on = gpu: no CUDA device");
#endif
  const int m = r.n;
  check::require_ge(fn, "r.cols", m, "1", 1);
  const int n = o.q == q_mode::none ? rows : q.m;
  check::require_ge(fn, "rows", n, "r.cols", m);
  const bool dev_ok = on == target::gpu;
  require_shape(fn, "r", r, m, m, dev_ok);
  const int qc = o.q == q_mode::full ? n : o.q == q_mode::thin ? m : 0;
  if (o.q != q_mode::none) require_shape(fn, "q", q, n, qc, dev_ok);
  const int drows = o.q == q_mode::full ? n : m;
  const int nrhs = qtb.n;
  check::require_ge(fn, "qtb.cols", nrhs, "0", 0);
  if (nrhs > 0) require_shape(fn, "qtb", qtb, o.q == q_mode::full ? n : qtb.m, nrhs, dev_ok);
  if (nrhs > 0 && o.q != q_mode::full) check::require_ge(fn, "qtb.rows", qtb.m, "r.cols", m);
  check::require_ge(fn, "options.nb", o.nb, "0", 0);

  auto s = std::make_unique<impl>();
  s->on = on;
  auto init = [&](auto& st) {
    auto& be = st.be;
    st.mode = o.q;
    st.n = n;
    st.m = m;
    st.nrhs = nrhs;
    st.nb = panel_width(o.nb, on);
    st.nb_given = o.nb;
    if (qc > 0) {
      be.ensure(st.q, std::size_t(n) * qc);
      st.ldq = n;
      be.upload(detail::lane_q, n, qc, q.data, q.ld, st.q.data(), n);
    }
    const int rr = st.rrows();
    be.ensure(st.r, std::size_t(rr) * m);
    st.ldr = rr;
    be.zero(detail::lane_r, rr, m, st.r.data(), rr);
    be.upload(detail::lane_r, m, m, r.data, r.ld, st.r.data(), rr);
    be.triu_copy(detail::lane_r, m, rr - m, st.r.data(), rr, st.r.data(), rr);
    if (nrhs > 0) {
      be.ensure(st.d, std::size_t(drows) * nrhs);
      st.ldd = drows;
      be.upload(detail::lane_r, drows, nrhs, qtb.data, qtb.ld, st.d.data(), drows);
    }
    be.sync();
  };
  if (on == target::cpu) {
    s->st.template emplace<0>();
    init(std::get<0>(s->st));
  }
#if TESSERA_QR_CUDA
  else {
    s->st.template emplace<1>();
    init(std::get<1>(s->st));
  }
#endif
  return updatable(std::move(s));
}

template <class T>
updatable<T> updatable<T>::from_matrix(matrix_ref<const T> a, matrix_ref<const T> b,
                                       const update_options& o) {
  constexpr const char* fn = "tessera::qr::updatable::from_matrix";
  const int n = a.m, m = a.n;
  check::require_ge(fn, "a.cols", m, "1", 1);
  check::require_ge(fn, "a.rows", n, "a.cols", m);
  require_shape(fn, "a", a, n, m);
  const int nrhs = b.n;
  check::require_ge(fn, "b.cols", nrhs, "0", 0);
  if (nrhs > 0) require_shape(fn, "b", b, n, nrhs);
  const int qc = o.q == q_mode::full ? n : o.q == q_mode::thin ? m : 0;
  [[maybe_unused]] const bool on_gpu = o.on == target::gpu || (o.on == target::automatic && gpu_available());
#if TESSERA_QR_CUDA
  // Small problems are factored on the CPUs (a GPU factorization's set-up costs more there).
  if (on_gpu && gpu_available() && double(n) * m >= double(1 << 20)) {
    // Factor where the factors will live: A copied to the device, the blocked GPU QR there, Q
    // formed and Q^T B applied there, and the updatable made from those device matrices.
    struct dmem {
      T* p = nullptr;
      explicit dmem(std::size_t elems) {
        if (cudaMalloc(&p, sizeof(T) * std::max<std::size_t>(elems, 1)) != cudaSuccess) {
          cudaGetLastError();
          throw tessera::out_of_memory(std::string(fn) + ": " + std::to_string(sizeof(T) * elems) +
                                       " bytes of device memory needed");
        }
      }
      ~dmem() { cudaFree(p); }
      dmem(const dmem&) = delete;
      dmem& operator=(const dmem&) = delete;
    };
    dmem da(std::size_t(n) * m), dq(std::size_t(n) * std::max(qc, 1)), dr(std::size_t(m) * m),
        dd(std::size_t(n) * std::max(nrhs, 1));
    copy<T>(a, device(da.p, n, m, n));
    options fo;
    fo.on = target::gpu;
    auto f = factorize(device(da.p, n, m, n), fo);
    f.copy_r(device(dr.p, m, m, m));
    if (qc > 0) f.form_q(o.q == q_mode::full ? q_shape::full : q_shape::thin, device(dq.p, n, qc, n));
    if (nrhs > 0) {
      copy<T>(b, device(dd.p, n, nrhs, n));
      f.apply_q(trans::trans, device(dd.p, n, nrhs, n));
    }
    update_options go = o;
    go.on = target::gpu;
    return from_factors(device<const T>(dq.p, n, qc, n), device<const T>(dr.p, m, m, m),
                        device<const T>(dd.p, n, nrhs, n), n, go);
  }
#endif
  // The QR front door on a copy (its blocked form overwrites A), then Q, R and Q^T B from it.
  std::vector<T> ac(std::size_t(n) * m);
  for (int j = 0; j < m; ++j)
    std::copy(a.data + std::size_t(j) * a.ld, a.data + std::size_t(j) * a.ld + n,
              ac.data() + std::size_t(j) * n);
  options fo;
  fo.on = target::cpu;
  auto f = factorize(host(ac.data(), n, m, n), fo);
  std::vector<T> r(std::size_t(m) * m), q, d;
  f.copy_r(host(r.data(), m, m, m));
  if (qc > 0) {
    q.resize(std::size_t(n) * qc);
    f.form_q(o.q == q_mode::full ? q_shape::full : q_shape::thin, host(q.data(), n, qc, n));
  }
  if (nrhs > 0) {
    d.resize(std::size_t(n) * nrhs);
    for (int j = 0; j < nrhs; ++j)
      std::copy(b.data + std::size_t(j) * b.ld, b.data + std::size_t(j) * b.ld + n,
                d.data() + std::size_t(j) * n);
    f.apply_q(trans::trans, host(d.data(), n, nrhs, n));
  }
  return from_factors(host<const T>(q.data(), n, qc, n), host<const T>(r.data(), m, m, m),
                      host<const T>(d.data(), n, nrhs, n), n, o);
}

template <class T>
int updatable<T>::rows() const noexcept { return _s->n(); }
template <class T>
int updatable<T>::cols() const noexcept { return _s->m(); }
template <class T>
int updatable<T>::nrhs() const noexcept { return _s->nrhs(); }
template <class T>
q_mode updatable<T>::mode() const noexcept { return _s->mode(); }
template <class T>
target updatable<T>::where() const noexcept { return _s->on; }

namespace {
void require_full(const char* fn, q_mode q) {
  if (q != q_mode::full)
    check::invalid(fn, std::string("needs the full Q (q_mode::full); this factorization keeps ") +
                           name(q) + " Q");
}
}  // namespace

template <class T>
void updatable<T>::delete_columns(int k, int p) {
  constexpr const char* fn = "tessera::qr::updatable::delete_columns";
  const int m = cols();
  check::require_ge(fn, "k", k, "0", 0);
  check::require_ge(fn, "p", p, "1", 1);
  check::require_le(fn, "p", p, "cols - 1", m - 1);
  check::require_le(fn, "k + p", static_cast<long long>(k) + p, "cols", m);
  const target on = _s->on;
  _s->run([&](auto& st) {
    constexpr bool single = std::is_same_v<typename std::decay_t<decltype(st)>::value_type, float>;
    // The form (update_delete_columns.cpp) and its panel width: inserted rows take adding rows'.
    const bool as_rows = detail::retriangularize_as_rows(p, st.mode != q_mode::none);
    const int nb =
        as_rows ? insert_rows_width(st, on, p) : panel_width(st.nb_given, on, p, st.mode != q_mode::none, single);
    detail::delete_columns(st, k, p, nb, as_rows);
  });
}

template <class T>
void updatable<T>::insert_columns(int k, matrix_ref<const T> u) {
  constexpr const char* fn = "tessera::qr::updatable::insert_columns";
  require_full(fn, mode());
  const int n = rows(), m = cols(), p = u.n;
  check::require_ge(fn, "k", k, "0", 0);
  check::require_le(fn, "k", k, "cols", m);
  check::require_ge(fn, "u.cols", p, "1", 1);
  check::require_le(fn, "u.cols", p, "rows - cols", n - m);
  require_shape(fn, "u", u, n, p, where() == target::gpu);
  require_finite_on_device(fn, "u", u, *_s);
  _s->run([&](auto& st) { detail::insert_columns(st, k, u.data, u.ld, p); });
}

template <class T>
void updatable<T>::insert_rows(int k, matrix_ref<const T> u, matrix_ref<const T> bu) {
  constexpr const char* fn = "tessera::qr::updatable::insert_rows";
  const int n = rows(), m = cols(), p = u.m, nr = nrhs();
  check::require_ge(fn, "k", k, "0", 0);
  check::require_le(fn, "k", k, "rows", n);
  check::require_ge(fn, "u.rows", p, "1", 1);
  const target on = _s->on;
  require_shape(fn, "u", u, p, m, on == target::gpu);
  if (nr > 0) require_shape(fn, "bu", bu, p, nr, on == target::gpu);
  require_finite_on_device(fn, "u", u, *_s);
  if (nr > 0) require_finite_on_device(fn, "bu", bu, *_s);
  _s->run([&](auto& st) {
    const int nb = insert_rows_width(st, on, p);
    detail::insert_rows(st, k, u.data, u.ld, p, bu.data, bu.ld, nb);
  });
}

template <class T>
void updatable<T>::delete_rows(int k, int p) {
  constexpr const char* fn = "tessera::qr::updatable::delete_rows";
  require_full(fn, mode());
  const int n = rows(), m = cols();
  check::require_ge(fn, "k", k, "0", 0);
  check::require_ge(fn, "p", p, "1", 1);
  check::require_le(fn, "p", p, "rows - cols", n - m);
  check::require_le(fn, "k + p", static_cast<long long>(k) + p, "rows", n);
  _s->run([&](auto& st) { detail::delete_rows(st, k, p); });
}

template <class T>
void updatable<T>::rank_update(matrix_ref<const T> u, matrix_ref<const T> v) {
  constexpr const char* fn = "tessera::qr::updatable::rank_update";
  require_full(fn, mode());
  const int n = rows(), m = cols(), r = u.n;
  check::require_ge(fn, "u.cols", r, "1", 1);
  check::require_le(fn, "u.cols", r, "cols", m);
  require_shape(fn, "u", u, n, r, where() == target::gpu);
  require_shape(fn, "v", v, m, r, where() == target::gpu);
  require_finite_on_device(fn, "u", u, *_s);
  require_finite_on_device(fn, "v", v, *_s);
  const target on = _s->on;
  _s->run([&](auto& st) {
    // The band as r dense rows over R's triangle (update_rank_k.cpp), with adding rows' panels.
    const bool as_rows = detail::rank_band_as_rows(r, n, m);
    const int nb = as_rows ? insert_rows_width(st, on, r) : st.nb;
    detail::rank_update(st, u.data, u.ld, v.data, v.ld, r, as_rows, nb);
  });
}

template <class T>
void updatable<T>::solve(matrix_ref<T> x) const {
  constexpr const char* fn = "tessera::qr::updatable::solve";
  const int m = cols(), nr = nrhs();
  check::require_ge(fn, "nrhs", nr, "1 (made without right-hand sides)", 1);
  check::require_eq(fn, "x.rows", x.m, "cols", m);
  check::require_eq(fn, "x.cols", x.n, "nrhs", nr);
  check::require_ptr(fn, "x", x.data);
  check::require_ge(fn, "x.ld", x.ld, "cols", m);
  require_host<T>(fn, "x", x);
  _s->visit([&](auto& st) {
    auto& be = st.be;
    be.ensure(st.work_r, std::size_t(m) * nr);
    be.copy(detail::lane_r, m, nr, st.D(0, 0), st.ldd, st.work_r.data(), m);
    be.solve_upper(detail::lane_r, m, nr, st.R(0, 0), st.ldr, st.work_r.data(), m);
    be.download(detail::lane_r, m, nr, st.work_r.data(), m, x.data, x.ld);
    be.sync();
  });
  if (check::find_non_finite(m, nr, x.data, x.ld).first >= 0)
    throw std::runtime_error(std::string(fn) +
                             ": the solution is not finite: R is singular (A is rank deficient)");
}

template <class T>
void updatable<T>::copy_r(matrix_ref<T> r) const {
  constexpr const char* fn = "tessera::qr::updatable::copy_r";
  const int m = cols();
  check::require_eq(fn, "r.rows", r.m, "cols", m);
  check::require_eq(fn, "r.cols", r.n, "cols", m);
  check::require_ptr(fn, "r", r.data);
  check::require_ge(fn, "r.ld", r.ld, "cols", m);
  require_host<T>(fn, "r", r);
  _s->visit([&](auto& st) {
    st.be.sync();
    st.be.download(detail::lane_r, m, m, st.R(0, 0), st.ldr, r.data, r.ld);
  });
}

template <class T>
void updatable<T>::copy_q(matrix_ref<T> q) const {
  constexpr const char* fn = "tessera::qr::updatable::copy_q";
  if (mode() == q_mode::none) check::invalid(fn, "this factorization keeps no Q (q_mode::none)");
  const int n = rows(), qc = mode() == q_mode::full ? n : cols();
  check::require_eq(fn, "q.rows", q.m, "rows", n);
  check::require_eq(fn, "q.cols", q.n, mode() == q_mode::full ? "rows" : "cols", qc);
  check::require_ptr(fn, "q", q.data);
  check::require_ge(fn, "q.ld", q.ld, "rows", n);
  require_host<T>(fn, "q", q);
  _s->visit([&](auto& st) {
    st.be.sync();
    st.be.download(detail::lane_q, n, qc, st.Q(0, 0), st.ldq, q.data, q.ld);
  });
}

template <class T>
void updatable<T>::copy_qtb(matrix_ref<T> qtb) const {
  constexpr const char* fn = "tessera::qr::updatable::copy_qtb";
  const int dr = mode() == q_mode::full ? rows() : cols(), nr = nrhs();
  check::require_eq(fn, "qtb.rows", qtb.m, mode() == q_mode::full ? "rows" : "cols", dr);
  check::require_eq(fn, "qtb.cols", qtb.n, "nrhs", nr);
  if (nr == 0) return;
  check::require_ptr(fn, "qtb", qtb.data);
  check::require_ge(fn, "qtb.ld", qtb.ld, "qtb.rows", dr);
  require_host<T>(fn, "qtb", qtb);
  _s->visit([&](auto& st) {
    st.be.sync();
    st.be.download(detail::lane_r, dr, nr, st.D(0, 0), st.ldd, qtb.data, qtb.ld);
  });
}

template <class T>
void updatable<T>::wait() const {
  _s->visit([](auto& st) { st.be.sync(); });
}

template class updatable<float>;
template class updatable<double>;

}  // namespace tessera::qr
