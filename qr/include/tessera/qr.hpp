#pragma once
// Tessera tile QR: tile storage, factorization, Q application and formation, least squares,
// residual checks and operation counts, all as task insertion on tessera::runtime.
#include "tessera/qr/blas_threads.hpp"
#include "tessera/qr/check.hpp"
#include "tessera/qr/flops.hpp"
#include "tessera/qr/gels.hpp"
#include "tessera/qr/geqrf.hpp"
#include "tessera/qr/geqrf_hybrid.hpp"
#include "tessera/qr/geqrt_gpu.hpp"
#include "tessera/qr/layout.hpp"
#include "tessera/qr/tile_matrix.hpp"
#include "tessera/qr/ungqr.hpp"
#include "tessera/qr/unmqr.hpp"
