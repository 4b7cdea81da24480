#pragma once
// tessera::qr::blas_threads: the scope that holds OpenBLAS's thread count (kernels_cpu's), under
// the name QR users know.
#include "tessera/kernels_cpu/blas_threads.hpp"

namespace tessera::qr {
using blas_threads = tessera::blas::blas_threads;
}  // namespace tessera::qr
