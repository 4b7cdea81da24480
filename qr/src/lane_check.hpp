#pragma once
// A checker of the update backends' lane order (TESSERA_LANE_CHECK=1 in the environment when a
// backend is made): every call names the memory it reads and writes, dep(from, to) orders lanes,
// and an access that conflicts with another lane's earlier access (either of them a write, the
// regions overlapping) without a chain of deps between them throws std::logic_error naming both.
// On the CPUs the lanes run in order, so this is how a missing dep shows up there; on the GPU it
// catches one before the streams race. Vector clocks: lane l has seen lane k's first clock[l][k]
// accesses.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::qr::detail {

// Column-major block: m rows, n columns, leading dimension ld, elements of esize bytes.
struct lane_region {
  const void* p = nullptr;
  std::size_t esize = 0;
  long long m = 0, n = 0, ld = 0;
  bool empty() const noexcept { return !p || m <= 0 || n <= 0; }
};
template <class T>
lane_region block(const T* p, long long m, long long n, long long ld) {
  return {p, sizeof(T), m, n, ld};
}
template <class T>
lane_region span(const T* p, std::size_t count) {
  return {p, sizeof(T), static_cast<long long>(count), 1, static_cast<long long>(count)};
}

inline bool overlap(const lane_region& a, const lane_region& b) {
  if (a.empty() || b.empty()) return false;
  const auto pa = reinterpret_cast<std::uintptr_t>(a.p), pb = reinterpret_cast<std::uintptr_t>(b.p);
  const auto end = [](const lane_region& r, std::uintptr_t p) {
    return p + static_cast<std::uintptr_t>(((r.n - 1) * r.ld + r.m) * static_cast<long long>(r.esize));
  };
  if (pa >= end(b, pb) || pb >= end(a, pa)) return false;
  // Blocks of one matrix (same ld and element size, rows within a column): rectangles.
  if (a.esize == b.esize && a.ld == b.ld && a.m <= a.ld && b.m <= b.ld) {
    const long long d = (static_cast<long long>(pb) - static_cast<long long>(pa));
    if (d % static_cast<long long>(a.esize) == 0) {
      const long long e = d / static_cast<long long>(a.esize);
      long long j0 = e / a.ld, i0 = e % a.ld;
      if (i0 < 0) i0 += a.ld, --j0;
      if (i0 + b.m <= a.ld)  // b's rows do not wrap into the next column
        return i0 < a.m && 0 < i0 + b.m && j0 < a.n && 0 < j0 + b.n;
    }
  }
  return true;
}

class lane_checker {
 public:
  static constexpr int nlanes = 3;
  // One when TESSERA_LANE_CHECK is set to anything but 0.
  static std::unique_ptr<lane_checker> from_env() {
    const char* e = std::getenv("TESSERA_LANE_CHECK");
    if (!e || !*e || (e[0] == '0' && !e[1])) return nullptr;
    return std::make_unique<lane_checker>();
  }
  void access(int lane, std::initializer_list<lane_region> reads, std::initializer_list<lane_region> writes,
              const char* what) {
    const std::lock_guard<std::mutex> lock(_mu);  // the CPUs' split pieces call in parallel
    const std::uint64_t stamp = ++_clock[lane][lane];
    const auto check = [&](const lane_region& r, bool write) {
      if (r.empty()) return;
      for (const auto& a : _log)
        if (a.lane != lane && (write || a.write) && a.stamp > _clock[lane][a.lane] && overlap(a.r, r))
          throw std::logic_error(std::string("tessera::qr::updatable: lane race: ") + what + " on lane " +
                                 std::to_string(lane) + (write ? " writes" : " reads") + " what " + a.what +
                                 " on lane " + std::to_string(a.lane) + (a.write ? " wrote" : " read") +
                                 ", with no dep between them");
    };
    for (const auto& r : reads) check(r, false);
    for (const auto& r : writes) check(r, true);
    for (const auto& r : reads)
      if (!r.empty()) _log.push_back({r, lane, stamp, false, what});
    for (const auto& r : writes)
      if (!r.empty()) _log.push_back({r, lane, stamp, true, what});
    if (_log.size() > 4096) prune();
  }
  void dep(int from, int to) {
    const std::lock_guard<std::mutex> lock(_mu);
    for (int k = 0; k < nlanes; ++k) _clock[to][k] = std::max(_clock[to][k], _clock[from][k]);
  }
  // Everything enqueued is done.
  void sync() {
    const std::lock_guard<std::mutex> lock(_mu);
    for (int l = 0; l < nlanes; ++l)
      for (int k = 0; k < nlanes; ++k) _clock[l][k] = _clock[k][k];
    _log.clear();
  }
  // Memory freed now (a host buffer that grew): what was logged there is gone.
  void forget(const void* p, std::size_t bytes) {
    if (!p || bytes == 0) return;
    const std::lock_guard<std::mutex> lock(_mu);
    const lane_region gone{p, 1, static_cast<long long>(bytes), 1, static_cast<long long>(bytes)};
    std::erase_if(_log, [&](const entry& a) { return overlap(a.r, gone); });
  }

 private:
  struct entry {
    lane_region r;
    int lane;
    std::uint64_t stamp;
    bool write;
    const char* what;
  };
  // Drops what every lane has seen.
  void prune() {
    std::erase_if(_log, [&](const entry& a) {
      for (int l = 0; l < nlanes; ++l)
        if (a.stamp > _clock[l][a.lane]) return false;
      return true;
    });
  }
  std::array<std::array<std::uint64_t, nlanes>, nlanes> _clock{};
  std::vector<entry> _log;
  std::mutex _mu;
};

// What both update backends hold: the checker when TESSERA_LANE_CHECK is set, and note(), which
// each call makes with the blocks it reads and writes.
struct lane_checked {
  std::unique_ptr<lane_checker> chk = lane_checker::from_env();
  void note(int lane, std::initializer_list<lane_region> reads, std::initializer_list<lane_region> writes,
            const char* what) {
    if (chk) chk->access(lane, reads, writes, what);
  }
};

}  // namespace tessera::qr::detail
