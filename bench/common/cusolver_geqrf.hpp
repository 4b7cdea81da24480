// cuSOLVER GEQRF of an n x n column-major host matrix, timed the way the QR benches compare it.
#pragma once

#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_runtime.h>
#include <cusolverDn.h>

namespace tessera::bench {

// Seconds of one GEQRF. device_resident: the matrix is copied to the device first, untimed (as
// cuSOLVER's own callers have it); otherwise as a caller with the matrix in host memory runs it:
// copy in, factor, copy A and tau out, all timed. out (n x n) receives the factors when not
// device-resident; null: a scratch vector. Allocations are never timed.
template <class T>
double cusolver_geqrf_seconds(const T* a, T* out, int n, bool device_resident) {
  const auto check = [](cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
  };
  cusolverDnHandle_t h;
  if (cusolverDnCreate(&h) != CUSOLVER_STATUS_SUCCESS) throw std::runtime_error("cusolverDnCreate failed");
  const std::size_t count = std::size_t(n) * std::size_t(n);
  T *da = nullptr, *dtau = nullptr, *dwork = nullptr;
  int* dinfo = nullptr;
  int lwork = 0;
  check(cudaMalloc(&da, sizeof(T) * count), "cudaMalloc");
  check(cudaMalloc(&dtau, sizeof(T) * std::size_t(n)), "cudaMalloc");
  check(cudaMalloc(&dinfo, sizeof(int)), "cudaMalloc");
  if constexpr (std::is_same_v<T, float>) cusolverDnSgeqrf_bufferSize(h, n, n, da, n, &lwork);
  else cusolverDnDgeqrf_bufferSize(h, n, n, da, n, &lwork);
  check(cudaMalloc(&dwork, sizeof(T) * std::size_t(lwork > 0 ? lwork : 1)), "cudaMalloc");
  std::vector<T> scratch(device_resident || out ? 0 : count), tau(device_resident ? 0 : std::size_t(n));
  if (!device_resident && !out) out = scratch.data();
  const auto copy_in = [&] { check(cudaMemcpy(da, a, sizeof(T) * count, cudaMemcpyHostToDevice), "cudaMemcpy"); };
  if (device_resident) copy_in();
  check(cudaDeviceSynchronize(), "sync");
  const auto t0 = std::chrono::steady_clock::now();
  if (!device_resident) copy_in();
  if constexpr (std::is_same_v<T, float>) cusolverDnSgeqrf(h, n, n, da, n, dtau, dwork, lwork, dinfo);
  else cusolverDnDgeqrf(h, n, n, da, n, dtau, dwork, lwork, dinfo);
  if (!device_resident) {
    check(cudaMemcpy(out, da, sizeof(T) * count, cudaMemcpyDeviceToHost), "cudaMemcpy");
    check(cudaMemcpy(tau.data(), dtau, sizeof(T) * tau.size(), cudaMemcpyDeviceToHost), "cudaMemcpy");
  }
  check(cudaDeviceSynchronize(), "cusolver geqrf");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  cudaFree(da);
  cudaFree(dtau);
  cudaFree(dwork);
  cudaFree(dinfo);
  cusolverDnDestroy(h);
  return s;
}

}  // namespace tessera::bench
