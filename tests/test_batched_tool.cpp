// tessera_batched, the tool: exit codes (0 done, 1 check failed, 2 bad arguments), its checks,
// its JSON, and the CPU fallback's message.
#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

#include "test_util.hpp"

namespace {

using outcome = tessera::testing::tool_outcome;
using tessera::testing::seed_arg;

outcome run(const std::string& args) { return tessera::testing::run_tool(TESSERA_BATCHED_EXE, args); }

}  // namespace

TEST_CASE("tessera_batched: each operation checks and passes on the CPUs") {
  for (const char* op : {"lu", "inv", "solve"})
    for (const char* layout : {"strided", "pointers"}) {
      const outcome r = run(std::string(op) + " --n 11 --count 300 --device cpu --threads 2 --check --layout " + layout);
      CAPTURE(r.out);
      CHECK(r.code == 0);
      CHECK(r.out.find("passed") != std::string::npos);
    }
}

TEST_CASE("tessera_batched: JSON, single precision, several right-hand sides") {
  const outcome r = run("solve --n 32 --count 100 --nrhs 3 --precision s --device cpu --check --json");
  CAPTURE(r.out);
  CHECK(r.code == 0);
  CHECK(r.out.find("\"operation\": \"solve\"") != std::string::npos);
  CHECK(r.out.find("\"nrhs\": 3") != std::string::npos);
  CHECK(r.out.find("\"passed\": true") != std::string::npos);
  CHECK(r.out.find("\"device\": \"cpu\"") != std::string::npos);
}

TEST_CASE("tessera_batched: bad arguments exit 2 naming the argument") {
  outcome r = run("lu --n 40 --count 1");
  CHECK(r.code == 2);
  CHECK(r.out.find("--n 40: must be <= 32") != std::string::npos);
  CHECK(run("lu --n 0").code == 2);
  CHECK(run("qr --n 4").code == 2);
  CHECK(run("lu --precision z").code == 2);
  CHECK(run("lu --layout rows").code == 2);
  CHECK(run("lu --depth 1 --count 1").code == 2);
  r = run("lu --cpu-share 1.5 --count 1");
  CHECK(r.code == 2);
  CHECK(r.out.find("--cpu-share") != std::string::npos);
}

TEST_CASE("tessera_batched: without a GPU, --device auto says it runs on the CPUs; --device gpu is refused") {
  const outcome probe = run("lu --n 2 --count 1 --device gpu");
  if (probe.code == 2) {  // no CUDA device here
    CHECK(probe.out.find("no CUDA device") != std::string::npos);
    const outcome r = run("lu --n 2 --count 4");
    CHECK(r.code == 0);
    CHECK(r.out.find("no CUDA device: running on the CPUs") != std::string::npos);
  } else {
    CHECK(probe.code == 0);
  }
}

TEST_CASE("tessera_batched: a batch larger than host memory exits 3 before allocating") {
  const outcome r = run("lu --n 32 --count 100000000000 --device cpu");
  CAPTURE(r.out);
  CHECK(r.code == 3);
  CHECK(r.out.find("bytes of host memory") != std::string::npos);
}
