#pragma once
// Filling and copying the large benches' inputs on every core: an n = 65536 matrix is 34 GB in
// double, which one thread takes tens of seconds to generate or copy.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace tessera::bench {

// f(first, last) over [0, count) cut into one range per core.
template <class F>
void parallel_ranges(std::size_t count, F f) {
  const std::size_t threads = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t per = (count + threads - 1) / threads;
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads && t * per < count; ++t)
    pool.emplace_back([&f, t, per, count] { f(t * per, std::min(count, (t + 1) * per)); });
  for (auto& th : pool) th.join();
}

// Entry i of a uniform [-1, 1) sequence for this seed, the same whichever thread computes it
// (splitmix64 of seed and i).
inline double uniform_at(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return double(z >> 11) * 0x1.0p-52 - 1.0;
}

}  // namespace tessera::bench
