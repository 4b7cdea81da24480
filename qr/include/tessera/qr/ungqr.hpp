#pragma once
// Forming Q explicitly from geqrf's factors: Q times the first columns of the identity, skipping
// the tiles that are known to stay zero (LAPACK ORGQR's saving).
#include "tessera/qr/geqrf.hpp"
#include "tessera/qr/tile_matrix.hpp"

namespace tessera::qr {

enum class q_shape {
  thin,   // m x min(m, n): the columns that span range(A) when A has full rank
  full,   // m x m
};

// Columns of Q for a shape.
template <class T>
int q_columns(const qr_factors<T>& f, q_shape shape) noexcept {
  return shape == q_shape::full ? f.m() : (f.m() < f.n() ? f.m() : f.n());
}

// Inserts q := the first q.n() columns of Q (q: f.m() rows tiled like f.a(), 1 <= q.n() <= m).
template <class T>
void ungqr_async(runtime& rt, const qr_factors<T>& f, tile_matrix<T>& q, const tile_handles& hq);

// Writes Q (m x q_columns(f, shape)) to the column-major q (ldq >= m) and waits.
template <class T>
void ungqr(runtime& rt, const qr_factors<T>& f, q_shape shape, T* q, int ldq);

}  // namespace tessera::qr
