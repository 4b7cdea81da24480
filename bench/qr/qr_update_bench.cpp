// tessera_qr_update_bench: QR updating (tessera/qr/update.hpp) at the seed's sizes, against
// recomputing the factorization for the new matrix: on the GPU, cuSOLVER GEQRF (+ ORGQR for the
// full Q where the update keeps it) + ORMQR + TRSM for the least-squares solution, all
// device-resident; on the CPUs (--cpu), LAPACK GEQRF (+ ORGQR) + the solve with OpenBLAS on all
// cores, Tessera's own update on the CPUs, and (deleting columns, adding rows) ANCHORS.md's block
// method with LAPACK's TPQRT/TPMQRT. Each figure is one update after a
// warm-up (an update changes the factorization, so each timed update starts from a fresh copy of
// the same factors). Prints one line per case as it goes, then a short table.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "../common/machine.hpp"
#include "tessera/kernels_cpu/blas.hpp"
#include "tessera/qr/gpu.hpp"
#include "tessera/qr/update.hpp"

#if TESSERA_BENCH_CUDA
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#endif

namespace {

namespace qr = tessera::qr;
int bench_nb = 0;
std::vector<int> bench_nbs;  // --nbs: more panel widths, each case timed with each (interleaved)
int bench_reps = 1;
bool bench_profile = false;  // the timed GPU updates inside cudaProfilerStart/Stop (ncu --profile-from-start off)
bool bench_device_inputs = false;  // --device-inputs: the GPU updates' new rows/columns given in device memory
using clock_type = std::chrono::steady_clock;

double since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

struct bench_case {
  std::string op;  // dc, ic, ir, dr, rk
  int n, m, k, p;
  qr::q_mode q;
  bool cpu = false;  // also on the CPUs with --cpu (the cases of ANCHORS.md's CPU table, and rank 1)
};

// The shape of the matrix after the update (recomputing factors that one).
void after(const bench_case& c, int& n2, int& m2) {
  n2 = c.n;
  m2 = c.m;
  if (c.op == "dc") m2 -= c.p;
  if (c.op == "ic") m2 += c.p;
  if (c.op == "ir") n2 += c.p;
  if (c.op == "dr") n2 -= c.p;
}

template <class T>
std::vector<T> random_vec(std::size_t n, std::mt19937_64& g) {
  std::vector<T> v(n);
  std::uniform_real_distribution<double> u(-1, 1);
  for (auto& x : v) x = T(u(g));
  return v;
}

// The factors of one base matrix, on the host, to start each timed update from.
template <class T>
struct base {
  int n = 0, m = 0;
  qr::q_mode q = qr::q_mode::full;
  std::vector<T> Q, R, D;
};

template <class T>
base<T> make_base(int n, int m, qr::q_mode q, std::mt19937_64& g) {
  auto A = random_vec<T>(std::size_t(n) * m, g), B = random_vec<T>(std::size_t(n), g);
  qr::update_options o;
  o.on = qr::gpu_available() ? qr::target::gpu : qr::target::cpu;
  o.q = q;
  auto u = qr::updatable<T>::from_matrix(qr::host<const T>(A.data(), n, m, n),
                                         qr::host<const T>(B.data(), n, 1, n), o);
  base<T> b;
  b.n = n;
  b.m = m;
  b.q = q;
  const int qc = q == qr::q_mode::full ? n : q == qr::q_mode::thin ? m : 0;
  const int dr = q == qr::q_mode::full ? n : m;
  b.R.resize(std::size_t(m) * m);
  u.copy_r(qr::host(b.R.data(), m, m, m));
  if (qc) {
    b.Q.resize(std::size_t(n) * qc);
    u.copy_q(qr::host(b.Q.data(), n, qc, n));
  }
  b.D.resize(std::size_t(dr));
  u.copy_qtb(qr::host(b.D.data(), dr, 1, dr));
  return b;
}

template <class T>
qr::updatable<T> from_base(const base<T>& b, qr::target on, int nb = bench_nb) {
  qr::update_options o;
  o.on = on;
  o.q = b.q;
  o.nb = nb;
  const int qc = b.q == qr::q_mode::full ? b.n : b.q == qr::q_mode::thin ? b.m : 0;
  const int dr = b.q == qr::q_mode::full ? b.n : b.m;
  return qr::updatable<T>::from_factors(qr::host<const T>(b.Q.data(), b.n, qc, b.n),
                                        qr::host<const T>(b.R.data(), b.m, b.m, b.m),
                                        qr::host<const T>(b.D.data(), dr, 1, dr), b.n, o);
}

// One update of u as the case says, then the solve; seconds. profile: inside the profiler's range.
template <class T>
double timed_update(qr::updatable<T>& u, const bench_case& c, std::mt19937_64& g,
                    [[maybe_unused]] bool profile = false) {
  std::vector<T> U, V, BU;
  if (c.op == "ic") U = random_vec<T>(std::size_t(c.n) * c.p, g);
  if (c.op == "ir") U = random_vec<T>(std::size_t(c.p) * c.m, g), BU = random_vec<T>(std::size_t(c.p), g);
  if (c.op == "rk") U = random_vec<T>(std::size_t(c.n) * c.p, g), V = random_vec<T>(std::size_t(c.m) * c.p, g);
  // The inputs where the update reads them: host memory, or (--device-inputs, GPU) a device copy
  // made before the clock starts, as cuSOLVER's side has its matrix on the device.
#if TESSERA_BENCH_CUDA
  const bool on_device = bench_device_inputs && u.where() == qr::target::gpu;
  std::vector<T*> dev;
  struct freer {
    std::vector<T*>& d;
    ~freer() {
      for (T* p : d) cudaFree(p);
    }
  } free_dev{dev};
#endif
  auto in = [&](std::vector<T>& h, int r, int cols) {
#if TESSERA_BENCH_CUDA
    if (on_device) {
      T* p = nullptr;
      if (cudaMalloc(&p, sizeof(T) * std::max<std::size_t>(h.size(), 1)) != cudaSuccess ||
          (dev.push_back(p), cudaMemcpy(p, h.data(), sizeof(T) * h.size(), cudaMemcpyHostToDevice)) != cudaSuccess)
        throw std::runtime_error("device copy of an update's input failed");
      return qr::device<const T>(p, r, cols, r);
    }
#endif
    return qr::host<const T>(h.data(), r, cols, r);
  };
  qr::matrix_ref<const T> iu{}, iv{}, ibu{};
  if (c.op == "ic") iu = in(U, c.n, c.p);
  if (c.op == "ir") iu = in(U, c.p, c.m), ibu = in(BU, c.p, 1);
  if (c.op == "rk") iu = in(U, c.n, c.p), iv = in(V, c.m, c.p);
  u.wait();
#if TESSERA_BENCH_CUDA
  if (profile) cudaProfilerStart();
#endif
  const auto t0 = clock_type::now();
  if (c.op == "dc") u.delete_columns(c.k, c.p);
  if (c.op == "ic") u.insert_columns(c.k, iu);
  if (c.op == "ir") u.insert_rows(c.k, iu, ibu);
  if (c.op == "dr") u.delete_rows(c.k, c.p);
  if (c.op == "rk") u.rank_update(iu, iv);
  std::vector<T> x(std::size_t(u.cols()));
  u.solve(qr::host(x.data(), u.cols(), 1, u.cols()));
  const double t = since(t0);
#if TESSERA_BENCH_CUDA
  if (profile) cudaProfilerStop();
#endif
  return t;
}

#if TESSERA_BENCH_CUDA
void cuda_ok(cudaError_t e) {
  if (e != cudaSuccess) throw std::runtime_error(cudaGetErrorString(e));
}
void solver_ok(cusolverStatus_t s) {
  if (s != CUSOLVER_STATUS_SUCCESS) throw std::runtime_error("cuSOLVER call failed");
}

// cuSOLVER recomputation of an n x m QR, device-resident: GEQRF, ORMQR (Q^T b), TRSM (the
// solution), and with_q: ORGQR forming the full n x n Q (the update keeps it). Seconds.
template <class T>
double gpu_recompute(int n, int m, bool with_q, std::mt19937_64& g) {
  auto hA = random_vec<T>(std::size_t(n) * m, g), hb = random_vec<T>(std::size_t(n), g);
  const int qc = with_q ? n : m;
  T *A = nullptr, *Qm = nullptr, *b = nullptr, *tau = nullptr, *work = nullptr;
  int* info = nullptr;
  cuda_ok(cudaMalloc(&A, sizeof(T) * std::size_t(n) * m));
  cuda_ok(cudaMalloc(&Qm, sizeof(T) * std::size_t(n) * qc));
  cuda_ok(cudaMalloc(&b, sizeof(T) * std::size_t(n)));
  cuda_ok(cudaMalloc(&tau, sizeof(T) * std::size_t(m)));
  cuda_ok(cudaMalloc(&info, sizeof(int)));
  cuda_ok(cudaMemcpy(A, hA.data(), sizeof(T) * hA.size(), cudaMemcpyHostToDevice));
  cuda_ok(cudaMemcpy(b, hb.data(), sizeof(T) * hb.size(), cudaMemcpyHostToDevice));
  cusolverDnHandle_t h;
  solver_ok(cusolverDnCreate(&h));
  cublasHandle_t cb;
  cublasCreate(&cb);
  int l1 = 0, l2 = 0, l3 = 0;
  if constexpr (std::is_same_v<T, float>) {
    solver_ok(cusolverDnSgeqrf_bufferSize(h, n, m, A, n, &l1));
    solver_ok(cusolverDnSormqr_bufferSize(h, CUBLAS_SIDE_LEFT, CUBLAS_OP_T, n, 1, m, A, n, tau, b, n, &l2));
    if (with_q) solver_ok(cusolverDnSorgqr_bufferSize(h, n, n, m, Qm, n, tau, &l3));
  } else {
    solver_ok(cusolverDnDgeqrf_bufferSize(h, n, m, A, n, &l1));
    solver_ok(cusolverDnDormqr_bufferSize(h, CUBLAS_SIDE_LEFT, CUBLAS_OP_T, n, 1, m, A, n, tau, b, n, &l2));
    if (with_q) solver_ok(cusolverDnDorgqr_bufferSize(h, n, n, m, Qm, n, tau, &l3));
  }
  const int lwork = std::max({l1, l2, l3, 1});
  cuda_ok(cudaMalloc(&work, sizeof(T) * std::size_t(lwork)));
  double best = 1e30;
  for (int rep = 0; rep < 2; ++rep) {  // the first is a warm-up when the shape is new
    cuda_ok(cudaMemcpy(A, hA.data(), sizeof(T) * hA.size(), cudaMemcpyHostToDevice));
    cuda_ok(cudaMemcpy(b, hb.data(), sizeof(T) * hb.size(), cudaMemcpyHostToDevice));
    cuda_ok(cudaDeviceSynchronize());
    const auto t0 = clock_type::now();
    if constexpr (std::is_same_v<T, float>) {
      solver_ok(cusolverDnSgeqrf(h, n, m, A, n, tau, work, lwork, info));
      solver_ok(cusolverDnSormqr(h, CUBLAS_SIDE_LEFT, CUBLAS_OP_T, n, 1, m, A, n, tau, b, n, work, lwork, info));
      const float one = 1;
      cublasStrsm(cb, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, m, 1, &one, A, n, b, n);
      if (with_q) {
        cuda_ok(cudaMemcpy2D(Qm, sizeof(T) * n, A, sizeof(T) * n, sizeof(T) * n, m, cudaMemcpyDeviceToDevice));
        solver_ok(cusolverDnSorgqr(h, n, n, m, Qm, n, tau, work, lwork, info));
      }
    } else {
      solver_ok(cusolverDnDgeqrf(h, n, m, A, n, tau, work, lwork, info));
      solver_ok(cusolverDnDormqr(h, CUBLAS_SIDE_LEFT, CUBLAS_OP_T, n, 1, m, A, n, tau, b, n, work, lwork, info));
      const double one = 1;
      cublasDtrsm(cb, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, m, 1, &one, A, n, b, n);
      if (with_q) {
        cuda_ok(cudaMemcpy2D(Qm, sizeof(T) * n, A, sizeof(T) * n, sizeof(T) * n, m, cudaMemcpyDeviceToDevice));
        solver_ok(cusolverDnDorgqr(h, n, n, m, Qm, n, tau, work, lwork, info));
      }
    }
    cuda_ok(cudaDeviceSynchronize());
    best = std::min(best, since(t0));
  }
  cublasDestroy(cb);
  cusolverDnDestroy(h);
  for (void* p : {static_cast<void*>(A), static_cast<void*>(Qm), static_cast<void*>(b),
                  static_cast<void*>(tau), static_cast<void*>(work), static_cast<void*>(info)})
    cudaFree(p);
  return best;
}
#endif

// LAPACK recomputation on all cores: GEQRF, ORMQR via the formed Q or the reflectors, TRSM; with_q
// adds ORGQR of the full n x n Q. Seconds.
template <class T>
double cpu_recompute(int n, int m, bool with_q, std::mt19937_64& g) {
  auto A = random_vec<T>(std::size_t(n) * m, g), b = random_vec<T>(std::size_t(n), g);
  std::vector<T> tau(static_cast<std::size_t>(m)), Qm;
  if (with_q) Qm.resize(std::size_t(n) * n);
  const auto t0 = clock_type::now();
  tessera::blas::geqrf(n, m, A.data(), n, tau.data());
  if constexpr (std::is_same_v<T, float>)
    LAPACKE_sormqr(LAPACK_COL_MAJOR, 'L', 'T', n, 1, m, A.data(), n, tau.data(), b.data(), n);
  else
    LAPACKE_dormqr(LAPACK_COL_MAJOR, 'L', 'T', n, 1, m, A.data(), n, tau.data(), b.data(), n);
  tessera::blas::trsm(CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, m, 1, T(1), A.data(), n, b.data(), n);
  if (with_q) {
    for (int j = 0; j < m; ++j) std::copy(A.begin() + std::size_t(j) * n, A.begin() + std::size_t(j + 1) * n, Qm.begin() + std::size_t(j) * n);
    tessera::blas::orgqr(n, n, m, Qm.data(), n, tau.data());
  }
  return since(t0);
}

// ANCHORS.md's block method with LAPACK's own routines on all cores (OpenBLAS's threads), for the
// updates that keep R triangular: deleting p columns at k (R(k:k+p, k+p:m), dense, lies over the
// old trailing triangle R(k+p:m, k+p:m): one TPQRT of the two where they lie, then R's, D's and
// Q's rows and columns moved into place) and adding p rows at k (TPQRT of [R; U]; with the full Q,
// Q' = [Q(0:k) 0; 0 I; Q(k:n) 0] formed, as an update must, and its first m and last p columns
// mixed); D, and Q from the right, by TPMQRT; then the solve with the new R, as the other
// contestants' times include it. Not timed: the copies of the factors each contestant starts from.
// Seconds; -1 for the other
// update types.
template <class T>
double cpu_block_method(const bench_case& c, const base<T>& b, std::mt19937_64& g) {
  using namespace tessera;
  if (c.op != "dc" && c.op != "ir") return -1;
  const int n = b.n, m = b.m, p = c.p, k = c.k, nb = 64;
  const bool with_q = b.q == qr::q_mode::full;
  const int dr = with_q ? n : m;
  std::vector<T> R = b.R, D = b.D, Q = with_q ? b.Q : std::vector<T>{};
  auto ok = [](int info) {
    if (info != 0) throw std::runtime_error("LAPACK block method: info " + std::to_string(info));
  };
  auto solve = [](int order, const T* Rm, int ldr, T* x) {
    blas::trsm(CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, order, 1, T(1), Rm, ldr, x, std::max(order, 1));
  };
  if (c.op == "dc") {
    const int s = m - k - p, m2 = m - p;
    if (s <= 0) return 0;  // the last columns: R is truncated, nothing to compute
    const int b_nb = std::min(nb, s);
    std::vector<T> Tt(std::size_t(b_nb) * s), work(std::size_t(b_nb) * std::max(s, with_q ? n : 1));
    T* A = R.data() + (k + p) + std::size_t(k + p) * m;  // s x s triangle
    T* V = R.data() + k + std::size_t(k + p) * m;        // p x s dense rows
    const auto t0 = clock_type::now();
    ok(blas::tpqrt(p, s, 0, b_nb, A, m, V, m, Tt.data(), b_nb, work.data()));
    ok(blas::tpmqrt('L', 'T', p, 1, s, 0, b_nb, V, m, Tt.data(), b_nb, D.data() + k + p, dr, D.data() + k, dr,
                    work.data()));
    if (with_q)
      ok(blas::tpmqrt('R', 'N', n, p, s, 0, b_nb, V, m, Tt.data(), b_nb, Q.data() + std::size_t(k + p) * n, n,
                      Q.data() + std::size_t(k) * n, n, work.data()));
    // Into place: R's columns k + p.. move left by p (their triangle rows up by p; ld m2), D's rows
    // and Q's columns likewise.
    for (int j = 0; j < m; ++j) {
      if (j >= k && j < k + p) continue;
      const int to = j < k ? j : j - p;
      const T* src = R.data() + std::size_t(j) * m;
      T* dst = R.data() + std::size_t(to) * m2;
      std::memmove(dst, src, sizeof(T) * std::size_t(std::min(j + 1, k)));
      if (j >= k + p) std::memmove(dst + k, src + k + p, sizeof(T) * std::size_t(j - k - p + 1));
    }
    std::memmove(D.data() + k, D.data() + k + p, sizeof(T) * std::size_t(dr - k - p));
    if (with_q)
      std::memmove(Q.data() + std::size_t(k) * n, Q.data() + std::size_t(k + p) * n, sizeof(T) * std::size_t(n) * (n - k - p));
    solve(m2, R.data(), m2, D.data());
    return since(t0);
  }
  auto U = random_vec<T>(std::size_t(p) * m, g), bu = random_vec<T>(std::size_t(p), g);
  const int b_nb = std::min(nb, m), n2 = n + p;
  std::vector<T> Tt(std::size_t(b_nb) * m), work(std::size_t(b_nb) * std::max(m, with_q ? n2 : 1));
  const auto t0 = clock_type::now();
  ok(blas::tpqrt(p, m, 0, b_nb, R.data(), m, U.data(), p, Tt.data(), b_nb, work.data()));
  if (!with_q) {
    ok(blas::tpmqrt('L', 'T', p, 1, m, 0, b_nb, U.data(), p, Tt.data(), b_nb, D.data(), dr, bu.data(), p,
                    work.data()));
    solve(m, R.data(), m, D.data());
    return since(t0);
  }
  // Q' (n2 x n2) and D' = [D(0:k); bu; D(k:n)], each element written once; the reflectors mix
  // D''s and Q''s first m rows / columns with the new rows' / columns' p.
  std::vector<T> Q2(std::size_t(n2) * n2), D2(static_cast<std::size_t>(n2));
  for (int j = 0; j < n; ++j) {
    T* col = Q2.data() + std::size_t(j) * n2;
    const T* src = Q.data() + std::size_t(j) * n;
    std::copy(src, src + k, col);
    std::fill(col + k, col + k + p, T(0));
    std::copy(src + k, src + n, col + k + p);
  }
  for (int j = 0; j < p; ++j) {
    T* col = Q2.data() + std::size_t(n + j) * n2;
    std::fill(col, col + n2, T(0));
    col[k + j] = T(1);
  }
  std::copy(D.begin(), D.end(), D2.begin());  // Q'^T b' = [Q^T b; bu] before the reflectors
  std::copy(bu.begin(), bu.end(), D2.begin() + n);
  ok(blas::tpmqrt('L', 'T', p, 1, m, 0, b_nb, U.data(), p, Tt.data(), b_nb, D2.data(), n2, D2.data() + n, n2,
                  work.data()));
  ok(blas::tpmqrt('R', 'N', n2, p, m, 0, b_nb, U.data(), p, Tt.data(), b_nb, Q2.data(), n2,
                  Q2.data() + std::size_t(n) * n2, n2, work.data()));
  solve(m, R.data(), m, D2.data());
  return since(t0);
}

struct row {
  bench_case c;
  std::string prec;
  double gpu = -1, gpu_first = -1, gpu_re = -1, cpu = -1, cpu_re = -1, cpu_block = -1;
  std::vector<double> gpu_nbs{};  // best of --reps with each of --nbs
};

// The fastest of the CPU methods measured for a row: Tessera's update, LAPACK recomputation and,
// where it applies, LAPACK's block method.
double best_cpu(const row& r) {
  double t = std::min(r.cpu, r.cpu_re);
  if (r.cpu_block >= 0) t = std::min(t, r.cpu_block);
  return t;
}

const char* op_name(const std::string& op) {
  if (op == "dc") return "delete cols";
  if (op == "ic") return "add cols";
  if (op == "ir") return "add rows";
  if (op == "dr") return "delete rows";
  return "rank-k";
}

template <class T>
void run_cases(const std::vector<bench_case>& cases, bool gpu, bool cpu, const std::string& prec,
               std::vector<row>& out) {
  std::mt19937_64 g(7);
  // Warm-up: every update type once at a small size (module loading, cuBLAS handles; on the
  // CPUs the thread pools). Each timed update then starts from a fresh factorization object and
  // allocates its workspace: on the CPUs that is fresh pages, faulted in (deleting 100 columns of
  // 6000 x 3000 at 2000 took 0.07 s on the 2-core VM, 0.008 s with glibc told to keep freed memory,
  // MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_ set high).
  {
    auto b = make_base<T>(600, 300, qr::q_mode::full, g);
    for (const char* op : {"dc", "ic", "ir", "dr", "rk"}) {
      bench_case w{op, 600, 300, 10, 20, qr::q_mode::full};
      for (const bool on_gpu : {true, false})
        if (on_gpu ? gpu : cpu && prec == "d") {
          auto u = from_base(b, on_gpu ? qr::target::gpu : qr::target::cpu);
          timed_update(u, w, g);
        }
    }
  }
  base<T> b;
  for (const auto& c : cases) {
    if (b.n != c.n || b.m != c.m || b.q != c.q) b = make_base<T>(c.n, c.m, c.q, g);
    row r{c, prec};
    int n2, m2;
    after(c, n2, m2);
    const bool with_q = c.q == qr::q_mode::full;
    if (gpu) {
      // Best of --reps, each from a fresh copy of the factors (only the first one profiled).
      // With --nbs, each rep times every width after the default one, so that drift hits all.
      r.gpu_nbs.assign(bench_nbs.size(), 1e30);
      for (int rep = 0; rep < bench_reps; ++rep) {
        {
          auto u = from_base(b, qr::target::gpu);
          const double t = timed_update(u, c, g, bench_profile && rep == 0);
          r.gpu = rep == 0 ? t : std::min(r.gpu, t);
          if (rep == 0) r.gpu_first = t;
        }
        for (std::size_t i = 0; i < bench_nbs.size(); ++i) {
          auto u = from_base(b, qr::target::gpu, bench_nbs[i]);
          r.gpu_nbs[i] = std::min(r.gpu_nbs[i], timed_update(u, c, g));
        }
      }
#if TESSERA_BENCH_CUDA
      r.gpu_re = gpu_recompute<T>(n2, m2, with_q, g);
#endif
    }
    if (cpu && c.cpu && prec == "d") {
      auto u = from_base(b, qr::target::cpu);
      r.cpu = timed_update(u, c, g);
      r.cpu_re = cpu_recompute<T>(n2, m2, with_q, g);
      r.cpu_block = cpu_block_method<T>(c, b, g);
    }
    std::printf("%-12s %s n=%-6d m=%-6d k=%-5d p=%-4d Q=%-4s gpu %.5f s, cuSOLVER %.5f s (%.1fx)", op_name(c.op),
                prec.c_str(), c.n, c.m, c.k, c.p, qr::name(c.q), r.gpu, r.gpu_re, r.gpu > 0 ? r.gpu_re / r.gpu : 0);
    if (r.cpu >= 0) {
      std::printf(", cpu %.4f s, LAPACK %.4f s", r.cpu, r.cpu_re);
      if (r.cpu_block >= 0) std::printf(", LAPACK block %.4f s", r.cpu_block);
      if (r.gpu > 0) std::printf(", gpu vs best cpu %.1fx", best_cpu(r) / r.gpu);
    }
    if (bench_reps > 1) std::printf(", first of %d reps %.5f s", bench_reps, r.gpu_first);
    for (std::size_t i = 0; i < r.gpu_nbs.size(); ++i)
      std::printf(", nb %d %.5f s (%.3f)", bench_nbs[i], r.gpu_nbs[i], r.gpu_nbs[i] / r.gpu);
    std::printf("\n");
    std::fflush(stdout);
    out.push_back(r);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tessera_qr_update_bench: QR updating against recomputation (GPU and CPUs)"};
  bool quick = false, cpu = false, no_gpu = false;
  std::string precisions = "sd", only, cases_filter;
  app.add_flag("--quick", quick, "a few cases only");
  app.add_flag("--cpu", cpu, "also Tessera's update on the CPUs and LAPACK recomputation (slow)");
  app.add_flag("--no-gpu", no_gpu, "CPUs only");
  app.add_option("--precisions", precisions, "s, d or sd");
  app.add_option("--only", only, "only these update types: any of dc,ic,ir,dr,rk");
  std::vector<int> dc_p{100, 200, 500};
  app.add_option("--dc-p", dc_p, "the numbers of columns the column deletions delete (the seed's: 100,200,500)")
      ->delimiter(',')
      ->check(CLI::Range(1, 2999));
  std::vector<int> rk_r{1, 16, 64};
  app.add_option("--rk-r", rk_r, "the ranks of the rank-k updates of 8000 x 3000 (1,16,64)")
      ->delimiter(',')
      ->check(CLI::Range(1, 3000));
  int scale = 1;
  app.add_option("--reps", bench_reps, "time each GPU update this many times from fresh factors, keep the best")
      ->check(CLI::Range(1, 100));
  app.add_option("--cases", cases_filter, "only cases whose n,m,k,p is in this list of n:m:k:p (e.g. 6000:3000:2000:500)");
  app.add_flag("--device-inputs", bench_device_inputs,
               "give the GPU updates their new rows and columns in device memory (copied there untimed)");
  app.add_flag("--profile", bench_profile, "each case's first timed GPU update between cudaProfilerStart/Stop");
  app.add_option("--nb", bench_nb, "panel width of the updates (0: the library's default)")->check(CLI::Range(0, 1024));
  app.add_option("--nbs", bench_nbs, "also time each GPU update with these panel widths (e.g. 128,96), interleaved with --nb's reps")
      ->delimiter(',')
      ->check(CLI::Range(0, 1024));
  app.add_option("--scale", scale, "divide every size by this (a smoke test)")->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);
  const bool gpu = !no_gpu && qr::gpu_available();
  if (!gpu && !cpu) cpu = true;
  std::printf("tessera_qr_update_bench on %s; CPU: %s\n", gpu ? qr::gpu_name().c_str() : "(no GPU)",
              tessera::bench::cpu_model().c_str());
  using qm = qr::q_mode;
  std::vector<bench_case> cases;
  auto want = [&](const std::string& op) { return only.empty() || only.find(op) != std::string::npos; };
  // The seed's Tables 5.8-5.10: deleting p columns of 6000 x 3000 at k (R and Q^T b only, and full Q).
  if (want("dc"))
    for (qm q : {qm::none, qm::full})
      for (int p : quick ? std::vector<int>{500} : dc_p)
        for (int k : quick ? std::vector<int>{0, 2000} : std::vector<int>{0, 1000, 2000, 2500, 3000 - p})
          if (k + p <= 3000 && (k != 2500 || p != 500))  // 2500 is 3000 - p for p = 500
            cases.push_back({"dc", 6000, 3000, k, p, q, (k == 0 && p == 500) || (k == 2000 && p != 200)});
  // Adding p = 200 columns to m = 3000 at k (full Q; the seed's Tables 5.1-5.7 ranges).
  if (want("ic"))
    for (int n : quick ? std::vector<int>{8000} : std::vector<int>{4000, 8000, 12000})
      for (int k : quick ? std::vector<int>{1500} : std::vector<int>{0, 1500, 2980, 3000})
        cases.push_back({"ic", n, 3000, k, 200, qm::full, n == 8000 && (k == 1500 || k == 3000)});
  // Adding p rows to m = 3000 (Tables 5.12-5.16): R only and full Q.
  if (want("ir"))
    for (qm q : {qm::none, qm::full}) {
      if (!quick) cases.push_back({"ir", 8000, 3000, 0, 200, q, true});
      for (int n : quick ? std::vector<int>{14000} : std::vector<int>{8000, 11000, 14000})
        cases.push_back({"ir", n, 3000, 0, 500, q, n == 14000});
    }
  // Deleting p rows of n = 12000 (Tables 5.18-5.19).
  if (want("dr"))
    for (int m : quick ? std::vector<int>{6000} : std::vector<int>{6000, 10000})
      for (int p : quick ? std::vector<int>{20} : std::vector<int>{20, 50, 100})
        cases.push_back({"dr", 12000, m, 0, p, qm::full, m == 6000 && p == 20});
  // Rank-k updates of 8000 x 3000.
  if (want("rk"))
    for (int r : quick ? std::vector<int>{16} : rk_r)
      cases.push_back({"rk", 8000, 3000, 0, r, qm::full, r <= 16});
  if (!cases_filter.empty())
    std::erase_if(cases, [&](const bench_case& c) {
      const std::string key = std::to_string(c.n) + ":" + std::to_string(c.m) + ":" +
                              std::to_string(c.k) + ":" + std::to_string(c.p);
      return ("," + cases_filter + ",").find("," + key + ",") == std::string::npos;
    });
  for (auto& c : cases) {
    c.n /= scale;
    c.m /= scale;
    c.k /= scale;
    c.p = std::max(1, c.p / scale);
  }
  std::vector<row> rows;
  for (char pc : precisions) {
    if (pc == 's') run_cases<float>(cases, gpu, cpu, "s", rows);
    if (pc == 'd') run_cases<double>(cases, gpu, cpu, "d", rows);
  }
  std::printf("\nGPU updates' new rows and columns in %s memory.\n", bench_device_inputs ? "device" : "host");
  std::printf("\n| update | prec | n | m | k | p | Q | GPU update (s) | cuSOLVER recompute (s) | speed-up |%s",
              cpu ? " CPU update (s) | LAPACK recompute (s) | LAPACK block (s) | GPU vs best CPU |" : "");
  for (int nb : bench_nbs) std::printf(" nb %d (s) | nb %d / nb %d |", nb, nb, bench_nb);
  std::printf("\n|---|---|---|---|---|---|---|---|---|---|%s", cpu ? "---|---|---|---|" : "");
  for (std::size_t i = 0; i < bench_nbs.size(); ++i) std::printf("---|---|");
  std::printf("\n");
  for (const auto& r : rows) {
    std::printf("| %s | %s | %d | %d | %d | %d | %s | %.5f | %.5f | %.1fx |", op_name(r.c.op), r.prec.c_str(),
                r.c.n, r.c.m, r.c.k, r.c.p, qr::name(r.c.q), r.gpu, r.gpu_re, r.gpu > 0 ? r.gpu_re / r.gpu : 0);
    if (cpu && r.cpu < 0) std::printf(" | | | |");
    if (cpu && r.cpu >= 0) {
      std::printf(" %.4f | %.4f |", r.cpu, r.cpu_re);
      if (r.cpu_block >= 0)
        std::printf(" %.4f |", r.cpu_block);
      else
        std::printf(" |");
      std::printf(" %.1fx |", r.gpu > 0 ? best_cpu(r) / r.gpu : 0);
    }
    for (double t : r.gpu_nbs) std::printf(" %.5f | %.3f |", t, r.gpu > 0 ? t / r.gpu : 0);
    std::printf("\n");
  }
}
