#include <tessera/kernels_gpu/gpu_geqrt.hpp>

#include <algorithm>
#include <cstdlib>

#include "check.hpp"
#include "engine.hpp"
#include "equilibrate.hpp"
#include "sizes.hpp"

namespace tessera::kernels {

using detail::at_least_1;
using detail::elems;
using detail::min_int;
using detail::require_ge;
using detail::require_le;
using detail::require_ptr;

namespace {
// Each part of the workspace starts 256-byte aligned, as cuBLAS prefers its operands.
std::size_t part(std::size_t elements) { return (elements + 63) / 64 * 64; }
// CholeskyQR's states, one per block of ib columns, in elements of either precision (float's
// count: room to spare for double).
std::size_t cholqr_part(int n, int ib) {
  const std::size_t blocks = static_cast<std::size_t>((n + ib - 1) / (ib > 0 ? ib : 1));
  return part((blocks * detail::cholqr_scratch_bytes() + sizeof(float) - 1) / sizeof(float));
}
// The panel's blocks for whole-block CholeskyQR2: the panel itself up to cholqr_wide_max columns,
// else equal blocks of at most that many (multiples of 32).
int wide_width(int n) {
  static const int most = std::getenv("TESSERA_WIDE_NB") ? std::atoi(std::getenv("TESSERA_WIDE_NB")) : detail::cholqr_wide_max;  // EXPERIMENT
  if (n <= most) return n;
  const int blocks = (n + most - 1) / most;
  return ((n + blocks - 1) / blocks + 31) / 32 * 32;
}
}  // namespace

std::size_t gpu_geqrt_workspace_size(int m, int n, int ib) {
  // tau, the narrow blocks' T (ib x n), the wide blocks' T (wb x n), V made explicit (m x n),
  // V^T V (n x n), W (wb x n), the Householder kernel's sums, the full T's scratch (n x n),
  // CholeskyQR's states, the wide blocks' doubles.
  const int wb = std::max(wide_width(n), ib);
  // The wide blocks' doubles, counted in floats (room to spare for double); none when no block is
  // wider than ib.
  const std::size_t wide = wide_width(n) > ib ? 2 * detail::cholqr_wide_doubles(m, wide_width(n)) : 0;
  return part(elems(n, 1)) + part(elems(ib, n)) + 2 * part(elems(wb, n)) + part(elems(m, n)) + 2 * part(elems(n, n)) +
         part(detail::householder_scratch_size(m)) + cholqr_part(n, ib) + part(wide);
}

template <class T>
void gpu_geqrt(int m, int n, int ib, T* A, int lda, T* Tf, int ldt, T* work, std::size_t lwork,
               cublasHandle_t handle) {
  constexpr const char* kernel = "gpu_geqrt";
  require_ge(kernel, "n", n, "0", 0);
  require_ge(kernel, "m", m, "n", n);
  require_ge(kernel, "ib", ib, "1", 1);
  require_le(kernel, "ib", ib, "gpu_geqrt_max_ib", gpu_geqrt_max_ib);
  require_ge(kernel, "lda", lda, "max(1, m)", at_least_1(m));
  require_ge(kernel, "ldt", ldt, "max(1, n)", at_least_1(n));
  require_ge(kernel, "lwork", static_cast<long long>(lwork), "the workspace size",
             static_cast<long long>(gpu_geqrt_workspace_size(m, n, ib)));
  require_ptr(kernel, "handle", handle);
  if (n == 0) return;
  require_ptr(kernel, "A", A);
  require_ptr(kernel, "Tf", Tf);
  require_ptr(kernel, "work", work);

  detail::host_pointer_mode mode(kernel, handle);
  const cudaStream_t s = detail::stream_of(kernel, handle);
  const int wb = wide_width(n), ldw = std::max(wb, ib);
  const bool one_block = wb >= n;
  T* tau = work;
  T* Tb = tau + part(elems(n, 1));   // ib x n: each narrow block's T
  T* Tw = Tb + part(elems(ib, n));   // ldw x n: each wide block's T
  T* Vc = Tw + part(elems(ldw, n));  // m x n, ld m
  T* G = Vc + part(elems(m, n));     // n x n
  T* W = G + part(elems(n, n));      // ldw x n
  T* sums = W + part(elems(ldw, n));
  T* X = sums + part(detail::householder_scratch_size(m));  // n x n
  auto* cholqr = reinterpret_cast<unsigned char*>(X + part(elems(n, n)));  // a state per narrow block
  auto* wide = reinterpret_cast<double*>(cholqr + cholqr_part(n, ib) * sizeof(T));  // cholqr_wide's
  auto at = [](T* p, int i, int j, int ld) { return p + i + static_cast<std::ptrdiff_t>(j) * ld; };

  // The SMs this handle's stream may use: cuBLAS's target when the caller set one (a partitioned
  // GPU), else the device's.
  int sms = 0;
  if (cublasGetSmCountTarget(handle, &sms) != CUBLAS_STATUS_SUCCESS || sms <= 0) {
    int device = 0;
    detail::check(kernel, "cudaGetDevice", cudaGetDevice(&device));
    detail::check(kernel, "cudaDeviceGetAttribute",
                  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  }
  // C (rows x cols) := (I - V T V^T)^T C for V (rows x jb, explicit, ld m) and T (ldtj).
  auto apply_left = [&](int rows, int jb, int cols, T* V, T* Tj, int ldtj, T* C) {
    detail::check(kernel, "gemm (W = V^T C)",
                  cublas::gemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, jb, cols, rows, T(1), V, m, C, lda, T(0), W, ldw));
    detail::check(kernel, "trmm (W = T^T W)",
                  cublas::trmm(handle, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, CUBLAS_DIAG_NON_UNIT, jb,
                               cols, T(1), Tj, ldtj, W, ldw, W, ldw));
    detail::check(kernel, "gemm (C -= V W)",
                  cublas::gemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, rows, cols, jb, T(-1), V, m, W, ldw, T(1), C, lda));
  };
  // Columns c0..c0+jb, 32 at a time: CholeskyQR2 where it is accurate (four short kernels), else
  // one barrier per column; then their T (jb x jb, ldtj) from V^T V and the narrow blocks' T.
  auto factor_narrow = [&](int c0, int jb, T* Tj, int ldtj) {
    for (int j0 = c0; j0 < c0 + jb; j0 += ib) {
      const int w = min_int(ib, c0 + jb - j0), rows = m - j0, rest = c0 + jb - j0 - w;
      T* Aj = at(A, j0, j0, lda);
      T* Vj = at(Vc, j0, j0, m);
      T* Tn = at(Tb, 0, j0, ib);
      void* state = cholqr + static_cast<std::size_t>(j0 / ib) * detail::cholqr_scratch_bytes();
      const detail::cholqr_handoff h =
          detail::cholqr_block(kernel, rows, w, Aj, lda, tau + j0, Vj, m, Tn, ib, state, sms, s);
      // Both equilibrate the block's columns (equilibrate.hpp), so neither sees a scale of A.
      detail::householder_block_scaled(kernel, rows, w, Aj, lda, tau + j0, Vj, m, Tn, ib, sums, h.gram,
                                       detail::cholqr_column_max(state), sms, h.done, s);
      if (rest > 0) apply_left(rows, w, rest, Vj, Tn, ib, at(A, j0, j0 + w, lda));
    }
    T* Vb = at(Vc, c0, c0, m);
    detail::check(kernel, "gemm (V^T V)",
                  cublas::gemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, jb, jb, m - c0, T(1), Vb, m, Vb, m, T(0), G, jb));
    detail::full_t_by_doubling(kernel, jb, ib, G, jb, at(Tb, 0, c0, ib), ib, Tj, ldtj, X, handle);
  };

  detail::cholqr_clear(kernel, cholqr, (n + ib - 1) / ib, s);
  // Each block writes its V into Vc from its diagonal down, unit diagonal and zeros made explicit;
  // the zeros above its diagonal block, which V^T V below reads, come from clearing the top n rows.
  detail::check(kernel, "cudaMemset2DAsync (Vc's top rows)",
                cudaMemset2DAsync(Vc, sizeof(T) * static_cast<std::size_t>(m), 0, sizeof(T) * static_cast<std::size_t>(n),
                                  static_cast<std::size_t>(n), s));
  for (int j0 = 0; j0 < n; j0 += wb) {
    const int jb = min_int(wb, n - j0), rows = m - j0, rest = n - j0 - jb;
    T* Aj = at(A, j0, j0, lda);
    T* Vj = at(Vc, j0, j0, m);
    // One block: its T is the panel's. Vc is needed only to update columns to its right.
    T* Tj = one_block ? Tf : at(Tw, 0, j0, ldw);
    const int ldtj = one_block ? ldt : ldw;
    const bool done = jb > ib && detail::cholqr_wide(kernel, rows, jb, Aj, lda, one_block ? nullptr : Vj, m, Tj,
                                                     ldtj, wide, handle);
    if (!done) factor_narrow(j0, jb, Tj, ldtj);
    if (rest > 0) apply_left(rows, jb, rest, Vj, Tj, ldtj, at(A, j0, j0 + jb, lda));
  }
  if (one_block) return;
  // The whole panel's T from V^T V and the blocks' T.
  detail::check(kernel, "gemm (V^T V)",
                cublas::gemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, n, m, T(1), Vc, m, Vc, m, T(0), G, n));
  detail::full_t_by_doubling(kernel, n, wb, G, n, Tw, ldw, Tf, ldt, X, handle);
}

template void gpu_geqrt<float>(int, int, int, float*, int, float*, int, float*, std::size_t,
                               cublasHandle_t);
template void gpu_geqrt<double>(int, int, int, double*, int, double*, int, double*, std::size_t,
                                cublasHandle_t);

}  // namespace tessera::kernels
