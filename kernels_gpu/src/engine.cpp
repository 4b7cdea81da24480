#include "engine.hpp"

#include <cstdint>

#include "check.hpp"

namespace tessera::kernels::detail {

host_pointer_mode::host_pointer_mode(const char* kernel, cublasHandle_t h) : _handle(h) {
  check(kernel, "cublasGetPointerMode", cublasGetPointerMode(h, &_saved));
  if (_saved != CUBLAS_POINTER_MODE_HOST)
    check(kernel, "cublasSetPointerMode", cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
}

host_pointer_mode::~host_pointer_mode() {
  if (_saved != CUBLAS_POINTER_MODE_HOST) cublasSetPointerMode(_handle, _saved);
}

cudaStream_t stream_of(const char* kernel, cublasHandle_t h) {
  cudaStream_t s = nullptr;
  check(kernel, "cublasGetStream", cublasGetStream(h, &s));
  return s;
}

// --- the panel -----------------------------------------------------------------------------

template <class T>
void gram(const char* kernel, int count, int nb, int m_last, int kk, const T* V, int ldv, T* G,
          cublasHandle_t h) {
  const long long gsize = static_cast<long long>(kk) * kk;
  const int full = m_last == nb ? count : count - 1;
  // Only the part of G below the diagonal blocks is read; a GEMM still beats a loop of SYRKs.
  if (full > 0)
    check(kernel, "gemm_strided (V^T V)",
          cublas::gemm_strided(h, CUBLAS_OP_T, CUBLAS_OP_N, kk, kk, nb, T(1), V, ldv, nb, V, ldv,
                               nb, T(0), G, kk, gsize, full));
  if (full < count) {
    const T* Vl = V + static_cast<std::ptrdiff_t>(count - 1) * nb;
    check(kernel, "gemm (V^T V)",
          cublas::gemm(h, CUBLAS_OP_T, CUBLAS_OP_N, kk, kk, m_last, T(1), Vl, ldv, Vl, ldv, T(0),
                       G + (count - 1) * gsize, kk));
  }
}

template <class T>
void make_factors(const char* kernel, int count, int nb, int m_last, int kk, int ib, const T* V,
                  int ldv, const T* Tb, int ldt, std::ptrdiff_t strideT, T* Z, T* G,
                  cublasHandle_t h, cudaStream_t stream) {
  const int ldz = kk + nb;
  const long long zsize = static_cast<long long>(ldz) * kk;
  gram(kernel, count, nb, m_last, kk, V, ldv, G, h);
  build_full_t(kernel, count, kk, ib, G, Tb, ldt, strideT, Z, ldz, zsize, true, stream);
  // V_i T_i^T below T_i^T, one batched GEMM for the full tile rows.
  const int full = m_last == nb ? count : count - 1;
  if (full > 0)
    check(kernel, "gemm_strided (V T^T)",
          cublas::gemm_strided(h, CUBLAS_OP_N, CUBLAS_OP_N, nb, kk, kk, T(1), V, ldv, nb, Z, ldz,
                               zsize, T(0), Z + kk, ldz, zsize, full));
  if (full < count) {
    T* Zl = Z + (count - 1) * zsize;
    check(kernel, "gemm (V T^T)",
          cublas::gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m_last, kk, kk, T(1),
                       V + static_cast<std::ptrdiff_t>(count - 1) * nb, ldv, Zl, ldz, T(0), Zl + kk,
                       ldz));
  }
}

namespace {

// One TSQRT's update, W: kk x n. Three kernels: W = A1 (copy), W += V^T A2, then A1 and A2 as the
// two members of one strided batch when the shapes allow.
template <class T>
void apply_one(const char* kernel, int m, int n, int kk, int nb, T* A1, int lda1, T* A2i, int lda2,
               const T* Vi, int ldv, const T* Zi, T* W, cublasHandle_t h, cudaStream_t stream) {
  const int ldz = kk + nb;
  check(kernel, "cudaMemcpy2DAsync (W = A1)",
        cudaMemcpy2DAsync(W, sizeof(T) * kk, A1, sizeof(T) * lda1, sizeof(T) * kk, n,
                          cudaMemcpyDeviceToDevice, stream));
  check(kernel, "gemm (W += V^T A2)",
        cublas::gemm(h, CUBLAS_OP_T, CUBLAS_OP_N, kk, n, m, T(1), Vi, ldv, A2i, lda2, T(1), W, kk));
  // A2_i a whole number of elements after A1 (they are rows of one matrix in practice).
  const auto a1 = reinterpret_cast<std::uintptr_t>(A1);
  const auto a2 = reinterpret_cast<std::uintptr_t>(A2i);
  if (m == kk && lda1 == lda2 && a2 > a1 && (a2 - a1) % sizeof(T) == 0) {
    const auto strideC = static_cast<long long>((a2 - a1) / sizeof(T));
    check(kernel, "gemm_strided ([A1; A2] -= [T^T; V T^T] W)",
          cublas::gemm_strided(h, CUBLAS_OP_N, CUBLAS_OP_N, kk, n, kk, T(-1), Zi, ldz, kk, W, kk, 0,
                               T(1), A1, lda1, strideC, 2));
  } else {
    check(kernel, "gemm (A1 -= T^T W)",
          cublas::gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, kk, n, kk, T(-1), Zi, ldz, W, kk, T(1), A1,
                       lda1));
    check(kernel, "gemm (A2 -= V T^T W)",
          cublas::gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, kk, T(-1), Zi + kk, ldz, W, kk, T(1), A2i,
                       lda2));
  }
}

