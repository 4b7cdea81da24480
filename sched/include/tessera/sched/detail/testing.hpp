#pragma once
// Test-only hooks: make the GPU backend fail on purpose, to test what failures do (the error that
// reaches wait(), the cancelled sequence, nothing leaked, the runtime usable afterwards).
// Process-wide; each call replaces the count left from an earlier one.

namespace tessera::detail::testing {

// The next n device or pinned allocations the GPU backend makes (GPU task scratch, data's device
// copies, runtime::allocate_device / allocate_pinned) fail as if the memory were exhausted.
void fail_allocations(unsigned n) noexcept;

// The next n GPU task launches fail before their body runs, as if a CUDA call of the launch had.
void fail_gpu_launches(unsigned n) noexcept;

}  // namespace tessera::detail::testing
