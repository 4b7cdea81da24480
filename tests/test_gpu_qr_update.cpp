// QR updating on the GPU (tessera/qr/update.hpp, target::gpu: Q, R and Q^T B in device memory):
// the same checks as the CPU test (tests/qr_update_checks.hpp). Skipped without a CUDA device.
#include "gpu_test_util.hpp"
#include "qr_update_checks.hpp"

namespace upd = tessera::testing::update;
using tessera::qr::target;

TEST_CASE("qr update, GPU: every update type, position, size, shape and Q mode (double)") {
  upd::every_update<double>(target::gpu);
}
TEST_CASE("qr update, GPU: every update type, position, size, shape and Q mode (float)") {
  upd::every_update<float>(target::gpu);
}
TEST_CASE("qr update, GPU: 200 random updates keep the residuals small") {
  upd::drift<double>(target::gpu);
  upd::drift<float>(target::gpu);
}
TEST_CASE("qr update, GPU: bad arguments throw and leave the factorization unchanged") {
  upd::bad_arguments<double>(target::gpu);
  upd::bad_arguments<float>(target::gpu);
}
TEST_CASE("qr update, GPU: larger blocks, wide strips") { upd::larger_blocks(target::gpu); }
TEST_CASE("qr update, GPU: deleting columns without Q at the default panel widths") {
  upd::deletions_without_q<double>(target::gpu);
  upd::deletions_without_q<float>(target::gpu);
}
TEST_CASE("qr update, GPU: deleting 200 or more columns with Q (128-column panels on the GPU)") {
  upd::deletions_with_wide_panels<double>(target::gpu);
  upd::deletions_with_wide_panels<float>(target::gpu);
}
