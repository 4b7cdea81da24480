#include "tessera/kernels_cpu/batched.hpp"

#include <algorithm>
#include <cstddef>

#include "tessera/kernels_cpu/blas.hpp"
#include "tessera/kernels_cpu/check.hpp"

namespace tessera::kernels {
namespace {

// Larger orders than the batched API's 32 work too; this bounds the stack workspace below.
constexpr int max_n = 64;

void check_range(const char* fn, int n, long long first, long long last) {
  check::require_ge(fn, "n", n, "1", 1);
  check::require_le(fn, "n", n, nullptr, max_n);
  check::require_ge(fn, "first", first, "0", 0);
  check::require_ge(fn, "last", last, "first", first);
}

template <class T>
void copy_matrix(int n, const T* a, int lda, T* b, int ldb) {
  for (int j = 0; j < n; ++j)
    std::copy_n(a + std::size_t(j) * lda, n, b + std::size_t(j) * ldb);
}

}  // namespace

template <class T>
void cpu_batched_getrf(int n, batch_ref<T> a, int* ipiv, int* info, long long first, long long last) {
  constexpr const char* fn = "tessera::kernels::cpu_batched_getrf";
  check_range(fn, n, first, last);
  if (first == last) return;
  check::require_ge(fn, "lda", a.ld, "n", n);
  for (long long b = first; b < last; ++b) {
    const int r = blas::getrf(n, n, a.matrix(b), a.ld, ipiv + b * n);
    if (r < 0) check::lapack_rejected(fn, "getrf", r);
    info[b] = r;
  }
}

template <class T>
void cpu_batched_inverse(int n, batch_ref<T> a, batch_ref<T> ainv, int* info, long long first,
                         long long last) {
  constexpr const char* fn = "tessera::kernels::cpu_batched_inverse";
  check_range(fn, n, first, last);
  if (first == last) return;
  check::require_ge(fn, "lda", a.ld, "n", n);
  check::require_ge(fn, "ldainv", ainv.ld, "n", n);
  int ipiv[max_n];
  T work[max_n * 64];  // GETRI's blocked path wants n * nb; 64 covers OpenBLAS's nb
  for (long long b = first; b < last; ++b) {
    T* x = ainv.matrix(b);
    const T* src = a.matrix(b);
    if (x != src) copy_matrix(n, src, a.ld, x, ainv.ld);
    int r = blas::getrf(n, n, x, ainv.ld, ipiv);
    if (r < 0) check::lapack_rejected(fn, "getrf", r);
    if (r == 0) {
      const int ri = blas::getri(n, x, ainv.ld, ipiv, work, max_n * 64);
      if (ri < 0) check::lapack_rejected(fn, "getri", ri);
    }
    info[b] = r;
  }
}

template <class T>
void cpu_batched_getrs(int n, int nrhs, batch_ref<T> lu, const int* ipiv, batch_ref<T> b,
                       long long first, long long last) {
  constexpr const char* fn = "tessera::kernels::cpu_batched_getrs";
  check_range(fn, n, first, last);
  check::require_ge(fn, "nrhs", nrhs, "0", 0);
  if (first == last || nrhs == 0) return;
  check::require_ge(fn, "lda", lu.ld, "n", n);
  check::require_ge(fn, "ldb", b.ld, "n", n);
  for (long long i = first; i < last; ++i)
    check::lapack_info(fn, "getrs",
                       blas::getrs('N', n, nrhs, lu.matrix(i), lu.ld, ipiv + i * n, b.matrix(i), b.ld));
}

template <class T>
void cpu_batched_gesv(int n, int nrhs, batch_ref<T> a, int* ipiv, batch_ref<T> b, int* info,
                      long long first, long long last) {
  constexpr const char* fn = "tessera::kernels::cpu_batched_gesv";
  check_range(fn, n, first, last);
  check::require_ge(fn, "nrhs", nrhs, "0", 0);
  if (first == last) return;
  check::require_ge(fn, "lda", a.ld, "n", n);
  if (nrhs > 0) check::require_ge(fn, "ldb", b.ld, "n", n);
  for (long long i = first; i < last; ++i) {
    // GESV through GETRF + GETRS so that nrhs = 0 (no B at all) works as well.
    const int r = blas::getrf(n, n, a.matrix(i), a.ld, ipiv + i * n);
    if (r < 0) check::lapack_rejected(fn, "getrf", r);
    info[i] = r;
    if (r == 0 && nrhs > 0)
      check::lapack_info(fn, "getrs",
                         blas::getrs('N', n, nrhs, a.matrix(i), a.ld, ipiv + i * n, b.matrix(i), b.ld));
  }
}

template void cpu_batched_getrf<float>(int, batch_ref<float>, int*, int*, long long, long long);
template void cpu_batched_getrf<double>(int, batch_ref<double>, int*, int*, long long, long long);
template void cpu_batched_inverse<float>(int, batch_ref<float>, batch_ref<float>, int*, long long, long long);
template void cpu_batched_inverse<double>(int, batch_ref<double>, batch_ref<double>, int*, long long,
                                          long long);
template void cpu_batched_getrs<float>(int, int, batch_ref<float>, const int*, batch_ref<float>, long long,
                                       long long);
template void cpu_batched_getrs<double>(int, int, batch_ref<double>, const int*, batch_ref<double>,
                                        long long, long long);
template void cpu_batched_gesv<float>(int, int, batch_ref<float>, int*, batch_ref<float>, int*, long long,
                                      long long);
template void cpu_batched_gesv<double>(int, int, batch_ref<double>, int*, batch_ref<double>, int*,
                                       long long, long long);

}  // namespace tessera::kernels
