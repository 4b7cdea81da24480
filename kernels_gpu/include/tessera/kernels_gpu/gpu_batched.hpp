#pragma once
// Batched LU (GETRF), inverse, GETRS and GESV of many tiny matrices (order 1 to 32) on the GPU,
// after the seed's register-resident kernels: one matrix per group of lanes of a warp (the next
// power of two >= n), one row per lane kept in registers, several matrices per thread block, row
// swaps done lazily (each lane tracks where its row ends up and writes it there once), and the
// inverse by Gauss-Jordan elimination fused with the factorization.
//
// Results follow LAPACK's conventions matrix by matrix:
//  - ipiv: n 1-based pivots per matrix (matrix b's at ipiv + b*n), row i swapped with ipiv[i]-1,
//    chosen as LAPACK's IxAMAX does (the first row, in the current order, of largest |a|).
//  - info: per matrix, 0 or the first k (1-based) with U(k,k) exactly zero. The batch goes on past
//    singular matrices; their inverse is not defined (its entries are then Inf or NaN), and GESV
//    leaves their right-hand sides unchanged, as LAPACK's GESV does.
//  - NaN never wins a pivot search (LAPACK's IxAMAX skips NaN after the first element; here NaN
//    never wins, even first): a NaN or Inf input runs to the end with no hang or fault, and
//    spreads through that matrix only.
// Everything is enqueued on `stream`; nothing is allocated or synchronised. Bad arguments throw
// std::invalid_argument naming the argument; a failed launch throws std::runtime_error.
#include <cuda_runtime.h>

#include <tessera/kernels_cpu/batched.hpp>

namespace tessera::kernels {

// Where the matrices of a batch are, in device memory: tessera/kernels_cpu/batched.hpp's
// description (matrix b at ptrs[b] when ptrs is set, the array of pointers itself in device
// memory as cuBLAS and MAGMA have it, else at data + b * stride; column-major, leading dimension ld).
template <class T>
using gpu_batch = batch_ref<T>;

// The largest order the batched kernels take.
inline constexpr int gpu_batched_max_n = 32;

// Matrices one thread block of the lane kernels works on for order n in precision T (a count that
// is no multiple of it leaves the last block partly idle; tests use it).
template <class T>
int gpu_batched_per_block(int n);

// LU with partial pivoting of count n x n matrices, in place; ipiv (n * count) and info (count) in
// device memory.
template <class T>
void gpu_batched_getrf(int n, gpu_batch<T> a, int* ipiv, int* info, long long count,
                       cudaStream_t stream);

// A^-1 of each matrix into ainv (which may be a itself: in place), fused LU and Gauss-Jordan in one
// pass over the data; info as GETRF's. In double, orders 20-25, 27 and 29-32 run in blocks of eight
// steps whose update is on the tensor cores (sm_80 and later), their pivot search comparing the
// leading 32 bits of |a|: entries that agree there may pivot in another order than LAPACK's (no
// pivots are returned; the tests hold ||I - A A^-1|| to the same threshold).
template <class T>
void gpu_batched_inverse(int n, gpu_batch<T> a, gpu_batch<T> ainv, int* info, long long count,
                         cudaStream_t stream);

// X := A^-1 B for nrhs right-hand sides (b: n x nrhs each), given GETRF's factors and pivots.
template <class T>
void gpu_batched_getrs(int n, int nrhs, gpu_batch<T> lu, const int* ipiv, gpu_batch<T> b,
                       long long count, cudaStream_t stream);

// GESV fused: A := its LU factors, ipiv and info as GETRF's, B := A^-1 B (unchanged where info > 0).
template <class T>
void gpu_batched_gesv(int n, int nrhs, gpu_batch<T> a, int* ipiv, gpu_batch<T> b, int* info,
                      long long count, cudaStream_t stream);

}  // namespace tessera::kernels
