#pragma once
// The front door for QR: give a matrix (host or device memory) and options, get a factorization
// that applies Q, forms Q, solves least squares and hands out R, whatever algorithm ran.
//
//   std::vector<double> a = ...;                                  // m x n, column-major, lda = m
//   auto f = tessera::qr::factorize(tessera::qr::host(a.data(), m, n, m));
//   std::puts(f.choice().reason.c_str());                         // what ran, and why
//   f.solve(tessera::qr::host(b.data(), m, nrhs, m));             // b(0:n, :) := X
//
// The library chooses where the flops run and the algorithm from measured rules (choose()):
//   target::cpu     the tile QR on the CPUs (PLASMA's flat tree, one task per tile kernel), or with
//                   algorithm::blocked LAPACK's blocked QR (xGEQRT) in A's own memory;
//   target::gpu     every flop on the GPU: the blocked QR (LAPACK GEQRT form, panels on the GPU);
//   target::hybrid  the CPUs compute too: the tile QR with panels on the CPUs, updates on the GPU.
// The explicit algorithm functions (geqrf, geqrf_hybrid, blocked_qr_gpu) stay for experts.
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>

#include "tessera/kernels_cpu/common.hpp"
#include "tessera/qr/geqrf.hpp"
#include "tessera/qr/ungqr.hpp"
#include "tessera/sched/memory.hpp"
#include "tessera/sched/runtime.hpp"

namespace tessera::qr {

using kernels::trans;

enum class target { automatic, cpu, gpu, hybrid };
enum class algorithm { automatic, tile, blocked };
enum class memory { host, device };

const char* name(target t) noexcept;
const char* name(algorithm a) noexcept;
const char* name(memory w) noexcept;

// A column-major m x n matrix with leading dimension ld >= max(1, m), in host or device memory.
template <class T>
struct matrix_ref {
  T* data = nullptr;
  int m = 0, n = 0, ld = 1;
  memory where = memory::host;
  operator matrix_ref<const T>() const noexcept { return {data, m, n, ld, where}; }
};

template <class T>
matrix_ref<T> host(T* data, int m, int n, int ld) noexcept {
  return {data, m, n, ld, memory::host};
}
template <class T>
matrix_ref<T> device(T* data, int m, int n, int ld) noexcept {
  return {data, m, n, ld, memory::device};
}

// to := from (the same shape), between any two memories. Waits for the copy.
template <class T>
void copy(matrix_ref<const T> from, matrix_ref<T> to);

// Not enough memory for a problem, found before allocating: the message names the memory (host,
// pinned host or device), what it was for, the bytes needed and the bytes available.
struct resource_error : out_of_memory {
  using out_of_memory::out_of_memory;
};

// Bytes of `where` memory free for a new allocation now: host, the kernel's MemAvailable; device,
// cudaMemGetInfo's free bytes (0 without a GPU).
std::size_t available_bytes(memory where);

// Throws resource_error unless `bytes` of `where` memory are available; `func` (the message's
// first word) and `what` name the caller and the use.
void require_available(const char* func, memory where, std::size_t bytes, const std::string& what);

struct options {
  target on = target::automatic;
  algorithm algo = algorithm::automatic;
  int nb = 0;           // tile size or panel width; 0: the measured default for the choice
  int ib = 0;           // inner block; 0: 32 (tile: the largest divisor of nb up to 32)
  int lookahead = -1;   // -1: the measured default (tile hybrid: tile columns the CPUs update
                        // ahead of the GPU; blocked: column blocks updated ahead of the bulk, >= 1)
  unsigned threads = 0; // CPU workers of the runtime the library makes (0: all cores)
  // Expert knobs of the GPU paths, 0 or -1: the defaults of blocked_options / hybrid_options.
  int bulk_columns = -1, chunked_steps = -1;  // blocked
  int gpu_rows = 0;                           // tile hybrid
  // Also the full T of Q = I - V T V^T (n x n) and S = V T^T (m x n): the blocked QR, m >= n; see
  // factorization::copy_t, copy_s, form_q_block, apply_q_block.
  bool full_t = false;
  // GPUs: 0 or 1, one; more, the blocked QR on the GPU (target gpu) splits the trailing matrix
  // among them by column blocks (blocked_qr_multi_gpu.hpp, host matrices only), and the tile hybrid
  // (target hybrid) its GPU columns, in contiguous ranges (geqrf_hybrid.hpp); refused beyond the
  // CUDA devices present unless gpus_on_one_device.
  unsigned gpus = 0;
  // For tests on one GPU: every one of the gpus is CUDA device 0 (runtime_options::gpus), so the
  // several-GPU paths run (each logical GPU with its own streams, copies between them); not faster.
  bool gpus_on_one_device = false;
  // Single precision by the blocked QR on one GPU (host or device matrix): -1, computed in double
  // where the GPU's FP64 tensor cores outrun its FP32 units (compute capability 9.0: H100, H200;
  // docs/architecture.md, "Single precision in double") and device memory holds the double copies;
  // 0, never; 1, wherever device memory holds them. R, V and T come back in float.
  int single_in_double = -1;
};

// What will run, decided by choose(): every field resolved, and the reason in words.
struct choice {
  target on = target::cpu;
  algorithm algo = algorithm::tile;
  int nb = 0, ib = 0, lookahead = 0;
  int bulk_columns = 0, chunked_steps = 0, gpu_rows = 0;
  bool full_t = false;
  unsigned gpus = 1;               // GPUs the blocked QR or the tile hybrid splits its GPU work among
  bool gpus_on_one_device = false;  // options::gpus_on_one_device
  bool in_double = false;           // single precision computed in double (set by factorize)
  std::string reason;
};

// The policy. full_t takes the blocked QR (one V for all of Q; the tile QR's Q is a product of
// tile reflectors), on the GPU when there is one, else LAPACK's on the CPUs. automatic target: gpu when a CUDA device is there and m >= n (the blocked QR, the
// fastest measured: docs/architecture.md, "Choosing the QR"), hybrid for m < n with a GPU (the
// blocked QR needs m >= n), cpu without a GPU. automatic algorithm: blocked on gpu, tile on cpu
// and hybrid. Throws std::invalid_argument for sizes, a combination that cannot run (blocked with
// target hybrid, tile on the GPU alone, blocked on the GPU with m < n), or a GPU target without a
// GPU. factorize() itself takes the blocked QR on the CPUs, in place, when a tile QR's tiles would
// not fit in host memory beside A (the choice's reason says so).
choice choose(int m, int n, const options& o = {});

// Runtime options the choice was tuned with (GPU streams, the urgent stream), `threads` workers;
// with choice::gpus > 1, that many logical GPUs (runtime_options::gpus).
runtime_options runtime_options_for(const choice& c, unsigned threads = 0);

// The factors of A = QR in the form the algorithm left them:
//   tile form    (algorithm tile): qr_factors<T> in host memory, A unchanged;
//   blocked form (algorithm blocked): LAPACK xGEQRT's output, R and V in A's own memory (host or
//                device: A is overwritten and must outlive the factorization; a device A factored
//                on the CPUs is copied to the host first and left as it was) and T (nb x min(m, n)).
// Every operation works on host or device matrices and for both forms; it runs where the factors
// are (tile form: the CPUs; blocked form on the host: LAPACK on the CPUs; blocked form on the
// device: the GPU), and stages operands that live in the other memory through it. Operations
// use the runtime the factorization was made on, and wait for their result.
template <class T>
class factorization {
 public:
  factorization(factorization&&) noexcept;
  factorization& operator=(factorization&&) noexcept;
  ~factorization();

