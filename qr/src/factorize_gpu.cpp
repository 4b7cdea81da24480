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
void apply_q_full_t_device(runtime& rt, trans op, int m, int k, const T* a, int lda, const T* st, int ldst,
                           matrix_ref<T> c) {
  const handle ha = device_handle(rt, a, m, k, lda), hs = device_handle(rt, st, m, k, ldst);
  const handle hc = device_handle<T>(rt, c.data, c.m, c.n, c.ld);
  const cublasOperation_t cop = op == trans::trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int n = c.n, ldc = c.ld;
  T* cd = c.data;
  const std::size_t lwork = kernels::gpu_apply_q_full_t_workspace_size(n, k);
  rt.task([=](task_context& ctx) {
      kernels::gpu_apply_q_full_t(cop, m, n, k, a, lda, st, ldst, cd, ldc, static_cast<T*>(ctx.scratch(0)), lwork,
                                  blas_of(ctx));
    })
      .on(device::gpu)
      .read(ha)
      .read(hs)
      .read_write(hc)
      .scratch(sizeof(T) * lwork)
      .label("gpu_apply_q_full_t")
      .color(color_tsmqr)
      .submit();
  rt.wait_all();
}

template <class T>
void q_block_device(runtime& rt, int m, int n, int r0, int c0, const T* a, int lda, const T* st, int ldst,
                    matrix_ref<T> qb) {
  const handle ha = device_handle(rt, a, m, n, lda), hs = device_handle(rt, st, m, n, ldst);
  const handle hq = device_handle<T>(rt, qb.data, qb.m, qb.n, qb.ld);
  const int rb = qb.m, cb = qb.n, ldq = qb.ld;
  T* q = qb.data;
  const std::size_t lwork = kernels::gpu_q_block_workspace_size(n, r0, rb, c0, cb, 0);
  rt.task([=](task_context& ctx) {
      kernels::gpu_q_block(m, n, r0, rb, c0, cb, a, lda, st, ldst, q, ldq, static_cast<T*>(ctx.scratch(0)), lwork,
                           blas_of(ctx));
    })
      .on(device::gpu)
      .read(ha)
      .read(hs)
      .write(hq)
      .scratch(sizeof(T) * std::max<std::size_t>(lwork, 1))
      .label("gpu_q_block")
      .color(color_tsmqr)
      .submit();
  rt.wait_all();
}

template <class T>
void apply_q_block_device(runtime& rt, trans op, int m, int n, int r0, int c0, int rows, int cols, const T* a, int lda,
                          const T* st, int ldst, matrix_ref<const T> x, matrix_ref<T> y) {
  const handle ha = device_handle(rt, a, m, n, lda), hs = device_handle(rt, st, m, n, ldst);
  const handle hx = device_handle(rt, x.data, x.m, x.n, x.ld), hy = device_handle<T>(rt, y.data, y.m, y.n, y.ld);
  const cublasOperation_t cop = op == trans::trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int nrhs = y.n, ldx = x.ld, ldy = y.ld;
  const T* xd = x.data;
  T* yd = y.data;
  const std::size_t lwork = kernels::gpu_q_block_workspace_size(n, r0, rows, c0, cols, nrhs);
  rt.task([=](task_context& ctx) {
      kernels::gpu_apply_q_block(cop, m, n, r0, rows, c0, cols, nrhs, a, lda, st, ldst, xd, ldx, yd, ldy,
                                 static_cast<T*>(ctx.scratch(0)), lwork, blas_of(ctx));
    })
      .on(device::gpu)
      .read(ha)
      .read(hs)
      .read(hx)
      .write(hy)
      .scratch(sizeof(T) * std::max<std::size_t>(lwork, 1))
      .label("gpu_apply_q_block")
      .color(color_tsmqr)
      .submit();
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
void apply_q_full_t_device(runtime&, trans, int, int, const T*, int, const T*, int, matrix_ref<T>) {
  throw std::invalid_argument("tessera::qr: device memory needs Tessera built with CUDA");
}
template <class T>
void q_block_device(runtime&, int, int, int, int, const T*, int, const T*, int, matrix_ref<T>) {
  throw std::invalid_argument("tessera::qr: device memory needs Tessera built with CUDA");
}
template <class T>
void apply_q_block_device(runtime&, trans, int, int, int, int, int, int, const T*, int, const T*, int,
                          matrix_ref<const T>, matrix_ref<T>) {
  throw std::invalid_argument("tessera::qr: device memory needs Tessera built with CUDA");
}
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
#define TESSERA_FULL_T_DEVICE(T)                                                                             \
  template void apply_q_full_t_device<T>(runtime&, trans, int, int, const T*, int, const T*, int, matrix_ref<T>); \
  template void q_block_device<T>(runtime&, int, int, int, int, const T*, int, const T*, int, matrix_ref<T>);      \
  template void apply_q_block_device<T>(runtime&, trans, int, int, int, int, int, int, const T*, int, const T*,    \
                                        int, matrix_ref<const T>, matrix_ref<T>);
TESSERA_FULL_T_DEVICE(float)
TESSERA_FULL_T_DEVICE(double)
#undef TESSERA_FULL_T_DEVICE
template void trsm_device<float>(runtime&, int, int, const float*, int, matrix_ref<float>);
template void trsm_device<double>(runtime&, int, int, const double*, int, matrix_ref<double>);

}  // namespace tessera::qr::detail
