#pragma once
// Shared helpers for the tests: a fresh random seed per run, logged so a failure can be replayed
// with TESSERA_SEED=<seed>.
#include <sys/wait.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::testing {

inline std::uint64_t seed() {
  static const std::uint64_t s = []() -> std::uint64_t {
    if (const char* env = std::getenv("TESSERA_SEED")) return std::strtoull(env, nullptr, 10);
    std::random_device rd;
    return (std::uint64_t(rd()) << 32) ^ rd();
  }();
  static const bool logged = [] {
    std::printf("[tessera] TESSERA_SEED=%llu\n", static_cast<unsigned long long>(s));
    return true;
  }();
  (void)logged;
  return s;
}

// A random column-major matrix with entries in [-1, 1]: cols columns of ld elements (the rows
// beyond the matrix's m are padding). Different salts give different matrices for one seed.
template <class T>
std::vector<T> random_matrix(int m, int cols, int ld, std::uint64_t salt) {
  std::mt19937_64 gen(seed() * 131 + salt);
  std::uniform_real_distribution<T> dist(T(-1), T(1));
  std::vector<T> a(std::size_t(ld) * std::size_t(cols));
  for (T& x : a) x = dist(gen);
  (void)m;
  return a;
}

// The message of the std::invalid_argument f throws, or a marker that it threw none.
inline std::string invalid_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no std::invalid_argument)";
}

// A tool's run (tests of the command-line tools): its exit status and what it printed, stdout and
// stderr together.
struct tool_outcome {
  int code = -1;
  std::string out;
};

inline tool_outcome run_tool(const std::string& exe, const std::string& args) {
  const std::string cmd = exe + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) throw std::runtime_error("cannot run " + cmd);
  tool_outcome o;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe)) o.out += buf;
  const int status = pclose(pipe);
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return o;
}

// " --seed S": the tools' test matrices follow the logged seed.
inline std::string seed_arg() { return " --seed " + std::to_string(seed() % 1000000); }

// GPU tests: without the device they stop here, as ctest's "skipped" (exit 77).
inline bool skip_unless(bool available, const char* why = "no CUDA device") {
  if (!available) {
    std::printf("skipped: %s\n", why);
    std::exit(77);
  }
  return true;
}

}  // namespace tessera::testing
