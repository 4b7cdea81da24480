#pragma once
// Shared vocabulary of the CPU tile kernels: which side Q is applied from, whether it is
// transposed, and how much caller-owned workspace a kernel needs.
#include <cstddef>

namespace tessera::kernels {

enum class side { left, right };
enum class trans { no_trans, trans };  // trans: apply Q^T

// Elements of workspace that any kernel of this library needs for tiles of at most nb x nb with
// inner block ib. Kernels never allocate: the scheduler keeps one such buffer per worker.
std::size_t core_workspace_size(int nb, int ib);

}  // namespace tessera::kernels
