#pragma once
// The two places a QR update runs (tessera/qr/update.hpp): host_backend (LAPACK/BLAS on all
// cores, host memory) and gpu_backend (cuBLAS and Tessera's kernels, device memory). The update
// algorithms (qr/src/update_*.cpp) are written once against this interface and instantiated for
// both. Every operation names a lane: lane 0 carries R, lane 1 carries Q, lane 2 carries Q^T B;
// on the GPU each lane is a CUDA stream with its own cuBLAS handle, so Q (the biggest matrix) is
// updated while R's next panel is factored, and Q^T B's few columns (a handful of short calls per
// panel or Givens block) stay off R's chain; dep(from, to) orders lane `to` after what `from` has
// enqueued so far. On the CPUs the lanes are one sequence, BLAS runs single-threaded (the
// updates hold qr::blas_threads(1)) and host_backend::split spreads each large call over the
// cores as TBB pieces.
#include <algorithm>
#include <cstddef>
#include <limits>
#include <memory>
#include <vector>

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "tessera/kernels_cpu/blas.hpp"
#include "tessera/kernels_cpu/check.hpp"
#include "tessera/kernels_cpu/givens.hpp"
#include "tessera/kernels_cpu/rotations.hpp"
#include "tessera/kernels_cpu/trsm_upper.hpp"
#include "lane_check.hpp"

namespace tessera::qr::detail {

inline constexpr int lane_r = 0, lane_q = 1, lane_d = 2, lanes = 3;

struct host_backend : lane_checked {  // the lanes' order checked when asked (lane_check.hpp)
  template <class T>
  struct buffer {
    std::vector<T> v;
    T* data() noexcept { return v.data(); }
    const T* data() const noexcept { return v.data(); }
    std::size_t size() const noexcept { return v.size(); }
  };
  static constexpr bool on_gpu = false;

  // f(first, count) over [0, n), in pieces of at least `grain` run in parallel on the CPUs: the
  // updates' applies are many mid-sized BLAS calls (64 x 564 x 1000), where OpenBLAS's own
  // threads cost more than they gained on 16 cores (docs/results/2026-11-24-cpu-update-split.md).
  // The caller holds BLAS single-threaded (updatable's updates do, for their whole duration), so
  // nested splits set no thread count from the pieces.
  template <class F>
  void split(int n, int grain, F&& f) {
    const int workers = tbb::this_task_arena::max_concurrency();
    const int pieces = std::min(n / std::max(grain, 1), 2 * workers);
    if (pieces <= 1 || workers <= 1) {
      f(0, n);
      return;
    }
    tbb::parallel_for(0, pieces, [&](int c) {
      const int a = static_cast<int>(static_cast<long long>(n) * c / pieces);
      const int b = static_cast<int>(static_cast<long long>(n) * (c + 1) / pieces);
      f(a, b - a);
    });
  }

  // Makes b hold at least n elements; its contents are lost when it grows.
  template <class T>
  void ensure(buffer<T>& b, std::size_t n) {
    if (b.v.size() >= n) return;
    if (chk) chk->forget(b.v.data(), b.v.size() * sizeof(T));
    b.v.assign(n, T(0));
  }
  template <class T>
  void swap(buffer<T>& a, buffer<T>& b) noexcept { a.v.swap(b.v); }

