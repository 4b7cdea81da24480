// Small fills of device matrices for QR updating (tessera/kernels_gpu/gpu_fill.hpp).
#include <tessera/kernels_gpu/gpu_fill.hpp>

#include "check.hpp"

namespace tessera::kernels {
namespace {

template <class T>
__global__ void triu_copy_kernel(int nb, int below, const T* P, int ldp, T* R, int ldr) {
  const int c = static_cast<int>(blockIdx.x);
  for (int r = static_cast<int>(threadIdx.x); r < nb + below; r += static_cast<int>(blockDim.x))
    R[r + static_cast<std::size_t>(c) * ldr] =
        (r <= c) ? P[r + static_cast<std::size_t>(c) * ldp] : T(0);
}

// Each entry of A is read and rewritten by one thread.
template <class T>
__global__ void split_panel_kernel(int nb, int below, T* A, int lda, T* V, int ldv) {
  const int c = static_cast<int>(blockIdx.x);
  for (int r = static_cast<int>(threadIdx.x); r < nb + below; r += static_cast<int>(blockDim.x)) {
    T* a = A + r + static_cast<std::size_t>(c) * lda;
    const T x = *a;
    V[r + static_cast<std::size_t>(c) * ldv] = r > c ? x : r == c ? T(1) : T(0);
    if (r > c) *a = T(0);
  }
}

template <class T>
__global__ void identity_kernel(int p, T* A, int lda) {
  const int c = static_cast<int>(blockIdx.x);
  for (int r = static_cast<int>(threadIdx.x); r < p; r += static_cast<int>(blockDim.x))
    A[r + static_cast<std::size_t>(c) * lda] = (r == c) ? T(1) : T(0);
}

// Thread (i, j), i < dr: the chain of destinations (i + q dr, j + q dc) while i + q dr <= j + q dc
// < s, batches of 8 sources loaded before their stores (the first store's entry is the last
// batch's eighth source, already read).
template <class T>
__global__ void shift_upper_kernel(int s, int dr, int dc, T* A, std::size_t lda) {
  const std::size_t idx = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= std::size_t(dr) * s) return;
  int i = static_cast<int>(idx % dr), j = static_cast<int>(idx / dr);
  if (i > j) return;
  const std::size_t step = std::size_t(dr) + std::size_t(dc) * lda;
  T* d = A + i + std::size_t(j) * lda;
  for (;;) {
    constexpr int batch = 8;
    T v[batch];
#pragma unroll
    for (int q = 0; q < batch; ++q)  // a chain's destinations end at its first one outside
      if (i + q * dr <= j + q * dc && j + q * dc < s) v[q] = d[(q + 1) * step];
#pragma unroll
    for (int q = 0; q < batch; ++q)
      if (i + q * dr <= j + q * dc && j + q * dc < s) d[q * step] = v[q];
    if (!(i + batch * dr <= j + batch * dc && j + batch * dc < s)) return;
    i += batch * dr, j += batch * dc, d += batch * step;
  }
}

}  // namespace

template <class T>
void gpu_shift_upper(int s, int dr, int dc, T* A, int lda, cudaStream_t stream) {
  constexpr const char* kernel = "gpu_shift_upper";
  detail::require_ge(kernel, "s", s, "0", 0);
  detail::require_ge(kernel, "dr", dr, "1", 1);
  detail::require_ge(kernel, "dc", dc, "0", 0);
  detail::require_ge(kernel, "dr", dr, "dc", dc);  // a chain's destinations then end at its first one outside
  detail::require_ge(kernel, "lda", lda, "s + dr", s + dr);
  if (s == 0) return;
  const std::size_t threads = std::size_t(dr) * s;
  shift_upper_kernel<T><<<static_cast<unsigned>((threads + 255) / 256), 256, 0, stream>>>(s, dr, dc, A, std::size_t(lda));
  detail::check(kernel, "shift_upper_kernel launch", cudaGetLastError());
}

template <class T>
void gpu_identity(int p, T* A, int lda, cudaStream_t stream) {
  if (p <= 0) return;
  detail::require_ge("gpu_identity", "lda", lda, "p", p);
  identity_kernel<T><<<static_cast<unsigned>(p), 128, 0, stream>>>(p, A, lda);
  detail::check("gpu_identity", "identity_kernel launch", cudaGetLastError());
}

template <class T>
void gpu_triu_copy(int nb, int below, const T* P, int ldp, T* R, int ldr, cudaStream_t stream) {
  constexpr const char* kernel = "gpu_triu_copy";
  if (nb <= 0) return;
  detail::require_ge(kernel, "ldp", ldp, "nb", nb);
  detail::require_ge(kernel, "ldr", ldr, "nb + below", nb + below);
  triu_copy_kernel<T><<<static_cast<unsigned>(nb), 128, 0, stream>>>(nb, below, P, ldp, R, ldr);
  detail::check(kernel, "triu_copy_kernel launch", cudaGetLastError());
}

template <class T>
void gpu_split_panel(int nb, int below, T* A, int lda, T* V, int ldv, cudaStream_t stream) {
  constexpr const char* kernel = "gpu_split_panel";
  if (nb <= 0) return;
  detail::require_ge(kernel, "below", below, "0", 0);
  detail::require_ge(kernel, "lda", lda, "nb + below", nb + below);
  detail::require_ge(kernel, "ldv", ldv, "nb + below", nb + below);
  split_panel_kernel<T><<<static_cast<unsigned>(nb), 128, 0, stream>>>(nb, below, A, lda, V, ldv);
  detail::check(kernel, "split_panel_kernel launch", cudaGetLastError());
}

template void gpu_identity<float>(int, float*, int, cudaStream_t);
template void gpu_identity<double>(int, double*, int, cudaStream_t);
template void gpu_triu_copy<float>(int, int, const float*, int, float*, int, cudaStream_t);
template void gpu_triu_copy<double>(int, int, const double*, int, double*, int, cudaStream_t);
template void gpu_split_panel<float>(int, int, float*, int, float*, int, cudaStream_t);
template void gpu_split_panel<double>(int, int, double*, int, double*, int, cudaStream_t);
template void gpu_shift_upper<float>(int, int, int, float*, int, cudaStream_t);
template void gpu_shift_upper<double>(int, int, int, double*, int, cudaStream_t);

}  // namespace tessera::kernels
