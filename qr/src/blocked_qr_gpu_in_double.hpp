#pragma once
// The single-precision blocked GPU QR computed in double: on GPUs whose FP64 tensor cores run
// GEMMs faster than their FP32 units (Hopper: DGEMM 60-62 TFLOP/s, SGEMM 51-52), A goes to a double
// copy on the device, the double QR factors it, and R, V, T (and the full T and S) come back
// rounded to float: faster, and at least as accurate as in float.
#include <cstddef>

#include "tessera/qr/blocked_qr_gpu.hpp"

namespace tessera::qr::detail {

// Whether a CUDA device of this compute capability runs the single-precision blocked QR faster
// in double (measured on H100 and H200: compute capability 9.0).
bool double_outruns_single(int major, int minor) noexcept;
// The same for the runtime's GPU 0 (false without one).
bool double_outruns_single(runtime& rt);

// Device bytes the double copies take: A, T (nb x n) and, with the full T, T and S (m x n); for a
// host matrix also its blocks' device copies in float.
std::size_t in_double_bytes(int m, int n, int nb, bool full_t, bool host_matrix) noexcept;

// As blocked_qr_gpu<float>(rt, m, n, a, lda, t, ldt, st, ldst, o), computed in double: o.nb is
// the panel width; a, t and st (null without the full T) are device memory with o.device_matrix,
// else host memory (pinned for full-speed copies). Every check and error of the double QR applies
// (A's NaN and Inf named); on error a, t and st are left as they were.
void blocked_qr_gpu_in_double(runtime& rt, int m, int n, float* a, int lda, float* t, int ldt, float* st, int ldst,
                              const blocked_options& o);

// The host matrix's case (blocked_qr_gpu.cpp): the runtime moves its column blocks in float as the
// factorization goes, each converted to the double device matrix on arrival and back before it
// goes home, so the copies overlap the work as the float QR's do.
void blocked_qr_gpu_host_in_double(runtime& rt, int m, int n, float* a, int lda, float* t, int ldt, float* st,
                                   int ldst, const blocked_options& o);

}  // namespace tessera::qr::detail
