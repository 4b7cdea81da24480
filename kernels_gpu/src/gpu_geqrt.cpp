#include <tessera/kernels_gpu/gpu_geqrt.hpp>

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
}  // namespace

std::size_t gpu_geqrt_workspace_size(int m, int n, int ib) {
  // tau, the blocks' T (ib x n), V made explicit (m x n), V^T V (n x n), W (ib x n), the
  // Householder kernel's sums, the full T's scratch (n x n), CholeskyQR's states.
  return part(elems(n, 1)) + 2 * part(elems(ib, n)) + part(elems(m, n)) + 2 * part(elems(n, n)) +
         part(detail::householder_scratch_size(m)) + cholqr_part(n, ib);
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
  T* tau = work;
  T* Tb = tau + part(elems(n, 1));  // ib x n: each block's T on the diagonal
  T* Vc = Tb + part(elems(ib, n));  // m x n, ld m
  T* G = Vc + part(elems(m, n));    // n x n (a block's jb x jb, then the panel's)
  T* W = G + part(elems(n, n));     // ib x n
  T* sums = W + part(elems(ib, n));
  T* X = sums + part(detail::householder_scratch_size(m));  // n x n
  auto* cholqr = reinterpret_cast<unsigned char*>(X + part(elems(n, n)));  // a state per block
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
  // A short panel of one block: one kernel, its T is the panel's.
  const bool short_rows = m <= detail::householder_short_max_rows<T>();
  if (short_rows && n <= ib) {
    detail::householder_short_block(kernel, m, n, A, lda, tau, Vc, m, Tf, ldt, s);
    return;
  }
  detail::cholqr_clear(kernel, cholqr, (n + ib - 1) / ib, s);
  // Each block writes its V into Vc from its diagonal down, unit diagonal and zeros made explicit;
  // the zeros above its diagonal block, which V^T V below reads, come from clearing the top n rows.
  detail::check(kernel, "cudaMemset2DAsync (Vc's top rows)",
                cudaMemset2DAsync(Vc, sizeof(T) * static_cast<std::size_t>(m), 0, sizeof(T) * static_cast<std::size_t>(n),
                                  static_cast<std::size_t>(n), s));
  for (int j0 = 0; j0 < n; j0 += ib) {
    const int jb = min_int(ib, n - j0), rows = m - j0, rest = n - j0 - jb;
    T* Aj = at(A, j0, j0, lda);
    T* Vj = at(Vc, j0, j0, m);
    // CholeskyQR2 where it is accurate (four short kernels), else one barrier per column; either
    // way the block's T.
    T* Tj = at(Tb, 0, j0, ib);
    if (short_rows) {  // one thread block holds the block's rows: one kernel
      detail::householder_short_block(kernel, rows, jb, Aj, lda, tau + j0, Vj, m, Tj, ib, s);
    } else {
      void* state = cholqr + static_cast<std::size_t>(j0 / ib) * detail::cholqr_scratch_bytes();
      const detail::cholqr_handoff h =
          detail::cholqr_block(kernel, rows, jb, Aj, lda, tau + j0, Vj, m, Tj, ib, state, sms, s);
      // All three equilibrate the block's columns (equilibrate.hpp), so none sees a scale of A.
      detail::householder_block_scaled(kernel, rows, jb, Aj, lda, tau + j0, Vj, m, Tj, ib, sums, h.gram,
                                       detail::cholqr_column_max(state), sms, h.done, s);
    }
    if (rest == 0) break;
    T* C = at(A, j0, j0 + jb, lda);
    detail::check(kernel, "gemm (W = V^T C)",
                  cublas::gemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, jb, rest, rows, T(1), Vj, m, C, lda, T(0), W, ib));
    detail::check(kernel, "trmm (W = T^T W)",
                  cublas::trmm(handle, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, CUBLAS_DIAG_NON_UNIT, jb,
                               rest, T(1), Tj, ib, W, ib, W, ib));
    detail::check(kernel, "gemm (C -= V W)",
                  cublas::gemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, rows, rest, jb, T(-1), Vj, m, W, ib, T(1), C, lda));
  }
  // The whole panel's T from V^T V and the blocks' T.
  detail::check(kernel, "gemm (V^T V)",
                cublas::gemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, n, m, T(1), Vc, m, Vc, m, T(0), G, n));
  detail::full_t_by_doubling(kernel, n, ib, G, n, Tb, ib, Tf, ldt, X, handle);
}

template void gpu_geqrt<float>(int, int, int, float*, int, float*, int, float*, std::size_t,
                               cublasHandle_t);
template void gpu_geqrt<double>(int, int, int, double*, int, double*, int, double*, std::size_t,
                                cublasHandle_t);

}  // namespace tessera::kernels