// Rows [0, count) of one batch, W: count x (kk x n). Only the A1 chain is sequential:
//   W_i = V_i^T A2_i        all i, one strided batch (A2_i and V_i are nb rows apart)
//   W_i += A1; A1 -= T_i^T W_i     i in order
//   A2_i -= (V_i T_i^T) W_i  all i, one strided batch
// The last row, when shorter (m_last < nb), gets GEMMs of its own.
template <class T>
void apply_batch(const char* kernel, int count, int nb, int m_last, int n, int kk, T* A1, int lda1,
                 T* A2, int lda2, const T* V, int ldv, const T* Z, T* W, cublasHandle_t h) {
  const int ldz = kk + nb;
  const long long zsize = static_cast<long long>(ldz) * kk, wsize = static_cast<long long>(kk) * n;
  const int full = m_last == nb ? count : count - 1;
  const std::ptrdiff_t last = static_cast<std::ptrdiff_t>(count - 1) * nb;
  if (full > 0)
    check(kernel, "gemm_strided (W_i = V_i^T A2_i)",
          cublas::gemm_strided(h, CUBLAS_OP_T, CUBLAS_OP_N, kk, n, nb, T(1), V, ldv, nb, A2, lda2,
                               nb, T(0), W, kk, wsize, full));
  if (full < count)
    check(kernel, "gemm (W = V^T A2, last row)",
          cublas::gemm(h, CUBLAS_OP_T, CUBLAS_OP_N, kk, n, m_last, T(1), V + last, ldv, A2 + last,
                       lda2, T(0), W + (count - 1) * wsize, kk));
  for (int i = 0; i < count; ++i) {
    T* Wi = W + i * wsize;
    check(kernel, "geam (W_i += A1)",
          cublas::geam(h, CUBLAS_OP_N, CUBLAS_OP_N, kk, n, T(1), Wi, kk, T(1), A1, lda1, Wi, kk));
    check(kernel, "gemm (A1 -= T_i^T W_i)",
          cublas::gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, kk, n, kk, T(-1), Z + i * zsize, ldz, Wi, kk,
                       T(1), A1, lda1));
  }
  if (full > 0)
    check(kernel, "gemm_strided (A2_i -= V_i T_i^T W_i)",
          cublas::gemm_strided(h, CUBLAS_OP_N, CUBLAS_OP_N, nb, n, kk, T(-1), Z + kk, ldz, zsize, W,
                               kk, wsize, T(1), A2, lda2, nb, full));
  if (full < count)
    check(kernel, "gemm (A2 -= V T^T W, last row)",
          cublas::gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m_last, n, kk, T(-1),
                       Z + (count - 1) * zsize + kk, ldz, W + (count - 1) * wsize, kk, T(1),
                       A2 + last, lda2));
}

}  // namespace

