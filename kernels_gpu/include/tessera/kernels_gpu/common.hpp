#pragma once
// Conventions shared by the GPU kernels (kernels_gpu/, the seed's section 3.2 on cuBLAS).
//
//  - Plain functions on column-major device pointers, int sizes and LAPACK leading dimensions,
//    for float and double. They know nothing of the scheduler.
//  - Everything is enqueued on the stream of the cuBLAS handle (the caller sets it with
//    cublasSetStream); nothing is allocated, freed or synchronised inside a kernel.
//  - Workspace is caller-owned device memory of at least the matching *_workspace_size elements,
//    passed with its length lwork (checked).
//  - The handle's pointer mode is left as found; its math mode (TF32 or not) is the caller's.
//  - Bad arguments throw std::invalid_argument naming the argument; a failing CUDA or cuBLAS call
//    throws std::runtime_error. Like any asynchronous CUDA work, a failure of an enqueued
//    operation shows up at the caller's next synchronisation.
//  - For tile QR, only Q^T applied from the left is provided. The batched tiny-matrix kernels
//    (gpu_batched.hpp) take a cudaStream_t instead of a cuBLAS handle.
#include <cstddef>

#include <cublas_v2.h>
