#pragma once
// Applying Q or Q^T from geqrf to a tile matrix C from the left: the update half of tile QR
// (ORMQR on the diagonal tile row, TSMQR down the column) replayed on C.
#include "tessera/kernels_cpu/common.hpp"
#include "tessera/qr/geqrf.hpp"
#include "tessera/qr/tile_matrix.hpp"

namespace tessera::qr {

using kernels::trans;

// Inserts C := op(Q) C. C has f.m() rows tiled like f.a() (mb == f.nb()), any number of columns.
// Throws std::invalid_argument when C's rows or tiling do not match.
template <class T>
void unmqr_async(runtime& rt, trans op, const qr_factors<T>& f, tile_matrix<T>& c,
                 const tile_handles& hc);

// C := op(Q) C on the m x nrhs column-major c (ldc): tiles, applies, copies back, waits.
template <class T>
void unmqr(runtime& rt, trans op, const qr_factors<T>& f, int nrhs, T* c, int ldc);

}  // namespace tessera::qr
