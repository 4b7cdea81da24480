#include "tessera/qr/layout.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "detail.hpp"

namespace tessera::qr {
namespace {

template <class T>
void require_tiled(const char* func, const tile_matrix<T>& t, const tile_handles& ht) {
  if (!t.data()) detail::invalid(func, "the tile matrix is empty");
  if (ht.mt() != t.mt() || ht.nt() != t.nt())
    detail::invalid(func, "the handles are not those of this tile matrix (" +
                              std::to_string(ht.mt()) + " x " + std::to_string(ht.nt()) +
                              " handles for " + std::to_string(t.mt()) + " x " +
                              std::to_string(t.nt()) + " tiles)");
}

}  // namespace

template <class T>
void require_finite(const char* name, int m, int n, const T* a, int lda) {
  detail::require_finite_block(name, m, n, a, lda);
}

template <class T>
void to_tiles_async(runtime& rt, const T* a, int lda, tile_matrix<T>& t, const tile_handles& ht,
                    const char* name) {
  constexpr const char* func = "to_tiles";
  require_tiled(func, t, ht);
  if (!a) detail::invalid(func, std::string(name) + " is null");
  detail::require_at_least(func, "lda", lda, t.m(), "m");
  // Tile row by tile row: a factorization's first step needs tile row 0 and then the rows one
  // after another (a GPU update of a tile row waits for the whole row), so it starts on the first
  // rows while the rest is still being converted.
  for (int i = 0; i < t.mt(); ++i) {
    for (int j = 0; j < t.nt(); ++j) {
      const int rows = t.tile_rows(i), cols = t.tile_cols(j);
      const int r0 = i * t.mb(), c0 = j * t.nb();
      const T* src = a + r0 + std::size_t(c0) * std::size_t(lda);
      T* dst = t.tile(i, j);
      rt.task([=] {
            for (int c = 0; c < cols; ++c)
              std::memcpy(dst + std::size_t(c) * rows, src + std::size_t(c) * lda, sizeof(T) * rows);
            detail::require_finite_block(name, rows, cols, dst, rows, r0, c0);
          })
          .write(ht(i, j))
          .priority(-1)  // after any ready factorization task, one at a time (see the loop order)
          .label("to_tiles")
          .color(detail::color_copy)
          .submit();
    }
  }
}

template <class T>
void to_lapack_async(runtime& rt, const tile_matrix<T>& t, const tile_handles& ht, T* a, int lda) {
  constexpr const char* func = "to_lapack";
  require_tiled(func, t, ht);
  if (!a) detail::invalid(func, "the destination is null");
  detail::require_at_least(func, "lda", lda, t.m(), "m");
  for (int j = 0; j < t.nt(); ++j) {
    for (int i = 0; i < t.mt(); ++i) {
      const int rows = t.tile_rows(i), cols = t.tile_cols(j);
      const T* src = t.tile(i, j);
      T* dst = a + i * t.mb() + std::size_t(j) * std::size_t(t.nb()) * std::size_t(lda);
      rt.task([=] {
            for (int c = 0; c < cols; ++c)
              std::memcpy(dst + std::size_t(c) * lda, src + std::size_t(c) * rows, sizeof(T) * rows);
          })
          .read(ht(i, j))
          .label("to_lapack")
          .color(detail::color_copy)
          .submit();
    }
  }
}

template <class T>
void set_identity_async(runtime& rt, tile_matrix<T>& t, const tile_handles& ht) {
  require_tiled("set_identity", t, ht);
  for (int j = 0; j < t.nt(); ++j) {
    for (int i = 0; i < t.mt(); ++i) {
      const int rows = t.tile_rows(i), cols = t.tile_cols(j);
      const int r0 = i * t.mb(), c0 = j * t.nb();
      T* dst = t.tile(i, j);
      rt.task([=] {
            std::fill(dst, dst + std::size_t(rows) * cols, T(0));
            // Diagonal elements r0 + r == c0 + c inside this tile.
            for (int c = std::max(0, r0 - c0); c < cols && c0 + c - r0 < rows; ++c)
              dst[(c0 + c - r0) + std::size_t(c) * rows] = T(1);
          })
          .write(ht(i, j))
          .label("laset")
          .color(detail::color_copy)
          .submit();
    }
  }
}

#define TESSERA_QR_INSTANTIATE(T)                                                               \
  template void require_finite<T>(const char*, int, int, const T*, int);                      \
  template void to_tiles_async<T>(runtime&, const T*, int, tile_matrix<T>&, const tile_handles&, \
                                  const char*);                                               \
  template void to_lapack_async<T>(runtime&, const tile_matrix<T>&, const tile_handles&, T*,   \
                                   int);                                                       \
  template void set_identity_async<T>(runtime&, tile_matrix<T>&, const tile_handles&);
TESSERA_QR_INSTANTIATE(float)
TESSERA_QR_INSTANTIATE(double)
#undef TESSERA_QR_INSTANTIATE

}  // namespace tessera::qr
