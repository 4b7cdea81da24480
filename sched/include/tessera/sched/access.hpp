#pragma once
// Access modes of a task on a handle, and the hazards the runtime infers from them.
#include <cstdint>

namespace tessera {

// How a task touches a datum. The runtime orders tasks by these alone.
enum class access : std::uint8_t {
  read,        // reads the datum: waits for the last writer (RAW)
  write,       // overwrites it: waits for the last writer (WAW) and every reader since (WAR)
  read_write,  // both
  accumulate,  // commutative update (QUARK ACCUMULATOR, OpenMP mutexinoutset): writers of one
               // group run in any order, one at a time; the group orders against all else
};

// Where a task's body runs. GPU tasks enqueue work on a stream the runtime hands them.
enum class device : std::uint8_t { cpu, gpu };

// The kind of a dependency edge, as traces and DOT files show it.
enum class hazard : std::uint8_t { raw, war, waw, accumulate };

constexpr const char* to_string(hazard h) noexcept {
  switch (h) {
    case hazard::raw: return "RAW";
    case hazard::war: return "WAR";
    case hazard::waw: return "WAW";
    case hazard::accumulate: return "ACC";
  }
  return "?";
}

}  // namespace tessera
