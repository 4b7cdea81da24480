// tessera_sssmqr_bench: the aggregated GPU update of hybrid tile QR (gpu_sssmqr) at the trailing
// sizes of a factorization of an n x n matrix, beside cuBLAS GEMM 8192^3 measured in the same run.
//
// Step k of tile QR (nb x nb tiles, mt = ceil(n / nb)) applies the mt-k-1 TSQRTs of tile column k
// to the trailing matrix: rows = n - (k+1) nb below tile row k, cols = n - (k+1) nb. Flops are
// LAWN 41's count for TPMQRT with l = 0: 4 * m_i * kk * cols per TSQRT applied, i.e.
// 4 * rows * kk * cols per step (the prepare step's V^T V and full T are not counted).
// Times are medians of --runs CUDA-event timings after one warm-up, one step per timing.
//
// Modes: the default measures a few steps (--steps) with every variant (gpu_sssmqr, its
// prepare/apply parts, the ib-blocked baseline, --explore: other formulations of the apply);
// --all-steps times gpu_sssmqr at every k (the per-step rate of the seed's Figure 7b), and the
// blocked QR's gpu_larfb at every step of panel width --blocked-nb (512; 0: not).
// --panel times gpu_geqrt's panels (alone and beside the first step's update).
// --json prints one JSON object per line instead of tables.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <tessera/kernels_cpu/blas.hpp>
#include <tessera/kernels_gpu.hpp>
#include <tessera/kernels_gpu/cublas.hpp>

#include "engine.hpp"

#include "../common/svg_chart.hpp"

#include "fill.hpp"

namespace {

using namespace tessera::kernels;

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
void cublas_ok(cublasStatus_t s, const char* what) { tessera::cublas::check("tessera_sssmqr_bench", what, s); }

template <class T>
struct dev {
  T* p = nullptr;
  std::size_t n = 0;
  explicit dev(std::size_t elems) : n(std::max<std::size_t>(elems, 1)) {
    cuda_ok(cudaMalloc(&p, n * sizeof(T)), "cudaMalloc");
  }
  ~dev() { cudaFree(p); }
  dev(const dev&) = delete;
  dev& operator=(const dev&) = delete;
};

struct gpu {
  cublasHandle_t h = nullptr;
  cudaStream_t s = nullptr;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  gpu() {
    cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    cublas_ok(cublasCreate(&h), "cublasCreate");
    cublas_ok(cublasSetStream(h, s), "cublasSetStream");
    // No TF32 for SGEMM: the float results must be float arithmetic.
    cublas_ok(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    cuda_ok(cudaEventCreate(&e0), "cudaEventCreate");
    cuda_ok(cudaEventCreate(&e1), "cudaEventCreate");
  }
  ~gpu() {
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cublasDestroy(h);
    cudaStreamDestroy(s);
  }
  // Median milliseconds of `runs` timings of f() on the stream, after one warm-up.
  template <class F>
  double median_ms(int runs, F&& f) {
    f();
    cuda_ok(cudaStreamSynchronize(s), "warm-up");
    std::vector<double> t;
    for (int r = 0; r < runs; ++r) {
      cuda_ok(cudaEventRecord(e0, s), "cudaEventRecord");
      f();
      cuda_ok(cudaEventRecord(e1, s), "cudaEventRecord");
      cuda_ok(cudaEventSynchronize(e1), "cudaEventSynchronize");
      float ms = 0;
      cuda_ok(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
      t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }
};

// --- precision helpers ----------------------------------------------------------------------
// The library's own cuBLAS wrapper, so the bench times the same calls.
using tessera::cublas::geam;
using tessera::cublas::gemm;
using tessera::cublas::gemm_strided;
template <class T> constexpr const char* letter() { return sizeof(T) == 8 ? "d" : "s"; }
template <class T> constexpr const char* gemm_name() { return sizeof(T) == 8 ? "DGEMM" : "SGEMM"; }

struct options {
  int n = 32768, nb = 256, ib = 32, runs = 5, gemm_size = 8192;
  int blocked_nb = 512;  // --all-steps: also the blocked QR's update per step at this panel width (0: not)
  std::string precision = "both";
  std::vector<int> steps;
  bool all_steps = false, json = false, blocked = true, explore = false, gemm_shapes = false, panel = false;
  std::string plot;
};

// --- explored alternatives (--explore), on gpu_sssmqr_prepare's factors Z_i = [T^T; V T^T] -------
// form 0: W = A1 + V^T A2; A1 -= T^T W; A2 -= (V T^T) W as three separate GEMMs (the library
// batches the last two). form 1: the textbook W = T^T W by TRMM, A1 -= W by GEAM, A2 -= V W.
template <class T>
void explore_apply(int form, int count, int nb, int m_last, int n, int kk, T* A1, int lda1, T* A2,
                   int lda2, const T* V, int ldv, const T* Z, T* W, cublasHandle_t h,
                   cudaStream_t s) {
  const int ldz = kk + nb;
  for (int i = 0; i < count; ++i) {
    const int mi = i + 1 < count ? nb : m_last;
    T* A2i = A2 + std::size_t(i) * nb;
    const T* Zi = Z + std::size_t(i) * ldz * kk;
    cuda_ok(cudaMemcpy2DAsync(W, sizeof(T) * kk, A1, sizeof(T) * lda1, sizeof(T) * kk, n,
                              cudaMemcpyDeviceToDevice, s),
            "explore copy");
    cublas_ok(gemm(h, CUBLAS_OP_T, CUBLAS_OP_N, kk, n, mi, T(1), V + std::size_t(i) * nb, ldv, A2i,
                   lda2, T(1), W, kk),
              "explore gemm W");
    if (form == 0) {
      cublas_ok(gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, kk, n, kk, T(-1), Zi, ldz, W, kk, T(1), A1, lda1),
                "explore gemm A1");
      cublas_ok(gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, mi, n, kk, T(-1), Zi + kk, ldz, W, kk, T(1), A2i,
                     lda2),
                "explore gemm A2");
    } else {
      cublas_ok(tessera::cublas::trmm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
                                      CUBLAS_DIAG_NON_UNIT, kk, n, T(1), Zi, ldz, W, kk, W, kk),
                "explore trmm");
      cublas_ok(geam(h, CUBLAS_OP_N, CUBLAS_OP_N, kk, n, T(1), A1, lda1, T(-1), W, kk, A1, lda1),
                "explore geam");
      cublas_ok(gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, mi, n, kk, T(-1), V + std::size_t(i) * nb, ldv, W,
                     kk, T(1), A2i, lda2),
                "explore gemm A2");
    }
  }
}

