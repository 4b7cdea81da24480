#pragma once
// The cases of the batched tests, shared by the CPU path (test_batched_cpu.cpp) and the GPU
// (test_gpu_batched.cpp): each runs an operation through tessera::batched on a batch that a
// `place` puts where it must be (host memory, or device memory with its array of pointers there
// too), and compares with LAPACK on each matrix.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "tessera/kernels_cpu/blas_threads.hpp"

#include "tessera/batched/batched.hpp"
#include "tessera/batched/check.hpp"
#include "tessera/kernels_cpu/blas.hpp"

namespace tessera::testing::batched {

namespace bt = tessera::batched;

// Where a test's batch lives: host memory (copy functions are identity) or device memory.
struct place {
  bt::memory where = bt::memory::host;
  bt::options opts;
  std::function<void*(std::size_t)> alloc;  // device: cudaMalloc; host: unused
  std::function<void(void*)> release;
  std::function<void(void*, const void*, std::size_t)> upload, download;
  std::string name;
};

// strided: a gap between matrices (stride > ld * cols) and below each column (ld > rows); packed:
// ld = rows, stride = rows * cols, the layout most batches come in (and the benchmark's).
enum class layout { strided, pointers, packed };
inline const char* name(layout l) {
  return l == layout::strided ? "strided" : l == layout::pointers ? "pointers" : "packed";
}

// A batch's memory in the place: elements (layout above) and, for the pointer layout, the array of
// pointers, in reversed order so that the batch's order differs from memory order.
template <class T>
struct placed {
  const place& p;
  int rows, cols, ld;
  long long count, stride;
  layout lay;
  void* mem = nullptr;
  void* ptr_mem = nullptr;
  std::vector<T> host;  // host place: the elements themselves
  std::vector<T*> host_ptrs;
  placed(const place& pl, int r, int c, long long n, layout l)
      : p(pl), rows(r), cols(c), ld(l == layout::packed ? r : r + 1), count(n),
        stride(l == layout::packed ? static_cast<long long>(r) * c : static_cast<long long>(r + 1) * c + 3),
        lay(l) {
    const std::size_t elems = static_cast<std::size_t>(std::max(1LL, count * stride));
    if (p.where == bt::memory::host) {
      host.assign(elems, T(-99));
    } else {
      mem = p.alloc(elems * sizeof(T));
      std::vector<T> fill(elems, T(-99));
      p.upload(mem, fill.data(), elems * sizeof(T));
    }
    T* base = p.where == bt::memory::host ? host.data() : static_cast<T*>(mem);
    host_ptrs.resize(static_cast<std::size_t>(count));
    for (long long b = 0; b < count; ++b) host_ptrs[std::size_t(b)] = base + (count - 1 - b) * stride;
    if (p.where == bt::memory::device && count > 0) {
      ptr_mem = p.alloc(host_ptrs.size() * sizeof(T*));
      p.upload(ptr_mem, host_ptrs.data(), host_ptrs.size() * sizeof(T*));
    }
  }
  ~placed() {
    if (mem) p.release(mem);
    if (ptr_mem) p.release(ptr_mem);
  }
  placed(const placed&) = delete;
  placed& operator=(const placed&) = delete;
  T* base() { return p.where == bt::memory::host ? host.data() : static_cast<T*>(mem); }
  long long offset(long long b) const { return lay == layout::pointers ? (count - 1 - b) * stride : b * stride; }
  bt::batch<T> batch() {
    if (lay == layout::pointers) {
      T* const* ptrs = p.where == bt::memory::host ? host_ptrs.data() : static_cast<T* const*>(ptr_mem);
      return bt::pointer_array<T>(ptrs, rows, cols, ld, count, p.where);
    }
    return bt::strided<T>(base(), rows, cols, ld, stride, count, p.where);
  }
  // Packed matrices (rows x cols each, ld = rows) in and out.
  void put(const std::vector<T>& packed) {
    std::vector<T> all(static_cast<std::size_t>(std::max(1LL, count * stride)), T(-99));
    if (p.where == bt::memory::device) p.download(all.data(), mem, all.size() * sizeof(T));
    else all = host;
    for (long long b = 0; b < count; ++b)
      for (int j = 0; j < cols; ++j)
        for (int i = 0; i < rows; ++i)
          all[std::size_t(offset(b) + j * ld + i)] = packed[std::size_t((b * cols + j) * rows + i)];
    if (p.where == bt::memory::device) p.upload(mem, all.data(), all.size() * sizeof(T));
    else host = all;
  }
  std::vector<T> get() const {
    std::vector<T> all(static_cast<std::size_t>(std::max(1LL, count * stride)));
    if (p.where == bt::memory::device) p.download(all.data(), mem, all.size() * sizeof(T));
    else all = host;
    std::vector<T> packed(static_cast<std::size_t>(count * rows * cols));
    for (long long b = 0; b < count; ++b)
      for (int j = 0; j < cols; ++j)
        for (int i = 0; i < rows; ++i)
          packed[std::size_t((b * cols + j) * rows + i)] = all[std::size_t(offset(b) + j * ld + i)];
    // The padding between rows and matrices must be untouched.
    long long touched = 0;
    for (long long b = 0; b < count; ++b)
      for (int j = 0; j < cols; ++j)
        for (int i = rows; i < ld; ++i) touched += all[std::size_t(offset(b) + j * ld + i)] != T(-99);
    CHECK_MESSAGE(touched == 0, touched, " padding entries were written");
    return packed;
  }
};

// Integer arrays (ipiv, info) in the place.
struct ints {
  const place& p;
  std::vector<int> host;
  void* mem = nullptr;
  ints(const place& pl, std::size_t n) : p(pl), host(std::max<std::size_t>(n, 1), -7) {
    if (p.where == bt::memory::device) {
      mem = p.alloc(host.size() * sizeof(int));
      p.upload(mem, host.data(), host.size() * sizeof(int));
    }
  }
  ~ints() {
    if (mem) p.release(mem);
  }
  ints(const ints&) = delete;
  ints& operator=(const ints&) = delete;
  int* data() { return mem ? static_cast<int*>(mem) : host.data(); }
  std::vector<int> get() {
    if (mem) p.download(host.data(), mem, host.size() * sizeof(int));
    return host;
  }
  void put(const std::vector<int>& v) {
    host = v;
    if (mem) p.upload(mem, host.data(), host.size() * sizeof(int));
  }
};

template <class T>
std::vector<T> random_batch(int rows, int cols, long long count, std::uint64_t salt) {
  std::mt19937_64 g(tessera::testing::seed() * 7919 + salt);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> v(static_cast<std::size_t>(count * rows * cols));
  for (T& x : v) x = T(u(g));
  return v;
}

// LAPACK's GETRF on each packed matrix: factors, pivots, info. On one BLAS thread, as the CPU path
// runs it: with two, OpenBLAS's GETRF rounds in another order and a near tie in single precision
// may pick the other pivot (seen once in CI at n = 23).
template <class T>
void lapack_getrf(int n, long long count, std::vector<T>& a, std::vector<int>& ipiv, std::vector<int>& info) {
  const tessera::blas::blas_threads one(1);
  ipiv.assign(std::size_t(count * n), 0);
  info.assign(std::size_t(count), 0);
  for (long long b = 0; b < count; ++b)
    info[std::size_t(b)] = tessera::blas::getrf(n, n, a.data() + b * n * n, n, ipiv.data() + b * n);
}

// Pivots equal LAPACK's. In double they must be identical; in single precision a near tie may go
// the other way under a different order of rounding (the GPU's right-looking update against
// OpenBLAS's recursive GETRF), so a few matrices (at most 1 in 50, each still passing the
// residual) may differ; so may a few in double with near_ties (matrices in the subnormal range).
// Returns the number that differ.
template <class T>
long long compare_pivots(int n, long long count, const std::vector<int>& got, const std::vector<int>& want,
                         bool exact, bool near_ties = false) {
  long long differ = 0;
  for (long long b = 0; b < count; ++b)
    if (!std::equal(got.begin() + b * n, got.begin() + (b + 1) * n, want.begin() + b * n)) ++differ;
  if (!near_ties && (exact || std::is_same_v<T, double>)) {
    CHECK_MESSAGE(differ == 0, n, ": ", differ, " of ", count, " matrices have other pivots than LAPACK's");
  } else {
    CHECK_MESSAGE(differ * 50 <= std::max(count, 50LL), n, ": ", differ, " of ", count,
                  " matrices have other pivots than LAPACK's");
  }
  return differ;
}

// GETRF of a random batch: pivots, info and the residual against LAPACK.
template <class T>
void lu_case(const place& p, layout lay, int n, long long count, bool exact_pivots, T scale = T(1)) {
  CAPTURE(n);
  CAPTURE(count);
  CAPTURE(name(lay));
  CAPTURE(scale);
  auto a0 = random_batch<T>(n, n, count, 1000u + std::uint64_t(n));
  for (T& v : a0) v *= scale;
  placed<T> a(p, n, n, count, lay);
  a.put(a0);
  ints ipiv(p, std::size_t(count * n)), info(p, std::size_t(count));
  const bt::report r = bt::lu(a.batch(), ipiv.data(), info.data(), p.opts);
  const auto lu = a.get();
  const auto piv = ipiv.get(), inf = info.get();
  // A scaled batch's reference is LAPACK on the same matrices scaled back by the power of two
  // (exactly): OpenBLAS's GETRF multiplies by 1 / pivot even below the safe minimum. Rounding in
  // the subnormal range may then flip a near tie, as in single precision.
  auto ref = a0;
  if (scale != T(1))
    for (T& v : ref) v /= scale;
  std::vector<int> rpiv, rinf;
  lapack_getrf(n, count, ref, rpiv, rinf);
  compare_pivots<T>(n, count, piv, rpiv, exact_pivots, scale != T(1));
  double worst = 0;
  for (long long b = 0; b < count; ++b) {
    REQUIRE(inf[std::size_t(b)] == rinf[std::size_t(b)]);
    worst = std::max(worst, bt::lu_residual(n, a0.data() + b * n * n, n, lu.data() + b * n * n, n,
                                            piv.data() + b * n));
  }
  CHECK_MESSAGE(worst < bt::threshold, "||PA-LU|| ratio ", worst);
  CHECK(r.singular == 0);
}

// The inverse (out of place, or in place), against the residual and LAPACK's inverse.
template <class T>
void inverse_case(const place& p, layout lay, int n, long long count, bool in_place, T scale = T(1)) {
  CAPTURE(n);
  CAPTURE(count);
  CAPTURE(name(lay));
  CAPTURE(in_place);
  CAPTURE(scale);
  auto a0 = random_batch<T>(n, n, count, 2000u + std::uint64_t(n));
  for (T& v : a0) v *= scale;
  placed<T> a(p, n, n, count, lay);
  a.put(a0);
  ints info(p, std::size_t(count));
  std::vector<T> x;
  if (in_place) {
    bt::inverse(a.batch(), a.batch(), info.data(), p.opts);
    x = a.get();
  } else {
    placed<T> out(p, n, n, count, lay);
    bt::inverse(a.batch(), out.batch(), info.data(), p.opts);
    x = out.get();
    CHECK(a.get() == a0);  // out of place: A untouched
  }
  const auto inf = info.get();
  double worst = 0;
  for (long long b = 0; b < count; ++b) {
    REQUIRE(inf[std::size_t(b)] == 0);
    worst = std::max(worst, bt::inverse_residual(n, a0.data() + b * n * n, n, x.data() + b * n * n, n));
  }
  CHECK_MESSAGE(worst < bt::threshold, "||I-A*inv(A)|| ratio ", worst);
}

// GESV (fused) and GETRS on its factors, against the residual, LAPACK's GESV solution and pivots.
template <class T>
void solve_case(const place& p, layout lay, int n, int nrhs, long long count, bool exact_pivots) {
  CAPTURE(n);
  CAPTURE(nrhs);
  CAPTURE(count);
  CAPTURE(name(lay));
  const auto a0 = random_batch<T>(n, n, count, 3000u + std::uint64_t(n));
  const auto b0 = random_batch<T>(n, nrhs, count, 4000u + std::uint64_t(n));
  placed<T> a(p, n, n, count, lay), b(p, n, nrhs, count, lay);
  a.put(a0);
  b.put(b0);
  ints ipiv(p, std::size_t(count * n)), info(p, std::size_t(count));
  bt::gesv(a.batch(), ipiv.data(), b.batch(), info.data(), p.opts);
  const auto x = b.get();
  const auto piv = ipiv.get(), inf = info.get();
  // LAPACK GESV on each matrix, on one BLAS thread (see lapack_getrf).
  const tessera::blas::blas_threads one(1);
  auto ra = a0, rb = b0;
  std::vector<int> rpiv(std::size_t(count * n));
  for (long long i = 0; i < count; ++i)
    REQUIRE(tessera::blas::gesv(n, nrhs, ra.data() + i * n * n, n, rpiv.data() + i * n, rb.data() + i * n * nrhs,
                                n) == 0);
  compare_pivots<T>(n, count, piv, rpiv, exact_pivots);
  // The two solutions agree to a small multiple of n eps cond_1(A) (both backward stable): the
  // ratio of their difference to that, LAPACK's inverse from GESV's factors giving cond_1(A). A
  // random matrix now and then has a condition number of 1e6 and more.
  double worst = 0, ratio = 0;
  std::vector<T> inv(std::size_t(n) * std::size_t(n)), work(std::size_t(64) * std::size_t(n));
  for (long long i = 0; i < count; ++i) {
    REQUIRE(inf[std::size_t(i)] == 0);
    worst = std::max(worst, bt::solve_residual(n, nrhs, a0.data() + i * n * n, n, x.data() + i * n * nrhs, n,
                                               b0.data() + i * n * nrhs, n));
    std::copy_n(ra.data() + i * n * n, n * n, inv.begin());
    REQUIRE(tessera::blas::getri(n, inv.data(), n, rpiv.data() + i * n, work.data(), 64 * n) == 0);
    auto norm1 = [n](const T* m) {
      double w = 0;
      for (int j = 0; j < n; ++j) {
        double c = 0;
        for (int r = 0; r < n; ++r) c += std::fabs(double(m[r + std::size_t(j) * n]));
        w = std::max(w, c);
      }
      return w;
    };
    const double cond = norm1(a0.data() + i * n * n) * norm1(inv.data());
    double diff = 0;
    for (std::size_t k = 0; k < std::size_t(n * nrhs); ++k)
      diff = std::max(diff, std::fabs(double(x[std::size_t(i * n * nrhs) + k] - rb[std::size_t(i * n * nrhs) + k])) /
                                (1 + std::fabs(double(rb[std::size_t(i * n * nrhs) + k]))));
    ratio = std::max(ratio, diff / (double(n) * double(std::numeric_limits<T>::epsilon()) * cond));
  }
  CHECK_MESSAGE(worst < bt::threshold, "||B-AX|| ratio ", worst);
  CHECK_MESSAGE(ratio < bt::threshold, "difference to LAPACK GESV over n eps cond_1(A): ", ratio);
  // GETRS on the factors GESV left, with a fresh B: the same solutions.
  placed<T> b2(p, n, nrhs, count, lay);
  b2.put(b0);
  bt::getrs(a.batch(), ipiv.data(), b2.batch(), p.opts);
  const auto x2 = b2.get();
  double worst2 = 0;
  for (long long i = 0; i < count; ++i)
    worst2 = std::max(worst2, bt::solve_residual(n, nrhs, a0.data() + i * n * n, n, x2.data() + i * n * nrhs, n,
                                                 b0.data() + i * n * nrhs, n));
  CHECK_MESSAGE(worst2 < bt::threshold, "GETRS ||B-AX|| ratio ", worst2);
}

// A last pivot below the safe minimum, so that 1 / U(n,n) overflows: the substitution must divide
// (LAPACK's TRSM), or scale the reciprocal, never multiply by an infinite one. A's last column is
// scaled by 2^-1040 (float: 2^-130), B = A X with X of order one; X's last entry then grows to about
// eps / 2^-1040 of |B|, which is finite. GESV and GETRS on its factors: info 0, every entry finite,
// residual below the threshold.
template <class T>
void solve_tiny_pivot_case(const place& p, int n, int nrhs, long long count) {
  CAPTURE(n);
  CAPTURE(nrhs);
  const T s = sizeof(T) == sizeof(float) ? T(0x1p-130f) : T(0x1p-1040);
  auto a0 = random_batch<T>(n, n, count, 8000u + std::uint64_t(n));
  for (long long b = 0; b < count; ++b)
    for (int i = 0; i < n; ++i) a0[std::size_t(b * n * n + i + (n - 1) * n)] *= s;
  const auto x0 = random_batch<T>(n, nrhs, count, 9000u + std::uint64_t(n));
  std::vector<T> b0(x0.size());
  for (long long b = 0; b < count; ++b)
    for (int j = 0; j < nrhs; ++j)
      for (int i = 0; i < n; ++i) {
        double v = 0;
        for (int k = 0; k < n; ++k)
          v += double(a0[std::size_t(b * n * n + i + k * n)]) * double(x0[std::size_t(b * n * nrhs + k + j * n)]);
        b0[std::size_t(b * n * nrhs + i + j * n)] = T(v);
      }
  placed<T> a(p, n, n, count, layout::strided), x(p, n, nrhs, count, layout::strided),
      x2(p, n, nrhs, count, layout::strided);
  a.put(a0);
  x.put(b0);
  x2.put(b0);
  ints ipiv(p, std::size_t(count * n)), info(p, std::size_t(count));
  bt::gesv(a.batch(), ipiv.data(), x.batch(), info.data(), p.opts);
  bt::getrs(a.batch(), ipiv.data(), x2.batch(), p.opts);
  const auto inf = info.get();
  for (long long b = 0; b < count; ++b) REQUIRE(inf[std::size_t(b)] == 0);
  for (const auto& sol : {x.get(), x2.get()}) {
    double worst = 0;
    for (long long b = 0; b < count; ++b) {
      for (int e = 0; e < n * nrhs; ++e) REQUIRE(std::isfinite(double(sol[std::size_t(b * n * nrhs + e)])));
      worst = std::max(worst, bt::solve_residual(n, nrhs, a0.data() + b * n * n, n, sol.data() + b * n * nrhs, n,
                                                 b0.data() + b * n * nrhs, n));
    }
    CHECK_MESSAGE(worst < bt::threshold, "||B-AX|| ratio ", worst);
  }
}

// Singular matrices: exact zero columns and exactly rank-1 ones (powers of two, so elimination is
// exact and the Schur complement exactly zero), among regular ones; info equal to LAPACK's,
// the others unaffected. Inverse: the same info. GESV: B unchanged where singular.
template <class T>
void singular_case(const place& p, int n) {
  CAPTURE(n);
  const long long count = 3 * n + 2;
  auto a0 = random_batch<T>(n, n, count, 5000u + std::uint64_t(n));
  std::mt19937_64 g(tessera::testing::seed() + std::uint64_t(n));
  for (long long b = 0; b < count; ++b) {
    T* m = a0.data() + b * n * n;
    if (b % 3 == 0) {  // column b/3 % n zero
      const int c = int(b / 3 % n);
      for (int i = 0; i < n; ++i) m[c * n + i] = T(0);
    } else if (b % 3 == 1 && n > 1) {  // rank 1: x_i y_j with x, y powers of two
      std::vector<T> x(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(n));
      for (auto* v : {&x, &y})
        for (T& e : *v) e = T(std::ldexp(1.0, int(g() % 7) - 3)) * ((g() & 1) ? T(1) : T(-1));
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) m[j * n + i] = x[std::size_t(i)] * y[std::size_t(j)];
    }
  }
  auto ref = a0;
  std::vector<int> rpiv, rinf;
  lapack_getrf(n, count, ref, rpiv, rinf);
  long long singular = 0;
  for (int v : rinf) singular += v > 0;
  REQUIRE(singular >= n);  // the zero columns at least
  {
    placed<T> a(p, n, n, count, layout::strided);
    a.put(a0);
    ints ipiv(p, std::size_t(count * n)), info(p, std::size_t(count));
    bt::lu(a.batch(), ipiv.data(), info.data(), p.opts);
    CHECK(info.get() == rinf);
    const auto lu = a.get();
    const auto piv = ipiv.get();
    for (long long b = 0; b < count; ++b)  // the factorization is still P A = L U
      CHECK(bt::lu_residual(n, a0.data() + b * n * n, n, lu.data() + b * n * n, n, piv.data() + b * n) < bt::threshold);
  }
  {
    placed<T> a(p, n, n, count, layout::pointers), x(p, n, n, count, layout::pointers);
    a.put(a0);
    ints info(p, std::size_t(count));
    bt::inverse(a.batch(), x.batch(), info.data(), p.opts);
    CHECK(info.get() == rinf);
    const auto xs = x.get();
    for (long long b = 0; b < count; ++b)
      if (rinf[std::size_t(b)] == 0)
        CHECK(bt::inverse_residual(n, a0.data() + b * n * n, n, xs.data() + b * n * n, n) < bt::threshold);
  }
  {
    const auto b0 = random_batch<T>(n, 2, count, 6000u + std::uint64_t(n));
    placed<T> a(p, n, n, count, layout::strided), b(p, n, 2, count, layout::strided);
    a.put(a0);
    b.put(b0);
    ints ipiv(p, std::size_t(count * n)), info(p, std::size_t(count));
    bt::gesv(a.batch(), ipiv.data(), b.batch(), info.data(), p.opts);
    CHECK(info.get() == rinf);
    const auto xs = b.get();
    for (long long i = 0; i < count; ++i) {
      if (rinf[std::size_t(i)] > 0)
        CHECK(std::equal(xs.begin() + i * n * 2, xs.begin() + (i + 1) * n * 2, b0.begin() + i * n * 2));
      else
        CHECK(bt::solve_residual(n, 2, a0.data() + i * n * n, n, xs.data() + i * n * 2, n, b0.data() + i * n * 2, n) <
              bt::threshold);
    }
  }
}

