// gpu_backend (qr/src/update_backend.hpp): the QR updates' operations on cuBLAS and Tessera's GPU
// kernels, on three streams (lane 0: R; lane 1: Q; lane 2: Q^T B).
#if TESSERA_QR_CUDA
#include <cuda.h>  // types of the driver's stream wait, found at run time (no libcuda link)
#include <cuda_runtime.h>

#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "tessera/kernels_gpu/cublas.hpp"
#include "tessera/kernels_gpu/gpu_fill.hpp"
#include "tessera/kernels_gpu/gpu_finite.hpp"
#include "tessera/kernels_gpu/gpu_geqrt.hpp"
#include "tessera/kernels_gpu/gpu_givens.hpp"
#include "tessera/kernels_gpu/gpu_small_panel.hpp"
#include "tessera/kernels_gpu/gpu_tpqrt.hpp"
#include "tessera/kernels_gpu/gpu_larfb.hpp"
#include "tessera/kernels_gpu/gpu_rotations.hpp"
#include "tessera/kernels_gpu/gpu_tsmqr.hpp"
#include "tessera/qr/factorize.hpp"
#include "tessera/sched/memory.hpp"
#include "update_backend.hpp"

namespace tessera::qr::detail {

namespace {
constexpr const char* who = "tessera::qr::updatable (GPU)";

void ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(who) + ": " + what + ": " + cudaGetErrorString(e));
}
void ok(cublasStatus_t s, const char* what) { tessera::cublas::check(who, what, s); }

cublasOperation_t op(char t) { return t == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N; }
}  // namespace

