#include "blocked_qr_gpu_in_double.hpp"

#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <vector>

#include "detail.hpp"
#include "factorize_gpu.hpp"

#if TESSERA_QR_CUDA
#include <cuda_runtime.h>

#include "tessera/kernels_gpu/gpu_convert.hpp"
#include "tessera/sched/cuda.hpp"
#endif

namespace tessera::qr::detail {

bool double_outruns_single(int major, int minor) noexcept { return major == 9 && minor == 0; }

std::size_t in_double_bytes(int m, int n, int nb, bool full_t, bool host_matrix) noexcept {
  const std::size_t mn = std::size_t(m) * std::size_t(n);
  const std::size_t elements = mn + std::size_t(std::min(nb, n)) * std::size_t(n) + (full_t ? mn : 0);
  return (sizeof(double) + (host_matrix ? sizeof(float) : 0)) * elements;
}

#if TESSERA_QR_CUDA

bool double_outruns_single(runtime& rt) {
  if (!rt.has_gpu()) return false;
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    cudaGetLastError();  // not this function's error to leave behind
    return false;
  }
  return double_outruns_single(major, minor);
}

namespace {

// dst := src rounded, as one GPU task (several matrices, one stream).
struct conversion {
  const void* src;
  int src_ld;
  void* dst;
  int dst_ld;
  int m, n;
};

template <class From, class To>
void convert_all(runtime& rt, const char* label, std::initializer_list<conversion> list) {
  auto task = rt.task([v = std::vector<conversion>(list)](task_context& ctx) {
    for (const conversion& c : v)
      kernels::gpu_convert(c.m, c.n, static_cast<const From*>(c.src), c.src_ld, static_cast<To*>(c.dst), c.dst_ld,
                           stream_of(ctx));
  });
  task.on(device::gpu);
  for (const conversion& c : list) {
    task.read(device_handle(rt, static_cast<const From*>(c.src), c.m, c.n, c.src_ld));
    task.write(device_handle(rt, static_cast<To*>(c.dst), c.m, c.n, c.dst_ld));
  }
  task.label(label).submit();
  rt.wait_all();
}

}  // namespace

void blocked_qr_gpu_in_double(runtime& rt, int m, int n, float* a, int lda, float* t, int ldt, float* st, int ldst,
                              const blocked_options& o) {
  if (n == 0) return;
  if (!o.device_matrix) {
    blocked_qr_gpu_host_in_double(rt, m, n, a, lda, t, ldt, st, ldst, o);
    return;
  }
  const int nb = std::min(o.nb, n);
  const std::size_t mn = std::size_t(m) * std::size_t(n);
  device_buffer a64 = rt.allocate_device(sizeof(double) * mn);
  device_buffer t64 = rt.allocate_device(sizeof(double) * std::size_t(nb) * std::size_t(n));
  device_buffer st64 = st ? rt.allocate_device(sizeof(double) * mn) : device_buffer();
  double* da = a64.get<double>();
  double* dt = t64.get<double>();
  double* dst = st ? st64.get<double>() : nullptr;
  convert_all<float, double>(rt, "convert A to double", {{a, lda, da, m, m, n}});
  blocked_options bo = o;
  bo.device_matrix = true;
  blocked_qr_gpu<double>(rt, m, n, da, m, dt, nb, dst, m, bo);  // throws before anything comes back
  if (st)
    convert_all<double, float>(rt, "convert R, V, T and S to float",
                               {{da, m, a, lda, m, n}, {dt, nb, t, ldt, nb, n}, {dst, m, st, ldst, m, n}});
  else
    convert_all<double, float>(rt, "convert R, V and T to float", {{da, m, a, lda, m, n}, {dt, nb, t, ldt, nb, n}});
}

#else

bool double_outruns_single(runtime&) { return false; }

void blocked_qr_gpu_in_double(runtime&, int, int, float*, int, float*, int, float*, int, const blocked_options&) {
  throw std::invalid_argument("tessera::qr::blocked_qr_gpu: Tessera was built without CUDA");
}

#endif

}  // namespace tessera::qr::detail
