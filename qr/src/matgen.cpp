#include "tessera/qr/matgen.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <tessera/kernels_cpu/blas.hpp>

namespace tessera::qr {

namespace {

constexpr int block = 128;  // order of the orthogonal blocks of a mixing stage

// Streams of random numbers, so that changing one part (say the spectrum) leaves the others alone.
enum : std::uint64_t { entries_stream = 1, spectrum_stream = 2, left_stream = 1000, right_stream = 2000 };

// SplitMix64's finalizer: a counter-based generator, so every entry can be drawn independently
// (in parallel, in any order) and the matrix depends only on the seed and the shape.
std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

struct random_stream {
  std::uint64_t key;
  random_stream(std::uint64_t seed, std::uint64_t stream) : key(mix(mix(seed) ^ mix(stream + 0x51ed2701ULL))) {}
  std::uint64_t bits(std::uint64_t i) const { return mix(key + 0x9e3779b97f4a7c15ULL * i); }
  // In [0, 1), 53 random bits.
  double unit(std::uint64_t i) const { return double(bits(i) >> 11) * 0x1p-53; }
  double uniform(std::uint64_t i) const { return 2 * unit(i) - 1; }
  // Box-Muller on draws 2i and 2i + 1 (the first in (0, 1], so the log is finite).
  double gaussian(std::uint64_t i) const {
    const double u1 = 1 - unit(2 * i), u2 = unit(2 * i + 1);
    return std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

[[noreturn]] void invalid(const std::string& what) { throw std::invalid_argument("generate: " + what); }

// f(begin, end) over [0, count) split across the hardware's threads (serial for small counts).
template <class F>
void parallel_for(std::size_t count, std::size_t grain, F f) {
  const std::size_t hw = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t parts = std::max<std::size_t>(1, std::min(hw, count / std::max<std::size_t>(grain, 1)));
  if (parts <= 1) {
    f(std::size_t(0), count);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(parts - 1);
  const std::size_t chunk = (count + parts - 1) / parts;
  for (std::size_t p = 1; p < parts; ++p) {
    const std::size_t b = p * chunk, e = std::min(count, b + chunk);
    if (b < e) pool.emplace_back([=] { f(b, e); });
  }
  f(std::size_t(0), std::min(count, chunk));
  for (auto& t : pool) t.join();
}

template <class T>
T* col(T* a, int lda, int j) {
  return a + static_cast<std::ptrdiff_t>(j) * lda;
}

// Stages of a mixing transform of order len: one dense Haar block when it fits, else enough
// stages that every output depends on every input, plus one.
int stages(int len) {
  if (len <= block) return 1;
  int s = 0;
  for (double reach = 1; reach < len; reach *= block) ++s;
  return s + 1;
}

// A random permutation of 0..len-1 (Fisher-Yates).
std::vector<int> permutation(int len, const random_stream& r) {
  std::vector<int> p(static_cast<std::size_t>(len));
  for (int i = 0; i < len; ++i) p[std::size_t(i)] = i;
  for (int i = len - 1; i > 0; --i) std::swap(p[std::size_t(i)], p[r.bits(std::uint64_t(i)) % std::uint64_t(i + 1)]);
  return p;
}

// The orthogonal blocks of a stage of order len: block q (order min(block, len - q*block)) at
// q*block*block, the Q of a Gaussian matrix's QR.
template <class T>
std::vector<T> orthogonal_blocks(int len, const random_stream& r) {
  const int count = (len + block - 1) / block;
  std::vector<T> q(std::size_t(count) * block * block);
  std::vector<T> tau(block);
  for (int b = 0; b < count; ++b) {
    const int s = std::min(block, len - b * block);
    T* qb = q.data() + std::size_t(b) * block * block;
    for (int e = 0; e < s * s; ++e) qb[e] = T(r.gaussian(std::uint64_t(b) * block * block + std::uint64_t(e)));
    if (tessera::blas::geqrf(s, s, qb, s, tau.data()) != 0 || tessera::blas::orgqr(s, s, s, qb, s, tau.data()) != 0)
      invalid("LAPACK failed on a random orthogonal block");
  }
  return q;
}

// a (len x n) := U a, U one mixing transform of order len (stages of row permutation, then
// block-diagonal orthogonal).
template <class T>
void mix_rows(int len, int n, T* a, int lda, std::uint64_t seed) {
  std::vector<T> tmp(std::size_t(block) * std::size_t(std::max(n, 1)));
  for (int st = 0, count = stages(len); st < count; ++st) {
    if (st > 0) {  // the first stage's permutation would only reorder the input's rows
      const std::vector<int> p = permutation(len, random_stream(seed, left_stream + 2 * std::uint64_t(st)));
      parallel_for(std::size_t(n), 16, [&](std::size_t j0, std::size_t j1) {
        std::vector<T> c(static_cast<std::size_t>(len));
        for (std::size_t j = j0; j < j1; ++j) {
          T* aj = col(a, lda, int(j));
          for (int i = 0; i < len; ++i) c[std::size_t(i)] = aj[p[std::size_t(i)]];
          std::copy(c.begin(), c.end(), aj);
        }
      });
    }
    const std::vector<T> q = orthogonal_blocks<T>(len, random_stream(seed, left_stream + 2 * std::uint64_t(st) + 1));
    for (int r0 = 0, b = 0; r0 < len; r0 += block, ++b) {
      const int s = std::min(block, len - r0);
      for (int j = 0; j < n; ++j) std::copy_n(col(a, lda, j) + r0, s, tmp.data() + std::size_t(j) * std::size_t(s));
      tessera::blas::gemm(CblasNoTrans, CblasNoTrans, s, n, s, T(1), q.data() + std::size_t(b) * block * block, s,
                          tmp.data(), s, T(0), a + r0, lda);
    }
  }
}

// a (k x len) := a V^T, V one mixing transform of order len (column permutation, then block
// diagonal orthogonal).
template <class T>
void mix_columns(int k, int len, T* a, int lda, std::uint64_t seed) {
  std::vector<T> tmp(std::size_t(block) * std::size_t(std::max(k, 1)));
  for (int st = 0, count = stages(len); st < count; ++st) {
    if (st > 0) {
      // Column j := old column p[j], following each cycle with one column of scratch.
      const std::vector<int> p = permutation(len, random_stream(seed, right_stream + 2 * std::uint64_t(st)));
      std::vector<char> done(static_cast<std::size_t>(len), 0);
      for (int s = 0; s < len; ++s) {
        if (done[std::size_t(s)]) continue;
        std::copy_n(col(a, lda, s), k, tmp.data());
        int j = s;
        while (p[std::size_t(j)] != s) {
          std::copy_n(col(a, lda, p[std::size_t(j)]), k, col(a, lda, j));
          done[std::size_t(j)] = 1;
          j = p[std::size_t(j)];
        }
        std::copy_n(tmp.data(), k, col(a, lda, j));
        done[std::size_t(j)] = 1;
      }
    }
    const std::vector<T> q = orthogonal_blocks<T>(len, random_stream(seed, right_stream + 2 * std::uint64_t(st) + 1));
    for (int c0 = 0, b = 0; c0 < len; c0 += block, ++b) {
      const int s = std::min(block, len - c0);
      for (int j = 0; j < s; ++j) std::copy_n(col(a, lda, c0 + j), k, tmp.data() + std::size_t(j) * std::size_t(k));
      tessera::blas::gemm(CblasNoTrans, CblasTrans, k, s, s, T(1), tmp.data(), k,
                          q.data() + std::size_t(b) * block * block, s, T(0), col(a, lda, c0), lda);
    }
  }
}

template <class T>
void fill_uniform(int m, int n, T* a, int lda, std::uint64_t seed) {
  const random_stream r(seed, entries_stream);
  parallel_for(std::size_t(n), 8, [&](std::size_t j0, std::size_t j1) {
    for (std::size_t j = j0; j < j1; ++j)
      for (int i = 0; i < m; ++i) col(a, lda, int(j))[i] = T(r.uniform(j * std::uint64_t(m) + std::uint64_t(i)));
  });
}

template <class T>
void fill_zero(int m, int n, T* a, int lda) {
  parallel_for(std::size_t(n), 8, [&](std::size_t j0, std::size_t j1) {
    for (std::size_t j = j0; j < j1; ++j) std::fill_n(col(a, lda, int(j)), m, T(0));
  });
}

}  // namespace

const char* name(matrix_kind kind) noexcept {
  switch (kind) {
    case matrix_kind::random_uniform: return "random";
    case matrix_kind::svd_one_large: return "one-large";
    case matrix_kind::svd_one_small: return "one-small";
    case matrix_kind::svd_geometric: return "geometric";
    case matrix_kind::svd_arithmetic: return "arithmetic";
    case matrix_kind::svd_log_uniform: return "log-uniform";
    case matrix_kind::zero: return "zero";
    case matrix_kind::zero_columns: return "zero-columns";
    case matrix_kind::repeated_columns: return "repeated-columns";
    case matrix_kind::graded_columns: return "graded";
  }
  return "?";
}

std::optional<matrix_kind> parse_matrix_kind(std::string_view text) noexcept {
  for (const matrix_kind k : all_matrix_kinds)
    if (text == name(k)) return k;
  return std::nullopt;
}

bool has_spectrum(matrix_kind kind) noexcept {
  switch (kind) {
    case matrix_kind::svd_one_large:
    case matrix_kind::svd_one_small:
    case matrix_kind::svd_geometric:
    case matrix_kind::svd_arithmetic:
    case matrix_kind::svd_log_uniform: return true;
    default: return false;
  }
}

std::vector<double> requested_singular_values(const matrix_spec& spec, int k) {
  if (!has_spectrum(spec.kind) || k <= 0) return {};
  const double c = spec.cond;
  std::vector<double> s(std::size_t(k), 1.0);
  if (k == 1) return s;
  const random_stream r(spec.seed, spectrum_stream);
  for (int i = 0; i < k; ++i) {
    const double f = double(i) / double(k - 1);
    double& v = s[std::size_t(i)];
    switch (spec.kind) {
      case matrix_kind::svd_one_large: v = i == 0 ? 1.0 : 1.0 / c; break;
      case matrix_kind::svd_one_small: v = i == k - 1 ? 1.0 / c : 1.0; break;
      case matrix_kind::svd_geometric: v = std::pow(c, -f); break;
      case matrix_kind::svd_arithmetic: v = 1.0 - f * (1.0 - 1.0 / c); break;
      case matrix_kind::svd_log_uniform:
        // The ends pinned so that the condition number is exactly cond (LAPACK's mode 5 leaves
        // it to chance).
        v = i == 0 ? 1.0 : i == k - 1 ? 1.0 / c : std::exp(-std::log(c) * r.unit(std::uint64_t(i)));
        break;
      default: break;
    }
  }
  return s;
}

template <class T>
void generate(const matrix_spec& spec, int m, int n, T* a, int lda) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  if (m < 0 || n < 0) invalid("m and n must be >= 0 (got " + std::to_string(m) + " x " + std::to_string(n) + ")");
  if (lda < std::max(1, m)) invalid("lda must be >= max(1, m) (got " + std::to_string(lda) + ")");
  if (!(spec.cond >= 1) || !std::isfinite(spec.cond))
    throw std::invalid_argument("--cond must be finite and >= 1 (got " + std::to_string(spec.cond) + ")");
  if (!(spec.scale > 0) || !std::isfinite(spec.scale))
    throw std::invalid_argument("--scale must be finite and > 0 (got " + std::to_string(spec.scale) + ")");
  if (m == 0 || n == 0) return;
  if (a == nullptr) invalid("a is null");

  const int k = std::min(m, n);
  switch (spec.kind) {
    case matrix_kind::zero: fill_zero(m, n, a, lda); return;  // no scale can change it
    case matrix_kind::random_uniform:
    case matrix_kind::zero_columns:
    case matrix_kind::repeated_columns:
    case matrix_kind::graded_columns:
      fill_uniform(m, n, a, lda, spec.seed);
      for (int j = 0; j < n; ++j) {
        T* aj = col(a, lda, j);
        if (spec.kind == matrix_kind::zero_columns && j % 3 == 0) std::fill_n(aj, m, T(0));
        if (spec.kind == matrix_kind::repeated_columns && j % 2 == 1) std::copy_n(col(a, lda, j - 1), m, aj);
        if (spec.kind == matrix_kind::graded_columns && n > 1) {
          const T g = T(std::pow(spec.cond, -double(j) / double(n - 1)));
          for (int i = 0; i < m; ++i) aj[i] *= g;
        }
      }
      break;
    default: {
      // U diag(sigma) V^T: sigma on the diagonal, V^T mixes the top k rows' columns, U the rows.
      const std::vector<double> sigma = requested_singular_values(spec, k);
      fill_zero(m, n, a, lda);
      for (int i = 0; i < k; ++i) col(a, lda, i)[i] = T(sigma[std::size_t(i)]);
      mix_columns(k, n, a, lda, spec.seed);
      mix_rows(m, n, a, lda, spec.seed);
      break;
    }
  }

  // max |a_ij| to [1/2, 1) by a power of two (exact), then times scale, checked against T's range
  // first so that nothing overflows or vanishes silently.
  double amax = 0;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) amax = std::max(amax, double(std::abs(col(a, lda, j)[i])));
  if (amax == 0) return;
  int e = 0;
  std::frexp(amax, &e);
  const double unit = std::ldexp(1.0, -e);  // amax * unit in [1/2, 1)
  const double top = amax * unit * spec.scale;
  if (top > double(std::numeric_limits<T>::max()))
    throw std::invalid_argument("--scale " + std::to_string(spec.scale) + " overflows " +
                                (std::is_same_v<T, float> ? "float" : "double") + " (max |a_ij| would be " +
                                std::to_string(top) + ")");
  if (T(top) == T(0))
    throw std::invalid_argument("--scale " + std::to_string(spec.scale) + " rounds the whole matrix to zero in " +
                                (std::is_same_v<T, float> ? "float" : "double"));
  const double scale = spec.scale;
  parallel_for(std::size_t(n), 8, [&](std::size_t j0, std::size_t j1) {
    for (std::size_t j = j0; j < j1; ++j) {
      T* aj = col(a, lda, int(j));
      for (int i = 0; i < m; ++i) aj[i] = T(double(aj[i]) * unit * scale);
    }
  });
}

template void generate<float>(const matrix_spec&, int, int, float*, int);
template void generate<double>(const matrix_spec&, int, int, double*, int);

}  // namespace tessera::qr
