#pragma once
// Two spatial partitions of one GPU's SMs (CUDA green contexts): a few SMs reserved for the urgent
// stream, the rest for the others, so that work on a critical path never waits behind the thread
// blocks of a long GEMM (stream priorities only order blocks not yet started). The driver's entry
// points are looked up at run time through the runtime API, so nothing links libcuda and a
// machine without a driver still loads the library.
#include <cuda.h>
#include <cuda_runtime.h>

namespace tessera::detail {

class sm_partition {
 public:
  // Throws std::runtime_error naming the failing call (a driver older than CUDA 12.5, a count the
  // device cannot split off, ...).
  sm_partition(int device, unsigned reserved_sms);
  ~sm_partition();
  sm_partition(const sm_partition&) = delete;
  sm_partition& operator=(const sm_partition&) = delete;

  // A non-blocking stream on the reserved SMs or on the rest; the caller destroys it.
  cudaStream_t make_stream(bool reserved, int priority) const;
  unsigned sms(bool reserved) const noexcept { return reserved ? _reserved_sms : _rest_sms; }

 private:
  CUgreenCtx _reserved = nullptr, _rest = nullptr;
  unsigned _reserved_sms = 0, _rest_sms = 0;
};

}  // namespace tessera::detail
