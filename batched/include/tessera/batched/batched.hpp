#pragma once
// Batched LU factorization, inversion and solves of very many tiny matrices (order 1 to 32), on
// the GPU (register-resident kernels, tessera/kernels_gpu/gpu_batched.hpp) or the CPUs (LAPACK per
// matrix, spread over the cores as tasks on the runtime).
//
//   std::vector<double> a(count * n * n);                   // count column-major n x n matrices
//   std::vector<int> ipiv(count * n), info(count);
//   auto r = tessera::batched::lu(tessera::batched::strided(a.data(), n, count), ipiv.data(), info.data());
//   std::puts(r.reason.c_str());                              // where it ran and why
//
// Per matrix, results follow LAPACK (GETRF, GETRI, GETRS, GESV): 1-based pivots, info = the first
// zero pivot (the batch goes on), a singular matrix's inverse undefined, GESV leaving its B as it
// was. ipiv (n per matrix, matrix b's at ipiv + b*n) and info (one per matrix) live in the same
// memory as the matrices.
//
// Where it runs: with the batch in device memory, on the GPU. With it in host memory, on the GPU
// when there is one (target::automatic), the batch streamed through it in chunks: tasks on the
// runtime pack a chunk into pinned memory, the runtime copies it over, the kernel runs, the runtime
// copies it back and a task unpacks it, several chunks in flight so copies overlap the kernels; or
// on the CPUs. options::device_memory_cap bounds the device memory used (forcing small chunks).
//
// Errors: bad arguments throw std::invalid_argument naming the argument (e.g. "tessera::batched::lu:
// n = 40: must be <= 32"); too little device or pinned memory for even one matrix per chunk throws
// tessera::out_of_memory before anything is allocated.
#include <cstddef>
#include <string>

#include "tessera/sched/memory.hpp"
#include "tessera/sched/runtime.hpp"

namespace tessera::batched {

inline constexpr int max_n = 32;

enum class memory { host, device };
enum class target { automatic, cpu, gpu };

// count matrices of rows x cols, column-major, leading dimension ld: matrix b at pointers[b] when
// pointers is set (the array of pointers in the same memory as the matrices), else at
// data + b * stride.
template <class T>
struct batch {
  T* data = nullptr;
  long long stride = 0;
  T* const* pointers = nullptr;
  int rows = 0, cols = 0, ld = 0;
  long long count = 0;
  memory where = memory::host;
};

// One allocation: matrix b at data + b * stride.
template <class T>
batch<T> strided(T* data, int rows, int cols, int ld, long long stride, long long count,
                 memory where = memory::host) {
  return {data, stride, nullptr, rows, cols, ld, count, where};
}
// count packed n x n matrices (ld = n, stride = n * n).
template <class T>
batch<T> strided(T* data, int n, long long count, memory where = memory::host) {
  return {data, static_cast<long long>(n) * n, nullptr, n, n, n, count, where};
}
// An array of pointers, as cuBLAS and MAGMA take.
template <class T>
batch<T> pointer_array(T* const* pointers, int rows, int cols, int ld, long long count,
                       memory where = memory::host) {
  return {nullptr, 0, pointers, rows, cols, ld, count, where};
}

struct options {
  target on = target::automatic;
  // Bytes of device memory a host-resident batch may use on the GPU (staging for the chunks in
  // flight); 0: 80% of what is free. Tests set it small to force many chunks.
  std::size_t device_memory_cap = 0;
  // Chunks in flight through the GPU (each has its own pinned and device staging), at least 2:
  // enough that packing and unpacking on the CPUs keep up with the copies.
  int depth = 16;
  // Bytes of staging a chunk (matrices, pivots, info); 0: 8 MiB. The cap above may make it smaller.
  std::size_t chunk_bytes = 0;
  // CPU threads (the CPU path, packing and unpacking); 0: all cores.
  unsigned threads = 0;
  // Share of a host-resident batch that the CPUs factor themselves (LAPACK's algorithms per matrix, in the
  // caller's memory) while the rest streams through the GPU: the batch's last matrices. Negative:
  // measured per call, for LU and the inverse of a packed batch in pinned memory (the in-place
  // path): the CPUs' timed rate against the link's measured bandwidth, none below 5%; a staged
  // batch gets none (packing it already holds the cores). 0: none; up to 1: that share.
  double cpu_share = -1;
  // A runtime to run on (its workers; for the GPU path it needs gpu_streams >= 1), kept by the
  // caller across calls so that threads, streams and pinned staging are made once. Null: each
  // call makes its own (costs tens of milliseconds with a GPU). A streamed call registers its
  // `depth` staging slots as data of this runtime.
  runtime* rt = nullptr;
};

// What ran.
struct report {
  target ran_on = target::cpu;
  std::string reason;
  long long chunks = 0;        // GPU runs of a host-resident batch: chunks streamed; else 0
  long long matrices_per_chunk = 0;
  long long singular = 0;      // matrices with info > 0
  std::size_t h2d_bytes = 0, d2h_bytes = 0;
  // Streamed LU or inverse of a packed batch in pinned (page-locked) memory: the chunks went
  // straight between it and the GPU, no core packing or unpacking them.
  bool copied_in_place = false;
  // Streamed calls: matrices the CPUs did (options::cpu_share), the batch's last ones.
  long long cpu_matrices = 0;
};

// A = P L U in place.
template <class T>
report lu(batch<T> a, int* ipiv, int* info, const options& o = {});
// ainv := A^-1 (ainv may be a: in place); on the GPU fused with the factorization.
template <class T>
report inverse(batch<T> a, batch<T> ainv, int* info, const options& o = {});
// B := A^-1 B from GETRF's factors and pivots (B n x nrhs each).
template <class T>
report getrs(batch<T> lu, const int* ipiv, batch<T> b, const options& o = {});
// A := its LU factors, B := A^-1 B (GESV), fused on the GPU.
template <class T>
report gesv(batch<T> a, int* ipiv, batch<T> b, int* info, const options& o = {});

// A CUDA device is present and this build has the GPU path.
bool gpu_available();
// Its name, or "" without one.
std::string gpu_name();

// Device memory the streamed path needs per matrix for an operation (staging of A, B, pivots,
// info), so callers and tests can size device_memory_cap.
std::size_t staging_bytes_per_matrix(int n, int nrhs, std::size_t elem_size);

}  // namespace tessera::batched
