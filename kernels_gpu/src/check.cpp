#include "check.hpp"

#include <stdexcept>
#include <string>

namespace tessera::kernels::detail {

void bad_argument(const char* kernel, const char* arg, long long value, const char* relation,
                  const char* bound_text, long long bound) {
  throw std::invalid_argument(std::string(kernel) + ": " + arg + " = " + std::to_string(value) +
                              " must be " + relation + " " + bound_text + " (= " +
                              std::to_string(bound) + ")");
}

void null_argument(const char* kernel, const char* arg) {
  throw std::invalid_argument(std::string(kernel) + ": " + arg + " is null");
}

void cublas_failed(const char* kernel, const char* call, cublasStatus_t status) {
  throw std::runtime_error(std::string(kernel) + ": " + call + " failed: " +
                           cublasGetStatusString(status));
}

void cuda_failed(const char* kernel, const char* call, cudaError_t status) {
  throw std::runtime_error(std::string(kernel) + ": " + call + " failed: " +
                           cudaGetErrorString(status));
}

}  // namespace tessera::kernels::detail
