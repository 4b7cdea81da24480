#pragma once
// The CPU tile kernels of tile QR (PLASMA core_blas style): plain functions on column-major tiles,
// caller-owned workspace, LAPACK semantics (GEQRT, TPQRT, GEMQRT, TPMQRT with l = 0) on
// LAPACK and BLAS (OpenBLAS).
#include <tessera/kernels_cpu/common.hpp>
#include <tessera/kernels_cpu/core_geqrt.hpp>
#include <tessera/kernels_cpu/core_ormqr.hpp>
#include <tessera/kernels_cpu/core_tsmqr.hpp>
#include <tessera/kernels_cpu/core_tsqrt.hpp>
#include <tessera/kernels_cpu/batched.hpp>
