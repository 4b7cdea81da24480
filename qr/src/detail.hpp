#pragma once
// Helpers shared by the qr sources: argument errors, task colours, progress ticks.
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

namespace tessera::qr::detail {

[[noreturn]] inline void invalid(const char* func, const std::string& what) {
  throw std::invalid_argument(std::string("tessera::qr::") + func + ": " + what);
}

[[noreturn]] inline void out_of_device_memory(const char* func, const std::string& what) {
  throw std::runtime_error(std::string("tessera::qr::") + func + ": out of device memory for the " + what);
}

// "nb = 0: must be >= 1"
inline void require_at_least(const char* func, const char* name, long long value, long long min,
                             const char* min_text = nullptr) {
  if (value < min)
    invalid(func, std::string(name) + " = " + std::to_string(value) + ": must be >= " +
                      (min_text ? std::string(min_text) + " = " : std::string()) +
                      std::to_string(min));
}

inline void require_ib(const char* func, int nb, int ib) {
  require_at_least(func, "nb", nb, 1);
  require_at_least(func, "ib", ib, 1);
  if (nb % ib != 0)
    invalid(func, "ib = " + std::to_string(ib) + " does not divide nb = " + std::to_string(nb));
}

// First non-finite element of the rows x cols block a (lda) as (row, col), or (-1, -1).
template <class T>
std::pair<int, int> find_non_finite(int rows, int cols, const T* a, int lda) {
  for (int c = 0; c < cols; ++c) {
    const T* col = a + std::size_t(c) * std::size_t(lda);
    // x - x is 0 for finite x and NaN otherwise: a branch-free test the compiler vectorises.
    bool finite = true;
    for (int r = 0; r < rows; ++r) finite &= (col[r] - col[r] == T(0));
    if (finite) continue;
    for (int r = 0; r < rows; ++r)
      if (!(col[r] - col[r] == T(0))) return {r, c};
  }
  return {-1, -1};
}

// Throws std::invalid_argument unless the block a (rows x cols, lda), which sits at (r0, c0) of
// the matrix called name, is finite.
template <class T>
void require_finite_block(const char* name, int rows, int cols, const T* a, int lda, int r0 = 0, int c0 = 0) {
  auto [r, c] = find_non_finite(rows, cols, a, lda);
  if (r < 0) return;
  const T x = a[r + std::size_t(c) * std::size_t(lda)];
  throw std::invalid_argument(std::string("tessera::qr: ") + name + "(" + std::to_string(r0 + r) +
                              ", " + std::to_string(c0 + c) + ") is " + (x != x ? "NaN" : "Inf") +
                              ": the input matrix must be finite");
}

inline void tick(std::atomic<std::uint64_t>* progress) noexcept {
  if (progress) progress->fetch_add(1, std::memory_order_relaxed);
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
