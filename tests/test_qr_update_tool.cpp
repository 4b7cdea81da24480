// The tessera_qr_update executable: checked runs exit 0 in every Q mode, bad arguments exit 2 and
// name the argument, JSON output.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "test_util.hpp"

#ifndef TESSERA_QR_UPDATE_EXE
#error "TESSERA_QR_UPDATE_EXE (the path of tessera_qr_update) is set by qr/CMakeLists.txt"
#endif

namespace {

using outcome = tessera::testing::tool_outcome;
using tessera::testing::seed_arg;

outcome run(const std::string& args) { return tessera::testing::run_tool(TESSERA_QR_UPDATE_EXE, args); }


}  // namespace

TEST_CASE("tessera_qr_update --check passes and exits 0 in every Q mode and precision") {
  for (const char* args :
       {"--rows 120 --cols 50 --ops dc:3:7,ir:10:12,ic:20:5,dr:0:9,rk:4 --check",
        "--rows 120 --cols 50 --ops random:25 --precision s --check",
        "--rows 90 --cols 40 --q thin --ops dc:0:10,ir:90:30,random:10 --check",
        "--rows 90 --cols 40 --q none --nrhs 3 --ops random:15 --check --nb 8"}) {
    CAPTURE(args);
    const outcome o = run(args + seed_arg() + " --device cpu");
    CAPTURE(o.out);
    CHECK(o.code == 0);
    CHECK(o.out.find("passed") != std::string::npos);
  }
}

TEST_CASE("tessera_qr_update: bad arguments exit 2 and name the argument") {
  struct bad {
    const char* args;
    const char* says;
  };
  for (const bad& b : {bad{"--rows 50 --cols 60", "--cols"}, bad{"--ops dc:1", "--ops dc:1"},
                       bad{"--ops xx:1:2", "expected"}, bad{"--ops dc:a:2", "a is not a number"},
                       bad{"--rows 50 --cols 20 --ops dc:15:10", "k + p"},
                       bad{"--rows 50 --cols 20 --ops ic:0:31", "u.cols"},
                       bad{"--rows 50 --cols 20 --q none --ops dr:0:1", "full Q"},
                       bad{"--precision q", "--precision"}}) {
    CAPTURE(b.args);
    const outcome o = run(std::string(b.args) + " --device cpu");
    CAPTURE(o.out);
    CHECK(o.code == 2);
    CHECK(o.out.find(b.says) != std::string::npos);
  }
}

TEST_CASE("tessera_qr_update --json prints one object with the updates and the residuals") {
  const outcome o = run("--rows 80 --cols 30 --ops dc:0:5,rk:2 --check --json --device cpu" + seed_arg());
  CAPTURE(o.out);
  CHECK(o.code == 0);
  CHECK(o.out.rfind("{\"rows\":80,\"cols\":30,\"final_rows\":80,\"final_cols\":25", 0) == 0);
  CHECK(o.out.find("\"op\":\"delete_columns\",\"k\":0,\"p\":5") != std::string::npos);
  CHECK(o.out.find("\"op\":\"rank_update\"") != std::string::npos);
  CHECK(o.out.find("\"passed\":true") != std::string::npos);
  CHECK(o.out.find("\"residual_ls\":") != std::string::npos);
}
