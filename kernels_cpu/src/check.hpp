#pragma once
// Argument checks shared by the kernels: a compare or two on the hot path, the message is built
// only on failure (out of line, in check.cpp).
namespace tessera::kernels::detail {

// Throws std::invalid_argument
//   "<kernel>: <arg> = <value> must be <relation> <bound_text> (= <bound>)".
[[noreturn]] void bad_argument(const char* kernel, const char* arg, int value, const char* relation,
                               const char* bound_text, int bound);

// Throws std::logic_error: LAPACK rejected an argument our checks let through (a bug here).
[[noreturn]] void lapack_rejected(const char* kernel, const char* routine, int info);

inline void require_ge(const char* kernel, const char* arg, int value, const char* bound_text,
                       int bound) {
  if (value < bound) [[unlikely]]
    bad_argument(kernel, arg, value, ">=", bound_text, bound);
}

inline void require_le(const char* kernel, const char* arg, int value, const char* bound_text,
                       int bound) {
  if (value > bound) [[unlikely]]
    bad_argument(kernel, arg, value, "<=", bound_text, bound);
}

inline void require_eq(const char* kernel, const char* arg, int value, const char* bound_text,
                       int bound) {
  if (value != bound) [[unlikely]]
    bad_argument(kernel, arg, value, "==", bound_text, bound);
}

inline void check_info(const char* kernel, const char* routine, int info) {
  if (info != 0) [[unlikely]]
    lapack_rejected(kernel, routine, info);
}

}  // namespace tessera::kernels::detail