struct gpu_resources {
  cudaStream_t s[lanes] = {};
  cublasHandle_t h[lanes] = {};
  cudaEvent_t ev = nullptr;
  int sms = 0;  // the device's SM count
  // count_non_finite's stream and device word (from the workspace pool), made on its first call:
  // a pinned word (cudaHostAlloc) cost about 1.3 ms there, the first device-input update of every
  // factorization (docs/results/2026-11-28-update-checks-h200.md).
  cudaStream_t check = nullptr;
  unsigned* count = nullptr;
  // tp_chain's panel flags, the epoch of its last call (the flags only grow, so a lane waiting for
  // epoch never sees an earlier call's flag), that call's lane, and the driver's stream wait
  // (looked up on the first tp_chain).
  int* flags = nullptr;
  std::size_t nflags = 0;
  int epoch = 0, chain_lane = 0;
  using wait_fn = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
  wait_fn wait32 = nullptr;
  // The tickets and flags of the Givens sweeps and the Hessenberg sweep (their kernels' calls
  // clear them), a buffer a lane (gpu_backend::sync_ints).
  int* gsync[lanes] = {};
  std::size_t ngsync[lanes] = {};
  gpu_resources() {
    // Lane R at the highest priority: its panels are the updates' chain, and the other lanes'
    // wide kernels would otherwise hold the SMs it waits for.
    int lo = 0, hi = 0;
    ok(cudaDeviceGetStreamPriorityRange(&lo, &hi), "cudaDeviceGetStreamPriorityRange");
    for (int i = 0; i < lanes; ++i) {
      ok(cudaStreamCreateWithPriority(&s[i], cudaStreamNonBlocking, i == lane_r ? hi : lo), "cudaStreamCreate");
      ok(cublasCreate(&h[i]), "cublasCreate");
      ok(cublasSetStream(h[i], s[i]), "cublasSetStream");
    }
    ok(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreate");
    int dev = 0;
    ok(cudaGetDevice(&dev), "cudaGetDevice");
    ok(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "cudaDeviceGetAttribute");
  }
  void make_check() {
    if (check) return;
    if (!count) count = static_cast<unsigned*>(gpu_backend::acquire(sizeof(unsigned)));
    ok(cudaStreamCreateWithFlags(&check, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  void find_wait() {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &fn, 12000, cudaEnableDefault, &found) == cudaSuccess &&
        found == cudaDriverEntryPointSuccess)
      wait32 = reinterpret_cast<wait_fn>(fn);
    cudaGetLastError();
  }
  ~gpu_resources() {
    for (int i = 0; i < lanes; ++i) {
      if (s[i]) cudaStreamSynchronize(s[i]);
      if (h[i]) cublasDestroy(h[i]);
      if (s[i]) cudaStreamDestroy(s[i]);
    }
    if (ev) cudaEventDestroy(ev);
    if (check) cudaStreamSynchronize(check), cudaStreamDestroy(check);
    gpu_backend::release(count);
    gpu_backend::release(flags);
    for (int* g : gsync) gpu_backend::release(g);
  }
};

gpu_backend::gpu_backend() : _r(std::make_unique<gpu_resources>()) {
  _retired.reserve(max_retired + 1);  // so that retiring a buffer never allocates
}
gpu_backend::gpu_backend(gpu_backend&& o) noexcept
    : lane_checked(std::move(o)), _r(std::move(o._r)), _retired(std::exchange(o._retired, {})) {}
gpu_backend::~gpu_backend() {
  _r.reset();  // waits for the lanes' streams (gpu_resources' destructor)
  for (void* p : _retired) release(p);
}

// Workspace blocks freed by one factorization are kept for the next (up to 512 MiB a block, 4 GiB
// in all): an update that finds its workspace cached allocates nothing, so a sequence of
// updates, or many factorizations one after another, does not pay cudaMalloc/cudaFree (each a
// device-wide synchronisation) every time. Blocks go back only once their streams are done
// (update_state's destructor and ensure() synchronise first).
namespace {
struct block_pool {
  std::mutex mu;
  std::multimap<std::size_t, void*> free;   // size -> block
  std::unordered_map<void*, std::size_t> size_of;
  std::size_t cached = 0;
  static constexpr std::size_t max_block = std::size_t(512) << 20, max_total = std::size_t(4) << 30;
};
block_pool& pool() {
  static auto* p = new block_pool;  // never destroyed: buffers may be released at exit
  return *p;
}
void drop_cached(block_pool& bp) {
  for (auto& [sz, ptr] : bp.free) {
    cudaFree(ptr);
    bp.size_of.erase(ptr);
  }
  bp.free.clear();
  bp.cached = 0;
}
}  // namespace

void gpu_backend::release(void* p) noexcept {
  if (!p) return;
  auto& bp = pool();
  std::lock_guard lock(bp.mu);
  const auto it = bp.size_of.find(p);
  const std::size_t sz = it == bp.size_of.end() ? 0 : it->second;
  if (sz > 0 && sz <= block_pool::max_block && bp.cached + sz <= block_pool::max_total) {
    bp.free.emplace(sz, p);
    bp.cached += sz;
    return;
  }
  if (it != bp.size_of.end()) bp.size_of.erase(it);
  cudaFree(p);
}
void* gpu_backend::acquire(std::size_t bytes) {
  void* p = nullptr;
  bytes = (std::max<std::size_t>(bytes, 1) + 255) / 256 * 256;
  auto& bp = pool();
  std::lock_guard lock(bp.mu);
  // A cached block of at least the size and at most twice it.
  if (auto it = bp.free.lower_bound(bytes); it != bp.free.end() && it->first <= 2 * bytes) {
    p = it->second;
    bp.cached -= it->first;
    bp.free.erase(it);
    return p;
  }
  cudaError_t e = cudaMalloc(&p, bytes);
  if (e != cudaSuccess && bp.cached > 0) {  // the cache's blocks back to the device, then again
    cudaGetLastError();
    drop_cached(bp);
    e = cudaMalloc(&p, bytes);
  }
  if (e == cudaSuccess) {
    bp.size_of[p] = bytes;
    return p;
  }
  {
    cudaGetLastError();
    std::size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    throw tessera::out_of_memory(std::string(who) + ": " + std::to_string(bytes) +
                                 " bytes of device memory needed, " + std::to_string(free_b) +
                                 " free");
  }
  return p;
}

template <class T>
void gpu_backend::gemm(int lane, char ta, char tb, int m, int n, int k, T alpha, const T* A,
                       int lda, const T* B, int ldb, T beta, T* C, int ldc) {
  if (m <= 0 || n <= 0) return;
  note_gemm(lane, ta, tb, m, n, k, A, lda, B, ldb, beta != T(0), C, ldc);
  if (k <= 0) {  // cuBLAS with k = 0 scales C by beta, as BLAS does
    ok(tessera::cublas::geam(_r->h[lane], CUBLAS_OP_N, CUBLAS_OP_N, m, n, beta, C, ldc, T(0), C,
                             ldc, C, ldc),
       "geam");
    return;
  }
  ok(tessera::cublas::gemm(_r->h[lane], op(ta), op(tb), m, n, k, alpha, A, lda, B, ldb, beta, C,
                           ldc),
     "gemm");
}

template <class T>
void gpu_backend::trmm(int lane, char side, char uplo, char ta, char diag, int m, int n, T alpha,
                       const T* A, int lda, T* B, int ldb) {
  if (m <= 0 || n <= 0) return;
  note_trmm(lane, side, m, n, A, lda, B, ldb);
  ok(tessera::cublas::trmm(_r->h[lane], side == 'L' ? CUBLAS_SIDE_LEFT : CUBLAS_SIDE_RIGHT,
                           uplo == 'U' ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER, op(ta),
                           diag == 'U' ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT, m, n, alpha, A,
                           lda, B, ldb, B, ldb),
     "trmm");
}

template <class T>
T* gpu_backend::t_mult(int lane, char side, char ta, int m, int n, const T* Tm, int ldt, T* W, T* X) {
  const bool gemm_into_x = X && ((side == 'L' ? m : n) >= t_mult_x_from || (side == 'R' && m >= t_mult_x_rows));
  if (!gemm_into_x) {
    trmm(lane, side, 'U', ta, 'N', m, n, T(1), Tm, ldt, W, m);
    return W;
  }
  if (side == 'L') gemm(lane, ta, 'N', m, n, m, T(1), Tm, ldt, W, m, T(0), X, m);
  else gemm(lane, 'N', ta, m, n, n, T(1), W, m, Tm, ldt, T(0), X, m);
  return X;
}

template <class T>
void gpu_backend::solve_upper(int lane, int n, int nrhs, const T* R, int ldr, T* B, int ldb) {
  if (n <= 0 || nrhs <= 0) return;
  // R's diagonal first: cuBLAS's TRSM multiplies by reciprocals of it (Inf below 1 / the largest
  // number, where the solution is finite), so that rare case is solved on the host.
  std::vector<T> d(static_cast<std::size_t>(n));
  download(lane, 1, n, R, ldr + 1, d.data(), 1);
  if (kernels::has_tiny_diagonal(n, d.data(), 1)) {
    qr::require_available("tessera::qr::updatable::solve", qr::memory::host,
                          sizeof(T) * (std::size_t(n) * n + std::size_t(n) * nrhs),
                          "R and X on the host (a pivot of R below the safe minimum)");
    std::vector<T> r(std::size_t(n) * n), x(std::size_t(n) * nrhs);
    download(lane, n, n, R, ldr, r.data(), n);
    download(lane, n, nrhs, B, ldb, x.data(), n);
    kernels::trsm_upper(n, nrhs, r.data(), n, x.data(), n);
    upload(lane, n, nrhs, x.data(), n, B, ldb);
    return;
  }
  note_solve_upper(lane, n, nrhs, R, ldr, B, ldb);
  ok(tessera::cublas::trsm(_r->h[lane], CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT,
                           n, nrhs, T(1), R, ldr, B, ldb),
     "trsm");
}

template <class T>
void gpu_backend::copy(int lane, int m, int n, const T* A, int lda, T* B, int ldb) {
  if (m <= 0 || n <= 0) return;
  note_copy(lane, m, n, A, lda, B, ldb);
  ok(cudaMemcpy2DAsync(B, std::size_t(ldb) * sizeof(T), A, std::size_t(lda) * sizeof(T),
                       std::size_t(m) * sizeof(T), std::size_t(n), cudaMemcpyDeviceToDevice,
                       _r->s[lane]),
     "cudaMemcpy2DAsync");
}

template <class T>
void gpu_backend::transpose(int lane, int m, int n, const T* A, int lda, T* B, int ldb) {
  if (m <= 0 || n <= 0) return;
  note_copy(lane, m, n, A, lda, B, ldb, "transpose", true);
  ok(tessera::cublas::geam(_r->h[lane], CUBLAS_OP_T, CUBLAS_OP_N, n, m, T(1), A, lda, T(0), B, ldb,
                           B, ldb),
     "geam (transpose)");
}

template <class T>
void gpu_backend::sub(int lane, int m, int n, const T* A, int lda, T* B, int ldb) {
  if (m <= 0 || n <= 0) return;
  note_copy(lane, m, n, A, lda, B, ldb, "sub", false, true);
  ok(tessera::cublas::geam(_r->h[lane], CUBLAS_OP_N, CUBLAS_OP_N, m, n, T(1), B, ldb, T(-1), A,
                           lda, B, ldb),
     "geam (subtract)");
}

template <class T>
void gpu_backend::zero(int lane, int m, int n, T* A, int lda) {
  if (m <= 0 || n <= 0) return;
  note_zero(lane, m, n, A, lda);
  ok(cudaMemset2DAsync(A, std::size_t(lda) * sizeof(T), 0, std::size_t(m) * sizeof(T),
                       std::size_t(n), _r->s[lane]),
     "cudaMemset2DAsync");
}

template <class T>
void gpu_backend::identity(int lane, int p, T* A, int lda) {
  note_zero(lane, p, p, A, lda);
  kernels::gpu_identity(p, A, lda, _r->s[lane]);
}

template <class T>
void gpu_backend::shift_upper(int lane, int s, int dr, int dc, T* A, int lda) {
  note_shift_upper(lane, s, dr, dc, A, lda);
  kernels::gpu_shift_upper(s, dr, dc, A, lda, _r->s[lane]);
}

template <class T>
void gpu_backend::triu_copy(int lane, int nb, int below, const T* P, int ldp, T* R, int ldr) {
  note_triu_copy(lane, nb, below, P, ldp, R, ldr);
  kernels::gpu_triu_copy(nb, below, P, ldp, R, ldr, _r->s[lane]);
}

template <class T>
void gpu_backend::split_panel(int lane, int nb, int below, T* A, int lda, T* V, int ldv) {
  note_split_panel(lane, nb, below, A, lda, V, ldv);
  kernels::gpu_split_panel(nb, below, A, lda, V, ldv, _r->s[lane]);
}

// The one-kernel applies take panels of at most 32 columns and as many rows as a panel kernel
// holds unspilled (the sizes measured): each of their thread blocks runs down all the rows, so
// taller panels (a user's panel width with many added rows, say) keep cuBLAS's calls.
namespace {
template <class T>
bool fused_apply_fits(int rows, int nb) {
  return nb <= kernels::gpu_tsmqr_fused_max_kk && rows <= kernels::gpu_geqrt_one_kernel_rows<T>;
}
}  // namespace

template <class T>
bool gpu_backend::tp_apply(int lane, int nb, int p, int ncols, const T* v, int ldv, const T* Tm, int ldt,
                           T* Ctop, int ldct, T* Cbot, int ldcb) {
  if (!fused_apply_fits<T>(nb + p, nb)) return false;
  note(lane, {block(v, p, nb, ldv), block(Tm, nb, nb, ldt), block(Ctop, nb, ncols, ldct), block(Cbot, p, ncols, ldcb)},
       {block(Ctop, nb, ncols, ldct), block(Cbot, p, ncols, ldcb)}, "tp_apply");
  kernels::gpu_tsmqr_fused(p, ncols, nb, Ctop, ldct, Cbot, ldcb, v, ldv, Tm, ldt, _r->s[lane]);
  return true;
}

bool gpu_backend::tp_apply_right_fits(int nb, int p) { return nb == 32 && p <= kernels::gpu_tp_apply_right_max_p; }

template <class T>
bool gpu_backend::tp_apply_right(int lane, int nrows, int nb, int w, int p, const T* v, int ldv, const T* Tm, T* Ctop,
                                 int ldct, T* Cbot, int ldcb) {
  if (!tp_apply_right_fits(nb, p) ||
      !kernels::gpu_tp_apply_right(nrows, w, p, v, ldv, Tm, Ctop, ldct, Cbot, ldcb, _r->s[lane]))
    return false;
  note(lane,
       {block(v, p, w, ldv), span(Tm, std::size_t((w + nb - 1) / nb) * nb * nb), block(Ctop, nrows, w, ldct),
        block(Cbot, nrows, p, ldcb)},
       {block(Ctop, nrows, w, ldct), block(Cbot, nrows, p, ldcb)}, "tp_apply_right");
  return true;
}

template <class T>
bool gpu_backend::tp_chain_prologue_runs(int p) {
  return kernels::gpu_tpqrt_chain_runs<T>(p, 1);
}

template <class T>
bool gpu_backend::tp_chain(int lane, int m, int p, int nrhs, T* R, int ldr, T* U, int ldu, T* C1, int ldc1, T* C2,
                           int ldc2, T* Tm, int chains, const kernels::rank_band_steps<T>* pro) {
  auto& r = *_r;
  const std::size_t need = kernels::gpu_tpqrt_chain_workspace(m, nrhs, chains) / sizeof(int);
  if (need > r.nflags || r.epoch == std::numeric_limits<int>::max()) {
    sync();  // no lane waits on the old flags any more
    if (need > r.nflags) {
      release(r.flags), r.flags = nullptr, r.nflags = 0;
      r.flags = static_cast<int*>(acquire(need * sizeof(int)));
      r.nflags = need;
    }
    ok(cudaMemsetAsync(r.flags, 0, r.nflags * sizeof(int), r.s[lane]), "cudaMemsetAsync (flags)");
    ok(cudaStreamSynchronize(r.s[lane]), "cudaStreamSynchronize");  // before any lane waits on them
    r.epoch = 0;
    if (!r.wait32) r.find_wait();
  }
  const int epoch = r.epoch + 1;
  if (!kernels::gpu_tpqrt_chain(m, p, nrhs, R, ldr, U, ldu, C1, ldc1, C2, ldc2, Tm, r.flags, r.nflags * sizeof(int),
                                r.s[lane], 0, epoch, chains, pro))
    return false;
  r.epoch = epoch;
  r.chain_lane = lane;
  const int rows = pro ? m + p : m;  // with the prologue, R's and C1's arrays hold p rows more
  if (pro) {
    const std::size_t bw = std::size_t(pro->plan.bw());
    const bool wv = pro->rw > 0 && pro->k > 0;
    note(lane,
         {span(pro->S, std::size_t(pro->plan.blocks()) * bw * bw),
          wv ? block(pro->W, pro->rw, pro->k, pro->ldw) : lane_region{},
          wv ? block(pro->V, m, pro->k, pro->ldv) : lane_region{}},
         {}, "tp_chain's prologue");
  }
  note(lane,
       {block(R, rows, m, ldr), block(U, p, m, ldu), nrhs > 0 ? block(C1, rows, nrhs, ldc1) : lane_region{},
        nrhs > 0 ? block(C2, p, nrhs, ldc2) : lane_region{}},
       {block(R, rows, m, ldr), block(U, p, m, ldu), nrhs > 0 ? block(C1, rows, nrhs, ldc1) : lane_region{},
        nrhs > 0 ? block(C2, p, nrhs, ldc2) : lane_region{},
        span(Tm, std::size_t((m + 31) / 32) * 1024 * std::max(chains, 1))},
       "tp_chain");
  return true;
}

// The driver's stream wait where there is one (the lane's work on panel t runs beside the rest of
// the chain); else the lane waits for the whole chain.
void gpu_backend::tp_chain_wait(int lane, int t) {
  auto& r = *_r;
  if (r.wait32) {
    const auto addr = reinterpret_cast<CUdeviceptr>(r.flags + t);
    if (r.wait32(r.s[lane], addr, static_cast<cuuint32_t>(r.epoch), CU_STREAM_WAIT_VALUE_GEQ) == CUDA_SUCCESS) {
      note_dep(r.chain_lane, lane);  // as if for the whole chain: the checker's lanes have no panels
      return;
    }
  }
  dep(r.chain_lane, lane);
}

template <class T>
bool gpu_backend::tp_merge_t(int lane, int n, int nb, int p, const T* U, int ldu, const T* Tm, T* S, T* Tb) {
  constexpr int leaf = kernels::gpu_tp_merge_t_max_cols;
  if (!kernels::gpu_tp_merge_t_runs<T>(std::min(n, leaf), nb)) return false;
  note(lane, {block(U, p, n, ldu), span(Tm, std::size_t(n / nb) * nb * nb)}, {block(S, n, n, n), block(Tb, n, n, n)},
       "tp_merge_t");
  gemm(lane, 'T', 'N', n, n, p, T(1), U, ldu, U, ldu, T(0), S, n);
  // Wider than the kernel takes: halves at a panel boundary, merged by LARFT's block recurrence,
  // T_12 = -T_11 S_12 T_22 (two GEMMs through Y, S's second half; T's zeros are stored).
  T* Y = S + std::size_t(n) * n;
  auto at = [n](T* A, int i, int j) { return A + i + std::size_t(j) * n; };
  auto merge = [&](auto& self, int off, int len) -> void {
    if (len <= leaf) {
      kernels::gpu_tp_merge_t(len, nb, Tm + std::size_t(off / nb) * nb * nb, at(S, off, off), n, at(Tb, off, off), n,
                              _r->s[lane]);
      return;
    }
    const int h = (len / 2 + nb - 1) / nb * nb, k = len - h;
    self(self, off, h);
    self(self, off + h, k);
    gemm(lane, 'N', 'N', h, k, h, T(1), at(Tb, off, off), n, at(S, off, off + h), n, T(0), Y, h);
    gemm(lane, 'N', 'N', h, k, k, T(-1), Y, h, at(Tb, off + h, off + h), n, T(0), at(Tb, off, off + h), n);
    zero(lane, k, h, at(Tb, off + h, off), n);
  };
  merge(merge, 0, n);
  return true;
}

// gpu_larfb_fused from the left in single precision: H100, deleting 100 or 200 columns of 6000 x
// 3000 without Q, two rounds: single 1.1-1.5x faster at k = 0 .. 2500 (k = 2000, p = 100:
// 0.00167-0.00169 s against 0.00218-0.00250), double 5-8% slower at k = 0 and 1000 (cuBLAS's FP64
// GEMMs run on the tensor cores, the kernel's FMAs do not), so double keeps the calls
// (docs/results/2026-11-24-insert-rows-fused-h100.md). Band panels (h <= 96, nb <= 64) otherwise take
// gpu_larfb_small from either side: their three calls cost about 12 us of host time a GEMM, more
// than the GPU spends on them, and a rank-16 update of 8000 x 3000 was bound by enqueueing them
// (docs/results/2026-11-27-band-apply-h100.md).
template <class T>
bool gpu_backend::explicit_apply(int lane, char side, int h, int nb, int other, const T* V, int ldv, const T* Tm,
                                 int ldt, T* C, int ldc) {
  const auto noted = [&] {
    note(lane,
         {block(V, h, nb, ldv), block(Tm, nb, nb, ldt),
          side == 'L' ? block(C, h, other, ldc) : block(C, other, h, ldc)},
         {side == 'L' ? block(C, h, other, ldc) : block(C, other, h, ldc)}, "explicit_apply");
    return true;
  };
  if (side == 'L' && sizeof(T) == sizeof(float) && fused_apply_fits<T>(h, nb)) {
    noted();
    kernels::gpu_larfb_fused(h, other, nb, V, ldv, Tm, ldt, C, ldc, _r->s[lane]);
    return true;
  }
  // From the right (Q's columns, thousands of rows) a block an SM: the grid leaves every SM room
  // for the R lane's panel and update, which wait otherwise. False where the device lacks the
  // kernel's shared memory: the caller's cuBLAS calls then.
  return h <= kernels::gpu_larfb_small_max_rows && nb <= kernels::gpu_larfb_small_max_k && noted() &&
         kernels::gpu_larfb_small(side, h, other, nb, V, ldv, Tm, ldt, C, ldc, _r->s[lane], side == 'R' ? _r->sms : 0);
}

template <class T>
std::size_t gpu_backend::panel_work_size(int m, int n) const {
  return kernels::gpu_geqrt_workspace_size(m, n, std::min(n, kernels::gpu_geqrt_max_ib));
}

// Panels wider than gpu_geqrt's one-kernel block (its two blocks and the GEMMs between them cost
// more) with bands the kernel holds: rank-k updates and deleting few columns with Q
// (docs/results/2026-11-27-small-panel-h100.md).
template <class T>
bool gpu_backend::panel_split(int lane, int h, int nb, int band, T* A, int lda, T* V, int ldv, T* Tm, int ldt) {
  if (band > kernels::gpu_small_panel_max_band || nb <= kernels::gpu_geqrt_max_ib) return false;
  note(lane, {block(A, h, nb, lda)}, {block(A, h, nb, lda), block(V, h, nb, ldv), block(Tm, nb, nb, ldt)},
       "panel_split");
  return kernels::gpu_small_panel_qr(h, nb, band, A, lda, V, ldv, Tm, ldt, _r->s[lane]);
}

template <class T>
void gpu_backend::panel_qr(int lane, int m, int n, T* A, int lda, T* Tm, int ldt, T* work,
                           std::size_t lwork) {
  note_panel_qr(lane, m, n, A, lda, Tm, ldt, work, lwork);
  kernels::gpu_geqrt(m, n, std::min(n, kernels::gpu_geqrt_max_ib), A, lda, Tm, ldt, work, lwork,
                     _r->h[lane]);
}

int* gpu_backend::sync_ints(int lane, std::size_t need) {
  auto& r = *_r;
  if (need > r.ngsync[lane]) {
    if (r.gsync[lane]) sync();  // no kernel reads the old ones any more
    release(r.gsync[lane]);
    r.gsync[lane] = nullptr, r.ngsync[lane] = 0;
    const std::size_t n = std::max<std::size_t>(need, 128);
    r.gsync[lane] = static_cast<int*>(acquire(n * sizeof(int)));
    r.ngsync[lane] = n;
  }
  return r.gsync[lane];
}

template <class T>
void gpu_backend::givens_generate(int lane, const kernels::givens_plan& plan, T* X, int ldx, T* cs) {
  const std::size_t need = kernels::gpu_givens_sync_count(plan);
  int* s = sync_ints(lane, need);
  note_givens_generate(lane, plan, X, ldx, cs);
  kernels::gpu_givens_generate(plan, X, ldx, cs, s, _r->ngsync[lane], _r->s[lane]);
}

template <class T>
void gpu_backend::givens_blocks(int lane, const kernels::givens_plan& plan, const T* cs, T* S) {
  note_givens_blocks(lane, plan, cs, S);
  kernels::gpu_givens_blocks(plan, cs, S, _r->s[lane]);
}

// Up to 32 sweeps a group (blocks of 128 rotations): against the blocks' GEMMs on the H200, rank
// 8-16 updates of 8000 x 3000 and deleting 20 rows of 12000 x 6000 were 2-14% faster, rank 32 the
// same to 2% (docs/results/2026-11-29-lane-races-h200.md); groups of 64 sweeps were slower (rank 64
// 7.2 -> 7.7-8.6 ms, adding 200 columns at 0 1.4x; docs/results/2026-11-29-givens-apply-h200.md),
// and so were wider strips cut into groups of 32.
template <class T>
bool gpu_backend::givens_apply_fits(const kernels::givens_plan& plan) {
  return plan.p <= 32 && kernels::gpu_givens_apply_fits<T>(plan);
}

template <class T>
void gpu_backend::givens_apply(int lane, const kernels::givens_plan& plan, const T* cs, T* M, int ldm, int roff,
                               int jbeg, int jend, int cshift) {
  const lane_region m = jend > jbeg ? block(M + roff + std::size_t(jbeg) * ldm, plan.L, jend - jbeg, ldm) : lane_region{};
  note(lane, {span(cs, plan.cs_size()), m}, {m}, "givens_apply");
  kernels::gpu_givens_apply(plan, cs, M, ldm, roff, jbeg, jend, cshift, _r->s[lane]);
}

// Beyond gpu_givens_apply's groups (p > 32: rank 33 and up, deleting rows, adding columns), the
// blocks in one kernel a matrix and group instead of 2 calls a block.
template <class T>
bool gpu_backend::givens_blocks_apply_fits(const kernels::givens_plan& plan) {
  return kernels::gpu_givens_blocks_apply_fits<T>(plan);
}

template <class T>
void gpu_backend::givens_blocks_apply(int lane, const kernels::givens_plan& plan, const T* S, T* M, int ldm, int roff,
                                      int jbeg, int jend, int cshift) {
  const lane_region m = jend > jbeg ? block(M + roff + std::size_t(jbeg) * ldm, plan.L, jend - jbeg, ldm) : lane_region{};
  note(lane, {span(S, plan.blocks_size()), m}, {m}, "givens_blocks_apply");
  kernels::gpu_givens_blocks_apply(plan, S, M, ldm, roff, jbeg, jend, cshift, _r->s[lane]);
}

template <class T>
void gpu_backend::hessenberg_rotations(int lane, int rows, int cols, T* H, int ldh, T* cs) {
  note_hessenberg(lane, rows, cols, H, ldh, cs);
  kernels::gpu_hessenberg_rotations(rows, cols, H, ldh, cs, sync_ints(lane, 1), _r->s[lane]);
}

template <class T>
void gpu_backend::rotations_left(int lane, int k, int ncols, const T* cs, T* C, int ldc) {
  note_rotations(lane, 'L', false, k, ncols, cs, C, ldc);
  kernels::gpu_rotations_left(k, ncols, cs, C, ldc, _r->s[lane]);
}

template <class T>
void gpu_backend::rotations_right(int lane, int nrows, int k, const T* cs, T* C, int ldc) {
  note_rotations(lane, 'R', false, k, nrows, cs, C, ldc);
  kernels::gpu_rotations_right(nrows, k, cs, C, ldc, _r->s[lane]);
}

template <class T>
void gpu_backend::sweep_up_left(int lane, int k, int ncols, const T* cs, T* C, int ldc) {
  note_rotations(lane, 'L', true, k, ncols, cs, C, ldc);
  kernels::gpu_sweep_up_left(k, ncols, cs, C, ldc, _r->s[lane]);
}

template <class T>
void gpu_backend::sweep_up_right(int lane, int nrows, int k, const T* cs, T* C, int ldc) {
  note_rotations(lane, 'R', true, k, nrows, cs, C, ldc);
  kernels::gpu_sweep_up_right(nrows, k, cs, C, ldc, _r->s[lane]);
}

void gpu_backend::dep(int from, int to) {
  note_dep(from, to);
  ok(cudaEventRecord(_r->ev, _r->s[from]), "cudaEventRecord");
  ok(cudaStreamWaitEvent(_r->s[to], _r->ev, 0), "cudaStreamWaitEvent");
}

void gpu_backend::sync() {
  for (auto s : _r->s) ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  for (void* p : _retired) release(p);
  _retired.clear();
  note_sync();
}

void* gpu_backend::replace(void* old, std::size_t bytes) {
  if (old) {
    _retired.push_back(old);
    if (_retired.size() > max_retired) sync();
  }
  try {
    return acquire(bytes);
  } catch (const tessera::out_of_memory&) {
    if (_retired.empty()) throw;
    sync();  // the retired blocks to the cache, which acquire gives back to the device when short
    return acquire(bytes);
  }
}

template <class T>
void gpu_backend::upload(int lane, int m, int n, const T* h, int ldh, T* d, int ldd) {
  if (m <= 0 || n <= 0) return;
  ok(cudaMemcpy2DAsync(d, std::size_t(ldd) * sizeof(T), h, std::size_t(ldh) * sizeof(T),
                       std::size_t(m) * sizeof(T), std::size_t(n), cudaMemcpyDefault,
                       _r->s[lane]),
     "cudaMemcpy2DAsync (upload)");
  note(lane, {block(h, m, n, ldh)}, {block(d, m, n, ldd)}, "upload");
  // Pageable host memory may be reused by the caller once we return.
  ok(cudaStreamSynchronize(_r->s[lane]), "cudaStreamSynchronize");
  waited(lane);
}

template <class T>
void gpu_backend::download(int lane, int m, int n, const T* d, int ldd, T* h, int ldh) {
  if (m <= 0 || n <= 0) return;
  ok(cudaMemcpy2DAsync(h, std::size_t(ldh) * sizeof(T), d, std::size_t(ldd) * sizeof(T),
                       std::size_t(m) * sizeof(T), std::size_t(n), cudaMemcpyDefault,
                       _r->s[lane]),
     "cudaMemcpy2DAsync (download)");
  note(lane, {block(d, m, n, ldd)}, {block(h, m, n, ldh)}, "download");
  ok(cudaStreamSynchronize(_r->s[lane]), "cudaStreamSynchronize");
  waited(lane);
}

template <class T>
unsigned gpu_backend::count_non_finite(int m, int n, const T* A, int lda) {
  if (m <= 0 || n <= 0) return 0;
  _r->make_check();
  unsigned found = 0;
  ok(cudaMemsetAsync(_r->count, 0, sizeof(unsigned), _r->check), "cudaMemsetAsync");
  kernels::gpu_count_non_finite(m, n, A, lda, _r->count, _r->check);
  ok(cudaMemcpyAsync(&found, _r->count, sizeof(unsigned), cudaMemcpyDeviceToHost, _r->check), "cudaMemcpyAsync");
  ok(cudaStreamSynchronize(_r->check), "cudaStreamSynchronize");
  return found;
}

#define TESSERA_GPU_BACKEND(T)                                                                     \
  template void gpu_backend::gemm<T>(int, char, char, int, int, int, T, const T*, int, const T*,  \
                                     int, T, T*, int);                                             \
  template void gpu_backend::trmm<T>(int, char, char, char, char, int, int, T, const T*, int, T*, \
                                     int);                                                         \
  template void gpu_backend::solve_upper<T>(int, int, int, const T*, int, T*, int);              \
  template T* gpu_backend::t_mult<T>(int, char, char, int, int, const T*, int, T*, T*);            \
  template void gpu_backend::copy<T>(int, int, int, const T*, int, T*, int);                      \
  template void gpu_backend::transpose<T>(int, int, int, const T*, int, T*, int);                 \
  template void gpu_backend::sub<T>(int, int, int, const T*, int, T*, int);                       \
  template void gpu_backend::zero<T>(int, int, int, T*, int);                                     \
  template void gpu_backend::identity<T>(int, int, T*, int);                                      \
  template void gpu_backend::shift_upper<T>(int, int, int, int, T*, int);                        \
  template void gpu_backend::triu_copy<T>(int, int, int, const T*, int, T*, int);                 \
  template void gpu_backend::split_panel<T>(int, int, int, T*, int, T*, int);                     \
  template bool gpu_backend::panel_split<T>(int, int, int, int, T*, int, T*, int, T*, int);         \
  template bool gpu_backend::tp_apply<T>(int, int, int, int, const T*, int, const T*, int, T*, int, T*, int); \
  template bool gpu_backend::tp_apply_right<T>(int, int, int, int, int, const T*, int, const T*, T*, int, T*, int); \
  template bool gpu_backend::tp_chain<T>(int, int, int, int, T*, int, T*, int, T*, int, T*, int, T*, int,     \
                                         const kernels::rank_band_steps<T>*);                                        \
  template bool gpu_backend::tp_chain_prologue_runs<T>(int);                                                 \
  template bool gpu_backend::tp_merge_t<T>(int, int, int, int, const T*, int, const T*, T*, T*);                \
  template bool gpu_backend::explicit_apply<T>(int, char, int, int, int, const T*, int, const T*, int, T*, int); \
  template std::size_t gpu_backend::panel_work_size<T>(int, int) const;                           \
  template void gpu_backend::panel_qr<T>(int, int, int, T*, int, T*, int, T*, std::size_t);       \
  template void gpu_backend::givens_generate<T>(int, const kernels::givens_plan&, T*, int, T*);   \
  template void gpu_backend::givens_blocks<T>(int, const kernels::givens_plan&, const T*, T*);    \
  template bool gpu_backend::givens_apply_fits<T>(const kernels::givens_plan&);                     \
  template void gpu_backend::givens_apply<T>(int, const kernels::givens_plan&, const T*, T*, int, int, int, int, \
                                             int);                                                           \
  template bool gpu_backend::givens_blocks_apply_fits<T>(const kernels::givens_plan&);              \
  template void gpu_backend::givens_blocks_apply<T>(int, const kernels::givens_plan&, const T*, T*, int, int, int, \
                                                    int, int);                                                    \
  template void gpu_backend::hessenberg_rotations<T>(int, int, int, T*, int, T*);                  \
  template void gpu_backend::rotations_left<T>(int, int, int, const T*, T*, int);                  \
  template void gpu_backend::rotations_right<T>(int, int, int, const T*, T*, int);                 \
  template void gpu_backend::sweep_up_left<T>(int, int, int, const T*, T*, int);                   \
  template void gpu_backend::sweep_up_right<T>(int, int, int, const T*, T*, int);                  \
  template void gpu_backend::upload<T>(int, int, int, const T*, int, T*, int);                    \
  template void gpu_backend::download<T>(int, int, int, const T*, int, T*, int);                  \
  template unsigned gpu_backend::count_non_finite<T>(int, int, const T*, int);
TESSERA_GPU_BACKEND(float)
TESSERA_GPU_BACKEND(double)
#undef TESSERA_GPU_BACKEND

}  // namespace tessera::qr::detail
#endif
