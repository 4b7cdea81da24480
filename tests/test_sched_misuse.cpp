// Misuse of the runtime is an error, not a hang or a race: GPU-only calls on a runtime without a
// GPU backend.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/sched.hpp"

TEST_CASE("without a GPU backend: device-only data and device memory are refused, the runtime stays usable") {
  tessera::runtime rt({.workers = 2});
  REQUIRE_FALSE(rt.has_gpu());
  std::vector<double> fake(16);  // any address: the call is refused before it is looked at
  CHECK_THROWS_WITH_AS(rt.register_device_data(fake.data(), 8 * sizeof(double), 2, 8 * sizeof(double)),
                       doctest::Contains("no GPU backend"), std::logic_error);
  CHECK_THROWS_AS(rt.allocate_device(64), std::logic_error);
  CHECK_THROWS_AS(rt.allocate_pinned(64), std::logic_error);
  tessera::device_buffer empty;
  CHECK_FALSE(empty);
  CHECK(empty.get<double>() == nullptr);
  int x = 0;
  auto h = rt.register_data(&x, sizeof x);
  rt.task([&] { x = 3; }).write(h).submit();
  rt.wait_all();
  CHECK(x == 3);
}
