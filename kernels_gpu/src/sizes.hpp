#pragma once
// Small helpers for sizes: products in size_t, negative sizes counted as 0 (they are rejected
// by the kernels' checks, never by a size query).
#include <cstddef>

namespace tessera::kernels::detail {

inline std::size_t elems(int a, int b) {
  return static_cast<std::size_t>(a > 0 ? a : 0) * static_cast<std::size_t>(b > 0 ? b : 0);
}
inline int at_least_1(int a) { return a > 1 ? a : 1; }
inline int min_int(int a, int b) { return a < b ? a : b; }

}  // namespace tessera::kernels::detail
