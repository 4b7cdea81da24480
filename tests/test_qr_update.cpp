// QR updating on the CPUs (tessera/qr/update.hpp): every update type, position, size, shape and
// Q mode in both precisions, 200 random updates in a row, bad arguments. The checks are shared
// with the GPU test (tests/qr_update_checks.hpp).
#include "qr_update_checks.hpp"

namespace upd = tessera::testing::update;
using tessera::qr::target;

TEST_CASE("qr update, CPUs: every update type, position, size, shape and Q mode (double)") {
  upd::every_update<double>(target::cpu);
}
TEST_CASE("qr update, CPUs: every update type, position, size, shape and Q mode (float)") {
  upd::every_update<float>(target::cpu);
}
TEST_CASE("qr update, CPUs: 200 random updates keep the residuals small") {
  upd::drift<double>(target::cpu);
  upd::drift<float>(target::cpu);
}
TEST_CASE("qr update, CPUs: bad arguments throw and leave the factorization unchanged") {
  upd::bad_arguments<double>(target::cpu);
  upd::bad_arguments<float>(target::cpu);
}
TEST_CASE("qr update, CPUs: larger blocks, wide strips") { upd::larger_blocks(target::cpu); }
TEST_CASE("qr update, CPUs: the sequence that failed the GPU tool's check in single (2026-11-29)") {
  upd::tool_sequence<float>(target::cpu, 1000, 375);
  upd::tool_sequence<double>(target::cpu, 1000, 375);
}
TEST_CASE("qr update, CPUs: deleting columns without Q at the default panel widths") {
  upd::deletions_without_q<double>(target::cpu);
  upd::deletions_without_q<float>(target::cpu);
}
TEST_CASE("qr update, CPUs: adding rows without Q at the default panel width") {
  upd::insertions_without_q<double>(target::cpu);
  upd::insertions_without_q<float>(target::cpu);
}
TEST_CASE("qr update, CPUs: adding more rows than the persistent kernel takes") {
  upd::insertions_past_the_kernel<double>(target::cpu);
  upd::insertions_past_the_kernel<float>(target::cpu);
}
TEST_CASE("qr update, CPUs: deleting 200 to 600 columns with Q (both forms)") {
  upd::deletions_with_wide_panels<double>(target::cpu);
  upd::deletions_with_wide_panels<float>(target::cpu);
}
TEST_CASE("qr update, CPUs: deleting more than 32 columns, then the updates that read R below its columns") {
  upd::wide_deletion_then<double>(target::cpu);
  upd::wide_deletion_then<float>(target::cpu);
}
