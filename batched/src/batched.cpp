// The front door: argument checks, the choice of CPUs or GPU, and the CPU path (LAPACK's algorithms per matrix,
// ranges of the batch as independent tasks on the runtime).
#include "tessera/batched/batched.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>

#include "detail.hpp"
#include "tessera/kernels_cpu/blas_threads.hpp"
#include "tessera/kernels_cpu/check.hpp"
#include "tessera/sched/runtime.hpp"

namespace tessera::batched {
namespace {

using detail::job;
using detail::op;

template <class T>
void check_batch(const char* fn, const char* name, const batch<T>& m, int rows, int cols) {
  const std::string s(name);
  if (m.count == 0) return;
  check::require_ge(fn, (s + ".ld").c_str(), m.ld, "n", rows);
  if (m.pointers == nullptr) {
    check::require_ptr(fn, (s + ".data").c_str(), m.data);
    if (m.count > 1)
      check::require_ge(fn, (s + ".stride").c_str(), m.stride, "ld * columns",
                        static_cast<long long>(m.ld) * cols);
  }
}

template <class T>
void check_job(const job<T>& j) {
  const char* fn = j.fn;
  check::require_ge(fn, "n", j.n, "1", 1);
  check::require_le(fn, "n", j.n, nullptr, max_n);
  check::require_ge(fn, "count", j.count, "0", 0);
  check::require_eq(fn, "a.cols", j.a.cols, "n", j.n);
  check_batch(fn, "a", j.a, j.n, j.n);
  if (j.what != op::lu) {
    const char* bn = j.what == op::inverse ? "ainv" : "b";
    const std::string s(bn);
    check::require_eq(fn, (s + ".rows").c_str(), j.b.rows, "n", j.n);
    check::require_eq(fn, (s + ".count").c_str(), j.b.count, "a.count", j.count);
    if (j.what == op::inverse) check::require_eq(fn, "ainv.cols", j.b.cols, "n", j.n);
    check::require_ge(fn, "nrhs (b.cols)", j.b.cols, "0", 0);
    if (j.b.where != j.a.where) check::invalid(fn, s + " and a must be in the same memory");
    if (j.b.cols > 0) check_batch(fn, bn, j.b, j.n, j.b.cols);
  }
  if (j.count > 0) {
    if (j.what != op::inverse) check::require_ptr(fn, "ipiv", j.ipiv);
    if (j.what != op::getrs) check::require_ptr(fn, "info", j.info);
  }
}

}  // namespace

template <class T>
void detail::cpu_range(const job<T>& j, long long first, long long last) {
  switch (j.what) {
    case op::lu: kernels::cpu_batched_getrf(j.n, detail::ref(j.a), j.ipiv, j.info, first, last); break;
    case op::inverse:
      kernels::cpu_batched_inverse(j.n, detail::ref(j.a), detail::ref(j.b), j.info, first, last);
      break;
    case op::getrs:
      kernels::cpu_batched_getrs(j.n, j.nrhs, detail::ref(j.a), j.ipiv, detail::ref(j.b), first, last);
      break;
    case op::gesv:
      kernels::cpu_batched_gesv(j.n, j.nrhs, detail::ref(j.a), j.ipiv, detail::ref(j.b), j.info, first, last);
      break;
  }
}
template void detail::cpu_range<float>(const detail::job<float>&, long long, long long);
template void detail::cpu_range<double>(const detail::job<double>&, long long, long long);

namespace {

template <class T>
void run_cpu(const job<T>& j, const options& o, report& r) {
  runtime_options ro;
  ro.workers = o.threads;
  std::optional<runtime> own;
  runtime& rt = o.rt ? *o.rt : own.emplace(ro);
  const blas::blas_threads one(1);  // the tasks are the parallelism
  // Enough ranges to balance the cores, each long enough that a task costs far more than its
  // scheduling (a 32 x 32 GETRF is a few microseconds).
  const long long per = std::max(64LL, j.count / (8LL * rt.workers()) + 1);
  for (long long first = 0; first < j.count; first += per) {
    const long long last = std::min(j.count, first + per);
    rt.task([j, first, last] { detail::cpu_range(j, first, last); })
        .label("batched_cpu")
        .submit();
  }
  rt.wait_all();
  r.ran_on = target::cpu;
}

template <class T>
report run(const job<T>& j, const options& o) {
  check_job(j);
  check::require_ge(j.fn, "options.depth", o.depth, "2", 2);
  if (!(o.cpu_share <= 1)) {
    char v[32];
    std::snprintf(v, sizeof v, "%g", o.cpu_share);
    check::invalid(j.fn, std::string("options.cpu_share = ") + v + ": must be <= 1 (negative: measured)");
  }
  report r;
  const bool device_data = j.a.where == memory::device;
  const bool gpu = gpu_available();
  if (o.on == target::cpu && device_data)
    check::invalid(j.fn, "the batch is in device memory: it cannot run on the CPUs (target cpu)");
  if ((o.on == target::gpu || device_data) && !gpu)
    check::invalid(j.fn, device_data ? "the batch is in device memory but there is no CUDA device"
                                     : "target gpu: no CUDA device (or a build without CUDA)");
  const bool on_gpu = o.on == target::gpu || device_data || (o.on == target::automatic && gpu);
  if (on_gpu) {
    r.reason = device_data ? "the batch is in device memory: the GPU kernels run on it in place"
               : o.on == target::gpu
                   ? "target gpu: the batch is streamed through the GPU in chunks"
                   : "a CUDA device is present: the batch is streamed through the GPU in chunks";
    if (j.count > 0) detail::run_gpu(j, o, r);
    r.ran_on = target::gpu;
  } else {
    r.reason = o.on == target::cpu ? "target cpu: LAPACK's algorithms per matrix on the CPUs"
                                   : "no CUDA device: running on the CPUs (LAPACK's algorithms per matrix)";
    if (j.count > 0) run_cpu(j, o, r);
    r.ran_on = target::cpu;
  }
  if (j.a.where == memory::host && j.info && j.what != op::getrs)
    r.singular = std::count_if(j.info, j.info + j.count, [](int v) { return v > 0; });
  return r;
}

}  // namespace

template <class T>
report lu(batch<T> a, int* ipiv, int* info, const options& o) {
  job<T> j{op::lu, "tessera::batched::lu", a.rows, 0, a.count, a, {}, ipiv, info};
  return run(j, o);
}

template <class T>
report inverse(batch<T> a, batch<T> ainv, int* info, const options& o) {
  job<T> j{op::inverse, "tessera::batched::inverse", a.rows, a.rows, a.count, a, ainv, nullptr, info};
  return run(j, o);
}

template <class T>
report getrs(batch<T> lu, const int* ipiv, batch<T> b, const options& o) {
  // GETRS only reads ipiv; the job's field is shared with the operations that write it.
  job<T> j{op::getrs, "tessera::batched::getrs", lu.rows, b.cols, lu.count, lu, b,
           const_cast<int*>(ipiv), nullptr};
  return run(j, o);
}

template <class T>
report gesv(batch<T> a, int* ipiv, batch<T> b, int* info, const options& o) {
  job<T> j{op::gesv, "tessera::batched::gesv", a.rows, b.cols, a.count, a, b, ipiv, info};
  return run(j, o);
}

std::size_t staging_bytes_per_matrix(int n, int nrhs, std::size_t elem_size) {
  const auto un = static_cast<std::size_t>(std::max(n, 0));
  const auto ur = static_cast<std::size_t>(std::max(nrhs, 0));
  return un * un * elem_size + un * ur * elem_size + un * sizeof(int) + sizeof(int);
}

template report lu<float>(batch<float>, int*, int*, const options&);
template report lu<double>(batch<double>, int*, int*, const options&);
template report inverse<float>(batch<float>, batch<float>, int*, const options&);
template report inverse<double>(batch<double>, batch<double>, int*, const options&);
template report getrs<float>(batch<float>, const int*, batch<float>, const options&);
template report getrs<double>(batch<double>, const int*, batch<double>, const options&);
template report gesv<float>(batch<float>, int*, batch<float>, int*, const options&);
template report gesv<double>(batch<double>, int*, batch<double>, int*, const options&);

}  // namespace tessera::batched
