// The QR updates' lane checker (qr/src/lane_check.hpp, a private header): a conflicting access on
// another lane without a chain of deps throws; ordered ones, reads after reads and disjoint blocks
// of one matrix do not.
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "../qr/src/lane_check.hpp"

using tessera::qr::detail::block;
using tessera::qr::detail::lane_checker;
using tessera::qr::detail::overlap;
using tessera::qr::detail::span;

TEST_CASE("lane check: a write read on another lane needs a dep") {
  std::vector<double> a(100 * 50), w(64);
  lane_checker c;
  c.access(2, {}, {block(a.data(), 100, 50, 100)}, "D's rotations");
  CHECK_THROWS_AS(c.access(0, {block(a.data() + 10, 5, 50, 100)}, {block(w.data(), 5, 1, 64)}, "D's move"),
                  std::logic_error);
  lane_checker d;
  d.access(2, {}, {block(a.data(), 100, 50, 100)}, "D's rotations");
  d.dep(2, 0);
  CHECK_NOTHROW(d.access(0, {block(a.data() + 10, 5, 50, 100)}, {block(w.data(), 5, 1, 64)}, "D's move"));
}

TEST_CASE("lane check: a read overwritten on another lane (the rank-k update's W) needs a dep") {
  std::vector<float> x(8000 * 32);
  lane_checker c;
  c.access(0, {span(x.data(), 8000 * 16)}, {}, "R += W V^T");
  CHECK_THROWS_AS(c.access(1, {}, {block(x.data(), 8000, 4, 8000)}, "Q's move"), std::logic_error);
  c.dep(0, 1);
  CHECK_NOTHROW(c.access(1, {}, {block(x.data(), 8000, 4, 8000)}, "Q's move"));
}

TEST_CASE("lane check: deps compose, reads share, one lane is in order, sync and forget clear") {
  std::vector<double> a(64 * 64);
  const auto all = block(a.data(), 64, 64, 64);
  lane_checker c;
  c.access(0, {}, {all}, "w0");
  c.access(0, {all}, {all}, "same lane");  // one lane: in order
  c.dep(0, 2);
  c.dep(2, 1);
  CHECK_NOTHROW(c.access(1, {all}, {}, "r1 after 0 -> 2 -> 1"));
  CHECK_NOTHROW(c.access(2, {all}, {}, "r2"));  // reads beside reads
  CHECK_THROWS_AS(c.access(0, {}, {all}, "w0 over unordered reads"), std::logic_error);
  c.sync();
  CHECK_NOTHROW(c.access(0, {}, {all}, "w0 after sync"));
  c.forget(a.data(), a.size() * sizeof(double));
  CHECK_NOTHROW(c.access(1, {}, {all}, "w1 on memory freed and reused"));
}

TEST_CASE("lane check: blocks of one matrix overlap only where their rows and columns do") {
  std::vector<double> r(100 * 100);
  const double* p = r.data();
  CHECK_FALSE(overlap(block(p, 10, 100, 100), block(p + 10, 90, 100, 100)));  // rows 0-9 / 10-99
  CHECK_FALSE(overlap(block(p, 100, 10, 100), block(p + 1000, 100, 5, 100)));  // columns 0-9 / 10-14
  CHECK(overlap(block(p + 5, 10, 3, 100), block(p + 212, 5, 1, 100)));  // rows 12-16 of column 2
  CHECK_FALSE(overlap(block(p + 5, 10, 3, 100), block(p + 200, 4, 1, 100)));  // rows 0-3 of column 2
  CHECK(overlap(span(p, 10000), block(p + 9999, 1, 1, 100)));
  CHECK_FALSE(overlap(span(p, 100), block(p + 100, 1, 1, 100)));
  std::vector<double> other(10);
  CHECK_FALSE(overlap(span(other.data(), 10), block(p, 100, 100, 100)));
}
