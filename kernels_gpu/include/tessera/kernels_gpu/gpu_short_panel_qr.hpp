#pragma once
// The Householder QR of a short panel (h x nb, h at most a few hundred rows) by one thread block
// with the whole panel in shared memory: one kernel instead of the blocked panel QR's dozen, for
// the QR updates' (nb + p) x nb panels, whose chain of panels is latency-bound. The reflectors
// come back as Q = I - V T V^T with V explicit (unit diagonal, zeros above) and T LAPACK's
// (forward columnwise), so that Q is applied by GEMMs alone. Enqueued on `stream`.
#include <cuda_runtime.h>

#include <tessera/kernels_gpu/common.hpp>

namespace tessera::kernels {

// The widest panel gpu_short_panel_qr takes.
inline constexpr int gpu_short_panel_max_nb = 64;

// Whether an h x nb panel (h >= nb, nb <= gpu_short_panel_max_nb) fits one thread block's shared
// memory with its nb x nb T.
template <class T>
bool gpu_short_panel_fits(int h, int nb);

// The panel is [top(0:ht, 0:nb); bot(0:h-ht, 0:nb)] (bot unused when ht == h), ht >= nb. Its QR
// A = (I - V T V^T) [R; 0]: top's first nb rows := R (zeros below its diagonal), top's other
// rows and bot := 0; V (h x nb, ldv >= h) := V explicit; Tm (nb x nb, ldt) := T, zeros below its
// diagonal. Like LAPACK's GEQR2 + LARFT: tau = 0 where a column's part below the diagonal is
// zero, and norms are taken with scaling.
template <class T>
void gpu_short_panel_qr(int h, int nb, T* top, int ldtop, int ht, T* bot, int ldbot, T* V, int ldv,
                        T* Tm, int ldt, cudaStream_t stream);

// V (h x nb, ldv) := the unit lower trapezoidal part of P (h x nb, ldp) with the unit diagonal
// and the zeros above it made explicit (a GEQRT panel's reflectors as a plain matrix).
template <class T>
void gpu_explicit_v(int h, int nb, const T* P, int ldp, T* V, int ldv, cudaStream_t stream);

}  // namespace tessera::kernels
