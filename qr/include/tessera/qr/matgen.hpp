#pragma once
// Test matrices in the spirit of LAPACK's xLATMS and PLASMA's testers: A = U diag(sigma) V^T with
// random orthogonal U, V and singular values by mode and condition number, or special matrices
// (zero, zero columns, repeated columns, graded columns); then scaled anywhere in the precision's
// range (scale 1e-300 or 1e300 for double), so every QR path can be checked on inputs near
// underflow and overflow.
//
// U and V are not Haar-distributed but mix every row (column) with every other at O(m n b) cost
// (b = 128): each is a product of a few stages, a stage being a random permutation followed by a
// block diagonal matrix of random b x b orthogonal blocks (QR of Gaussian blocks, LAPACK). With
// ceil(log_b m) + 1 stages every entry of U depends on every row, and a 32768^2 matrix costs a
// few GEMM sweeps (LAPACK's xLAGGE, full-length reflectors, would be O(m n min(m, n))).
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace tessera::qr {

enum class matrix_kind {
  random_uniform,    // entries uniform in [-1, 1)
  svd_one_large,     // xLATMS mode 1: sigma = 1, 1/cond, ..., 1/cond
  svd_one_small,     // mode 2: sigma = 1, ..., 1, 1/cond
  svd_geometric,     // mode 3: sigma_i = cond^(-i/(k-1))
  svd_arithmetic,    // mode 4: sigma_i = 1 - (i/(k-1)) (1 - 1/cond)
  svd_log_uniform,   // mode 5: log(sigma_i) uniform in [-log(cond), 0]; 1 and 1/cond included
  zero,              // the zero matrix
  zero_columns,      // random_uniform with columns 0, 3, 6, ... zero
  repeated_columns,  // random_uniform with column j = column j-1 for odd j
  graded_columns,    // random_uniform with column j scaled by cond^(-j/(n-1))
};

// Every kind, in declaration order (sweeps in tests and tools).
inline constexpr matrix_kind all_matrix_kinds[] = {
    matrix_kind::random_uniform, matrix_kind::svd_one_large,    matrix_kind::svd_one_small,
    matrix_kind::svd_geometric,  matrix_kind::svd_arithmetic,   matrix_kind::svd_log_uniform,
    matrix_kind::zero,           matrix_kind::zero_columns,     matrix_kind::repeated_columns,
    matrix_kind::graded_columns};

struct matrix_spec {
  matrix_kind kind = matrix_kind::random_uniform;
  double cond = 1e4;       // >= 1: sigma_max / sigma_min (svd_*), the grading (graded_columns)
  double scale = 1;        // > 0: max |a_ij| lies in [scale/2, scale] (up to rounding)
  std::uint64_t seed = 1;  // the same spec and shape give the same matrix
};

// The --matrix names: "random", "one-large", "one-small", "geometric", "arithmetic",
// "log-uniform", "zero", "zero-columns", "repeated-columns", "graded".
const char* name(matrix_kind kind) noexcept;
std::optional<matrix_kind> parse_matrix_kind(std::string_view text) noexcept;

// True for the kinds built as U diag(sigma) V^T.
bool has_spectrum(matrix_kind kind) noexcept;

// The k singular values an svd_* kind asks for, largest 1, in the order they are placed (before
// the power-of-two normalization and the scale): for tests. Empty for other kinds.
std::vector<double> requested_singular_values(const matrix_spec& spec, int k);

// a (m x n, lda >= max(1, m), column-major) := the matrix spec describes. Built at scale 1,
// normalized by a power of two so that max |a_ij| lies in [1/2, 1), then multiplied by scale
// (in double, rounded once to T), so the singular values are requested_singular_values times
// 2^e times scale for one integer e. Throws std::invalid_argument naming --cond or --scale when
// cond < 1 or not finite, scale not finite and > 0, or the scaled matrix would overflow to Inf or
// round to zero entirely in T; and for bad sizes. Uses multithreaded BLAS and the hardware's threads.
template <class T>
void generate(const matrix_spec& spec, int m, int n, T* a, int lda);

extern template void generate<float>(const matrix_spec&, int, int, float*, int);
extern template void generate<double>(const matrix_spec&, int, int, double*, int);

}  // namespace tessera::qr
