#include "memory.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "detail.hpp"

#if TESSERA_QR_CUDA
#include <cuda_runtime.h>
#endif

namespace tessera::qr::detail {

template <class T>
void copy_matrix(int m, int n, const T* src, int lds, memory from, T* dst, int ldd, memory to) {
  if (m <= 0 || n <= 0) return;
  if (from == memory::host && to == memory::host) {
    for (int j = 0; j < n; ++j)
      std::copy_n(src + std::size_t(j) * lds, m, dst + std::size_t(j) * ldd);
    return;
  }
#if TESSERA_QR_CUDA
  // cudaMemcpyDefault: unified addressing tells the direction, and pageable host memory is fine.
  cudaError_t e = cudaMemcpy2D(dst, sizeof(T) * std::size_t(ldd), src, sizeof(T) * std::size_t(lds),
                               sizeof(T) * std::size_t(m), std::size_t(n), cudaMemcpyDefault);
  // From pageable host memory cudaMemcpy2D returns once the source is staged, before the data has
  // arrived; the runtime's streams do not wait for the legacy stream, so a GPU task could read the
  // destination too early (seen as garbage in Q now and then): wait for the copy itself.
  if (e == cudaSuccess && to == memory::device) e = cudaStreamSynchronize(cudaStreamLegacy);
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw std::runtime_error(std::string("tessera::qr: copying a ") + std::to_string(m) + " x " + std::to_string(n) +
                             " matrix from " + name(from) + " to " + name(to) + " memory failed: " +
                             cudaGetErrorString(e));
  }
#else
  throw std::invalid_argument("tessera::qr: a matrix in device memory needs Tessera built with CUDA");
#endif
}

template <class T>
void set_identity(matrix_ref<T> a) {
  if (a.m <= 0 || a.n <= 0) return;
  if (a.where == memory::host) {
    for (int j = 0; j < a.n; ++j) {
      T* col = a.data + std::size_t(j) * a.ld;
      std::fill_n(col, a.m, T(0));
      if (j < a.m) col[j] = T(1);
    }
    return;
  }
  // Built on the host and copied: Q's shape, so the copy costs what forming Q will read anyway.
  std::vector<T> h(std::size_t(a.m) * std::size_t(a.n));
  set_identity(host(h.data(), a.m, a.n, a.m));
  copy_matrix(a.m, a.n, h.data(), a.m, memory::host, a.data, a.ld, a.where);
}

namespace {

template <class T>
void zero_strict_triangle(matrix_ref<T> a, bool lower) {
  if (a.where == memory::host) {
    for (int j = 0; j < a.n; ++j) {
      T* col = a.data + std::size_t(j) * a.ld;
      if (lower) {
        if (j + 1 < a.m) std::fill_n(col + j + 1, a.m - j - 1, T(0));
      } else {
        std::fill_n(col, std::min(j, a.m), T(0));
      }
    }
    return;
  }
  std::vector<T> h(std::size_t(a.m) * std::size_t(a.n));
  copy_matrix(a.m, a.n, a.data, a.ld, a.where, h.data(), std::max(1, a.m), memory::host);
  zero_strict_triangle(host(h.data(), a.m, a.n, std::max(1, a.m)), lower);
  copy_matrix(a.m, a.n, h.data(), std::max(1, a.m), memory::host, a.data, a.ld, a.where);
}

}  // namespace

template <class T>
void zero_below_diagonal(matrix_ref<T> a) {
  zero_strict_triangle(a, true);
}

template <class T>
void zero_above_diagonal(matrix_ref<T> a) {
  zero_strict_triangle(a, false);
}

