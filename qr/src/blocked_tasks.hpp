#pragma once
// What the blocked QR on one GPU and on several share (CUDA builds only): the priorities of their
// tasks, the panel's task and a column block's NaN/Inf verdict.
#include <cstddef>

#include "detail.hpp"
#include "tessera/kernels_gpu.hpp"
#include "tessera/sched/cuda.hpp"
#include "tessera/sched/runtime.hpp"

namespace tessera::qr::detail {

// All three go to the urgent stream; among its queued tasks the panel chain goes first.
inline constexpr int panel_priority = urgent_priority + 1, ahead_priority = urgent_priority, bulk_priority = 1;

// Panel k's task (gpu_geqrt on rows x w at a, T_k at tk), its body and workspace; the caller names
// its GPU and its data and submits it.
template <class T>
task_builder panel_task(runtime& rt, int rows, int w, int ib, T* a, int ldda, T* tk, int lddt) {
  const std::size_t lwork = kernels::gpu_geqrt_workspace_size(rows, w, ib);
  auto b = rt.task([=](task_context& ctx) {
    kernels::gpu_geqrt(rows, w, ib, a, ldda, tk, lddt, static_cast<T*>(ctx.scratch(0)), lwork, blas_of(ctx));
  });
  b.scratch(sizeof(T) * lwork).priority(panel_priority).label("gpu_geqrt").color(color_geqrt);
  return b;
}

// The CPU task that judges column block j (columns c0.., cols wide) once its GPU count is in
// `count` (verdict written): judge_non_finite, every verdict accumulated into `checked`.
template <class T>
void submit_verdict(runtime& rt, const char* func, const unsigned* count, int m, int cols, const T* host, int lda,
                    int c0, handle verdict, handle checked) {
  rt.task([=] { judge_non_finite(func, *count, m, cols, host, lda, c0); })
      .read(verdict)
      .accumulate(checked)
      .label("verdict")
      .color(color_copy)
      .submit();
}

}  // namespace tessera::qr::detail
