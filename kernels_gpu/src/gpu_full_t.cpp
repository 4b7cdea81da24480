#include <tessera/kernels_gpu/gpu_full_t.hpp>

#include <algorithm>

#include "check.hpp"
#include "engine.hpp"
#include "sizes.hpp"

namespace tessera::kernels {

using detail::at_least_1;
using detail::elems;
using detail::require_ge;
using detail::require_le;
using detail::require_ptr;

namespace {

template <class T>
T* at(T* p, int ld, int i, int j) {
  return p + i + static_cast<std::ptrdiff_t>(j) * ld;
}

constexpr cublasOperation_t N = CUBLAS_OP_N, Tr = CUBLAS_OP_T;
constexpr cublasSideMode_t left = CUBLAS_SIDE_LEFT, right = CUBLAS_SIDE_RIGHT;
constexpr cublasFillMode_t lower = CUBLAS_FILL_MODE_LOWER, upper = CUBLAS_FILL_MODE_UPPER;
constexpr cublasDiagType_t unit = CUBLAS_DIAG_UNIT, non_unit = CUBLAS_DIAG_NON_UNIT;

void require_lwork(const char* kernel, std::size_t lwork, std::size_t need) {
  require_ge(kernel, "lwork", static_cast<long long>(lwork), "the workspace size", static_cast<long long>(need));
}

}  // namespace

std::size_t gpu_full_t_step_workspace_size(int m, int k, int w) {
  return elems(m - k, w) + elems(k, w);
}

template <class T>
void gpu_full_t_step(int m, int k, int w, const T* A, int lda, const T* Tkk, int ldt, T* ST, int ldst, T* work,
                     std::size_t lwork, cublasHandle_t handle) {
  constexpr const char* kernel = "gpu_full_t_step";
  require_ge(kernel, "k", k, "0", 0);
  require_ge(kernel, "w", w, "0", 0);
  require_ge(kernel, "m", m, "k + w", static_cast<long long>(k) + w);
  require_ge(kernel, "lda", lda, "max(1, m)", at_least_1(m));
  require_ge(kernel, "ldst", ldst, "max(1, m)", at_least_1(m));
  require_ge(kernel, "ldt", ldt, "max(1, w)", at_least_1(w));
  require_lwork(kernel, lwork, gpu_full_t_step_workspace_size(m, k, w));
  require_ptr(kernel, "handle", handle);
  if (w == 0) return;
  require_ptr(kernel, "A", A);
  require_ptr(kernel, "Tkk", Tkk);
  require_ptr(kernel, "ST", ST);
  require_ptr(kernel, "work", work);

  detail::host_pointer_mode mode(kernel, handle);
  const cudaStream_t s = detail::stream_of(kernel, handle);
  const int mk = m - k, mb = mk - w;
  const T* v = at(A, lda, k, k);   // V_k: w x w unit lower triangle over V_bot (mb x w)
  T* s_k = at(ST, ldst, k, 0);     // S(k:m, 0:k)
  T* t12 = at(ST, ldst, 0, k);     // T(0:k, k:k+w)
  // V_k with its triangle's zeros and ones written out, so that each product with it is one GEMM
  // (five calls a step instead of nine with TRMMs and transposes for the triangle; as fast on an
  // H200 at 8192-32768: docs/results/2026-11-28-full-t-steps-h200.md).
  T* Vc = work;                    // (m-k) x w, ld m-k
  detail::unit_lower_copy(kernel, mk, w, v, lda, Vc, mk, s);
  if (k > 0) {
    T* X = Vc + elems(mk, w);      // k x w, ld k
    using cublas::check;
    check(kernel, "gemm (X = S(k:m, 0:k)^T V_k)",
          cublas::gemm(handle, Tr, N, k, w, mk, T(1), s_k, ldst, Vc, mk, T(0), X, k));
    check(kernel, "trmm (T12 = -X Tkk)",
          cublas::trmm(handle, right, upper, N, non_unit, k, w, T(-1), Tkk, ldt, X, k, t12, ldst));
    check(kernel, "gemm (S(k:m, 0:k) += V_k T12^T)",
          cublas::gemm(handle, N, Tr, mk, k, w, T(1), Vc, mk, t12, ldst, T(1), s_k, ldst));
  }
  // S(k+w:m, k:k+w) = V_bot Tkk^T, then the diagonal block.
  if (mb > 0)
    cublas::check(kernel, "trmm (S_k = V_bot Tkk^T)",
                  cublas::trmm(handle, right, upper, Tr, non_unit, mb, w, T(1), Tkk, ldt, Vc + w, mk,
                               at(ST, ldst, k + w, k), ldst));
  detail::st_diagonal_block(kernel, w, v, lda, Tkk, ldt, at(ST, ldst, k, k), ldst, s);
}

std::size_t gpu_apply_q_full_t_workspace_size(int n, int k) { return 2 * elems(k, n); }

template <class T>
void gpu_apply_q_full_t(cublasOperation_t op, int m, int n, int k, const T* V, int ldv, const T* Tf, int ldt, T* C,
                        int ldc, T* work, std::size_t lwork, cublasHandle_t handle) {
  constexpr const char* kernel = "gpu_apply_q_full_t";
  detail::require_reflector_arguments(kernel, op, m, n, k, ldv, ldt, ldc);
  require_lwork(kernel, lwork, gpu_apply_q_full_t_workspace_size(n, k));
  require_ptr(kernel, "handle", handle);
  if (n == 0 || k == 0) return;
  require_ptr(kernel, "V", V);
  require_ptr(kernel, "Tf", Tf);
  require_ptr(kernel, "C", C);
  require_ptr(kernel, "work", work);
  detail::host_pointer_mode mode(kernel, handle);
  using cublas::check;
  // Two k x n buffers (ld k), every TRMM out of place: cuBLAS's in-place TRMM takes a slow
  // recursive path (H100: 206 against 59 us for a 512 x 512 T on 512 x 7488).
  T* W = work;
  T* X = work + elems(k, n);
  const int mb = m - k;
  check(kernel, "trmm (W = V1^T C1)", cublas::trmm(handle, left, lower, Tr, unit, k, n, T(1), V, ldv, C, ldc, W, k));
  if (mb > 0)
    check(kernel, "gemm (W += V2^T C2)",
          cublas::gemm(handle, Tr, N, k, n, mb, T(1), V + k, ldv, C + k, ldc, T(1), W, k));
  check(kernel, "trmm (X = op(T) W)", cublas::trmm(handle, left, upper, op, non_unit, k, n, T(1), Tf, ldt, W, k, X, k));
  if (mb > 0)
    check(kernel, "gemm (C2 -= V2 X)", cublas::gemm(handle, N, N, mb, n, k, T(-1), V + k, ldv, X, k, T(1), C + k, ldc));
  check(kernel, "trmm (W = V1 X)", cublas::trmm(handle, left, lower, N, unit, k, n, T(1), V, ldv, X, k, W, k));
  check(kernel, "geam (C1 -= W)", cublas::geam(handle, N, N, k, n, T(1), C, ldc, T(-1), W, k, C, ldc));
}

std::size_t gpu_q_block_workspace_size(int n, int r0, int rb, int c0, int cb, int nrhs) {
  const int p = std::max(0, std::min({n, r0 + rb, c0 + cb}));
  return elems(rb + cb, p) + elems(p, nrhs);
}

namespace {

void require_block(const char* kernel, int m, int n, int r0, int rb, int c0, int cb, int lda, int ldst) {
  require_ge(kernel, "n", n, "0", 0);
  require_ge(kernel, "m", m, "n", n);
  require_ge(kernel, "lda", lda, "max(1, m)", at_least_1(m));
  require_ge(kernel, "ldst", ldst, "max(1, m)", at_least_1(m));
  require_ge(kernel, "r0", r0, "0", 0);
  require_ge(kernel, "rb", rb, "0", 0);
  require_le(kernel, "r0 + rb", static_cast<long long>(r0) + rb, "m", m);
  require_ge(kernel, "c0", c0, "0", 0);
  require_ge(kernel, "cb", cb, "0", 0);
  require_le(kernel, "c0 + cb", static_cast<long long>(c0) + cb, "m", m);
}

}  // namespace

template <class T>
void gpu_q_block(int m, int n, int r0, int rb, int c0, int cb, const T* A, int lda, const T* ST, int ldst, T* Qb,
                 int ldq, T* work, std::size_t lwork, cublasHandle_t handle) {
  constexpr const char* kernel = "gpu_q_block";
  require_block(kernel, m, n, r0, rb, c0, cb, lda, ldst);
  require_ge(kernel, "ldq", ldq, "max(1, rb)", at_least_1(rb));
  require_lwork(kernel, lwork, gpu_q_block_workspace_size(n, r0, rb, c0, cb, 0));
  require_ptr(kernel, "handle", handle);
  if (rb == 0 || cb == 0) return;
  detail::host_pointer_mode mode(kernel, handle);
  const cudaStream_t s = detail::stream_of(kernel, handle);
  detail::shifted_rows<T>(kernel, rb, cb, 0, r0 - c0, nullptr, 1, Qb, ldq, s);
  const int p = std::min({n, r0 + rb, c0 + cb});
  if (p == 0) return;
  T* Vb = work;
  T* Sb = work + elems(rb, p);
  detail::lower_rows(kernel, r0, rb, p, A, lda, true, Vb, rb, s);
  detail::lower_rows(kernel, c0, cb, p, ST, ldst, false, Sb, cb, s);
  cublas::check(kernel, "gemm (Qb -= Vb Sb^T)",
                cublas::gemm(handle, N, Tr, rb, cb, p, T(-1), Vb, rb, Sb, cb, T(1), Qb, ldq));
}

template <class T>
void gpu_apply_q_block(cublasOperation_t op, int m, int n, int r0, int rb, int c0, int cb, int nrhs, const T* A,
                       int lda, const T* ST, int ldst, const T* X, int ldx, T* Y, int ldy, T* work,
                       std::size_t lwork, cublasHandle_t handle) {
  constexpr const char* kernel = "gpu_apply_q_block";
  if (op != CUBLAS_OP_T && op != CUBLAS_OP_N) detail::bad_argument(kernel, "op", op, "==", "CUBLAS_OP_N or _T", 0);
  require_block(kernel, m, n, r0, rb, c0, cb, lda, ldst);
  require_ge(kernel, "nrhs", nrhs, "0", 0);
  const bool t = op == CUBLAS_OP_T;
  const int in = t ? rb : cb, out = t ? cb : rb;
  require_ge(kernel, "ldx", ldx, "max(1, rows of X)", at_least_1(in));
  require_ge(kernel, "ldy", ldy, "max(1, rows of Y)", at_least_1(out));
  require_lwork(kernel, lwork, gpu_q_block_workspace_size(n, r0, rb, c0, cb, nrhs));
  require_ptr(kernel, "handle", handle);
  if (out == 0 || nrhs == 0) return;
  detail::host_pointer_mode mode(kernel, handle);
  const cudaStream_t s = detail::stream_of(kernel, handle);
  detail::shifted_rows(kernel, out, nrhs, in, t ? c0 - r0 : r0 - c0, X, ldx, Y, ldy, s);
  const int p = std::min({n, r0 + rb, c0 + cb});
  if (p == 0 || in == 0) return;
  T* Vb = work;
  T* Sb = work + elems(rb, p);
  T* Z = Sb + elems(cb, p);
  detail::lower_rows(kernel, r0, rb, p, A, lda, true, Vb, rb, s);
  detail::lower_rows(kernel, c0, cb, p, ST, ldst, false, Sb, cb, s);
  const T* first = t ? Vb : Sb;
  const T* second = t ? Sb : Vb;
  cublas::check(kernel, "gemm (Z = B^T X)", cublas::gemm(handle, Tr, N, p, nrhs, in, T(1), first, in, X, ldx, T(0), Z, p));
  cublas::check(kernel, "gemm (Y -= B Z)",
                cublas::gemm(handle, N, N, out, nrhs, p, T(-1), second, out, Z, p, T(1), Y, ldy));
}

#define TESSERA_GPU_FULL_T(T)                                                                                    \
  template void gpu_full_t_step<T>(int, int, int, const T*, int, const T*, int, T*, int, T*, std::size_t,       \
                                   cublasHandle_t);                                                            \
  template void gpu_apply_q_full_t<T>(cublasOperation_t, int, int, int, const T*, int, const T*, int, T*, int,  \
                                      T*, std::size_t, cublasHandle_t);                                        \
  template void gpu_q_block<T>(int, int, int, int, int, int, const T*, int, const T*, int, T*, int, T*,         \
                               std::size_t, cublasHandle_t);                                                   \
  template void gpu_apply_q_block<T>(cublasOperation_t, int, int, int, int, int, int, int, const T*, int,       \
                                     const T*, int, const T*, int, T*, int, T*, std::size_t, cublasHandle_t);
TESSERA_GPU_FULL_T(float)
TESSERA_GPU_FULL_T(double)
#undef TESSERA_GPU_FULL_T

}  // namespace tessera::kernels