template <class T>
double rel_diff(const std::vector<T>& a, const std::vector<T>& b) {
  double d = 0, s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d += (double(a[i]) - double(b[i])) * (double(a[i]) - double(b[i]));
    s += double(b[i]) * double(b[i]);
  }
  return std::sqrt(d / std::max(s, 1e-300));
}

// --gemm-shapes: the update's GEMMs alone, kk = nb, over the widths of a factorization and two
// leading dimensions (n, a power of two when n is, and n + 8): how fast can the pieces be?
template <class T>
void gemm_shapes(const options& o, gpu& g) {
  const int N = o.n, kk = std::min(o.nb, N);
  for (const int ld : {N, N + 8}) {
    dev<T> A(std::size_t(ld) * N), V(std::size_t(ld) * kk), W(std::size_t(kk) * N * 8);
    tessera::bench::fill_uniform(A.p, A.n, 7, g.s);
    tessera::bench::fill_uniform(V.p, V.n, 8, g.s);
    tessera::bench::fill_uniform(W.p, W.n, 9, g.s);
    for (const int cols : {N / 4, N / 2, N - kk}) {
      const double f = 2.0 * kk * double(kk) * cols;
      // W += V^T A2 (TN), A2 -= Z W (NN, C in the matrix), and 8 rows of W_i = V_i^T A2_i at once.
      const double tn = g.median_ms(o.runs, [&] {
        cublas_ok(gemm(g.h, CUBLAS_OP_T, CUBLAS_OP_N, kk, cols, kk, T(1), V.p, ld, A.p, ld, T(1), W.p, kk), "tn");
      });
      const double nn = g.median_ms(o.runs, [&] {
        cublas_ok(gemm(g.h, CUBLAS_OP_N, CUBLAS_OP_N, kk, cols, kk, T(-1), V.p, ld, W.p, kk, T(1), A.p, ld), "nn");
      });
      const double batched = g.median_ms(o.runs, [&] {
        cublas_ok(gemm_strided(g.h, CUBLAS_OP_T, CUBLAS_OP_N, kk, cols, kk, T(1),
                                                              V.p, ld, kk, A.p, ld, kk, T(0), W.p, kk,
                                                              (long long)kk * cols, 8),
                  "batched");
      });
      // The same NN GEMM as a strided batch of column chunks (the left operand shared).
      const int chunk = 1024, pieces = cols / chunk;
      const double fs = 2.0 * kk * double(kk) * chunk * pieces;
      const double split = g.median_ms(o.runs, [&] {
        cublas_ok(gemm_strided(g.h, CUBLAS_OP_N, CUBLAS_OP_N, kk, chunk, kk, T(-1), V.p, ld, 0, W.p, kk,
                               (long long)kk * chunk, T(1), A.p, ld, (long long)ld * chunk, pieces),
                  "split");
      });
      if (o.json)
        std::printf("{\"bench\":\"gemm_shape\",\"precision\":\"%s\",\"kk\":%d,\"cols\":%d,\"ld\":%d,"
                    "\"tn_gflops\":%.1f,\"nn_gflops\":%.1f,\"batched8_gflops\":%.1f,\"nn_split_gflops\":%.1f}\n",
                    letter<T>(), kk, cols, ld, f / (tn * 1e6), f / (nn * 1e6), 8 * f / (batched * 1e6),
                    fs / (split * 1e6));
      else
        std::printf("%s kk %d cols %6d ld %6d:  TN %6.0f  NN %6.0f  batched x8 %6.0f  NN in 1024-column pieces "
                    "%6.0f GFLOP/s\n",
                    gemm_name<T>(), kk, cols, ld, f / (tn * 1e6), f / (nn * 1e6), 8 * f / (batched * 1e6),
                    fs / (split * 1e6));
    }
  }
}

