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
TEST_CASE("qr update, GPU: larger blocks agree with the CPUs") {
  // Sizes where the panels, the Givens blocks and both lanes all have several steps.
  for (auto q : {tessera::qr::q_mode::full}) {
    upd::problem<double> p;
    auto u = upd::make<double>(p, 700, 400, 3, q, target::gpu, 0);
    upd::apply(u, p, upd::op::delete_columns, 50, 120);
    upd::check_factors(u, p, "delete 120 columns at 50 of 700 x 400");
    upd::apply(u, p, upd::op::insert_rows, 300, 150);
    upd::check_factors(u, p, "insert 150 rows at 300");
    upd::apply(u, p, upd::op::insert_columns, 100, 90);
    upd::check_factors(u, p, "insert 90 columns at 100");
    upd::apply(u, p, upd::op::delete_rows, 10, 40);
    upd::check_factors(u, p, "delete 40 rows at 10");
    upd::apply(u, p, upd::op::rank, 0, 20);
    upd::check_factors(u, p, "rank-20 update");
    // Wide strips: the Givens kernels' global-memory forms (past their shared-memory sizes).
    upd::apply(u, p, upd::op::insert_columns, 30, 150);
    upd::check_factors(u, p, "insert 150 columns at 30");
    upd::apply(u, p, upd::op::rank, 0, 130);
    upd::check_factors(u, p, "rank-130 update");
  }
}