template <class T>
void apply_factors(const char* kernel, int count, int nb, int m_last, int n, int kk, T* A1,
                   int lda1, T* A2, int lda2, const T* V, int ldv, const T* Z, T* W, int batch,
                   cublasHandle_t h, cudaStream_t stream) {
  const std::ptrdiff_t zsize = static_cast<std::ptrdiff_t>(kk + nb) * kk;
  for (int i0 = 0; i0 < count; i0 += batch) {
    const int rows = count - i0 < batch ? count - i0 : batch;
    const std::ptrdiff_t r = static_cast<std::ptrdiff_t>(i0) * nb;
    const int m_end = i0 + rows == count ? m_last : nb;
    if (rows == 1)
      apply_one(kernel, m_end, n, kk, nb, A1, lda1, A2 + r, lda2, V + r, ldv, Z + i0 * zsize, W, h,
                stream);
    else
      apply_batch(kernel, rows, nb, m_end, n, kk, A1, lda1, A2 + r, lda2, V + r, ldv,
                  Z + i0 * zsize, W, h);
  }
}

template <class T>
void apply_blocked(const char* kernel, int m, int n, int kk, int ib, T* A1, int lda1, T* A2,
                   int lda2, const T* V, int ldv, const T* Tb, int ldt, T* W, int ldw,
                   cublasHandle_t h, cudaStream_t stream) {
  // TPMQRT (L, T) order: block 0 first. T_jj sits at Tb(0:w, c0:c0+w); its lower part is not read.
  for (int c0 = 0; c0 < kk; c0 += ib) {
    const int w = kk - c0 < ib ? kk - c0 : ib;
    const std::ptrdiff_t col = c0;
    T* A1j = A1 + col;
    const T* Vj = V + col * ldv;
    check(kernel, "cudaMemcpy2DAsync (W = A1)",
          cudaMemcpy2DAsync(W, sizeof(T) * ldw, A1j, sizeof(T) * lda1, sizeof(T) * w, n,
                            cudaMemcpyDeviceToDevice, stream));
    check(
        kernel, "gemm (W += V^T A2)",
        cublas::gemm(h, CUBLAS_OP_T, CUBLAS_OP_N, w, n, m, T(1), Vj, ldv, A2, lda2, T(1), W, ldw));
    check(kernel, "trmm (W = T^T W)",
          cublas::trmm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T,
                       CUBLAS_DIAG_NON_UNIT, w, n, T(1), Tb + col * ldt, ldt, W, ldw, W, ldw));
    check(
        kernel, "geam (A1 -= W)",
        cublas::geam(h, CUBLAS_OP_N, CUBLAS_OP_N, w, n, T(1), A1j, lda1, T(-1), W, ldw, A1j, lda1));
    check(
        kernel, "gemm (A2 -= V W)",
        cublas::gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, w, T(-1), Vj, ldv, W, ldw, T(1), A2, lda2));
  }
}

#define TESSERA_ENGINE_INSTANTIATE(T)                                                              \
  template void gram<T>(const char*, int, int, int, int, const T*, int, T*, cublasHandle_t);      \
  template void make_factors<T>(const char*, int, int, int, int, int, const T*, int, const T*,    \
                                int, std::ptrdiff_t, T*, T*, cublasHandle_t, cudaStream_t);       \
  template void apply_factors<T>(const char*, int, int, int, int, int, T*, int, T*, int,          \
                                 const T*, int, const T*, T*, int, cublasHandle_t, cudaStream_t); \
  template void apply_blocked<T>(const char*, int, int, int, int, T*, int, T*, int, const T*, int, \
                                 const T*, int, T*, int, cublasHandle_t, cudaStream_t);
TESSERA_ENGINE_INSTANTIATE(float)
TESSERA_ENGINE_INSTANTIATE(double)
#undef TESSERA_ENGINE_INSTANTIATE

}  // namespace tessera::kernels::detail