// NaN and Inf inputs: the batch finishes, the poisoned matrices' results are not finite, the
// others are right.
template <class T>
void non_finite_case(const place& p, int n) {
  CAPTURE(n);
  const long long count = 12;
  auto a0 = random_batch<T>(n, n, count, 7000u + std::uint64_t(n));
  const T bad[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                   -std::numeric_limits<T>::infinity()};
  for (long long b = 0; b < count; b += 4) a0[std::size_t(b * n * n + (b / 4) % (n * n))] = bad[(b / 4) % 3];
  for (int op = 0; op < 2; ++op) {
    placed<T> a(p, n, n, count, layout::strided);
    a.put(a0);
    ints ipiv(p, std::size_t(count * n)), info(p, std::size_t(count));
    if (op == 0) bt::lu(a.batch(), ipiv.data(), info.data(), p.opts);
    else bt::inverse(a.batch(), a.batch(), info.data(), p.opts);
    const auto out = a.get();
    const auto piv = ipiv.get();
    for (long long b = 0; b < count; ++b) {
      const bool poisoned = b % 4 == 0;
      const T* m = out.data() + b * n * n;
      if (poisoned) {
        // The LU keeps the NaN or Inf (or what it made of it); an inverse may be anything, even
        // finite (1/Inf = 0), so only its neighbours are checked.
        if (op == 0) CHECK(!std::all_of(m, m + n * n, [](T v) { return std::isfinite(v); }));
      } else if (op == 0) {
        CHECK(bt::lu_residual(n, a0.data() + b * n * n, n, m, n, piv.data() + b * n) < bt::threshold);
      } else {
        CHECK(bt::inverse_residual(n, a0.data() + b * n * n, n, m, n) < bt::threshold);
      }
    }
  }
}

}  // namespace tessera::testing::batched
