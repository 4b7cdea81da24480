#pragma once
// Helpers shared by the GPU kernel tests: the seeded generator, CUDA/cuBLAS status checks, a
// column-major host matrix with sentinel padding, device copies of it, a cuBLAS handle on its own
// stream, and LAPACKE workspace.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <stdexcept>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "test_util.hpp"

#include "tessera/kernels_cpu/blas.hpp"

namespace tessera::testing::gpu {

// Before doctest's main runs: no device means nothing in a test that includes this can run.
[[maybe_unused]] inline const bool device_present = tessera::testing::skip_unless([] {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}());

inline std::mt19937_64& rng() {
  static std::mt19937_64 g(tessera::testing::seed());
  return g;
}

inline void cuda_ok(cudaError_t e) {
  if (e != cudaSuccess) throw std::runtime_error(cudaGetErrorString(e));
}
inline void cublas_ok(cublasStatus_t s) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(cublasGetStatusString(s));
}

// Column-major host matrix, padding rows hold a sentinel.
template <class T>
struct mat {
  int m, n, ld;
  std::vector<T> a;
  mat(int rows, int cols, int pad = 0)
      : m(rows), n(cols), ld(std::max(1, rows + pad)),
        a(static_cast<std::size_t>(ld) * std::max(cols, 1), sentinel()) {}
  static T sentinel() { return T(-777.25); }
  T& operator()(int i, int j) { return a[i + static_cast<std::size_t>(j) * ld]; }
  T operator()(int i, int j) const { return a[i + static_cast<std::size_t>(j) * ld]; }
  T* data() { return a.data(); }
  void randomize() {
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) (*this)(i, j) = T(u(rng()));
  }
};

// ||X(r0:r0+rows, :) - Y(...)||_F / ||Y(...)||_F over the m x n leading parts; padding compared exactly.
template <class T>
double rel_error(const mat<T>& X, const mat<T>& Y, int r0 = 0, int rows = -1) {
  if (rows < 0) rows = X.m - r0;
  double d = 0, s = 0;
  for (int j = 0; j < X.n; ++j)
    for (int i = r0; i < r0 + rows; ++i) {
      const double e = double(X(i, j)) - double(Y(i, j));
      d += e * e;
      s += double(Y(i, j)) * double(Y(i, j));
    }
  return s > 0 ? std::sqrt(d / s) : std::sqrt(d);
}

template <class T>
bool same_outside(const mat<T>& X, const mat<T>& Y, int r0, int rows) {
  for (int j = 0; j < X.n; ++j)
    for (int i = 0; i < X.ld; ++i)
      if ((i < r0 || i >= r0 + rows) && X(i, j) != Y(i, j)) return false;
  return true;
}

template <class T>
struct dev {
  T* p = nullptr;
  std::size_t n = 0;
  explicit dev(std::size_t elems) : n(std::max<std::size_t>(elems, 1)) {
    cuda_ok(cudaMalloc(&p, n * sizeof(T)));
  }
  explicit dev(const mat<T>& h) : dev(h.a.size()) { put(h); }
  ~dev() { cudaFree(p); }
  dev(const dev&) = delete;
  dev& operator=(const dev&) = delete;
  void put(const mat<T>& h) {
    cuda_ok(cudaMemcpy(p, h.a.data(), h.a.size() * sizeof(T), cudaMemcpyHostToDevice));
    // From pageable memory cudaMemcpy may return before the DMA lands, and the kernels' stream is
    // non-blocking: without this, a kernel that reads the data first could see the old contents.
    cuda_ok(cudaDeviceSynchronize());
  }
  void get(mat<T>& h) const {
    cuda_ok(cudaMemcpy(h.a.data(), p, h.a.size() * sizeof(T), cudaMemcpyDeviceToHost));
  }
};

// A handle on its own stream, so work enqueued elsewhere (the legacy stream) would race and show.
struct blas {
  cublasHandle_t h = nullptr;
  cudaStream_t s = nullptr;
  blas() {
    cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cublas_ok(cublasCreate(&h));
    cublas_ok(cublasSetStream(h, s));
  }
  ~blas() {
    cublasDestroy(h);
    cudaStreamDestroy(s);
  }
  void sync() const { cuda_ok(cudaStreamSynchronize(s)); }
};

// --- LAPACKE by precision ----------------------------------------------------------------------
// The _work forms with our own generous workspace: LAPACKE 3.11's GEMQRT allocates m * nb where
// side 'L' needs n * nb, and writes past it.
template <class T>
std::vector<T>& lapack_work(int nb, int m, int n) {
  static std::vector<T> w;
  w.resize(static_cast<std::size_t>(std::max(nb, 1)) * std::max({m, n, 1}));
  return w;
}

// LAPACK GEQRT (block size nb): V and R in a, the blocks' T in t.
template <class T>
int geqrt(int m, int n, int nb, T* a, int lda, T* t, int ldt) {
  return tessera::blas::geqrt(m, n, nb, a, lda, t, ldt, lapack_work<T>(nb, m, n).data());
}

}  // namespace tessera::testing::gpu