  template <class T>
  void gemm(int lane, char ta, char tb, int m, int n, int k, T alpha, const T* A, int lda, const T* B,
            int ldb, T beta, T* C, int ldc) {
    if (m <= 0 || n <= 0) return;
    note_gemm(lane, ta, tb, m, n, k, A, lda, B, ldb, beta != T(0), C, ldc);
    if (k <= 0) {  // BLAS would scale C by beta; do the same
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) C[i + std::size_t(j) * ldc] *= beta;
      return;
    }
    // Pieces of C along its longer side, each at least gemm_grain flops.
    const double per = 2.0 * k * (n >= m ? m : n);  // flops a column (row) of C
    const int grain = static_cast<int>(std::max(16.0, gemm_grain / per));
    const auto call = [&](int pm, int pn, const T* a, const T* b, T* c) {
      blas::gemm(ta == 'T' ? CblasTrans : CblasNoTrans, tb == 'T' ? CblasTrans : CblasNoTrans, pm, pn, k,
                 alpha, a, lda, b, ldb, beta, c, ldc);
    };
    if (n >= m)
      split(n, grain, [&](int c0, int cn) {
        call(m, cn, A, tb == 'T' ? B + c0 : B + std::size_t(c0) * ldb, C + std::size_t(c0) * ldc);
      });
    else
      split(m, grain, [&](int r0, int rn) { call(rn, n, ta == 'T' ? A + std::size_t(r0) * lda : A + r0, B, C + r0); });
  }
  static constexpr double gemm_grain = 1 << 23;
  template <class T>
  void trmm(int lane, char side, char uplo, char ta, char diag, int m, int n, T alpha, const T* A,
            int lda, T* B, int ldb) {
    if (m <= 0 || n <= 0) return;
    note_trmm(lane, side, m, n, A, lda, B, ldb);
    blas::trmm(side == 'L' ? CblasLeft : CblasRight, uplo == 'U' ? CblasUpper : CblasLower,
               ta == 'T' ? CblasTrans : CblasNoTrans, diag == 'U' ? CblasUnit : CblasNonUnit, m, n,
               alpha, A, lda, B, ldb);
  }
  // op(T) W (side 'L', W m x n) or W op(T) (side 'R') for a panel's upper triangular T; W and X
  // have leading dimension m. Returns where the product is: here W (a TRMM in place); the GPU
  // backend uses X (W's size) for a T of order t_mult_x_from or more.
  static constexpr int t_mult_x_from = std::numeric_limits<int>::max();
  template <class T>
  T* t_mult(int lane, char side, char ta, int m, int n, const T* Tm, int ldt, T* W, T*) {
    trmm(lane, side, 'U', ta, 'N', m, n, T(1), Tm, ldt, W, m);
    return W;
  }
  // B := R^-1 B, R n x n upper triangular: kernels::trsm_upper (safe where a pivot is below 1 /
  // the largest number).
  template <class T>
  void solve_upper(int lane, int n, int nrhs, const T* R, int ldr, T* B, int ldb) {
    note_solve_upper(lane, n, nrhs, R, ldr, B, ldb);
    kernels::trsm_upper(n, nrhs, R, ldr, B, ldb);
  }
  // B := A (m x n), the two not overlapping; columns in parallel when there are many.
  template <class T>
  void copy(int lane, int m, int n, const T* A, int lda, T* B, int ldb) {
    note_copy(lane, m, n, A, lda, B, ldb);
    split(n, std::max(1, (1 << 18) / std::max(m, 1)), [&](int j0, int nj) {
      for (int j = j0; j < j0 + nj; ++j)
        std::copy(A + std::size_t(j) * lda, A + std::size_t(j) * lda + m, B + std::size_t(j) * ldb);
    });
  }
  // B (n x m) := A^T (A m x n).
  template <class T>
  void transpose(int lane, int m, int n, const T* A, int lda, T* B, int ldb) {
    note_copy(lane, m, n, A, lda, B, ldb, "transpose", true);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) B[j + std::size_t(i) * ldb] = A[i + std::size_t(j) * lda];
  }
  // B -= A.
  template <class T>
  void sub(int lane, int m, int n, const T* A, int lda, T* B, int ldb) {
    note_copy(lane, m, n, A, lda, B, ldb, "sub", false, true);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) B[i + std::size_t(j) * ldb] -= A[i + std::size_t(j) * lda];
  }
  template <class T>
  void zero(int lane, int m, int n, T* A, int lda) {
    note_zero(lane, m, n, A, lda);
    for (int j = 0; j < n; ++j) std::fill(A + std::size_t(j) * lda, A + std::size_t(j) * lda + m, T(0));
  }
  // A (p x p) := I.
  template <class T>
  void identity(int lane, int p, T* A, int lda) {
    zero(lane, p, p, A, lda);
    for (int i = 0; i < p; ++i) A[i + std::size_t(i) * lda] = T(1);
  }
  // In place: A's upper triangle of order s := the one dr rows below and dc right of it
  // (kernels::gpu_shift_upper). Column by column from the left, each top down: every source is
  // read before it is overwritten.
  template <class T>
  void shift_upper(int lane, int s, int dr, int dc, T* A, int lda) {
    note_shift_upper(lane, s, dr, dc, A, lda);
    for (int j = 0; j < s; ++j)
      for (int i = 0; i <= j; ++i) A[i + std::size_t(j) * lda] = A[i + dr + std::size_t(j + dc) * lda];
  }
  // R(0:nb+below, 0:nb) := [triu(P(0:nb, 0:nb)); 0] (P == R allowed).
  template <class T>
  void triu_copy(int lane, int nb, int below, const T* P, int ldp, T* R, int ldr) {
    note_triu_copy(lane, nb, below, P, ldp, R, ldr);
    for (int c = 0; c < nb; ++c)
      for (int r = 0; r < nb + below; ++r)
        R[r + std::size_t(c) * ldr] = r <= c ? P[r + std::size_t(c) * ldp] : T(0);
  }
  // A (nb + below rows, nb columns), a panel factored in place: V := its reflectors with the unit
  // diagonal and zeros above made explicit, A := its R with exact zeros below (A and V apart).
  template <class T>
  void split_panel(int lane, int nb, int below, T* A, int lda, T* V, int ldv) {
    note_split_panel(lane, nb, below, A, lda, V, ldv);
    for (int c = 0; c < nb; ++c)
      for (int r = 0; r < nb + below; ++r) {
        T& a = A[r + std::size_t(c) * lda];
        V[r + std::size_t(c) * ldv] = r > c ? a : r == c ? T(1) : T(0);
        if (r > c) a = T(0);
      }
  }
  // A (h x nb, lda; zero below its band-th subdiagonal) := its QR factor with V (h x nb, ldv)
  // explicit and T (ld ldt, zeros below), panel_qr and split_panel together, in one call where the
  // backend has one (the GPU's kernels::gpu_small_panel_qr, for 33-64 columns and bands up to 32);
  // false: the caller makes those two calls.
  template <class T>
  bool panel_split(int, int, int, int, T*, int, T*, int, T*, int) {
    return false;
  }
  // [Ctop; Cbot] := H^T [Ctop; Cbot] for V = [I; v] (v p x nb), T's lower part zero, in one
  // call where the backend has one (the GPU's kernels::gpu_tsmqr_fused, nb <= 32); false: the
  // caller applies it with apply_left's calls.
  template <class T>
  bool tp_apply(int, int, int, int, const T*, int, const T*, int, T*, int, T*, int) {
    return false;
  }
  // [Ctop Cbot] := [Ctop Cbot] H_0 H_1 ... for consecutive panels of nb columns (w in all), V_i =
  // [I; v_i] (v p x w, ldv), T_i at Tm + nb nb i (ld nb), from the right in one call where the
  // backend has one (tp_apply_right_fits: the GPU's kernels::gpu_tp_apply_right); false: the caller
  // applies them with apply_right_tp's calls.
  static constexpr bool tp_apply_right_fits(int, int) { return false; }
  template <class T>
  bool tp_apply_right(int, int, int, int, int, const T*, int, const T*, T*, int, T*, int) {
    return false;
  }
  // [R; U] := its QR factor, panels of 32 columns (V = [I; U's columns] into U, panel t's T at
  // Tm + 1024 t, ld 32), [C1; C2] := Q^T [C1; C2], in one call where the backend has one (the GPU's
  // kernels::gpu_tpqrt_chain); false: the caller factors the panels one by one. Then
  // tp_chain_wait(lane, t) makes another lane's next work wait for panel t only. chains > 1: U's
  // rows in that many blocks, pipelined (V and T then in the kernel's form: for R and C only).
  // pro (one chain): a rank-k update's last steps, which the GPU's kernel does first on each
  // slab's columns (R's and C1's arrays then hold the p dense rows over the m; kernels_gpu's
  // gpu_tpqrt_chain).
  template <class T>
  bool tp_chain(int, int, int, int, T*, int, T*, int, T*, int, T*, int, T*, int,
                const kernels::rank_band_steps<T>* = nullptr) {
    return false;
  }
  // Whether tp_chain runs with a prologue for p rows (one chain).
  template <class T>
  static constexpr bool tp_chain_prologue_runs(int) {
    return false;
  }
  void tp_chain_wait(int, int) {}
  // The T of tp_chain's consecutive panels (n columns in panels of nb, their reflectors' rows
  // below R's U (p x n, ldu), their T at Tm, ld nb) as one block reflector's: Tb (n x n, ld n), S
  // (2 n x n) workspace, where the backend has it (the GPU's kernels::gpu_tp_merge_t); false: the
  // caller takes the panels one by one.
  template <class T>
  bool tp_merge_t(int, int, int, int, const T*, int, const T*, T*, T*) {
    return false;
  }
  // Side 'L': C (h x other) := H^T C; 'R': C (other x h) := C H; V (h x nb) explicit. In one call
  // where the backend has one (the GPU's kernels::gpu_larfb_small for band panels, h <= 96 and
  // nb <= 64, and gpu_larfb_fused from the left in single precision, nb <= 32); false:
  // apply_explicit's calls.
  template <class T>
  bool explicit_apply(int, char, int, int, int, const T*, int, const T*, int, T*, int) {
    return false;
  }
  template <class T>
  std::size_t panel_work_size(int, int n) const {
    return std::size_t(n) * std::size_t(n) + 1;
  }
  // Householder QR of the panel A (m x n, m >= n) in LAPACK GEQRT form, T (n x n, ldt).
  template <class T>
  void panel_qr(int lane, int m, int n, T* A, int lda, T* Tm, int ldt, T* work, std::size_t lwork) {
    note_panel_qr(lane, m, n, A, lda, Tm, ldt, work, lwork);
    check::lapack_info("tessera::qr::updatable", "GEQRT", blas::geqrt(m, n, n, A, lda, Tm, ldt, work));
  }
  template <class T>
  void givens_generate(int lane, const kernels::givens_plan& plan, T* X, int ldx, T* cs) {
    note_givens_generate(lane, plan, X, ldx, cs);
    kernels::givens_generate(plan, X, ldx, cs);
  }
  template <class T>
  void givens_blocks(int lane, const kernels::givens_plan& plan, const T* cs, T* S) {
    note_givens_blocks(lane, plan, cs, S);
    kernels::givens_blocks(plan, cs, S);
  }
  // Whether the backend applies a plan's rotations to columns from the left in one call
  // (givens_apply_fits; the GPU's kernels::gpu_givens_apply, same arguments, rotations cs): then R,
  // Q^T b and the strip need no blocks; otherwise apply_givens' GEMMs with the blocks.
  template <class T>
  static constexpr bool givens_apply_fits(const kernels::givens_plan&) {
    return false;
  }
  template <class T>
  void givens_apply(int, const kernels::givens_plan&, const T*, T*, int, int, int, int, int) {}
  // Whether the backend applies a plan's blocks S (givens_blocks') to columns from the left in one
  // call (the GPU's kernels::gpu_givens_blocks_apply, same arguments) instead of a GEMM and a copy
  // a block.
  template <class T>
  static constexpr bool givens_blocks_apply_fits(const kernels::givens_plan&) {
    return false;
  }
  template <class T>
  void givens_blocks_apply(int, const kernels::givens_plan&, const T*, T*, int, int, int, int, int) {}
  // H (rows x cols, ldh, upper Hessenberg) := its triangular form, cs := the rotations
  // (kernels::hessenberg_rotations).
  template <class T>
  void hessenberg_rotations(int lane, int rows, int cols, T* H, int ldh, T* cs) {
    note_hessenberg(lane, rows, cols, H, ldh, cs);
    kernels::hessenberg_rotations(rows, cols, H, ldh, cs);
  }
  // C (k + 1 rows, ncols) := G C and C (nrows, k + 1 columns) := C G^T for those rotations.
  template <class T>
  void rotations_left(int lane, int k, int ncols, const T* cs, T* C, int ldc) {
    note_rotations(lane, 'L', false, k, ncols, cs, C, ldc);
    split(ncols, 1, [&](int c0, int cn) { kernels::rotations_left(k, cn, cs, C + std::size_t(c0) * ldc, ldc); });
  }
  template <class T>
  void rotations_right(int lane, int nrows, int k, const T* cs, T* C, int ldc) {
    note_rotations(lane, 'R', false, k, nrows, cs, C, ldc);
    split(nrows, 256, [&](int r0, int rn) { kernels::rotations_right(rn, k, cs, C + r0, ldc); });
  }
  // One Givens sweep made from the bottom up (kernels::sweep_up_left, sweep_up_right), likewise.
  template <class T>
  void sweep_up_left(int lane, int k, int ncols, const T* cs, T* C, int ldc) {
    note_rotations(lane, 'L', true, k, ncols, cs, C, ldc);
    split(ncols, 16, [&](int c0, int cn) { kernels::sweep_up_left(k, cn, cs, C + std::size_t(c0) * ldc, ldc); });
  }
  template <class T>
  void sweep_up_right(int lane, int nrows, int k, const T* cs, T* C, int ldc) {
    note_rotations(lane, 'R', true, k, nrows, cs, C, ldc);
    split(nrows, 256, [&](int r0, int rn) { kernels::sweep_up_right(rn, k, cs, C + r0, ldc); });
  }
  void dep(int from, int to) { note_dep(from, to); }
  void sync() { note_sync(); }
  // Between host memory (h, ldh) and the backend's (d, ldd).
  template <class T>
  void upload(int lane, int m, int n, const T* h, int ldh, T* d, int ldd) {
    copy(lane, m, n, h, ldh, d, ldd);
  }
  template <class T>
  void download(int lane, int m, int n, const T* d, int ldd, T* h, int ldh) {
    copy(lane, m, n, d, ldd, h, ldh);
  }
};