template <class T>
staged<T>::staged(runtime& rt, matrix_ref<T> c, memory want, bool copy_in) : _user(c), _view(c) {
  if (c.where == want || c.m <= 0 || c.n <= 0) return;
  const std::size_t count = std::size_t(c.m) * std::size_t(c.n);
  _view.ld = c.m;
  _view.where = want;
  if (want == memory::host) {
    _host.resize(count);
    _view.data = _host.data();
  } else {
    _device = rt.allocate_device(sizeof(T) * count);
    _view.data = _device.template get<T>();
  }
  if (copy_in) copy_matrix(c.m, c.n, c.data, c.ld, c.where, _view.data, _view.ld, want);
}

template <class T>
staged<T>::staged(runtime& rt, matrix_ref<const T> c, memory want)
    : staged(rt, matrix_ref<T>{const_cast<T*>(c.data), c.m, c.n, c.ld, c.where}, want, true) {
  _read_only = true;  // the const_cast above only ever reads c
}

template <class T>
void staged<T>::finish() {
  if (!_read_only && _view.data != _user.data)
    copy_matrix(_user.m, _user.n, _view.data, _view.ld, _view.where, _user.data, _user.ld, _user.where);
}

host_registration::host_registration(const void* p, std::size_t bytes) noexcept {
#if TESSERA_QR_CUDA
  if (!p || bytes == 0) return;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess || attr.type != cudaMemoryTypeUnregistered) {
    cudaGetLastError();  // page-locked already, device or managed memory: nothing to do
    return;
  }
  void* q = const_cast<void*>(p);
  if (cudaHostRegister(q, bytes, cudaHostRegisterPortable) == cudaSuccess) _p = q;
  else cudaGetLastError();  // the copies stay pageable: slower, as correct
#else
  (void)p;
  (void)bytes;
#endif
}

host_registration::~host_registration() {
#if TESSERA_QR_CUDA
  if (_p && cudaHostUnregister(_p) != cudaSuccess) cudaGetLastError();
#endif
}

#define TESSERA_INSTANTIATE(T)                                                                      \
  template void copy_matrix<T>(int, int, const T*, int, memory, T*, int, memory);                   \
  template void set_identity<T>(matrix_ref<T>);                                                     \
  template void zero_below_diagonal<T>(matrix_ref<T>);                                              \
  template void zero_above_diagonal<T>(matrix_ref<T>);                                              \
  template class staged<T>;
TESSERA_INSTANTIATE(float)
TESSERA_INSTANTIATE(double)
#undef TESSERA_INSTANTIATE

}  // namespace tessera::qr::detail

namespace tessera::qr {

namespace {
std::string gigabytes(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GB", double(bytes) * 1e-9);
  return buf;
}
}  // namespace

template <class T>
void copy(matrix_ref<const T> from, matrix_ref<T> to) {
  if (from.m != to.m || from.n != to.n)
    throw std::invalid_argument("tessera::qr::copy: the matrices differ in shape (" + std::to_string(from.m) + " x " +
                                std::to_string(from.n) + " and " + std::to_string(to.m) + " x " +
                                std::to_string(to.n) + ")");
  detail::copy_matrix(from.m, from.n, from.data, from.ld, from.where, to.data, to.ld, to.where);
}
template void copy<float>(matrix_ref<const float>, matrix_ref<float>);
template void copy<double>(matrix_ref<const double>, matrix_ref<double>);

std::size_t available_bytes(memory where) {
  if (where == memory::device) {
#if TESSERA_QR_CUDA
    std::size_t free = 0, total = 0;
    if (runtime::gpu_available() && cudaMemGetInfo(&free, &total) == cudaSuccess) return free;
    cudaGetLastError();
#endif
    return 0;
  }
  return host_memory_available();  // unknown (not Linux): the largest size_t, so nothing is refused
}

void require_available(const char* func, memory where, std::size_t bytes, const std::string& what) {
  const std::size_t free = available_bytes(where);
  if (bytes <= free) return;
  throw resource_error(std::string(func) + ": not enough " + name(where) + " memory for " + what +
                       ": needs " + gigabytes(bytes) + ", " + gigabytes(free) + " available");
}

}  // namespace tessera::qr
