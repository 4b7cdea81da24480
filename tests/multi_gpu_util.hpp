#pragma once
// The several-GPU QR tests' runtime: `gpus` logical GPUs, GPU i on CUDA device i mod the devices
// present (all device 0 on a one-GPU machine), copies between them direct or through the host.
#include <algorithm>

#include "tessera/qr.hpp"
#include "tessera/sched.hpp"

namespace tessera::testing {

inline runtime_options logical_gpus(unsigned gpus, unsigned workers, bool through_host = false) {
  runtime_options o = qr::gpu_runtime_options(workers);
  const int present = std::max(1, qr::gpu_count());
  for (unsigned i = 0; i < gpus; ++i) o.gpus.push_back(static_cast<int>(i) % present);
  o.gpu_copies_through_host = through_host;
  return o;
}

}  // namespace tessera::testing
