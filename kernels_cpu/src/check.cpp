#include <stdexcept>
#include <string>
#include <tessera/kernels_cpu/check.hpp>

namespace tessera::check {

void bad_argument(const char* function, const char* arg, long long value, const char* relation,
                  const char* bound_text, long long bound) {
  const std::string number = std::to_string(bound);
  std::string msg = std::string(function) + ": " + arg + " = " + std::to_string(value) +
                    ": must be " + relation + " " + (bound_text ? bound_text : number.c_str());
  if (bound_text && number != bound_text) msg += " (= " + number + ")";
  throw std::invalid_argument(msg);
}

void null_argument(const char* function, const char* arg) {
  throw std::invalid_argument(std::string(function) + ": " + arg + " is null");
}

void invalid(const char* function, const std::string& what) {
  throw std::invalid_argument(std::string(function) + ": " + what);
}

void lapack_rejected(const char* function, const char* routine, int info) {
  throw std::logic_error(std::string(function) + ": LAPACK " + routine + " returned info = " +
                         std::to_string(info) + " (an argument check is missing here)");
}

void not_finite(const char* function, const char* name, long long row, long long col,
                bool is_nan) {
  throw std::invalid_argument(std::string(function) + ": " + name + "(" + std::to_string(row) +
                              ", " + std::to_string(col) + ") is " + (is_nan ? "NaN" : "Inf") +
                              ": the input matrix must be finite");
}

}  // namespace tessera::check
