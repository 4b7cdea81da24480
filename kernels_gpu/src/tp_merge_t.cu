// gpu_tp_merge_t (tessera/kernels_gpu/gpu_tpqrt.hpp): the triangular factor of several consecutive
// TPQRT panels at once, so that the QR updates' lane Q takes them as one block reflector (two
// panels, 64 columns: qr/src/update_state.hpp) and reads and writes Q's n x p new columns once
// for them instead of once a panel.
//
// Panel i's reflectors are V_i = [E_i; 0; U_i] (E_i: the identity on the panel's own rows), so
// V_a^T V_b = U_a^T U_b for a != b, and LARFT's block recurrence gives column block k of T as
// -T(0:c, 0:c) (U_{0:c}^T U_k) T_k, c = k nb: one thread block, T, S's block column and the
// partial product in shared memory (about 200 KB at n = 128).
#include <algorithm>
#include <cstddef>

#include <tessera/kernels_gpu/gpu_tpqrt.hpp>

#include "check.hpp"
#include "per_device.hpp"

namespace tessera::kernels {
namespace {

constexpr int threads = 256;

// Shared memory (doubles): T (n x n, ld n + 1), S's block column and Y (n x nb each).
std::size_t smem_doubles(int n, int nb) { return std::size_t(n) * (n + 1) + 2 * std::size_t(n) * nb; }

template <class T>
__global__ void __launch_bounds__(threads) tp_merge_t_kernel(int n, int nb, const T* Tm, const T* S, int lds, T* Tb,
                                                             int ldtb) {
  extern __shared__ double sh[];
  const int ld = n + 1;
  double* Ts = sh;
  double* Sc = sh + std::size_t(n) * ld;
  double* Y = Sc + n * nb;
  const int tid = static_cast<int>(threadIdx.x);
  // The panels' own T on the diagonal, zeros elsewhere.
  for (int idx = tid; idx < n * n; idx += threads) {
    const int i = idx % n, j = idx / n, bi = i / nb, bj = j / nb;
    Ts[i + j * ld] = bi == bj && i <= j
                         ? static_cast<double>(Tm[static_cast<std::ptrdiff_t>(bi) * nb * nb + (i - bi * nb) + (j - bj * nb) * nb])
                         : 0.0;
  }
  for (int c = nb; c < n; c += nb) {
    const int jb = min(nb, n - c);
    for (int idx = tid; idx < c * jb; idx += threads) {
      const int l = idx % c, j = idx / c;
      Sc[l + j * c] = static_cast<double>(S[l + static_cast<std::ptrdiff_t>(c + j) * lds]);
    }
    __syncthreads();
    // Y = T(0:c, 0:c) S(0:c, c:c+jb), T upper triangular.
    for (int idx = tid; idx < c * jb; idx += threads) {
      const int i = idx % c, j = idx / c;
      double y = 0;
      for (int l = i; l < c; ++l) y = fma(Ts[i + l * ld], Sc[l + j * c], y);
      Y[i + j * c] = y;
    }
    __syncthreads();
    // T(0:c, c:c+jb) = -Y T_k, T_k upper triangular.
    for (int idx = tid; idx < c * jb; idx += threads) {
      const int i = idx % c, j = idx / c;
      double z = 0;
      for (int l = 0; l <= j; ++l) z = fma(Y[i + l * c], Ts[(c + l) + (c + j) * ld], z);
      Ts[i + (c + j) * ld] = -z;
    }
    __syncthreads();
  }
  __syncthreads();  // n <= nb: no step above
  for (int idx = tid; idx < n * n; idx += threads) {
    const int i = idx % n, j = idx / n;
    Tb[i + static_cast<std::ptrdiff_t>(j) * ldtb] = static_cast<T>(Ts[i + j * ld]);
  }
}

// The shared memory the kernel may take on this device, set once as its limit.
template <class T>
int merge_smem_limit() {
  constexpr const char* fn = "tessera::kernels::gpu_tp_merge_t";
  static detail::per_device_value limit;
  return limit.get(fn, [] {
    int dev = 0, optin = 0;
    detail::check(fn, "cudaGetDevice", cudaGetDevice(&dev));
    detail::check(fn, "cudaDeviceGetAttribute",
                  cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    const int bytes = static_cast<int>(std::min<std::size_t>(
        static_cast<std::size_t>(optin), smem_doubles(gpu_tp_merge_t_max_cols, 32) * sizeof(double)));
    detail::check(fn, "cudaFuncSetAttribute",
                  cudaFuncSetAttribute(tp_merge_t_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    return bytes;
  });
}

}  // namespace

template <class T>
bool gpu_tp_merge_t_runs(int n, int nb) {
  return n >= 0 && n <= gpu_tp_merge_t_max_cols && nb >= 1 && nb <= 32 &&
         smem_doubles(n, nb) * sizeof(double) <= static_cast<std::size_t>(merge_smem_limit<T>());
}

template <class T>
void gpu_tp_merge_t(int n, int nb, const T* Tm, const T* S, int lds, T* Tb, int ldtb, cudaStream_t stream) {
  constexpr const char* fn = "tessera::kernels::gpu_tp_merge_t";
  detail::require_ge(fn, "nb", nb, "1", 1);
  detail::require_le(fn, "nb", nb, "32", 32);
  detail::require_ge(fn, "n", n, "0", 0);
  detail::require_le(fn, "n", n, "gpu_tp_merge_t_max_cols", gpu_tp_merge_t_max_cols);
  if (n == 0) return;
  detail::require_ge(fn, "lds", lds, "n", n);
  detail::require_ge(fn, "ldtb", ldtb, "n", n);
  detail::require_ptr(fn, "Tm", Tm);
  detail::require_ptr(fn, "S", S);
  detail::require_ptr(fn, "Tb", Tb);
  const std::size_t bytes = smem_doubles(n, nb) * sizeof(double), limit = std::size_t(merge_smem_limit<T>());
  if (bytes > limit) {
    int fits = n;
    while (fits > 0 && smem_doubles(fits, nb) * sizeof(double) > limit) --fits;
    detail::bad_argument(fn, "n", n, "<=", "the columns this device's shared memory holds", fits);
  }
  tp_merge_t_kernel<T><<<1, threads, bytes, stream>>>(n, nb, Tm, S, lds, Tb, ldtb);
  detail::check(fn, "tp_merge_t_kernel launch", cudaGetLastError());
}

template bool gpu_tp_merge_t_runs<float>(int, int);
template bool gpu_tp_merge_t_runs<double>(int, int);
template void gpu_tp_merge_t<float>(int, int, const float*, const float*, int, float*, int, cudaStream_t);
template void gpu_tp_merge_t<double>(int, int, const double*, const double*, int, double*, int, cudaStream_t);

}  // namespace tessera::kernels
