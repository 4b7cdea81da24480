#pragma once
// The building blocks every gpu_* kernel is made of, on the cuBLAS wrapper
// (tessera/kernels_gpu/cublas.hpp): the Gram matrices and full T of a panel, the prepared
// factors and the update sweep.
// Internal: no argument checks here, the public entry points do them.
#include <cstddef>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <tessera/kernels_gpu/cublas.hpp>

namespace tessera::kernels::detail {

// Sets the handle to host pointer mode for the scope of a kernel and restores what it found.
class host_pointer_mode {
 public:
  host_pointer_mode(const char* kernel, cublasHandle_t h);
  ~host_pointer_mode();
  host_pointer_mode(const host_pointer_mode&) = delete;
  host_pointer_mode& operator=(const host_pointer_mode&) = delete;

 private:
  cublasHandle_t _handle;
  cublasPointerMode_t _saved = CUBLAS_POINTER_MODE_HOST;
};

cudaStream_t stream_of(const char* kernel, cublasHandle_t h);

// --- the panel: Gram matrices and full T -------------------------------------------------------
// G_i = V_i^T V_i (kk x kk, ld kk, at G + i*kk*kk) for the count row blocks V_i = V + i*nb
// (nb rows each, m_last for the last): one strided-batched GEMM for the full blocks.
template <class T>
void gram(const char* kernel, int count, int nb, int m_last, int kk, const T* V, int ldv, T* G,
          cublasHandle_t h);

// Tf_i (kk x kk, ldtf, at Tf + i*strideTf) := the upper triangular T of Q_i = I - V_i T V_i^T
// from G_i (as above; only its entries below the diagonal ib x ib blocks are read) and the
// ib-blocked T_i (ib x kk, ldt, at Tb + i*strideT); transpose: store T_i^T instead. The other
// triangle is zeroed, so the result can be used as a dense GEMM operand.
// Block column j (columns c0..c0+w) off the diagonal: Tf(0:c0, j) = -Tf(0:c0, 0:c0) G(0:c0, j) T_jj;
// row r of that needs only row r of Tf, so one warp builds one row, left to right (full_t.cu).
template <class T>
void build_full_t(const char* kernel, int count, int kk, int ib, const T* G, const T* Tb, int ldt,
                  std::ptrdiff_t strideT, T* Tf, int ldtf, std::ptrdiff_t strideTf, bool transpose,
                  cudaStream_t stream);

// Tf (n x n, ldtf) := the upper triangular T of Q = I - V T V^T, zeros below the diagonal, from
// the ib-blocked T (ib x n, ldtb: block j's T in columns j*ib..) and G = V^T V (n x n, ldg, both
// triangles) by doubling: T = [T1 T12; 0 T2] with T12 = -T1 G12 T2, the pairs of one block size
// independent, so two strided-batched GEMMs per doubling instead of a kernel whose rows each run a
// serial chain through all block columns (5x slower at n = 512: docs/architecture.md). X: n * n scratch.
template <class T>
void full_t_by_doubling(const char* kernel, int n, int ib, const T* G, int ldg, const T* Tb, int ldtb, T* Tf,
                        int ldtf, T* X, cublasHandle_t h);

// Vc (m x k, ldvc) := the unit lower trapezoidal V stored in the lower part of a GEQRT tile,
// with its unit diagonal and zero upper triangle made explicit (so GEMMs can use it).
template <class T>
void unit_lower_copy(const char* kernel, int m, int k, const T* V, int ldv, T* Vc, int ldvc,
                     cudaStream_t stream);

// --- the full T and S (st_blocks.cu) ------------------------------------------------------------
// D (w x w, ldd) := ST's diagonal block: Tkk (ldt) on and above the diagonal, L Tkk^T below it, L
// the unit lower triangle stored in V (ldv).
template <class T>
void st_diagonal_block(const char* kernel, int w, const T* V, int ldv, const T* Tkk, int ldt, T* D, int ldd,
                       cudaStream_t stream);

// B (rb x p, ldb) := rows r0..r0+rb, columns 0..p of the lower trapezoid stored in X (ldx), zeros
// above the diagonal; unit: V's implicit unit diagonal, else the stored one (S's).
template <class T>
void lower_rows(const char* kernel, int r0, int rb, int p, const T* X, int ldx, bool unit, T* B, int ldb,
                cudaStream_t stream);

// Y (rows x cols, ldy) := row i + shift of X (in rows, ldx) for each row i, zero where there is no
// such row; X null: the identity shifted, Y(i, j) = (i + shift == j).
template <class T>
void shifted_rows(const char* kernel, int rows, int cols, int in, int shift, const T* X, int ldx, T* Y, int ldy,
                  cudaStream_t stream);

// --- the panel's columns (householder.cu) ------------------------------------------------------
// Elements of scratch householder_block needs for m rows.
std::size_t householder_scratch_size(int m);

// The Householder QR of A (m x nc, lda; nc <= 32, m >= nc) one column at a time: R on and above
// the diagonal, V below it, tau (nc) the reflectors' scalars, Vc (m x nc, ldvc) := V with its
// unit diagonal and zero upper part explicit, and the block's T (nc x nc, ldt) from Vc's Gram
// matrix, summed into gram (32 x 32 doubles, zero on entry). One cooperative kernel on at most
// `sms` SMs; it does nothing when skip is not null and *skip (on the device, read when it runs)
// is not zero.
template <class T>
void householder_block(const char* kernel, int m, int nc, T* A, int lda, T* tau, T* Vc, int ldvc, T* Tf, int ldt,
                       T* scratch, double* gram, int sms, const int* skip, cudaStream_t stream);

// --- a short block in one thread block (householder_short.cu) ----------------------------------
// Rows up to which householder_short_block takes a block (one row a thread, in registers).
template <class T>
int householder_short_max_rows();

// householder_block's result (A := R and V, tau, Vc, the block's T), equilibrated as
// householder_block_scaled is, for m <= householder_short_max_rows<T>() rows: one kernel of one
// thread block, two block barriers a column.
template <class T>
void householder_short_block(const char* kernel, int m, int nc, T* A, int lda, T* tau, T* Vc, int ldvc, T* Tf,
                             int ldt, cudaStream_t stream);

// --- the same by CholeskyQR2 and Householder reconstruction (cholqr.cu) --------------------------
// Bytes of one block's state (a multiple of 256).
std::size_t cholqr_scratch_bytes();

// Clears count consecutive block states (one memset per panel instead of one per block).
void cholqr_clear(const char* kernel, void* states, int count, cudaStream_t stream);

// What cholqr_block leaves for the Householder fallback: the device flag (1 when the block is
// done) and a zeroed 32 x 32 double buffer in the block's state.
struct cholqr_handoff {
  const int* done;
  double* gram;
};

// householder_block's result for well-conditioned blocks in four short kernels on at most `sms`
// SMs (the reflectors differ, R's diagonal may differ in sign; both are GEQRT forms of A). state:
// one block's, cleared (cholqr_clear). Where CholeskyQR2 is not accurate enough A, tau and T are
// left untouched (Vc was scratch) and the flag stays 0: pass it and the buffer to
// householder_block, which then does the block.
template <class T>
cholqr_handoff cholqr_block(const char* kernel, int m, int nc, T* A, int lda, T* tau, T* Vc, int ldvc, T* Tf,
                            int ldt, void* state, int sms, cudaStream_t stream);

// --- the update as GEMMs -----------------------------------------------------------------------
// Prepared factors of count TSQRTs: Z_i = [T_i^T; V_i T_i^T] ((kk + m_i) x kk, leading dimension
// kk + nb, at Z + i*(kk + nb)*kk). G: count*kk*kk elements of scratch.
template <class T>
void make_factors(const char* kernel, int count, int nb, int m_last, int kk, int ib, const T* V,
                  int ldv, const T* Tb, int ldt, std::ptrdiff_t strideT, T* Z, T* G,
                  cublasHandle_t h, cudaStream_t stream);

// For i = 0..count-1: W_i = A1 + V_i^T A2_i;  A1 -= T_i^T W_i;  A2_i -= (V_i T_i^T) W_i, in
// batches of `batch` rows (W: batch x (kk x n)): in a batch, the V_i^T A2_i and the A2_i updates
// are one strided-batched GEMM each, and only the A1 chain is sequential. batch 1: three kernels
// per row, A1 and A2_i updated by one strided batch of 2 when the shapes allow.
template <class T>
void apply_factors(const char* kernel, int count, int nb, int m_last, int n, int kk, T* A1,
                   int lda1, T* A2, int lda2, const T* V, int ldv, const T* Z, T* W, int batch,
                   cublasHandle_t h, cudaStream_t stream);

// The ib-blocked baseline, LAPACK's sequence: for each diagonal block T_jj of the blocked T
// (ib x kk, ldt), in order, W = A1_j + V_j^T A2; W = T_jj^T W (TRMM); A1_j -= W; A2 -= V_j W.
// W: min(ib, kk) x n (ldw).
template <class T>
void apply_blocked(const char* kernel, int m, int n, int kk, int ib, T* A1, int lda1, T* A2,
                   int lda2, const T* V, int ldv, const T* Tb, int ldt, T* W, int ldw,
                   cublasHandle_t h, cudaStream_t stream);

}  // namespace tessera::kernels::detail
