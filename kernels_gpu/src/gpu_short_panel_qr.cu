// The short-panel Householder QR (tessera/kernels_gpu/gpu_short_panel_qr.hpp): one thread block,
// the panel in shared memory, one barrier per column.
//
// Warp w owns the panel's columns c with c % 32 == w. In step j every owner applies reflector j
// to its columns right of j (a warp-wide dot and axpy, lanes over rows), and the owner of column
// j + 1 makes reflector j + 1 from it at once, so the next step needs no reduction across warps.
// Columns stay unscaled in shared memory (v_j = scl_j * A(j+1:, j)), so that no column is written
// once its reflector exists: meanwhile the other warps form G = V^T V from final columns and
// T's previous column from G (LARFT's recurrence), and the write-out scales V.
#include <tessera/kernels_gpu/gpu_short_panel_qr.hpp>

#include "check.hpp"

namespace tessera::kernels {
namespace {

constexpr int sp_threads = 1024, sp_warps = sp_threads / 32;

template <class T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
template <class T>
__device__ __forceinline__ T warp_max(T v) {
  for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Below sqrt(smallest normal) / eps or above sqrt(largest) / 64, squares lose accuracy or overflow.
template <class T>
struct square_range;
template <>
struct square_range<double> {
  static constexpr double tiny = 1e-138, huge = 1e152;
};
template <>
struct square_range<float> {
  static constexpr float tiny = 1e-12f, huge = 1e17f;
};

// Reflector c from column c's rows c.. (one warp; LAPACK's LARFG): tau, the scale of the stored
// part (v = scl * A(c+1:, c)) and R's diagonal entry beta. The sum of squares is taken plainly in
// one pass where no square can overflow or underflow, else again with scaling (a second pass).
template <class T>
__device__ void make_reflector(const T* A, int h, int c, T* tau, T* scl, T* beta, int lane) {
  const T* col = A + static_cast<std::size_t>(c) * h;
  T mx = 0, ss = 0;
  for (int i = c + 1 + lane; i < h; i += 32) {
    const T x = col[i];
    mx = fmax(mx, fabs(x));
    ss += x * x;
  }
  for (int o = 16; o > 0; o >>= 1) {  // both reductions in one butterfly: half the latency
    mx = fmax(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    ss += __shfl_xor_sync(0xffffffffu, ss, o);
  }
  const T alpha = col[c];
  if (mx == T(0)) {  // nothing below the diagonal: H = I
    if (lane == 0) tau[c] = T(0), scl[c] = T(0), beta[c] = alpha;
    return;
  }
  const T tiny = square_range<T>::tiny, huge = square_range<T>::huge;
  const T s = fmax(mx, fabs(alpha));
  T r;
  if (mx >= tiny && s <= huge) {
    r = sqrt(ss + alpha * alpha);
  } else {
    const T inv = T(1) / s;
    T sc = 0;
    for (int i = c + 1 + lane; i < h; i += 32) {
      const T x = col[i] * inv;
      sc += x * x;
    }
    sc = warp_sum(sc);
    const T a = alpha * inv;
    r = s * sqrt(sc + a * a);
  }
  const T b = alpha >= T(0) ? -r : r;
  if (lane == 0) tau[c] = (b - alpha) / b, scl[c] = T(1) / (alpha - b), beta[c] = b;
}

// T's column c (LARFT, forward columnwise): T(c, c) = tau_c, T(0:c, c) = -tau_c T(0:c, 0:c)
// G(0:c, c), with G(l, c) at Tm[c + l nb] (below the diagonal) and T on and above it. One warp;
// four partial sums, so that the shared-memory loads overlap instead of waiting on each FMA.
template <class T>
__device__ void t_column(T* Tm, int nb, int c, const T* tau, int lane) {
  for (int i = lane; i < c; i += 32) {
    T s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int l = i;
    for (; l + 3 < c; l += 4) {
      s0 += Tm[i + l * nb] * Tm[c + l * nb];
      s1 += Tm[i + (l + 1) * nb] * Tm[c + (l + 1) * nb];
      s2 += Tm[i + (l + 2) * nb] * Tm[c + (l + 2) * nb];
      s3 += Tm[i + (l + 3) * nb] * Tm[c + (l + 3) * nb];
    }
    for (; l < c; ++l) s0 += Tm[i + l * nb] * Tm[c + l * nb];
    Tm[i + c * nb] = -tau[c] * ((s0 + s1) + (s2 + s3));
  }
  if (lane == 0) Tm[c + c * nb] = tau[c];
}

template <class T>
__global__ void __launch_bounds__(sp_threads)
    short_panel_qr_kernel(int h, int nb, T* top, int ldtop, int ht, T* bot, int ldbot, T* V,
                          int ldv, T* Tout, int ldt) {
  extern __shared__ __align__(16) unsigned char sp_smem[];
  T* A = reinterpret_cast<T*>(sp_smem);           // h x nb, ld h
  T* Tm = A + static_cast<std::size_t>(h) * nb;   // nb x nb: T on and above the diagonal, G below
  T* tau = Tm + nb * nb;
  T* scl = tau + nb;
  T* beta = scl + nb;
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  const int total = h * nb;
  for (int idx = tid; idx < total; idx += sp_threads) {
    const int i = idx % h, c = idx / h;
    A[idx] = i < ht ? top[i + static_cast<std::size_t>(c) * ldtop]
                    : bot[(i - ht) + static_cast<std::size_t>(c) * ldbot];
  }
  __syncthreads();
  if (warp == 0) make_reflector(A, h, 0, tau, scl, beta, lane);
  __syncthreads();
  for (int j = 0; j < nb; ++j) {
    const T tj = tau[j], sj = scl[j];
    const T* vj = A + static_cast<std::size_t>(j) * h;
    // Reflector j on the owned columns right of it; reflector j + 1 by its column's owner.
    for (int c = j + 1 + ((warp - (j + 1)) % sp_warps + sp_warps) % sp_warps; c < nb; c += sp_warps) {
      T* ac = A + static_cast<std::size_t>(c) * h;
      const T top_c = ac[j];
      T d = 0;
      // v_j scaled before the products, so that no product of two unscaled entries overflows.
      for (int i = j + 1 + lane; i < h; i += 32) d += (sj * vj[i]) * ac[i];
      d = warp_sum(d);
      const T f = tj * (top_c + d);
      for (int i = j + 1 + lane; i < h; i += 32) ac[i] -= f * (sj * vj[i]);
      __syncwarp();
      if (lane == 0) ac[j] = top_c - f;
      if (c == j + 1) {
        __syncwarp();
        make_reflector(A, h, c, tau, scl, beta, lane);
      }
    }
    // G(l, j) = V(:, l)^T V(:, j) for l < j, from final columns: V(j, l) + sum_{i>j} V(i, l) V(i, j).
    for (int l = (warp - j % sp_warps + sp_warps) % sp_warps; l < j; l += sp_warps) {
      const T* al = A + static_cast<std::size_t>(l) * h;
      const T sl = scl[l];
      T d = 0;
      for (int i = j + 1 + lane; i < h; i += 32) d += (sl * al[i]) * (sj * vj[i]);
      d = warp_sum(d);
      if (lane == 0) Tm[j + l * nb] = sl * al[j] + d;
    }
    if (j > 0 && warp == (j - 1) % sp_warps) t_column(Tm, nb, j - 1, tau, lane);
    __syncthreads();
  }
  if (warp == (nb - 1) % sp_warps) t_column(Tm, nb, nb - 1, tau, lane);
  __syncthreads();
  for (int idx = tid; idx < total; idx += sp_threads) {
    const int i = idx % h, c = idx / h;
    const T a = A[idx];
    const T r = i < c ? a : i == c ? beta[c] : T(0);
    if (i < ht)
      top[i + static_cast<std::size_t>(c) * ldtop] = r;
    else
      bot[(i - ht) + static_cast<std::size_t>(c) * ldbot] = T(0);
    V[i + static_cast<std::size_t>(c) * ldv] = i > c ? scl[c] * a : i == c ? T(1) : T(0);
  }
  for (int idx = tid; idx < nb * nb; idx += sp_threads) {
    const int i = idx % nb, c = idx / nb;
    Tout[i + static_cast<std::size_t>(c) * ldt] = i <= c ? Tm[idx] : T(0);
  }
}

template <class T>
__global__ void explicit_v_kernel(int h, int nb, const T* P, int ldp, T* V, int ldv) {
  const int c = static_cast<int>(blockIdx.x);
  for (int i = static_cast<int>(threadIdx.x); i < h; i += static_cast<int>(blockDim.x))
    V[i + static_cast<std::size_t>(c) * ldv] =
        i > c ? P[i + static_cast<std::size_t>(c) * ldp] : i == c ? T(1) : T(0);
}

std::size_t smem_bytes(int h, int nb, std::size_t elem) {
  return (static_cast<std::size_t>(h) * nb + static_cast<std::size_t>(nb) * nb + 3 * nb) * elem;
}

// The device's opt-in shared memory per block (the first device's: the kernels run on it).
int smem_limit() {
  static const int limit = [] {
    int dev = 0, v = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return v;
  }();
  return limit;
}

}  // namespace

template <class T>
bool gpu_short_panel_fits(int h, int nb) {
  return nb >= 1 && nb <= gpu_short_panel_max_nb && h >= nb &&
         smem_bytes(h, nb, sizeof(T)) <= static_cast<std::size_t>(smem_limit());
}

template <class T>
void gpu_short_panel_qr(int h, int nb, T* top, int ldtop, int ht, T* bot, int ldbot, T* V, int ldv,
                        T* Tm, int ldt, cudaStream_t stream) {
  constexpr const char* kernel = "gpu_short_panel_qr";
  if (nb <= 0) return;
  detail::require_ge(kernel, "h", h, "nb", nb);
  detail::require_le(kernel, "nb", nb, "gpu_short_panel_max_nb", gpu_short_panel_max_nb);
  detail::require_ge(kernel, "ht", ht, "nb", nb);
  detail::require_le(kernel, "ht", ht, "h", h);
  detail::require_ge(kernel, "ldtop", ldtop, "ht", ht);
  if (ht < h) detail::require_ge(kernel, "ldbot", ldbot, "h - ht", h - ht);
  detail::require_ge(kernel, "ldv", ldv, "h", h);
  detail::require_ge(kernel, "ldt", ldt, "nb", nb);
  if (!gpu_short_panel_fits<T>(h, nb))
    detail::bad_argument(kernel, "h", h, "<=", "what fits shared memory (gpu_short_panel_fits)", 0);
  static const cudaError_t attr = cudaFuncSetAttribute(
      short_panel_qr_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_limit());
  detail::check(kernel, "cudaFuncSetAttribute", attr);
  short_panel_qr_kernel<T><<<1, sp_threads, smem_bytes(h, nb, sizeof(T)), stream>>>(
      h, nb, top, ldtop, ht, bot, ldbot, V, ldv, Tm, ldt);
  detail::check(kernel, "short_panel_qr_kernel launch", cudaGetLastError());
}

template <class T>
void gpu_explicit_v(int h, int nb, const T* P, int ldp, T* V, int ldv, cudaStream_t stream) {
  constexpr const char* kernel = "gpu_explicit_v";
  if (nb <= 0 || h <= 0) return;
  detail::require_ge(kernel, "ldp", ldp, "h", h);
  detail::require_ge(kernel, "ldv", ldv, "h", h);
  explicit_v_kernel<T><<<static_cast<unsigned>(nb), 256, 0, stream>>>(h, nb, P, ldp, V, ldv);
  detail::check(kernel, "explicit_v_kernel launch", cudaGetLastError());
}

#define TESSERA_SHORT_PANEL(T)                                                                    \
  template bool gpu_short_panel_fits<T>(int, int);                                                \
  template void gpu_short_panel_qr<T>(int, int, T*, int, int, T*, int, T*, int, T*, int,          \
                                      cudaStream_t);                                              \
  template void gpu_explicit_v<T>(int, int, const T*, int, T*, int, cudaStream_t);
TESSERA_SHORT_PANEL(float)
TESSERA_SHORT_PANEL(double)
#undef TESSERA_SHORT_PANEL

}  // namespace tessera::kernels