// Median milliseconds of f on a high-priority stream while `background` keeps a low-priority
// stream busy (enough calls of it, each ~background_ms, to outlast every timed f); prepare runs
// before each timing on the high-priority stream, untimed.
template <class Prepare, class F, class Background>
double contended_ms(int runs, double f_alone_ms, double background_ms, Prepare&& prepare, F&& f,
                    Background&& background) {
  int least = 0, greatest = 0;
  cuda_ok(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
  cudaStream_t hi = nullptr, lo = nullptr;
  cuda_ok(cudaStreamCreateWithPriority(&hi, cudaStreamNonBlocking, greatest), "cudaStreamCreate");
  cuda_ok(cudaStreamCreateWithPriority(&lo, cudaStreamNonBlocking, least), "cudaStreamCreate");
  cublasHandle_t hh = nullptr, hl = nullptr;
  cublas_ok(cublasCreate(&hh), "cublasCreate");
  cublas_ok(cublasCreate(&hl), "cublasCreate");
  cublas_ok(cublasSetStream(hh, hi), "cublasSetStream");
  cublas_ok(cublasSetStream(hl, lo), "cublasSetStream");
  for (cublasHandle_t h : {hh, hl}) cublas_ok(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  std::vector<cudaEvent_t> ev(2 * runs);
  for (auto& e : ev) cuda_ok(cudaEventCreate(&e), "cudaEventCreate");
  prepare(hi);
  f(hh);  // warm-up
  cuda_ok(cudaStreamSynchronize(hi), "warm-up");
  // Under contention f may take several times longer than alone.
  const int calls = 2 + static_cast<int>(std::ceil(8.0 * (runs + 1) * f_alone_ms / std::max(background_ms, 1e-3)));
  for (int i = 0; i < calls; ++i) background(hl);
  for (int r = 0; r < runs; ++r) {
    prepare(hi);
    cuda_ok(cudaEventRecord(ev[2 * r], hi), "cudaEventRecord");
    f(hh);
    cuda_ok(cudaEventRecord(ev[2 * r + 1], hi), "cudaEventRecord");
  }
  cuda_ok(cudaStreamSynchronize(hi), "sync");
  cudaEvent_t lo_done = nullptr;
  cuda_ok(cudaEventCreate(&lo_done), "cudaEventCreate");
  cuda_ok(cudaEventRecord(lo_done, lo), "cudaEventRecord");
  const bool outlasted = cudaEventQuery(lo_done) == cudaErrorNotReady;
  cuda_ok(cudaStreamSynchronize(lo), "sync");
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    float ms = 0;
    cuda_ok(cudaEventElapsedTime(&ms, ev[2 * r], ev[2 * r + 1]), "cudaEventElapsedTime");
    t.push_back(ms);
  }
  for (auto& e : ev) cudaEventDestroy(e);
  cudaEventDestroy(lo_done);
  cublasDestroy(hh);
  cublasDestroy(hl);
  cudaStreamDestroy(hi);
  cudaStreamDestroy(lo);
  if (!outlasted) std::fprintf(stderr, "contended_ms: the background finished first; the figure is optimistic\n");
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// --panel: gpu_geqrt on m x nb panels (the blocked QR's panels at a few steps of an n x n
// factorization), well conditioned (uniform random: CholeskyQR2 and reconstruction) beside nearly
// dependent columns (each a 1e-10 (double) or 1e-5 (float) step from the panel's first, which
// sends every block to the one-barrier-per-column Householder kernel). Times exclude restoring A.
template <class T>
void panel_bench(const options& o, gpu& g) {
  const int nb = o.nb, ib = gpu_geqrt_max_ib;
  const T delta = sizeof(T) == 8 ? T(1e-10) : T(1e-5);
  if (!o.json)
    std::printf("\n%sGEQRT panels, nb = %d, ib = %d (ms, median of %d; host: the calls' CPU time)\n"
                "%8s %12s %14s %8s %10s %10s\n", letter<T>(), nb, ib, o.runs, "rows", "random",
                "near-dependent", "ratio", "host rand", "host near");
  for (const int m : {o.n, o.n / 2, o.n / 4, o.n / 8, o.n / 32}) {
    if (m < nb) continue;
    dev<T> saved(std::size_t(m) * nb), A(std::size_t(m) * nb), Tf(std::size_t(nb) * nb);
    const std::size_t lwork = gpu_geqrt_workspace_size(m, nb, ib);
    dev<T> work(lwork);
    double ms[2] = {0, 0}, host_ms[2] = {0, 0};
    for (int kind = 0; kind < 2; ++kind) {
      tessera::bench::fill_uniform(saved.p, saved.n, 11 + kind, g.s);
      if (kind == 1)  // column j := column 0 + delta * column j
        for (int j = 1; j < nb; ++j)
          cublas_ok(geam(g.h, CUBLAS_OP_N, CUBLAS_OP_N, m, 1, T(1), saved.p, m, delta, saved.p + std::size_t(j) * m, m,
                         saved.p + std::size_t(j) * m, m), "geam");
      const auto restore = [&] {
        cuda_ok(cudaMemcpyAsync(A.p, saved.p, sizeof(T) * A.n, cudaMemcpyDeviceToDevice, g.s), "copy");
      };
      const double copy = g.median_ms(o.runs, restore);
      std::vector<double> host;  // the calls' own time on the CPU (the GPU may wait for them)
      ms[kind] = g.median_ms(o.runs, [&] {
        restore();
        const auto t0 = std::chrono::steady_clock::now();
        gpu_geqrt<T>(m, nb, ib, A.p, m, Tf.p, nb, work.p, lwork, g.h);
        host.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }) - copy;
      std::sort(host.begin(), host.end());
      host_ms[kind] = host[host.size() / 2];
    }
    // One block of ib columns alone: the two ways to factor it (internal calls, engine.hpp).
    {
      int sms = 0;
      cuda_ok(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "sms");
      // Its own workspace, in doubles: gpu_geqrt's, counted in elements of T, is too small for
      // these offsets in single precision (the memset of gram failed).
      namespace detail = tessera::kernels::detail;
      dev<double> bw(std::size_t(m) * ib + 64 + 4096 + detail::cholqr_scratch_bytes() / 8 + 2048);
      T* tau = reinterpret_cast<T*>(bw.p);
      T* Vc = tau + 64;
      T* scratch = Vc + std::size_t(m) * ib;
      void* state = scratch + 4096;
      tessera::bench::fill_uniform(saved.p, saved.n, 13, g.s);
      const auto restore = [&] {
        cuda_ok(cudaMemcpyAsync(A.p, saved.p, sizeof(T) * std::size_t(m) * ib, cudaMemcpyDeviceToDevice, g.s), "copy");
      };
      const double copy = g.median_ms(o.runs, restore);
      auto* gram = reinterpret_cast<double*>(static_cast<unsigned char*>(state) + detail::cholqr_scratch_bytes());
      const int* done = nullptr;
      const double chol = g.median_ms(o.runs, [&] {
        restore();
        detail::cholqr_clear("bench", state, 1, g.s);
        const detail::cholqr_handoff h =
            detail::cholqr_block<T>("bench", m, ib, A.p, m, tau, Vc, m, Tf.p, nb, state, sms, g.s);
        detail::householder_block<T>("bench", m, ib, A.p, m, tau, Vc, m, Tf.p, nb, scratch, h.gram, sms, h.done, g.s);
        done = h.done;
      }) - copy;
      int done_host = 0;
      cuda_ok(cudaMemcpy(&done_host, done, sizeof(int), cudaMemcpyDeviceToHost), "copy flag");
      const double house = g.median_ms(o.runs, [&] {
        restore();
        cuda_ok(cudaMemsetAsync(gram, 0, sizeof(double) * 32 * 32, g.s), "memset");
        detail::householder_block<T>("bench", m, ib, A.p, m, tau, Vc, m, Tf.p, nb, scratch, gram, sms, nullptr, g.s);
      }) - copy;
      if (!o.json)
        std::printf("%8s block %d x %d: CholeskyQR2 %.3f ms (%s), Householder kernel %.3f ms\n", "", m, ib, chol,
                    done_host ? "accepted" : "fell back", house);
    }
    // At the first step, the update the panel feeds: gpu_larfb on the m x (m - nb) rest, beside
    // one GEMM of the same flops shape (m x (m - nb) x nb) as a yardstick.
    if (m == o.n) {
      const int w = m - nb;
      dev<T> C(std::size_t(m) * w), lw(gpu_larfb_workspace_size(m, w, nb));
      tessera::bench::fill_uniform(C.p, C.n, 14, g.s);
      const double larfb = g.median_ms(o.runs, [&] {
        gpu_larfb<T>(m, w, nb, A.p, m, Tf.p, nb, C.p, m, lw.p, lw.n, g.h);
      });
      const double gemm_ms = g.median_ms(o.runs, [&] {
        cublas_ok(gemm(g.h, CUBLAS_OP_N, CUBLAS_OP_N, m, w, nb, T(1), A.p, m, lw.p + std::size_t(m) * nb, nb, T(1),
                       C.p, m), "gemm");
      });
      const double flops = 4.0 * m * double(w) * nb;
      if (!o.json)
        std::printf("%8s update %d x %d by %d reflectors: gpu_larfb %.3f ms (%.1f TFLOP/s), two GEMMs "
                    "%d x %d x %d %.3f ms (%.1f TFLOP/s)\n", "", m, w, nb, larfb, flops / larfb / 1e9, m, w, nb,
                    2 * gemm_ms, flops / (2 * gemm_ms) / 1e9);
      // The panel as the factorization runs it: on a high-priority stream while that update runs
      // on a low-priority one (its own copy of V and T: the panel rewrites A).
      dev<T> Vb(std::size_t(m) * nb), Tb(std::size_t(nb) * nb);
      cuda_ok(cudaMemcpyAsync(Vb.p, A.p, sizeof(T) * Vb.n, cudaMemcpyDeviceToDevice, g.s), "copy");
      cuda_ok(cudaMemcpyAsync(Tb.p, Tf.p, sizeof(T) * Tb.n, cudaMemcpyDeviceToDevice, g.s), "copy");
      tessera::bench::fill_uniform(saved.p, saved.n, 11, g.s);
      cuda_ok(cudaStreamSynchronize(g.s), "sync");
      const double contended = contended_ms(o.runs, ms[0], larfb, [&](cudaStream_t s) {
        cuda_ok(cudaMemcpyAsync(A.p, saved.p, sizeof(T) * A.n, cudaMemcpyDeviceToDevice, s), "copy");
      }, [&](cublasHandle_t h) {
        gpu_geqrt<T>(m, nb, ib, A.p, m, Tf.p, nb, work.p, lwork, h);
      }, [&](cublasHandle_t h) {
        gpu_larfb<T>(m, w, nb, Vb.p, m, Tb.p, nb, C.p, m, lw.p, lw.n, h);
      });
      if (!o.json)
        std::printf("%8s panel %d x %d beside that update (high-priority stream): %.3f ms, alone %.3f ms\n", "", m,
                    nb, contended, ms[0]);
    }
    if (o.json)
      std::printf("{\"bench\":\"panel\",\"precision\":\"%s\",\"rows\":%d,\"nb\":%d,\"ib\":%d,"
                  "\"ms_random\":%.4f,\"ms_near_dependent\":%.4f,\"host_ms_random\":%.4f,"
                  "\"host_ms_near_dependent\":%.4f}\n", letter<T>(), m, nb, ib, ms[0], ms[1], host_ms[0], host_ms[1]);
    else
      std::printf("%8d %12.3f %14.3f %7.2fx %10.3f %10.3f\n", m, ms[0], ms[1], ms[1] / ms[0], host_ms[0], host_ms[1]);
    std::fflush(stdout);
  }
}

// The blocked QR's update at every step k (gpu_larfb: Q_k^T applied to the trailing rows - nb x
// cols matrix in a's storage, ld n), 4 rows nb cols flops. T = 0 leaves C as it is, so the
// repeated timings see the same data while every GEMM runs in full.
template <class T>
tessera::bench::series blocked_steps(const options& o, gpu& g, T* a, double gemm_gflops) {
  const int N = o.n, nb = std::min(o.blocked_nb, o.n);
  tessera::bench::series line{std::string("gpu_larfb (blocked QR) ") + (sizeof(T) == 8 ? "double" : "single"), {}, {}};
  if (nb <= 0) return line;
  dev<T> V(std::size_t(N) * nb), Tz(std::size_t(nb) * nb), work(gpu_larfb_workspace_size(N, N - nb, nb));
  tessera::bench::fill_uniform(V.p, V.n, 6, g.s);
  cuda_ok(cudaMemsetAsync(Tz.p, 0, sizeof(T) * Tz.n, g.s), "clear T");
  if (!o.json)
    std::printf("\n%s: blocked QR's gpu_larfb at every step, n=%d nb=%d (median of %d)\n%6s %7s %7s %10s %10s %8s\n",
                letter<T>(), N, nb, o.runs, "k", "rows", "cols", "time_ms", "GFLOP/s", "of_gemm");
  double total_ms = 0, total_flops = 0;
  for (int k = 0; (k + 1) * nb < N; ++k) {
    const int rows = N - k * nb, cols = N - (k + 1) * nb;
    T* c = a + std::size_t(k) * nb + std::size_t(k + 1) * nb * N;
    const double ms = g.median_ms(o.runs, [&] {
      gpu_larfb<T>(rows, cols, nb, V.p, N, Tz.p, nb, c, N, work.p, work.n, g.h);
    });
    const double flops = 4.0 * rows * double(nb) * cols, rate = flops / (ms * 1e6);
    total_ms += ms;
    total_flops += flops;
    line.x.push_back(k);
    line.y.push_back(rate);
    if (o.json)
      std::printf("{\"bench\":\"larfb_step\",\"precision\":\"%s\",\"n\":%d,\"nb\":%d,\"k\":%d,\"rows\":%d,"
                  "\"cols\":%d,\"time_ms\":%.4f,\"gflops\":%.1f}\n", letter<T>(), N, nb, k, rows, cols, ms, rate);
    else
      std::printf("%6d %7d %7d %10.3f %10.0f %7.0f%%\n", k, rows, cols, ms, rate,
                  gemm_gflops > 0 ? 100 * rate / gemm_gflops : 0.0);
  }
  if (!o.json)
    std::printf("all steps: %.1f ms of GPU update, %.0f GFLOP/s overall\n", total_ms, total_flops / (total_ms * 1e6));
  return line;
}

template <class T>
void run_precision(const options& o, gpu& g) {
  const int N = o.n, nb = o.nb, mt = (N + nb - 1) / nb;
  const int ibl = std::min(o.ib, nb);

  // cuBLAS GEMM gemm_size^3 in the same run: the rate the update is measured against.
  double gemm_gflops = 0;
  if (o.gemm_size > 0) {
    const int s = o.gemm_size;
    dev<T> a(std::size_t(s) * s), b(std::size_t(s) * s), c(std::size_t(s) * s);
    tessera::bench::fill_uniform(a.p, a.n, 1, g.s);
    tessera::bench::fill_uniform(b.p, b.n, 2, g.s);
    tessera::bench::fill_uniform(c.p, c.n, 3, g.s);
    const double ms = g.median_ms(o.runs, [&] {
      cublas_ok(gemm(g.h, CUBLAS_OP_N, CUBLAS_OP_N, s, s, s, T(1), a.p, s, b.p, s, T(0), c.p, s),
                "gemm");
    });
    gemm_gflops = 2.0 * s * double(s) * s / (ms * 1e6);
    if (o.json)
      std::printf("{\"bench\":\"gemm\",\"precision\":\"%s\",\"size\":%d,\"time_ms\":%.4f,"
                  "\"gflops\":%.1f}\n", letter<T>(), s, ms, gemm_gflops);
    else
      std::printf("cuBLAS %s %d^3: %.3f ms, %.0f GFLOP/s (median of %d)\n", gemm_name<T>(), s, ms,
                  gemm_gflops, o.runs);
  }

  // The trailing matrix (n x n, ld n), the panel of V tiles (n x nb, ld n) and packed T tiles.
  // V and T come from one real TPQRT, replicated: each Q_i is orthogonal, so repeated timings
  // neither grow nor shrink the data.
  dev<T> A(std::size_t(N) * N), P(std::size_t(N) * nb), Tt(std::size_t(ibl) * nb * mt);
  tessera::bench::fill_uniform(A.p, A.n, 4, g.s);
  {
    std::mt19937_64 r(5);
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<T> R(std::size_t(nb) * nb), V(std::size_t(nb) * nb), Tb(std::size_t(ibl) * nb),
        work(std::size_t(ibl) * nb);
    for (auto& x : R) x = T(u(r));
    for (auto& x : V) x = T(u(r));
    if (tessera::blas::tpqrt(nb, nb, 0, ibl, R.data(), nb, V.data(), nb, Tb.data(), ibl, work.data()) != 0)
      throw std::runtime_error("LAPACKE tpqrt failed");
    for (int i = 0; i < mt; ++i) {
      const int mi = std::min(nb, N - i * nb);
      cuda_ok(cudaMemcpy2D(P.p + std::size_t(i) * nb, sizeof(T) * N, V.data(), sizeof(T) * nb,
                           sizeof(T) * mi, nb, cudaMemcpyHostToDevice),
              "upload V");
      cuda_ok(cudaMemcpy(Tt.p + std::size_t(i) * ibl * nb, Tb.data(), sizeof(T) * Tb.size(),
                         cudaMemcpyHostToDevice),
              "upload T");
    }
  }
  cuda_ok(cudaDeviceSynchronize(), "setup");  // the legacy-stream uploads too

  // Workspace for the largest step (k = 0), reused by every step and variant.
  const int max_count = mt - 1, max_cols = N - std::min(N, nb);
  const std::size_t lwork =
      std::max({gpu_sssmqr_workspace_size(max_count, nb, nb, max_cols),
                gpu_sssmqr_blocked_workspace_size(nb, o.ib, max_cols)});
  dev<T> work(lwork);

  struct step { int k, kk, count, m_last, rows, cols; double flops; };
  const auto make_step = [&](int k) {
    step s{};
    s.k = k;
    s.kk = std::min(nb, N - k * nb);
    s.count = mt - k - 1;
    s.m_last = N - (mt - 1) * nb;
    s.rows = N - (k + 1) * nb;
    s.cols = N - (k + 1) * nb;
    s.flops = 4.0 * s.rows * double(s.kk) * s.cols;
    return s;
  };
  // Pointers of step k: A1 = tile (k, k+1), A2 = tile (k+1, k+1), V = panel rows below tile row k.
  const auto A1 = [&](const step& s) { return A.p + std::size_t(s.k) * nb + std::size_t(s.k + 1) * nb * N; };
  const auto A2 = [&](const step& s) { return A.p + std::size_t(s.k + 1) * nb + std::size_t(s.k + 1) * nb * N; };
  const auto Vp = [&](const step& s) { return P.p + std::size_t(s.k + 1) * nb; };
  const std::ptrdiff_t strideT = std::ptrdiff_t(ibl) * nb;

  const auto sssmqr = [&](const step& s) {
    gpu_sssmqr<T>(s.count, nb, s.m_last, s.cols, s.kk, o.ib, A1(s), N, A2(s), N, Vp(s), N, Tt.p,
                  ibl, strideT, work.p, work.n, g.h);
  };
  const auto gflops = [](const step& s, double ms) { return s.flops / (ms * 1e6); };

  if (o.all_steps) {
    double total_ms = 0, total_flops = 0;
    tessera::bench::series per_step{std::string(letter<T>()) == "s" ? "SSSMQR single" : "SSSMQR double", {}, {}};
    if (!o.json)
      std::printf("\n%s: gpu_sssmqr at every step, n=%d nb=%d ib=%d (median of %d)\n"
                  "%6s %7s %7s %10s %10s %8s\n", letter<T>(), N, nb, o.ib, o.runs, "k", "rows",
                  "cols", "time_ms", "GFLOP/s", "of_gemm");
    for (int k = 0; k + 1 < mt; ++k) {
      const step s = make_step(k);
      const double ms = g.median_ms(o.runs, [&] { sssmqr(s); });
      total_ms += ms;
      total_flops += s.flops;
      per_step.x.push_back(k);
      per_step.y.push_back(gflops(s, ms));
      if (o.json)
        std::printf("{\"bench\":\"sssmqr_step\",\"precision\":\"%s\",\"n\":%d,\"nb\":%d,\"ib\":%d,"
                    "\"k\":%d,\"rows\":%d,\"cols\":%d,\"time_ms\":%.4f,\"gflops\":%.1f}\n",
                    letter<T>(), N, nb, o.ib, k, s.rows, s.cols, ms, gflops(s, ms));
      else
        std::printf("%6d %7d %7d %10.3f %10.0f %7.0f%%\n", k, s.rows, s.cols, ms, gflops(s, ms),
                    gemm_gflops > 0 ? 100 * gflops(s, ms) / gemm_gflops : 0.0);  // 0%: --gemm 0
    }
    if (o.json)
      std::printf("{\"bench\":\"sssmqr_total\",\"precision\":\"%s\",\"n\":%d,\"nb\":%d,\"ib\":%d,"
                  "\"time_ms\":%.3f,\"gflops\":%.1f}\n", letter<T>(), N, nb, o.ib, total_ms,
                  total_flops / (total_ms * 1e6));
    else
      std::printf("all steps: %.1f ms of GPU update, %.0f GFLOP/s overall\n", total_ms,
                  total_flops / (total_ms * 1e6));
    const tessera::bench::series larfb_steps = blocked_steps<T>(o, g, A.p, gemm_gflops);
    if (!o.plot.empty()) {
      // One file per precision: FILE.svg becomes FILE-d.svg / FILE-s.svg.
      std::string path = o.plot;
      const auto dot = path.rfind('.');
      path.insert(dot == std::string::npos ? path.size() : dot, std::string("-") + letter<T>());
      std::vector<tessera::bench::series> lines{per_step};
      if (!larfb_steps.x.empty()) lines.push_back(larfb_steps);
      if (gemm_gflops > 0)
        lines.push_back({"cuBLAS gemm " + std::to_string(o.gemm_size) + "^3", {per_step.x.front(), per_step.x.back()},
                         {gemm_gflops, gemm_gflops}});
      tessera::bench::write_line_chart(path, "GPU update per step k, n=" + std::to_string(N) + ": aggregated SSSMQR (nb=" +
                                                 std::to_string(nb) + " ib=" + std::to_string(o.ib) +
                                                 "), blocked QR's gpu_larfb (nb=" + std::to_string(o.blocked_nb) + ")",
                                       "step k", "GFLOP/s", lines);
      if (!o.json) std::printf("plot: %s\n", path.c_str());
    }
    return;
  }

  std::vector<int> ks = o.steps;
  if (ks.empty()) ks = {0, mt / 4, mt / 2, 3 * mt / 4, 7 * mt / 8};
  ks.erase(std::remove_if(ks.begin(), ks.end(), [&](int k) { return k < 0 || k + 1 >= mt; }),
           ks.end());
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());

  if (!o.json)
    std::printf("\n%s: one step, n=%d nb=%d ib=%d (median of %d; GFLOP/s = 4 rows kk cols / time)\n"
                "%5s %6s %6s %-22s %10s %10s %8s\n", letter<T>(), N, nb, o.ib, o.runs, "k", "rows",
                "cols", "variant", "time_ms", "GFLOP/s", "of_gemm");
  // The prepare row has no rate of its own: its time is part of the step's, not the update's flops.
  const auto report = [&](const step& s, const std::string& variant, double ms,
                          bool rated = true) {
    const double rate = gflops(s, ms);
    if (o.json) {
      std::printf("{\"bench\":\"sssmqr\",\"precision\":\"%s\",\"n\":%d,\"nb\":%d,\"ib\":%d,"
                  "\"k\":%d,\"rows\":%d,\"cols\":%d,\"variant\":\"%s\",\"time_ms\":%.4f",
                  letter<T>(), N, nb, o.ib, s.k, s.rows, s.cols, variant.c_str(), ms);
      if (rated) std::printf(",\"gflops\":%.1f", rate);
      std::printf("}\n");
    } else {
      std::printf("%5d %6d %6d %-22s %10.3f", s.k, s.rows, s.cols, variant.c_str(), ms);
      if (rated) std::printf(" %10.0f", rate);
      else std::printf(" %10s", "-");
      if (rated && gemm_gflops > 0) std::printf(" %7.0f%%\n", 100 * rate / gemm_gflops);
      else std::printf(" %8s\n", "-");
    }
    std::fflush(stdout);
  };
  for (const int k : ks) {
    const step s = make_step(k);
    report(s, "sssmqr", g.median_ms(o.runs, [&] { sssmqr(s); }));
    // Its two parts: the factors of every TSQRT (once per step), then the GEMM sweep.
    T* factors = work.p;
    const std::size_t fsize = gpu_sssmqr_factors_size(s.count, nb, s.kk);
    T* rest = work.p + fsize;
    const std::size_t lrest = work.n - fsize;
    const auto prepare = [&] {
      gpu_sssmqr_prepare<T>(s.count, nb, s.m_last, s.kk, o.ib, Vp(s), N, Tt.p, ibl, strideT,
                            factors, rest, lrest, g.h);
    };
    report(s, "  prepare", g.median_ms(o.runs, prepare), false);
    // The sweep with room for 1, 2, 4 and gpu_sssmqr_batch_rows rows per batch.
    for (int rows = 1; rows <= gpu_sssmqr_batch_rows; rows *= 2) {
      const std::size_t lapply = std::min(lrest, gpu_sssmqr_apply_workspace_size(rows, s.kk, s.cols));
      report(s, "  apply, " + std::to_string(rows) + " rows/batch", g.median_ms(o.runs, [&] {
               gpu_sssmqr_apply<T>(s.count, nb, s.m_last, s.cols, s.kk, A1(s), N, A2(s), N, Vp(s),
                                   N, factors, rest, lapply, g.h);
             }));
    }
    if (o.explore) {
      prepare();
      for (int form = 0; form < 2; ++form)
        report(s, form == 0 ? "  apply, 3 GEMMs" : "  apply, TRMM+GEAM", g.median_ms(o.runs, [&] {
                 explore_apply<T>(form, s.count, nb, s.m_last, s.cols, s.kk, A1(s), N, A2(s), N,
                                  Vp(s), N, factors, rest, g.h, g.s);
               }));
    }
    if (o.blocked)
      report(s, "sssmqr_blocked (ib)", g.median_ms(o.runs, [&] {
               gpu_sssmqr_blocked<T>(s.count, nb, s.m_last, s.cols, s.kk, o.ib, A1(s), N, A2(s),
                                     N, Vp(s), N, Tt.p, ibl, strideT, work.p, work.n, g.h);
             }));
  }

  if (o.explore) {
    // The explored forms must compute what gpu_sssmqr computes: a small step on copies.
    const step s = make_step(std::max(0, mt - 6));
    const int rows = s.rows + nb, cols = std::min(s.cols, 1000);
    std::vector<T> ref(std::size_t(rows) * cols), alt(ref.size());
    dev<T> save(ref.size());
    T* top = A1(s);
    const auto copy = [&](T* dst, int ldd, const T* src, int lds, cudaMemcpyKind kind) {
      cuda_ok(cudaMemcpy2DAsync(dst, sizeof(T) * ldd, src, sizeof(T) * lds, sizeof(T) * rows, cols,
                                kind, g.s), "copy");
      cuda_ok(cudaStreamSynchronize(g.s), "sync");
    };
    copy(save.p, rows, top, N, cudaMemcpyDeviceToDevice);
    gpu_sssmqr<T>(s.count, nb, s.m_last, cols, s.kk, o.ib, A1(s), N, A2(s), N, Vp(s), N, Tt.p, ibl,
                  strideT, work.p, work.n, g.h);
    copy(ref.data(), rows, top, N, cudaMemcpyDeviceToHost);
    T* factors = work.p;
    T* rest = work.p + gpu_sssmqr_factors_size(s.count, nb, s.kk);
    for (int form = 0; form < 2; ++form) {
      copy(top, N, save.p, rows, cudaMemcpyDeviceToDevice);
      gpu_sssmqr_prepare<T>(s.count, nb, s.m_last, s.kk, o.ib, Vp(s), N, Tt.p, ibl, strideT,
                            factors, rest, work.n - gpu_sssmqr_factors_size(s.count, nb, s.kk),
                            g.h);
      explore_apply<T>(form, s.count, nb, s.m_last, cols, s.kk, A1(s), N, A2(s), N, Vp(s), N,
                       factors, rest, g.h, g.s);
      copy(alt.data(), rows, top, N, cudaMemcpyDeviceToHost);
      std::printf("explore check: form %d vs gpu_sssmqr, rel. difference %.2e\n", form,
                  rel_diff(alt, ref));
    }
  }
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) v.push_back(std::stoi(item));
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Aggregated SSSMQR update on the GPU (gpu_sssmqr) vs cuBLAS GEMM"};
  options o;
  std::string steps;
  app.add_option("--n", o.n, "order of the simulated factorization")->check(CLI::PositiveNumber);
  app.add_option("--nb", o.nb, "tile size")->check(CLI::PositiveNumber);
  app.add_option("--ib", o.ib, "inner block size")->check(CLI::PositiveNumber);
  app.add_option("--runs", o.runs, "timed runs per measurement (median)")->check(CLI::PositiveNumber);
  app.add_option("--precision", o.precision, "d, s or both")->check(CLI::IsMember({"d", "s", "both"}));
  app.add_option("--steps", steps, "comma-separated steps k to measure (default: 0, mt/4, mt/2, 3mt/4, 7mt/8)");
  app.add_option("--gemm", o.gemm_size, "order of the cuBLAS GEMM baseline (0: none)")->check(CLI::NonNegativeNumber);
  app.add_flag("--all-steps", o.all_steps, "time gpu_sssmqr at every step k (Figure 7b), and gpu_larfb at --blocked-nb");
  app.add_option("--blocked-nb", o.blocked_nb, "--all-steps: panel width of the blocked QR's steps (0: skip them)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--plot", o.plot, "with --all-steps: write the per-step rate as SVG (FILE-d.svg, FILE-s.svg)");
  app.add_flag("--json", o.json, "JSON lines instead of tables");
  app.add_flag("--explore", o.explore, "also time other formulations of the apply step");
  app.add_flag("!--no-blocked", o.blocked, "skip the ib-blocked baseline");
  app.add_flag("--panel", o.panel, "only time gpu_geqrt on m x nb panels, random and nearly dependent columns");
  app.add_flag("--gemm-shapes", o.gemm_shapes, "only time the update's GEMM shapes (kk = nb) at ld n and n + 8");
  CLI11_PARSE(app, argc, argv);
  try {
    o.steps = parse_list(steps);

    int dev_id = 0;
    cudaDeviceProp prop{};
    cuda_ok(cudaGetDevice(&dev_id), "cudaGetDevice");
    cuda_ok(cudaGetDeviceProperties(&prop, dev_id), "cudaGetDeviceProperties");
    int runtime = 0, cublas_version = 0;
    cuda_ok(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
    gpu g;
    cublas_ok(cublasGetVersion(g.h, &cublas_version), "cublasGetVersion");
    if (o.json)
      std::printf("{\"bench\":\"machine\",\"gpu\":\"%s\",\"sms\":%d,\"memory_gib\":%.1f,"
                  "\"cuda_runtime\":%d,\"cublas\":%d}\n", prop.name, prop.multiProcessorCount,
                  double(prop.totalGlobalMem) / (1 << 30), runtime, cublas_version);
    else
      std::printf("GPU: %s, %d SMs, %.1f GiB; CUDA runtime %d, cuBLAS %d; math mode default (no "
                  "TF32)\nflops per TSQRT applied: 4 * m_i * kk * cols (LAWN 41, TPMQRT l = 0)\n",
                  prop.name, prop.multiProcessorCount, double(prop.totalGlobalMem) / (1 << 30),
                  runtime, cublas_version);
    if (o.panel) {
      if (o.precision != "s") panel_bench<double>(o, g);
      if (o.precision != "d") panel_bench<float>(o, g);
      return 0;
    }
    if (o.gemm_shapes) {
      if (o.precision != "s") gemm_shapes<double>(o, g);
      if (o.precision != "d") gemm_shapes<float>(o, g);
      return 0;
    }
    if (o.precision != "s") run_precision<double>(o, g);
    if (o.precision != "d") run_precision<float>(o, g);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera_sssmqr_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
