#include "check.hpp"

#include <stdexcept>
#include <string>

namespace tessera::kernels::detail {

void bad_argument(const char* kernel, const char* arg, int value, const char* relation,
                  const char* bound_text, int bound) {
  std::string msg = std::string("tessera::kernels::") + kernel + ": " + arg + " = " +
                    std::to_string(value) + " must be " + relation + " " + bound_text;
  if (std::to_string(bound) != bound_text) msg += " (= " + std::to_string(bound) + ")";
  throw std::invalid_argument(msg);
}

void lapack_rejected(const char* kernel, const char* routine, int info) {
  throw std::logic_error(std::string("tessera::kernels::") + kernel + ": LAPACK " + routine +
                         " returned info = " + std::to_string(info) +
                         " (an argument check is missing here)");
}

}  // namespace tessera::kernels::detail
