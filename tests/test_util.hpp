#pragma once
// Shared helpers for the tests: a fresh random seed per run, logged so a failure can be replayed
// with TESSERA_SEED=<seed>.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>

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

}  // namespace tessera::testing
