#pragma once
// All GPU kernels of Tessera (cuBLAS-based): see tessera/kernels_gpu/common.hpp for conventions.
#include <tessera/kernels_gpu/common.hpp>
#include <tessera/kernels_gpu/gpu_ormqr.hpp>
#include <tessera/kernels_gpu/gpu_sssmqr.hpp>
#include <tessera/kernels_gpu/gpu_tsmqr.hpp>
#include <tessera/kernels_gpu/gpu_tpqrt.hpp>
#include <tessera/kernels_gpu/gpu_geqrt.hpp>
#include <tessera/kernels_gpu/gpu_small_panel.hpp>
#include <tessera/kernels_gpu/gpu_larfb.hpp>
#include <tessera/kernels_gpu/gpu_full_t.hpp>
#include <tessera/kernels_gpu/gpu_finite.hpp>
#include <tessera/kernels_gpu/gpu_convert.hpp>
#include <tessera/kernels_gpu/gpu_batched.hpp>
