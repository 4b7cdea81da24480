#include <algorithm>
#include <tessera/kernels_cpu/blas.hpp>
#include <tessera/kernels_cpu/check.hpp>
#include <tessera/kernels_cpu/core_full_t.hpp>

#include "detail.hpp"

namespace tessera::kernels {

using detail::at;

namespace {

std::size_t elems(int a, int b) { return std::size_t(std::max(a, 0)) * std::size_t(std::max(b, 0)); }

void require_shape(const char* name, int m, int n, int lda, int ldst) {
  check::require_ge(name, "n", n, "0", 0);
  check::require_ge(name, "m", m, "n", n);
  check::require_ge(name, "lda", lda, "max(1, m)", std::max(1, m));
  check::require_ge(name, "ldst", ldst, "max(1, m)", std::max(1, m));
}

// B (rb x p, ld rb) := rows r0..r0+rb of a lower trapezoid stored in X (ldx), columns 0..p, zeros
// above the diagonal; unit: V's implicit unit diagonal, else the stored one (S's).
template <class T>
void lower_rows(int r0, int rb, int p, const T* X, int ldx, bool unit, T* B) {
  for (int j = 0; j < p; ++j)
    for (int i = 0; i < rb; ++i) {
      const int r = r0 + i;
      B[i + std::size_t(j) * rb] = r > j ? X[r + std::size_t(j) * ldx] : r == j ? (unit ? T(1) : X[r + std::size_t(j) * ldx]) : T(0);
    }
}

}  // namespace

std::size_t core_full_t_step_workspace_size(int k, int w) { return 2 * elems(k, w); }

template <class T>
void core_full_t_step(int m, int k, int w, const T* A, int lda, const T* Tkk, int ldt, T* ST, int ldst, T* work) {
  constexpr const char* name = "tessera::kernels::core_full_t_step";
  check::require_ge(name, "k", k, "0", 0);
  check::require_ge(name, "w", w, "0", 0);
  check::require_ge(name, "m", m, "k + w", static_cast<long long>(k) + w);
  check::require_ge(name, "lda", lda, "max(1, m)", std::max(1, m));
  check::require_ge(name, "ldst", ldst, "max(1, m)", std::max(1, m));
  check::require_ge(name, "ldt", ldt, "max(1, w)", std::max(1, w));
  if (w == 0) return;
  check::require_ptr(name, "A", A);
  check::require_ptr(name, "Tkk", Tkk);
  check::require_ptr(name, "ST", ST);
  const int mb = m - k - w;                   // V_k's rows below its triangle
  const T* v = at(A, lda, k, k);              // V_k's unit lower triangle L, then V_bot
  T* s_top = at(ST, ldst, k, 0);              // S(k:k+w, 0:k)
  T* s_bot = at(ST, ldst, k + w, 0);          // S(k+w:m, 0:k)
  T* t12 = at(ST, ldst, 0, k);                // T(0:k, k:k+w)
  if (k > 0) {
    check::require_ptr(name, "work", work);
    T* X = work;                              // k x w, ld k
    T* Y = work + elems(k, w);                // w x k, ld w
    // X = S_top^T L + S_bot^T V_bot = S(k:m, 0:k)^T V_k.
    for (int j = 0; j < w; ++j)
      for (int i = 0; i < k; ++i) X[i + std::size_t(j) * k] = s_top[j + std::size_t(i) * ldst];
    blas::trmm(CblasRight, CblasLower, CblasNoTrans, CblasUnit, k, w, T(1), v, lda, X, k);
    if (mb > 0) blas::gemm(CblasTrans, CblasNoTrans, k, w, mb, T(1), s_bot, ldst, v + w, lda, T(1), X, k);
    // T12 = -X Tkk.
    blas::trmm(CblasRight, CblasUpper, CblasNoTrans, CblasNonUnit, k, w, T(-1), Tkk, ldt, X, k);
    for (int j = 0; j < w; ++j) std::copy_n(X + std::size_t(j) * k, k, t12 + std::size_t(j) * ldst);
    // S(k:m, 0:k) += V_k T12^T: the bottom by a GEMM, the top through L.
    if (mb > 0) blas::gemm(CblasNoTrans, CblasTrans, mb, k, w, T(1), v + w, lda, X, k, T(1), s_bot, ldst);
    for (int j = 0; j < k; ++j)
      for (int i = 0; i < w; ++i) Y[i + std::size_t(j) * w] = X[j + std::size_t(i) * k];
    blas::trmm(CblasLeft, CblasLower, CblasNoTrans, CblasUnit, w, k, T(1), v, lda, Y, w);
    for (int j = 0; j < k; ++j)
      for (int i = 0; i < w; ++i) s_top[i + std::size_t(j) * ldst] += Y[i + std::size_t(j) * w];
  }
  // S(k+w:m, k:k+w) = V_bot Tkk^T.
  T* sk = at(ST, ldst, k + w, k);
  if (mb > 0) {
    for (int j = 0; j < w; ++j) std::copy_n(v + w + std::size_t(j) * lda, mb, sk + std::size_t(j) * ldst);
    blas::trmm(CblasRight, CblasUpper, CblasTrans, CblasNonUnit, mb, w, T(1), Tkk, ldt, sk, ldst);
  }
  // The diagonal block: Tkk on and above the diagonal, (L Tkk^T)(i, j) = sum_{p=j..i} L(i,p) Tkk(j,p) below.
  T* d = at(ST, ldst, k, k);
  for (int j = 0; j < w; ++j)
    for (int i = 0; i < w; ++i) {
      if (i <= j) {
        d[i + std::size_t(j) * ldst] = Tkk[i + std::size_t(j) * ldt];
        continue;
      }
      T acc = Tkk[j + std::size_t(i) * ldt];  // L(i, i) = 1
      for (int p = j; p < i; ++p) acc += v[i + std::size_t(p) * lda] * Tkk[j + std::size_t(p) * ldt];
      d[i + std::size_t(j) * ldst] = acc;
    }
}

template <class T>
void core_full_t(int m, int n, int nb, const T* A, int lda, const T* Tb, int ldt, T* ST, int ldst, T* work) {
  constexpr const char* name = "tessera::kernels::core_full_t";
  require_shape(name, m, n, lda, ldst);
  check::require_ge(name, "nb", nb, "1", 1);
  check::require_ge(name, "ldt", ldt, "max(1, min(nb, n))", std::max(1, std::min(nb, n)));
  for (int k = 0; k < n; k += nb) {
    const int w = std::min(nb, n - k);
    core_full_t_step(m, k, w, A, lda, Tb + std::size_t(k) * ldt, ldt, ST, ldst, work);
  }
}

std::size_t core_q_block_workspace_size(int n, int r0, int rb, int c0, int cb, int nrhs) {
  const int p = std::max(0, std::min({n, r0 + rb, c0 + cb}));
  return elems(rb + cb, p) + elems(p, nrhs);
}

namespace {

template <class T>
void require_block(const char* name, int m, int n, int r0, int rb, int c0, int cb, int lda, int ldst) {
  require_shape(name, m, n, lda, ldst);
  check::require_ge(name, "r0", r0, "0", 0);
  check::require_ge(name, "rb", rb, "0", 0);
  check::require_le(name, "r0 + rb", static_cast<long long>(r0) + rb, "m", m);
  check::require_ge(name, "c0", c0, "0", 0);
  check::require_ge(name, "cb", cb, "0", 0);
  check::require_le(name, "c0 + cb", static_cast<long long>(c0) + cb, "m", m);
}

}  // namespace

template <class T>
void core_q_block(int m, int n, int r0, int rb, int c0, int cb, const T* A, int lda, const T* ST, int ldst, T* Qb,
                  int ldq, T* work) {
  constexpr const char* name = "tessera::kernels::core_q_block";
  require_block<T>(name, m, n, r0, rb, c0, cb, lda, ldst);
  check::require_ge(name, "ldq", ldq, "max(1, rb)", std::max(1, rb));
  if (rb == 0 || cb == 0) return;
  const int p = std::min({n, r0 + rb, c0 + cb});
  T* Vb = work;                    // rb x p
  T* Sb = work + elems(rb, p);     // cb x p
  for (int j = 0; j < cb; ++j)
    for (int i = 0; i < rb; ++i) Qb[i + std::size_t(j) * ldq] = r0 + i == c0 + j ? T(1) : T(0);
  if (p == 0) return;
  lower_rows(r0, rb, p, A, lda, true, Vb);
  lower_rows(c0, cb, p, ST, ldst, false, Sb);
  blas::gemm(CblasNoTrans, CblasTrans, rb, cb, p, T(-1), Vb, rb, Sb, cb, T(1), Qb, ldq);
}

template <class T>
void core_apply_q_block(char trans, int m, int n, int r0, int rb, int c0, int cb, int nrhs, const T* A, int lda,
                        const T* ST, int ldst, const T* X, int ldx, T* Y, int ldy, T* work) {
  constexpr const char* name = "tessera::kernels::core_apply_q_block";
  if (trans != 'N' && trans != 'T') check::invalid(name, std::string("trans = '") + trans + "': must be 'N' or 'T'");
  require_block<T>(name, m, n, r0, rb, c0, cb, lda, ldst);
  check::require_ge(name, "nrhs", nrhs, "0", 0);
  const bool t = trans == 'T';
  const int in = t ? rb : cb, out = t ? cb : rb;  // rows of X and of Y
  check::require_ge(name, "ldx", ldx, "max(1, rows of X)", std::max(1, in));
  check::require_ge(name, "ldy", ldy, "max(1, rows of Y)", std::max(1, out));
  if (out == 0 || nrhs == 0) return;
  // Y = I_block X: row i of Y takes the row of X on the identity's diagonal, if any.
  const int shift = t ? c0 - r0 : r0 - c0;  // Y row i <- X row i + shift
  for (int j = 0; j < nrhs; ++j)
    for (int i = 0; i < out; ++i) {
      const int r = i + shift;
      Y[i + std::size_t(j) * ldy] = r >= 0 && r < in ? X[r + std::size_t(j) * ldx] : T(0);
    }
  const int p = std::min({n, r0 + rb, c0 + cb});
  if (p == 0 || in == 0) return;
  T* Vb = work;                    // rb x p
  T* Sb = work + elems(rb, p);     // cb x p
  T* Z = Sb + elems(cb, p);        // p x nrhs
  lower_rows(r0, rb, p, A, lda, true, Vb);
  lower_rows(c0, cb, p, ST, ldst, false, Sb);
  // N: Y -= Vb (Sb^T X);  T: Y -= Sb (Vb^T X).
  const T* first = t ? Vb : Sb;
  const T* second = t ? Sb : Vb;
  blas::gemm(CblasTrans, CblasNoTrans, p, nrhs, in, T(1), first, in, X, ldx, T(0), Z, p);
  blas::gemm(CblasNoTrans, CblasNoTrans, out, nrhs, p, T(-1), second, out, Z, p, T(1), Y, ldy);
}

#define TESSERA_CORE_FULL_T(T)                                                                                  \
  template void core_full_t_step<T>(int, int, int, const T*, int, const T*, int, T*, int, T*);                  \
  template void core_full_t<T>(int, int, int, const T*, int, const T*, int, T*, int, T*);                       \
  template void core_q_block<T>(int, int, int, int, int, int, const T*, int, const T*, int, T*, int, T*);      \
  template void core_apply_q_block<T>(char, int, int, int, int, int, int, int, const T*, int, const T*, int,  \
                                      const T*, int, T*, int, T*);
TESSERA_CORE_FULL_T(float)
TESSERA_CORE_FULL_T(double)
#undef TESSERA_CORE_FULL_T

}  // namespace tessera::kernels
