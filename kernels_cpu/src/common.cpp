#include <algorithm>
#include <tessera/kernels_cpu/common.hpp>
#include <tessera/kernels_cpu/check.hpp>

namespace tessera::kernels {

// Every kernel calls a LAPACK _work routine with an inner block min(ib, k) <= min(ib, nb) and at
// most nb rows or columns on the other side (GEQRT, TPQRT: ib*n; GEMQRT, TPMQRT: ib*n left,
// ib*m right), so one ib x nb panel serves them all.
std::size_t core_workspace_size(int nb, int ib) {
  check::require_ge("tessera::kernels::core_workspace_size", "nb", nb, "0", 0);
  check::require_ge("tessera::kernels::core_workspace_size", "ib", ib, "1", 1);
  return static_cast<std::size_t>(std::min(ib, nb)) * static_cast<std::size_t>(nb);
}

}  // namespace tessera::kernels