#if TESSERA_QR_CUDA
struct gpu_resources;  // streams, handles, the event (update_backend_gpu.cpp)

struct gpu_backend : lane_checked {
  template <class T>
  struct buffer {
    T* p = nullptr;
    std::size_t n = 0;
    buffer() = default;
    buffer(const buffer&) = delete;
    buffer& operator=(const buffer&) = delete;
    buffer(buffer&& o) noexcept : p(o.p), n(o.n) { o.p = nullptr, o.n = 0; }
    buffer& operator=(buffer&& o) noexcept {
      std::swap(p, o.p);
      std::swap(n, o.n);
      return *this;
    }
    ~buffer() { release(p); }
    T* data() noexcept { return p; }
    const T* data() const noexcept { return p; }
    std::size_t size() const noexcept { return n; }
  };
  static constexpr bool on_gpu = true;
  // One piece: the calls go to the lane's stream as they are (host_backend::split).
  template <class F>
  void split(int n, int, F&& f) {
    f(0, n);
  }

  gpu_backend();
  gpu_backend(gpu_backend&&) noexcept;
  ~gpu_backend();

  static void release(void* p) noexcept;
  static void* acquire(std::size_t bytes);
  // A block of `bytes` for `old` (which enqueued work may still use): old goes back at the next
  // sync() (more than a few waiting force one, and so does a failed allocation).
  void* replace(void* old, std::size_t bytes);
  template <class T>
  void ensure(buffer<T>& b, std::size_t n) {
    if (b.n >= n) return;
    // The old buffer may still be in use by enqueued work: it is retired, and goes back at the
    // next sync, so that growing a buffer mid-update does not leave the GPU idle while the rest
    // of the update is enqueued.
    void* old = b.p;
    b.p = nullptr;
    b.n = 0;
    b.p = static_cast<T*>(replace(old, n * sizeof(T)));
    b.n = n;
  }
  template <class T>
  void swap(buffer<T>& a, buffer<T>& b) noexcept {
    std::swap(a.p, b.p);
    std::swap(a.n, b.n);
  }

