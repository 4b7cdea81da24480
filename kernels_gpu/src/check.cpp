#include "check.hpp"

#include <stdexcept>
#include <string>

namespace tessera::cublas {

void failed(const char* function, const char* call, cublasStatus_t status) {
  throw std::runtime_error(std::string(function) + ": " + call + " failed: " +
                           cublasGetStatusString(status));
}

}  // namespace tessera::cublas

namespace tessera::kernels::detail {

void cuda_failed(const char* kernel, const char* call, cudaError_t status) {
  throw std::runtime_error(std::string(kernel) + ": " + call + " failed: " +
                           cudaGetErrorString(status));
}

}  // namespace tessera::kernels::detail

namespace tessera::kernels {

std::string gpu_device_name() {
  cudaDeviceProp prop;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    cudaGetLastError();
    return {};
  }
  return prop.name;
}

}  // namespace tessera::kernels
