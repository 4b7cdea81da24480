#pragma once
// Tessera's argument checks, shared by the kernels and qr: a compare on the hot path, the
// message built out of line (kernels_cpu/src/check.cpp) only on failure. `function` is the name
// the message starts with (e.g. "tessera::kernels::core_geqrt"), `arg` the caller's own name of
// the argument:
//   "<function>: <arg> = <value>: must be >= <bound_text> (= <bound>)"
// where " (= <bound>)" is left out when bound_text is null or the number itself.
#include <cstddef>
#include <string>
#include <utility>

namespace tessera::check {

// Throws std::invalid_argument with the message above; relation is ">=", "<=" or "==".
[[noreturn]] void bad_argument(const char* function, const char* arg, long long value,
                               const char* relation, const char* bound_text, long long bound);
// Throws std::invalid_argument "<function>: <arg> is null".
[[noreturn]] void null_argument(const char* function, const char* arg);
// Throws std::invalid_argument "<function>: <what>".
[[noreturn]] void invalid(const char* function, const std::string& what);
// Throws std::logic_error: LAPACK rejected an argument the checks let through (a bug there).
[[noreturn]] void lapack_rejected(const char* function, const char* routine, int info);
// Throws std::invalid_argument "<function>: <name>(<row>, <col>) is NaN: the input matrix must be
// finite" (Inf for an infinity).
[[noreturn]] void not_finite(const char* function, const char* name, long long row, long long col,
                             bool is_nan);

inline void require_ge(const char* function, const char* arg, long long value,
                       const char* bound_text, long long bound) {
  if (value < bound) [[unlikely]]
    bad_argument(function, arg, value, ">=", bound_text, bound);
}

inline void require_le(const char* function, const char* arg, long long value,
                       const char* bound_text, long long bound) {
  if (value > bound) [[unlikely]]
    bad_argument(function, arg, value, "<=", bound_text, bound);
}

inline void require_eq(const char* function, const char* arg, long long value,
                       const char* bound_text, long long bound) {
  if (value != bound) [[unlikely]]
    bad_argument(function, arg, value, "==", bound_text, bound);
}

inline void require_ptr(const char* function, const char* arg, const void* p) {
  if (p == nullptr) [[unlikely]]
    null_argument(function, arg);
}

// info of a LAPACK call whose arguments were checked before: anything but 0 is a bug.
inline void lapack_info(const char* function, const char* routine, int info) {
  if (info != 0) [[unlikely]]
    lapack_rejected(function, routine, info);
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

// Throws (not_finite) unless the block a (rows x cols, lda) is finite; the block sits at
// (r0, c0) of the matrix called name, which the message's indices are relative to.
template <class T>
void require_finite(const char* function, const char* name, int rows, int cols, const T* a, int lda,
                    long long r0 = 0, long long c0 = 0) {
  const auto [r, c] = find_non_finite(rows, cols, a, lda);
  if (r < 0) return;
  const T x = a[std::size_t(r) + std::size_t(c) * std::size_t(lda)];
  not_finite(function, name, r0 + r, c0 + c, x != x);
}

}  // namespace tessera::check
