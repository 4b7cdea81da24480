#pragma once
// QR updating: a factorization A = Q R that lives across changes of A, instead of a new QR after
// each. A has `rows` >= `cols` (the seed's n x m: n rows, m columns); the right-hand sides' Q^T B
// live beside Q and R, so the least-squares problem min ||A X - B|| stays solved as A changes.
//
//   auto u = tessera::qr::updatable<double>::from_matrix(qr::host(a, rows, cols, lda),
//                                                        qr::host(b, rows, nrhs, ldb), {});
//   u.delete_columns(k, p);                 // columns k .. k+p-1 of A dropped
//   u.insert_rows(k, qr::host(v, p, u.cols(), p), qr::host(bv, p, nrhs, p));
//   u.solve(qr::host(x, u.cols(), nrhs, u.cols()));
//
// Where it lives (update_options::on): target::cpu keeps Q, R and Q^T B in host memory and runs
// on LAPACK/BLAS on all cores; target::gpu keeps them in device memory between updates (only the
// new rows/columns travel) and runs on the GPU with cuBLAS and Tessera's kernels, Q on its own
// stream beside R and Q^T B.
//
// Which Q (update_options::q), the seed's analysis:
//   q_mode::none  R and Q^T B only. Enough for delete_columns and insert_rows (the structured
//                 Householder updates touch R and Q^T B alone) and for solve.
//   q_mode::thin  Q's first cols columns (rows x cols) as well: delete_columns, insert_rows.
//   q_mode::full  Q (rows x rows): every update. insert_columns, delete_rows and rank_update need
//                 Q's columns beyond range(A) (the new columns' part outside range(A); the rows
//                 of Q of deleted rows), so they throw std::invalid_argument in the other modes.
//
// Errors: a bad position or count, sizes that do not match, or a NaN/Inf in new data throw
// std::invalid_argument naming the argument, checked before anything changes: the factorization
// is left as it was. Inputs are host memory (matrix_ref with memory::host); for target::gpu they
// may be device memory as well (qr::device: the new rows and columns, U and V, ready when the call
// is made), copied on the device and scanned for NaN/Inf there, and from_factors takes device
// matrices (copied on the device, not scanned). Every input may be reused once the call returns.
#include <memory>

#include "tessera/qr/factorize.hpp"

namespace tessera::qr {

enum class q_mode { none, thin, full };
const char* name(q_mode q) noexcept;

struct update_options {
  target on = target::cpu;   // cpu or gpu (automatic: gpu when a CUDA device is present)
  q_mode q = q_mode::full;
  int nb = 0;                // panel width of the block Householder updates; 0: each update's
                             // measured default (64 on the CPUs; on the GPU 32 where adding rows
                             // and deleting up to 512 columns run as one persistent kernel)
};

template <class T>
class updatable {
 public:
  // Factors a (rows x cols, rows >= cols >= 1) through qr::factorize and keeps Q (as q asks),
  // R and Q^T b; b (rows x nrhs) may be empty (nrhs = 0: no right-hand sides).
  static updatable from_matrix(matrix_ref<const T> a, matrix_ref<const T> b,
                               const update_options& o = {});
  // From given factors: r (cols x cols, upper triangular; below the diagonal is ignored), q
  // (rows x rows for q_mode::full, rows x cols for thin, empty for none) and qtb = Q^T B (rows x
  // nrhs for full; cols x nrhs otherwise, the part that solve needs). rows comes from q, or from
  // `rows` in Q-less mode.
  static updatable from_factors(matrix_ref<const T> q, matrix_ref<const T> r,
                                matrix_ref<const T> qtb, int rows, const update_options& o = {});

  updatable(updatable&&) noexcept;
  updatable& operator=(updatable&&) noexcept;
  ~updatable();

  int rows() const noexcept;
  int cols() const noexcept;
  int nrhs() const noexcept;
  q_mode mode() const noexcept;
  target where() const noexcept;

  // A := A without columns k .. k+p-1 (0 <= k, 1 <= p, k + p <= cols, p < cols). Any q_mode.
  void delete_columns(int k, int p);
  // A := [A(:, 0:k) U A(:, k:cols)], U rows x p (0 <= k <= cols, cols + p <= rows). q_mode::full.
  void insert_columns(int k, matrix_ref<const T> u);
  // A := [A(0:k, :); U; A(k:rows, :)], U p x cols, and B likewise with bu (p x nrhs; empty when
  // nrhs = 0). 0 <= k <= rows. Any q_mode (k matters only to Q).
  void insert_rows(int k, matrix_ref<const T> u, matrix_ref<const T> bu);
  // A := A without rows k .. k+p-1, B likewise (0 <= k, 1 <= p, k + p <= rows, rows - p >= cols).
  // q_mode::full.
  void delete_rows(int k, int p);
  // A := A + U V^T, U rows x r, V cols x r (r >= 1): qrupdate's rank-1 update in blocks.
  // q_mode::full.
  void rank_update(matrix_ref<const T> u, matrix_ref<const T> v);

  // x (cols x nrhs) := argmin ||A X - B||_2 for the current A and B. Throws std::runtime_error
  // when R is singular (A rank deficient: the solution is not finite).
  void solve(matrix_ref<T> x) const;
  // r (cols x cols) := R, zeros below the diagonal.
  void copy_r(matrix_ref<T> r) const;
  // q := Q: rows x rows (full) or rows x cols (thin).
  void copy_q(matrix_ref<T> q) const;
  // qtb (rows x nrhs for full, cols x nrhs otherwise) := Q^T B as kept.
  void copy_qtb(matrix_ref<T> qtb) const;
  // Waits for the work of the last update (the update calls return when it is enqueued on the
  // GPU; on the CPUs when it is done). copy_*/solve wait themselves.
  void wait() const;

  struct impl;

 private:
  explicit updatable(std::unique_ptr<impl> s) noexcept;
  std::unique_ptr<impl> _s;
};

extern template class updatable<float>;
extern template class updatable<double>;

}  // namespace tessera::qr
