#pragma once
// Small helpers of the kernels' sources: element addressing and the kernels' enums as LAPACK's
// side/trans characters.
#include <cstddef>
#include <tessera/kernels_cpu/common.hpp>

namespace tessera::kernels::detail {

template <class T>
inline T* at(T* p, int ld, int i, int j) {
  return p + i + static_cast<std::ptrdiff_t>(j) * ld;
}

constexpr char to_char(side s) { return s == side::left ? 'L' : 'R'; }
constexpr char to_char(trans t) { return t == trans::trans ? 'T' : 'N'; }

}  // namespace tessera::kernels::detail
