#pragma once
// Helpers shared by the qr sources: argument errors (one-line forwards to Tessera's check family,
// tessera/kernels_cpu/check.hpp, naming the function tessera::qr::<func>), task colours.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "tessera/kernels_cpu/check.hpp"

namespace tessera::qr::detail {

// The function name qr's messages start with; built only when a check fails.
inline std::string qualified(const char* func) { return std::string("tessera::qr::") + func; }

[[noreturn]] inline void invalid(const char* func, const std::string& what) {
  tessera::check::invalid(qualified(func).c_str(), what);
}

// "nb = 0: must be >= 1", "lda = 3: must be >= m (= 4)"
inline void require_at_least(const char* func, const char* name, long long value, long long min,
                             const char* min_text = nullptr) {
  if (value < min) tessera::check::bad_argument(qualified(func).c_str(), name, value, ">=", min_text, min);
}

// "r0 + rows = 12: must be <= m (= 10)"
inline void require_at_most(const char* func, const char* name, long long value, long long max,
                            const char* max_text = nullptr) {
  if (value > max) tessera::check::bad_argument(qualified(func).c_str(), name, value, "<=", max_text, max);
}

inline void require_ib(const char* func, int nb, int ib) {
  require_at_least(func, "nb", nb, 1);
  require_at_least(func, "ib", ib, 1);
  if (nb % ib != 0)
    invalid(func, "ib = " + std::to_string(ib) + " does not divide nb = " + std::to_string(nb));
}

using tessera::check::find_non_finite;

// Throws std::invalid_argument unless the block a (rows x cols, lda), which sits at (r0, c0) of
// the matrix called name, is finite.
template <class T>
void require_finite_block(const char* name, int rows, int cols, const T* a, int lda, int r0 = 0, int c0 = 0) {
  tessera::check::require_finite("tessera::qr", name, rows, cols, a, lda, r0, c0);
}

// The blocked QRs' verdict on columns c0 .. c0 + cols - 1 of A (m rows), in which the GPU counted
// `count` NaN or Inf entries: the first bad entry named from the host copy when there is one
// (host, lda), else the count.
template <class T>
void judge_non_finite(const char* func, unsigned count, int m, int cols, const T* host, int lda, int c0) {
  if (count == 0) return;
  if (host) require_finite_block("A", m, cols, host, lda, 0, c0);
  invalid(func, "A has " + std::to_string(count) + " NaN or Inf entries in columns " + std::to_string(c0) + " to " +
                    std::to_string(c0 + cols - 1) + ": the input matrix must be finite");
}

// Trace colours per kernel (0xRRGGBB): the panel warm, the updates cool.
inline constexpr std::uint32_t color_geqrt = 0xd62728;
inline constexpr std::uint32_t color_tsqrt = 0xff7f0e;
inline constexpr std::uint32_t color_ormqr = 0x1f77b4;
inline constexpr std::uint32_t color_tsmqr = 0x2ca02c;
inline constexpr std::uint32_t color_copy = 0x7f7f7f;
inline constexpr std::uint32_t color_trsm = 0x9467bd;
inline constexpr std::uint32_t color_gemm = 0x8c564b;

}  // namespace tessera::qr::detail
