#pragma once
// Filling the tools' and benches' inputs on every core with numbers that do not depend on which
// thread computes them: a batch of 2^20 matrices or an n = 65536 matrix (34 GB in double) takes one
// thread tens of seconds.
#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace tessera::tools {

// f(first, last) over [0, count) cut into one range per thread, on `threads` threads.
template <class F>
void parallel_ranges(unsigned threads, long long count, F f) {
  threads = std::max(1u, threads);
  const long long per = (count + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    const long long first = t * per, last = std::min(count, first + per);
    if (first < last) pool.emplace_back([&f, first, last] { f(first, last); });
  }
  for (auto& th : pool) th.join();
}

// Entry i of a uniform [-1, 1) sequence for this seed (splitmix64 of seed and i).
inline double uniform_at(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return double(z >> 11) * 0x1.0p-52 - 1.0;
}

}  // namespace tessera::tools
