#pragma once
// What Tessera's command-line tools (tessera_qr, tessera_qr_update, tessera_batched) share: argument
// validators whose messages state the bound plainly, and one mapping from how a run ended to the
// exit code:
//   0 done (and with --check, the checks passed)   1 a check or the run failed
//   2 bad arguments (the message names the argument)   3 not enough host, pinned or device memory
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>

#include "tessera/sched/memory.hpp"

namespace tessera::tools {

// CLI11's range messages read "Value 0 not in range 0.000000 to 1.79e308": say it plainly.
inline CLI::Validator at_least(long long bound) {
  return CLI::Validator(
      [bound](std::string& s) -> std::string {
        try {
          std::size_t used = 0;
          const long long v = std::stoll(s, &used);
          if (used != s.size()) return "not an integer: " + s;
          if (v < bound) return s + " is too small: must be at least " + std::to_string(bound);
        } catch (const std::exception&) {
          return "not an integer in range: " + s;
        }
        return {};
      },
      ">= " + std::to_string(bound));
}

inline CLI::Validator positive_real() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        try {
          std::size_t used = 0;
          const double v = std::stod(s, &used);
          if (used != s.size()) return "not a number: " + s;
          if (!(v > 0) || v == std::numeric_limits<double>::infinity()) return s + ": must be positive and finite";
        } catch (const std::exception&) {
          return "not a number in range: " + s;
        }
        return {};
      },
      "> 0");
}

// The exit code of a command line CLI11 refused (0 for --help).
inline int parse_failed(const CLI::App& app, const CLI::ParseError& e) { return app.exit(e) == 0 ? 0 : 2; }

// Runs body (which returns 0 or 1) and turns what it throws into the exit code, with one line on
// stderr that starts with the tool's name.
template <class Body>
int run_with_exit_codes(const char* tool, Body&& body) {
  try {
    return body();
  } catch (const tessera::out_of_memory& e) {  // host, pinned or device: checked, or refused by CUDA
    std::fprintf(stderr, "%s: error: %s\n", tool, e.what());
    return 3;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: error: out of host memory (an allocation failed)\n", tool);
    return 3;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s: error: %s\n", tool, e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: failed: %s\n", tool, e.what());
    return 1;
  }
}

}  // namespace tessera::tools
