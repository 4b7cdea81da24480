#pragma once
// A matrix stored by tiles: m x n in mb x nb tiles, each tile contiguous and column-major, all
// tiles in one allocation. Tiles of the last tile row/column keep their true sizes, so a tile's
// leading dimension is its row count (mb, or m's remainder in the last tile row).
//
//   tile_matrix<double> a(1000, 700, 256);      // 4 x 3 tiles of at most 256 x 256
//   double* t = a.tile(3, 2);                   // 232 x 188, ld = a.ld(3) = 232
//   tile_handles h = register_tiles(rt, a);     // one scheduler handle per tile, h(i, j)
#include <cstddef>
#include <utility>
#include <vector>

#include "tessera/sched/handle.hpp"
#include "tessera/sched/runtime.hpp"

namespace tessera::qr {

// Where a tile_matrix gets its memory: one call per matrix. Swappable so that a GPU backend can
// hand out pinned host memory without the tile code changing.
struct tile_allocator {
  void* (*allocate)(std::size_t bytes) = nullptr;                   // nullptr: aligned operator new
  void (*deallocate)(void* p, std::size_t bytes) noexcept = nullptr;
};

template <class T>
class tile_matrix {
 public:
  tile_matrix() = default;
  // Square nb x nb tiles. Throws std::invalid_argument unless m, n, nb >= 1.
  tile_matrix(int m, int n, int nb, tile_allocator alloc = {}) : tile_matrix(m, n, nb, nb, alloc) {}
  // mb x nb tiles (the block reflector storage of tile QR uses ib x nb).
  tile_matrix(int m, int n, int mb, int nb, tile_allocator alloc = {});
  tile_matrix(tile_matrix&& other) noexcept { swap(other); }
  tile_matrix& operator=(tile_matrix&& other) noexcept {
    tile_matrix(std::move(other)).swap(*this);
    return *this;
  }
  tile_matrix(const tile_matrix&) = delete;
  tile_matrix& operator=(const tile_matrix&) = delete;
  ~tile_matrix();

  int m() const noexcept { return _m; }
  int n() const noexcept { return _n; }
  int mb() const noexcept { return _mb; }
  int nb() const noexcept { return _nb; }
  int mt() const noexcept { return _mt; }   // ceil(m / mb)
  int nt() const noexcept { return _nt; }   // ceil(n / nb)
  int tile_rows(int i) const noexcept { return i + 1 < _mt ? _mb : _m - i * _mb; }
  int tile_cols(int j) const noexcept { return j + 1 < _nt ? _nb : _n - j * _nb; }
  int ld(int i) const noexcept { return tile_rows(i); }

  // Tile column j starts after j full tile columns (m * nb elements each); inside it, tile i
  // after i tiles of mb rows and tile_cols(j) columns.
  T* tile(int i, int j) noexcept { return _data + offset(i, j); }
  const T* tile(int i, int j) const noexcept { return _data + offset(i, j); }
  std::size_t tile_elements(int i, int j) const noexcept {
    return std::size_t(tile_rows(i)) * std::size_t(tile_cols(j));
  }

  // Element (r, c) of the matrix; for tests and checks, not for inner loops.
  T& operator()(int r, int c) noexcept {
    return tile(r / _mb, c / _nb)[r % _mb + std::size_t(c % _nb) * ld(r / _mb)];
  }
  const T& operator()(int r, int c) const noexcept {
    return tile(r / _mb, c / _nb)[r % _mb + std::size_t(c % _nb) * ld(r / _mb)];
  }

  T* data() noexcept { return _data; }
  const T* data() const noexcept { return _data; }
  std::size_t size() const noexcept { return std::size_t(_m) * std::size_t(_n); }

  void swap(tile_matrix& other) noexcept {
    std::swap(_m, other._m);
    std::swap(_n, other._n);
    std::swap(_mb, other._mb);
    std::swap(_nb, other._nb);
    std::swap(_mt, other._mt);
    std::swap(_nt, other._nt);
    std::swap(_data, other._data);
    std::swap(_alloc, other._alloc);
  }

 private:
  std::size_t offset(int i, int j) const noexcept {
    return std::size_t(j) * std::size_t(_nb) * std::size_t(_m) +
           std::size_t(i) * std::size_t(_mb) * std::size_t(tile_cols(j));
  }
  int _m = 0, _n = 0, _mb = 1, _nb = 1, _mt = 0, _nt = 0;
  T* _data = nullptr;
  tile_allocator _alloc{};
};

extern template class tile_matrix<float>;
extern template class tile_matrix<double>;

// One scheduler handle per tile of a tile_matrix, registered on one runtime. Kept beside the
// matrix (the scheduler knows nothing of tiles); valid while that runtime lives.
class tile_handles {
 public:
  tile_handles() = default;
  handle operator()(int i, int j) const noexcept {
    return _h[std::size_t(i) + std::size_t(j) * std::size_t(_mt)];
  }
  int mt() const noexcept { return _mt; }
  int nt() const noexcept { return _nt; }
  explicit operator bool() const noexcept { return !_h.empty(); }

 private:
  template <class T>
  friend tile_handles register_tiles(runtime& rt, tile_matrix<T>& a);
  std::vector<handle> _h;
  int _mt = 0, _nt = 0;
};

template <class T>
tile_handles register_tiles(runtime& rt, tile_matrix<T>& a) {
  tile_handles h;
  h._mt = a.mt();
  h._nt = a.nt();
  h._h.reserve(std::size_t(a.mt()) * std::size_t(a.nt()));
  for (int j = 0; j < a.nt(); ++j)
    for (int i = 0; i < a.mt(); ++i)
      // Column by column, so a GPU copy can land inside a column-major device matrix.
      h._h.push_back(rt.register_data(a.tile(i, j), std::size_t(a.tile_rows(i)) * sizeof(T),
                                      std::size_t(a.tile_cols(j)), std::size_t(a.ld(i)) * sizeof(T)));
  return h;
}

}  // namespace tessera::qr