  int m() const noexcept;
  int n() const noexcept;
  const struct choice& choice() const noexcept;
  bool blocked() const noexcept;        // the blocked (GEQRT) form, else the tile form
  memory where() const noexcept;        // where the factors live

  // C := op(Q) C, C with m rows.
  void apply_q(trans op, matrix_ref<T> c);
  // Q's first columns: q_shape::thin m x min(m, n), q_shape::full m x m; q must have that shape.
  void form_q(q_shape shape, matrix_ref<T> q);
  // min ||A X - B||_2 for m >= n and A of full rank: b (m x nrhs) := [X; residual components], as
  // LAPACK GELS leaves it. Throws std::runtime_error naming R's first zero diagonal entry when A
  // is rank deficient.
  void solve(matrix_ref<T> b);
  // R: the min(m, n) x n upper trapezoid into r (zeros below the diagonal).
  void copy_r(matrix_ref<T> r);

  // With options::full_t. Q = I - V T V^T with the full T, n x n upper triangular (LAPACK xGEQRT3's
  // output), and S = V T^T, m x n lower trapezoidal; apply_q then applies Q in one step (W = V^T C,
  // W = op(T) W, C -= V W), and blocks of Q need no Q: Q(r0:r1, c0:c1) = I - V(r0:r1, :) S(c0:c1, :)^T.
  bool full_t() const noexcept;
  void copy_t(matrix_ref<T> t);  // t: n x n, zeros below the diagonal
  void copy_s(matrix_ref<T> s);  // s: m x n, zeros above the diagonal
  // qb := Q(r0:r0+qb.m, c0:c0+qb.n): one GEMM of inner dimension min(n, r0 + qb.m, c0 + qb.n).
  void form_q_block(int r0, int c0, matrix_ref<T> qb);
  // y := op(Qb) x, Qb = Q(r0:r0+rows, c0:c0+cols), without forming Qb: two GEMMs. no_trans: x is
  // cols x k, y rows x k; trans: x is rows x k, y cols x k.
  void apply_q_block(trans op, int r0, int c0, int rows, int cols, matrix_ref<const T> x, matrix_ref<T> y);

  // Experts: the stored forms. tiles() is the tile form's factors (else null); geqrt_a()/geqrt_t()
  // the blocked form's A (m x n, ld geqrt_lda()) and T (nb x n, ld nb), in where()'s memory.
  const qr_factors<T>* tiles() const noexcept;
  const T* geqrt_a() const noexcept;
  int geqrt_lda() const noexcept;
  const T* geqrt_t() const noexcept;
  const T* geqrt_st() const noexcept;  // with full_t: T above and S below the diagonal (m x n, ld m)
  runtime& owner() const noexcept;

  struct state;

 private:
  explicit factorization(std::unique_ptr<state> s) noexcept;
  std::unique_ptr<state> _s;
  template <class U>
  friend factorization<U> factorize(runtime&, matrix_ref<U>, const options&);
  template <class U>
  friend factorization<U> factorize(matrix_ref<U>, const options&);
};

// Factors a on rt, which must have a GPU (runtime_options_for) when the choice needs one. Waits.
// Errors (bad arguments, NaN or Inf in A, out of memory) throw before any output is written; the
// runtime stays usable.
template <class T>
factorization<T> factorize(runtime& rt, matrix_ref<T> a, const options& o = {});

// The same on a runtime the factorization makes and owns (runtime_options_for(choose(...))).
template <class T>
factorization<T> factorize(matrix_ref<T> a, const options& o = {});

extern template class factorization<float>;
extern template class factorization<double>;

}  // namespace tessera::qr
