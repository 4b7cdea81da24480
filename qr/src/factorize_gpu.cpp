#include "factorize_gpu.hpp"

#include <algorithm>
#include <stdexcept>

#include "detail.hpp"

#if TESSERA_QR_CUDA
#include "tessera/kernels_gpu.hpp"
#include "tessera/kernels_gpu/cublas.hpp"
#include "tessera/sched/cuda.hpp"
#endif

namespace tessera::qr::detail {

#if TESSERA_QR_CUDA

template <class T>
void apply_q_device(runtime& rt, trans op, int m, int k, int nb, const T* a, int lda, const T* t, int ldt,
                    matrix_ref<T> c) {
  const auto bytes = [](long long rows) { return sizeof(T) * std::size_t(rows); };
  const handle ha = rt.register_device_data(const_cast<T*>(a), bytes(m), std::size_t(k), bytes(lda));
  const handle ht = rt.register_device_data(const_cast<T*>(t), bytes(std::min(nb, k)), std::size_t(k), bytes(ldt));
  const handle hc = rt.register_device_data(c.data, bytes(m), std::size_t(c.n), bytes(c.ld));
  const int panels = (k + nb - 1) / nb, n = c.n, ldc = c.ld;
  const cublasOperation_t cop = op == trans::trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  // Q^T = H_last^T ... H_0^T applies panel 0 first; Q the other way round.
  for (int i = 0; i < panels; ++i) {
    const int p = op == trans::trans ? i : panels - 1 - i;
    const int rows = m - p * nb, w = std::min(nb, k - p * nb);
    const T* v = a + std::size_t(p) * nb * lda + std::size_t(p) * nb;
    const T* tp = t + std::size_t(p) * nb * ldt;
    T* cp = c.data + std::size_t(p) * nb;
    const std::size_t lwork = kernels::gpu_larfb_workspace_size(rows, n, w);
    rt.task([=](task_context& ctx) {
        kernels::gpu_larfb(cop, rows, n, w, v, lda, tp, ldt, cp, ldc, static_cast<T*>(ctx.scratch(0)), lwork,
                           blas_of(ctx));
      })
        .on(device::gpu)
        .read(ha)
        .read(ht)
        .read_write(hc)
        .scratch(sizeof(T) * lwork)
        .label("gpu_larfb")
        .color(color_tsmqr)
        .submit();
  }
  rt.wait_all();
}

template <class T>
void trsm_device(runtime& rt, int n, int nrhs, const T* r, int ldr, matrix_ref<T> b) {
  const handle hr = rt.register_device_data(const_cast<T*>(r), sizeof(T) * std::size_t(n), std::size_t(n),
                                            sizeof(T) * std::size_t(ldr));
  const handle hb = rt.register_device_data(b.data, sizeof(T) * std::size_t(b.m), std::size_t(nrhs),
                                            sizeof(T) * std::size_t(b.ld));
  T* bd = b.data;
  const int ldb = b.ld;
  rt.task([=](task_context& ctx) {
      // The runtime's handles stay in cuBLAS's default host pointer mode (every kernel restores it).
      cublas::check("tessera::qr::factorization::solve", "cublas trsm",
                    cublas::trsm(blas_of(ctx), CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
                                 CUBLAS_DIAG_NON_UNIT, n, nrhs, T(1), r, ldr, bd, ldb));
    })
      .on(device::gpu)
      .read(hr)
      .read_write(hb)
      .label("gpu_trsm")
      .color(color_trsm)
      .submit();
  rt.wait_all();
}

#else

template <class T>
void apply_q_device(runtime&, trans, int, int, int, const T*, int, const T*, int, matrix_ref<T>) {
  throw std::invalid_argument("tessera::qr: device memory needs Tessera built with CUDA");
}
template <class T>
void trsm_device(runtime&, int, int, const T*, int, matrix_ref<T>) {
  throw std::invalid_argument("tessera::qr: device memory needs Tessera built with CUDA");
}

#endif

template void apply_q_device<float>(runtime&, trans, int, int, int, const float*, int, const float*, int,
                                    matrix_ref<float>);
template void apply_q_device<double>(runtime&, trans, int, int, int, const double*, int, const double*, int,
                                     matrix_ref<double>);
template void trsm_device<float>(runtime&, int, int, const float*, int, matrix_ref<float>);
template void trsm_device<double>(runtime&, int, int, const double*, int, matrix_ref<double>);

}  // namespace tessera::qr::detail