  template <class T>
  void gemm(int lane, char ta, char tb, int m, int n, int k, T alpha, const T* A, int lda,
            const T* B, int ldb, T beta, T* C, int ldc);
  template <class T>
  void trmm(int lane, char side, char uplo, char ta, char diag, int m, int n, T alpha, const T* A,
            int lda, T* B, int ldb);
  // As the host backend's; from a T of order 128 on, a GEMM into X (T is gpu_geqrt's, zero below
  // its diagonal): cuBLAS's TRMM took 24-31 us against the GEMM's 11-15 on an H100 (order 64: in
  // place 8.6 us, GEMM 10.2). From the right on t_mult_x_rows rows or more, also below that order
  // where the caller gives X: Q's 14500 rows, T of order 32 / 64 / 256, the TRMM in place took
  // 10.0 / 22.7 / 161 us and the GEMM 6.7 / 10.6 / 50 (H100, double;
  // docs/results/2026-11-27-lane-q-h100.md).
  static constexpr int t_mult_x_from = 128, t_mult_x_rows = 8192;
  template <class T>
  T* t_mult(int lane, char side, char ta, int m, int n, const T* Tm, int ldt, T* W, T* X);
  // As the host backend's, on lane's stream.
  template <class T>
  void solve_upper(int lane, int n, int nrhs, const T* R, int ldr, T* B, int ldb);
  template <class T>
  void copy(int lane, int m, int n, const T* A, int lda, T* B, int ldb);
  template <class T>
  void transpose(int lane, int m, int n, const T* A, int lda, T* B, int ldb);
  template <class T>
  void sub(int lane, int m, int n, const T* A, int lda, T* B, int ldb);
  template <class T>
  void zero(int lane, int m, int n, T* A, int lda);
  template <class T>
  void identity(int lane, int p, T* A, int lda);
  template <class T>
  void shift_upper(int lane, int s, int dr, int dc, T* A, int lda);
  template <class T>
  void triu_copy(int lane, int nb, int below, const T* P, int ldp, T* R, int ldr);
  template <class T>
  void split_panel(int lane, int nb, int below, T* A, int lda, T* V, int ldv);
  template <class T>
  bool panel_split(int lane, int h, int nb, int band, T* A, int lda, T* V, int ldv, T* Tm, int ldt);
  template <class T>
  bool tp_apply(int lane, int nb, int p, int ncols, const T* v, int ldv, const T* Tm, int ldt, T* Ctop,
                int ldct, T* Cbot, int ldcb);
  // One kernel for a group of panels of 32 from the right where p <= 256, on the tensor cores (H200,
  // full Q, double, against cuBLAS's calls: deleting 100 columns at 0 of 6000 x 3000 3.62-3.69 ->
  // 2.85-2.88 ms, 200 columns 3.77-3.92 -> 3.27-3.31, rank 64 of 8000 x 3000 7.35-8.25 -> 5.99-6.52;
  // the FP64-unit kernel it replaced paid only up to p = 32;
  // docs/results/2026-11-29-tp-apply-right-mma-h200.md).
  static bool tp_apply_right_fits(int nb, int p);
  template <class T>
  bool tp_apply_right(int lane, int nrows, int nb, int w, int p, const T* v, int ldv, const T* Tm, T* Ctop, int ldct,
                      T* Cbot, int ldcb);
  template <class T>
  bool tp_chain(int lane, int m, int p, int nrhs, T* R, int ldr, T* U, int ldu, T* C1, int ldc1, T* C2,
                int ldc2, T* Tm, int chains, const kernels::rank_band_steps<T>* pro = nullptr);
  template <class T>
  static bool tp_chain_prologue_runs(int p);
  void tp_chain_wait(int lane, int t);
  template <class T>
  bool tp_merge_t(int lane, int n, int nb, int p, const T* U, int ldu, const T* Tm, T* S, T* Tb);
  template <class T>
  bool explicit_apply(int lane, char side, int h, int nb, int other, const T* V, int ldv, const T* Tm, int ldt,
                      T* C, int ldc);
  template <class T>
  std::size_t panel_work_size(int m, int n) const;
  template <class T>
  void panel_qr(int lane, int m, int n, T* A, int lda, T* Tm, int ldt, T* work, std::size_t lwork);
  template <class T>
  void givens_generate(int lane, const kernels::givens_plan& plan, T* X, int ldx, T* cs);
  template <class T>
  void givens_blocks(int lane, const kernels::givens_plan& plan, const T* cs, T* S);
  template <class T>
  static bool givens_apply_fits(const kernels::givens_plan& plan);
  template <class T>
  void givens_apply(int lane, const kernels::givens_plan& plan, const T* cs, T* M, int ldm, int roff, int jbeg,
                    int jend, int cshift);
  template <class T>
  static bool givens_blocks_apply_fits(const kernels::givens_plan& plan);
  template <class T>
  void givens_blocks_apply(int lane, const kernels::givens_plan& plan, const T* S, T* M, int ldm, int roff, int jbeg,
                           int jend, int cshift);
  template <class T>
  void hessenberg_rotations(int lane, int rows, int cols, T* H, int ldh, T* cs);
  template <class T>
  void rotations_left(int lane, int k, int ncols, const T* cs, T* C, int ldc);
  template <class T>
  void rotations_right(int lane, int nrows, int k, const T* cs, T* C, int ldc);
  template <class T>
  void sweep_up_left(int lane, int k, int ncols, const T* cs, T* C, int ldc);
  template <class T>
  void sweep_up_right(int lane, int nrows, int k, const T* cs, T* C, int ldc);
  void dep(int from, int to);
  void sync();
  // The host waited for lane's stream: what follows on any lane comes after its work.
  void waited(int lane) {
    for (int l = 0; l < lanes; ++l) note_dep(lane, l);
  }
  template <class T>
  void upload(int lane, int m, int n, const T* h, int ldh, T* d, int ldd);
  template <class T>
  void download(int lane, int m, int n, const T* d, int ldd, T* h, int ldh);
  // The NaN and Inf entries of the caller's device matrix A (m x n, lda), counted on a stream of
  // their own (A is ready now; the lanes' queued work is not waited for).
  template <class T>
  unsigned count_non_finite(int m, int n, const T* A, int lda);

 private:
  // At least `need` device ints for lane's kernels that hand work on through flags (the calls on
  // one lane's stream share them).
  int* sync_ints(int lane, std::size_t need);
  std::unique_ptr<gpu_resources> _r;
  static constexpr std::size_t max_retired = 16;
  std::vector<void*> _retired;  // capacity max_retired + 1
};
#endif

}  // namespace tessera::qr::detail
