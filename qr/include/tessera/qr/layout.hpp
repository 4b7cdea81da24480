#pragma once
// Conversion between LAPACK column-major storage (lda) and tile storage: one task per tile, so the
// copies run in parallel and later tasks on a tile wait only for that tile's copy.
#include "tessera/qr/tile_matrix.hpp"
#include "tessera/sched/runtime.hpp"

namespace tessera::qr {

// Inserts the copies a (m x n, lda) -> tiles of t. Checks lda >= m at insertion and, in the
// tasks, that every element is finite: a NaN or Inf makes the task throw std::invalid_argument
// naming `name` and the element, which wait_all() rethrows. a and name (a string literal) must
// stay valid until the tasks have run.
template <class T>
void to_tiles_async(runtime& rt, const T* a, int lda, tile_matrix<T>& t, const tile_handles& ht,
                    const char* name = "A");

// Inserts the copies tiles of t -> a (m x n, lda).
template <class T>
void to_lapack_async(runtime& rt, const tile_matrix<T>& t, const tile_handles& ht, T* a, int lda);

// Inserts tasks setting t to the m x n identity (ones on the diagonal, zeros elsewhere).
template <class T>
void set_identity_async(runtime& rt, tile_matrix<T>& t, const tile_handles& ht);

// Throws std::invalid_argument unless every element of the m x n matrix a (lda) is finite.
template <class T>
void require_finite(const char* name, int m, int n, const T* a, int lda);

}  // namespace tessera::qr
