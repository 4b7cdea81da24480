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

// What both update backends hold: the checker when TESSERA_LANE_CHECK is set, note(), which each
// call makes with the blocks it reads and writes, and the footprints of the calls both backends
// have, named after them (one definition for both; nothing is built when the check is off).
struct lane_checked {
  std::unique_ptr<lane_checker> chk = lane_checker::from_env();
  void note(int lane, std::initializer_list<lane_region> reads, std::initializer_list<lane_region> writes,
            const char* what) {
    if (chk) chk->access(lane, reads, writes, what);
  }
  void note_dep(int from, int to) {
    if (chk) chk->dep(from, to);
  }
  void note_sync() {
    if (chk) chk->sync();
  }

  template <class T>
  void note_gemm(int lane, char ta, char tb, int m, int n, int k, const T* A, int lda, const T* B, int ldb,
                 bool reads_c, const T* C, int ldc) {
    if (!chk) return;
    note(lane,
         {ta == 'T' ? block(A, k, m, lda) : block(A, m, k, lda), tb == 'T' ? block(B, n, k, ldb) : block(B, k, n, ldb),
          reads_c ? block(C, m, n, ldc) : lane_region{}},
         {block(C, m, n, ldc)}, "gemm");
  }
  template <class T>
  void note_trmm(int lane, char side, int m, int n, const T* A, int lda, const T* B, int ldb) {
    if (!chk) return;
    const int ka = side == 'L' ? m : n;
    note(lane, {block(A, ka, ka, lda), block(B, m, n, ldb)}, {block(B, m, n, ldb)}, "trmm");
  }
  template <class T>
  void note_solve_upper(int lane, int n, int nrhs, const T* R, int ldr, const T* B, int ldb) {
    if (chk) note(lane, {block(R, n, n, ldr), block(B, n, nrhs, ldb)}, {block(B, n, nrhs, ldb)}, "solve_upper");
  }
  // B := op(A) (transpose: B is n x m), or B -= A (reads_b).
  template <class T>
  void note_copy(int lane, int m, int n, const T* A, int lda, const T* B, int ldb, const char* what = "copy",
                 bool transpose = false, bool reads_b = false) {
    if (!chk) return;
    const lane_region b = transpose ? block(B, n, m, ldb) : block(B, m, n, ldb);
    note(lane, {block(A, m, n, lda), reads_b ? b : lane_region{}}, {b}, what);
  }
  template <class T>
  void note_zero(int lane, int m, int n, const T* A, int lda) {
    if (chk) note(lane, {}, {block(A, m, n, lda)}, "zero");
  }
  template <class T>
  void note_shift_upper(int lane, int s, int dr, int dc, const T* A, int lda) {
    if (chk) note(lane, {block(A, s + dr, s + dc, lda)}, {block(A, s, s, lda)}, "shift_upper");
  }
  template <class T>
  void note_triu_copy(int lane, int nb, int below, const T* P, int ldp, const T* R, int ldr) {
    if (chk) note(lane, {block(P, nb, nb, ldp)}, {block(R, nb + below, nb, ldr)}, "triu_copy");
  }
  template <class T>
  void note_split_panel(int lane, int nb, int below, const T* A, int lda, const T* V, int ldv) {
    if (chk)
      note(lane, {block(A, nb + below, nb, lda)}, {block(A, nb + below, nb, lda), block(V, nb + below, nb, ldv)},
           "split_panel");
  }
  template <class T>
  void note_panel_qr(int lane, int m, int n, const T* A, int lda, const T* Tm, int ldt, const T* work,
                     std::size_t lwork) {
    if (chk)
      note(lane, {block(A, m, n, lda)}, {block(A, m, n, lda), block(Tm, n, n, ldt), span(work, lwork)}, "panel_qr");
  }
  // A plan's sweeps made on X (L x p) into cs, and its blocks made from cs into S.
  template <class Plan, class T>
  void note_givens_generate(int lane, const Plan& plan, const T* X, int ldx, const T* cs) {
    if (chk)
      note(lane, {block(X, plan.L, plan.p, ldx)}, {block(X, plan.L, plan.p, ldx), span(cs, plan.cs_size())},
           "givens_generate");
  }
  template <class Plan, class T>
  void note_givens_blocks(int lane, const Plan& plan, const T* cs, const T* S) {
    if (chk) note(lane, {span(cs, plan.cs_size())}, {span(S, plan.blocks_size())}, "givens_blocks");
  }
  // H (rows x cols) made triangular, its min(cols, rows - 1) rotations into cs.
  template <class T>
  void note_hessenberg(int lane, int rows, int cols, const T* H, int ldh, const T* cs) {
    if (!chk) return;
    const std::size_t k = static_cast<std::size_t>(std::max(0, std::min(cols, rows - 1)));
    note(lane, {block(H, rows, cols, ldh)}, {block(H, rows, cols, ldh), span(cs, 2 * k)}, "hessenberg_rotations");
  }
  // k rotations (or a sweep's, cs[2 .. 2 k + 1]) applied to C's k + 1 rows (left) or columns.
  template <class T>
  void note_rotations(int lane, char side, bool sweep, int k, int other, const T* cs, const T* C, int ldc) {
    if (!chk) return;
    const lane_region c = side == 'L' ? block(C, k + 1, other, ldc) : block(C, other, k + 1, ldc);
    note(lane, {span(cs, 2 * std::size_t(k) + (sweep ? 2 : 0)), c}, {c}, sweep ? "givens sweep" : "rotations");
  }
};

}  // namespace tessera::qr::detail
