#pragma once
// Tessera QR. The front door: factorize() (tessera/qr/factorize.hpp) chooses where the flops run
// and the algorithm, and its factorization applies and forms Q and solves least squares, for host
// or device matrices. Beneath it, for experts: the tile QR on the CPUs (geqrf) and with a GPU
// (geqrf_hybrid), the blocked QR on the GPU (blocked_qr_gpu), tile storage, Q and least squares
// on tiles, residual checks, LAPACK operation counts and test matrices.
#include "tessera/qr/blas_threads.hpp"
#include "tessera/qr/blocked_qr_gpu.hpp"
#include "tessera/qr/blocked_qr_multi_gpu.hpp"
#include "tessera/qr/check.hpp"
#include "tessera/qr/factorize.hpp"
#include "tessera/qr/flops.hpp"
#include "tessera/qr/gels.hpp"
#include "tessera/qr/geqrf.hpp"
#include "tessera/qr/geqrf_hybrid.hpp"
#include "tessera/qr/gpu.hpp"
#include "tessera/qr/layout.hpp"
#include "tessera/qr/matgen.hpp"
#include "tessera/qr/tile_matrix.hpp"
#include "tessera/qr/ungqr.hpp"
#include "tessera/qr/unmqr.hpp"
#include "tessera/qr/update.hpp"
