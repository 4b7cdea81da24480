#include "tessera/qr/tile_matrix.hpp"

#include <limits>
#include <new>

#include "detail.hpp"

namespace tessera::qr {
namespace {

// Page-aligned by default: tiles start on cache lines and a later pinning (mlock, cudaHostRegister)
// works on whole pages.
constexpr std::align_val_t tile_alignment{4096};

void* default_allocate(std::size_t bytes) { return ::operator new(bytes, tile_alignment); }
void default_deallocate(void* p, std::size_t) noexcept { ::operator delete(p, tile_alignment); }

}  // namespace

template <class T>
tile_matrix<T>::tile_matrix(int m, int n, int mb, int nb, tile_allocator alloc)
    : _m(m), _n(n), _mb(mb), _nb(nb) {
  constexpr const char* func = "tile_matrix";
  detail::require_at_least(func, "m", m, 1);
  detail::require_at_least(func, "n", n, 1);
  detail::require_at_least(func, "nb", nb, 1);
  detail::require_at_least(func, "mb", mb, 1);
  _mt = (m + mb - 1) / mb;
  _nt = (n + nb - 1) / nb;
  if (!alloc.allocate) alloc = {default_allocate, default_deallocate};
  if (!alloc.deallocate) detail::invalid(func, "tile_allocator has allocate but no deallocate");
  if (std::size_t(m) * std::size_t(n) > std::numeric_limits<std::size_t>::max() / sizeof(T))
    detail::invalid(func, "m * n elements overflow the address space");
  _alloc = alloc;
  _data = static_cast<T*>(_alloc.allocate(size() * sizeof(T)));
  if (!_data) throw std::bad_alloc();
}

template <class T>
tile_matrix<T>::~tile_matrix() {
  if (_data) _alloc.deallocate(_data, size() * sizeof(T));
}

template class tile_matrix<float>;
template class tile_matrix<double>;

}  // namespace tessera::qr
