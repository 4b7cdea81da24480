// The tessera_qr executable: exit codes, checked runs, JSON output (parsed by python3), traces.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/qr/blocked_qr_gpu.hpp"
#include "tessera/qr/gpu.hpp"
#include "test_util.hpp"

#ifndef TESSERA_QR_EXE
#error "TESSERA_QR_EXE (the path of the tessera_qr executable) is set by qr/CMakeLists.txt"
#endif

namespace {

using outcome = tessera::testing::tool_outcome;
using tessera::testing::seed_arg;

outcome run(const std::string& args) { return tessera::testing::run_tool(TESSERA_QR_EXE, args); }

int shell(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}


}  // namespace

TEST_CASE("tessera_qr --check passes and exits 0, both precisions and shapes") {
  for (const char* args : {"--m 300 --n 200 --nb 64 --ib 16 --threads 2 --check",
                           "--m 150 --n 260 --nb 32 --ib 8 --precision s --check --repeat 3",
                           "--m 1 --n 1 --nb 8 --ib 4 --check"}) {
    CAPTURE(args);
    const outcome o = run(args + seed_arg() + " --device cpu");
    CAPTURE(o.out);
    CHECK(o.code == 0);
    CHECK(o.out.find("PASSED") != std::string::npos);
    CHECK(o.out.find("GFLOP/s") != std::string::npos);
    CHECK(o.out.find("running on the CPUs") != std::string::npos);
  }
}

TEST_CASE("tessera_qr: bad arguments exit 2 with a message") {
  struct bad {
    const char* args;
    const char* says;
  };
  for (const bad& b : {bad{"--nb -1", "--nb: -1 is too small: must be at least 0"},
                       bad{"--nb 64 --ib 24 --algorithm tile", "does not divide"},
                       bad{"--m -3", "--m: -3 is too small"}, bad{"--precision x", "precision"},
                       bad{"--threads 0", "--threads: 0 is too small: must be at least 1"},
                       bad{"--m 64 --n 64 --threads 100000", "--threads 100000: "},
                       bad{"--device tpu", "device"}, bad{"--repeat 0", "repeat"}, bad{"--lookahead -2", "lookahead"},
                       bad{"--no-such-option", "no-such-option"}, bad{"--algorithm lu", "algorithm"},
                       bad{"--matrix hilbert", "--matrix"}, bad{"--scale 0", "--scale"}, bad{"--cond -1", "--cond"},
                       bad{"--algorithm blocked --device hybrid", "--device hybrid --algorithm blocked"},
                       bad{"--algorithm blocked --lookahead 0", "the blocked QR needs at least 1"},
                       bad{"--m 64 --n 64 --trace out.txt", ".json, .dot or .svg"},
                       bad{"--m 64 --n 64 --trace /no/such/folder/run.json", "cannot write"}}) {
    CAPTURE(b.args);
    const outcome o = run(b.args);
    CAPTURE(o.out);
    CHECK(o.code == 2);
    CHECK(o.out.find(b.says) != std::string::npos);
  }
  CHECK(run("--help").code == 0);
  if (!tessera::qr::gpu_available()) {
    for (const char* device : {"--device gpu", "--device hybrid", "--memory device"}) {
      const outcome o = run(device);
      CAPTURE(o.out);
      CHECK(o.code == 2);
      CHECK(o.out.find("no CUDA device") != std::string::npos);
    }
  }
}

TEST_CASE("tessera_qr --algorithm blocked on a GPU: checked, JSON names the algorithm") {
  if (!tessera::qr::gpu_available()) return;  // without a GPU: the bad-arguments case above
  struct run_case {
    const char* args;
    const char* lookahead;  // as the JSON reports it
  };
  const std::string deep = "\"lookahead\": " + std::to_string(tessera::qr::default_blocked_lookahead(512));
  for (const run_case r : {run_case{"--m 700 --n 500 --nb 128 --ib 16 --device gpu --check", "\"lookahead\": 1"},
                           run_case{"--m 900 --n 800 --nb 96 --device gpu --lookahead 3 --check", "\"lookahead\": 3"},
                           run_case{"--m 900 --n 800 --nb 96 --memory device --check", "\"memory\": \"device\""},
                           run_case{"--m 512 --n 512 --precision s --check", deep.c_str()}}) {
    CAPTURE(r.args);
    const outcome o = run(std::string(r.args) + " --algorithm blocked --json" + seed_arg());
    CAPTURE(o.out);
    CHECK(o.code == 0);
    CHECK(o.out.find("\"algorithm\": \"blocked\"") != std::string::npos);
    CHECK(o.out.find(r.lookahead) != std::string::npos);
    CHECK(o.out.find("\"passed\": true") != std::string::npos);
  }
}

TEST_CASE("tessera_qr without --device uses the GPU when there is one and says so when there is none") {
  const outcome o = run("--m 64 --n 64 --nb 16 --ib 4 --check" + seed_arg());
  CAPTURE(o.out);
  CHECK(o.code == 0);
  if (tessera::qr::gpu_available()) {
    CHECK(o.out.find("target gpu, algorithm blocked") != std::string::npos);
    // Wider than tall: the blocked QR needs m >= n, so the default is the tile hybrid.
    const outcome wide = run("--m 96 --n 160 --nb 32 --ib 8 --check --json" + seed_arg());
    CAPTURE(wide.out);
    CHECK(wide.code == 0);
    CHECK(wide.out.find("\"algorithm\": \"tile\"") != std::string::npos);
    CHECK(wide.out.find("\"passed\": true") != std::string::npos);
  } else {
    CHECK(o.out.find("no CUDA device: running on the CPUs") != std::string::npos);
  }
}

TEST_CASE("tessera_qr --json prints one object that python3 parses") {
  const std::string exe = TESSERA_QR_EXE;
  const std::string check =
      "import json, sys; d = json.load(sys.stdin); "
      "assert d['m'] == 200 and d['n'] == 120 and d['nb'] == 32 and d['ib'] == 8, d; "
      "assert d['precision'] == 'd' and d['device'] == 'cpu' and d['threads'] == 2, d; "
      "assert d['lookahead'] == 0 and d['seconds'] > 0 and d['gflops'] > 0, d; "
      "assert d['algorithm'] == 'tile' and d['memory'] == 'host' and d['matrix'] == 'random', d; "
      "assert 'cpu' in d['reason'] and d['in_double'] is False, d; "
      "assert d['residual_qr'] < 60 and d['residual_orth'] < 60 and d['passed'] is True, d";
  CHECK(shell(exe + " --m 200 --n 120 --nb 32 --ib 8 --threads 2 --device cpu --check --json" +
              seed_arg() + " | python3 -c \"" + check + "\"") == 0);
  // Without --check the residual fields are null.
  CHECK(shell(exe + " --m 50 --n 50 --nb 16 --ib 4 --json | python3 -c \"import json, sys; "
                    "d = json.load(sys.stdin); assert d['passed'] is None and d['residual_qr'] is None\"") == 0);
}

TEST_CASE("tessera_qr --trace writes JSON, DOT and SVG and prints the summary") {
  const std::string dir = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
  const std::string base = dir + "/tessera_qr_test_" + std::to_string(tessera::testing::seed() % 1000000);
  for (const char* ext : {".json", ".dot", ".svg"}) {
    const std::string file = base + ext;
    std::remove(file.c_str());
    const outcome o = run("--m 96 --n 96 --nb 32 --ib 8 --threads 2 --repeat 2 --device cpu --trace " + file);
    CAPTURE(o.out);
    CHECK(o.code == 0);
    CHECK(o.out.find("trace: ") != std::string::npos);
    std::ifstream in(file);
    REQUIRE(in.good());
    std::stringstream content;
    content << in.rdbuf();
    const std::string text = content.str();
    if (std::string(ext) == ".json") {
      CHECK(shell("python3 -c \"import json; d = json.load(open('" + file + "')); "
                  "names = {e.get('name') for e in (d['traceEvents'] if isinstance(d, dict) else d)}; "
                  "assert {'geqrt', 'tsqrt', 'ormqr', 'tsmqr'} <= names, names\"") == 0);
    } else if (std::string(ext) == ".dot") {
      CHECK(text.find("digraph") != std::string::npos);
      CHECK(text.find("tsmqr") != std::string::npos);
    } else {
      CHECK(text.find("<svg") != std::string::npos);
    }
    std::remove(file.c_str());
  }
}

TEST_CASE("tessera_qr --matrix: the test matrix classes pass the check on the CPUs") {
  for (const char* args : {"--matrix geometric --cond 1e12", "--matrix one-small --cond 1e15 --scale 1e-300",
                           "--matrix log-uniform --cond 1e8 --scale 1e300", "--matrix zero",
                           "--matrix zero-columns --precision s", "--matrix repeated-columns",
                           "--matrix graded --cond 1e10"}) {
    CAPTURE(args);
    const outcome o = run(std::string(args) + " --m 160 --n 120 --nb 32 --ib 8 --threads 2 --device cpu --check" +
                          seed_arg());
    CAPTURE(o.out);
    CHECK(o.code == 0);
    CHECK(o.out.find("PASSED") != std::string::npos);
  }
}

TEST_CASE("tessera_qr --device cpu --algorithm blocked: LAPACK's blocked QR in place, checked") {
  for (const char* args : {"--m 300 --n 200 --nb 32", "--m 150 --n 260 --precision s", "--m 257 --n 257 --repeat 2"}) {
    CAPTURE(args);
    const outcome o = run(std::string(args) + " --device cpu --algorithm blocked --threads 2 --check --json" +
                          seed_arg());
    CAPTURE(o.out);
    CHECK(o.code == 0);
    CHECK(o.out.find("\"algorithm\": \"blocked\"") != std::string::npos);
    CHECK(o.out.find("\"passed\": true") != std::string::npos);
  }
}

TEST_CASE("tessera_qr: a problem larger than memory exits 3 at once, naming the amounts") {
  const outcome o = run("--m 4000000 --n 4000000 --device cpu");
  CAPTURE(o.out);
  CHECK(o.code == 3);
  CHECK(o.out.find("not enough host memory") != std::string::npos);
  CHECK(o.out.find("needs 128000.00 GB") != std::string::npos);
  CHECK(o.out.find("available") != std::string::npos);
}

TEST_CASE("tessera_qr: empty matrices are factored, as LAPACK allows") {
  for (const char* args : {"--m 0 --n 5", "--m 7 --n 0", "--m 0 --n 0"}) {
    CAPTURE(args);
    const outcome o = run(std::string(args) + " --device cpu --check");
    CAPTURE(o.out);
    CHECK(o.code == 0);
  }
}

TEST_CASE("tessera_qr --full-t: the full T and S checked on every device there is, JSON fields, bad arguments") {
  std::vector<std::string> devices{"cpu"};
  if (tessera::qr::gpu_available()) {
    devices.push_back("gpu");
    devices.push_back("gpu --memory device");
  }
  for (const std::string& device : devices)
    for (const char* args : {"--m 300 --n 200 --nb 32", "--m 130 --n 130 --nb 64 --precision s"}) {
      CAPTURE(device);
      CAPTURE(args);
      const outcome o = run(std::string(args) + " --device " + device + " --full-t --threads 2 --check --json" +
                            seed_arg());
      CAPTURE(o.out);
      CHECK(o.code == 0);
      CHECK(o.out.find("\"full_t\": true") != std::string::npos);
      CHECK(o.out.find("\"residual_s\": null") == std::string::npos);
      CHECK(o.out.find("\"error_t_lapack\": null") == std::string::npos);
      CHECK(o.out.find("\"passed\": true") != std::string::npos);
    }
  const outcome text = run("--m 120 --n 100 --nb 32 --device cpu --full-t --threads 2 --check" + seed_arg());
  CAPTURE(text.out);
  CHECK(text.code == 0);
  CHECK(text.out.find("with the full T") != std::string::npos);
  CHECK(text.out.find("||S - V T^T||") != std::string::npos);
  CHECK(text.out.find("||T - T_LAPACK||") != std::string::npos);
  const outcome plain = run("--m 120 --n 100 --nb 32 --device cpu --threads 2 --json" + seed_arg());
  CHECK(plain.out.find("\"full_t\": false") != std::string::npos);
  for (const char* args : {"--m 100 --n 120 --full-t --device cpu", "--m 200 --n 100 --full-t --algorithm tile",
                           "--m 200 --n 100 --full-t --device hybrid"}) {
    CAPTURE(args);
    const outcome o = run(args);
    CAPTURE(o.out);
    CHECK(o.code == 2);
    CHECK(o.out.find("full") != std::string::npos);
  }
}

TEST_CASE("tessera_qr --single-in-double: single precision in double on a device matrix, checked; bad values exit 2") {
  CHECK(run("--m 64 --n 64 --single-in-double 2").code == 2);
  if (!tessera::qr::gpu_available()) return;
  for (const char* mode : {"0", "1"})
    for (const char* extra : {"", " --full-t"}) {
      CAPTURE(mode);
      CAPTURE(extra);
      const outcome o = run(std::string("--m 300 --n 200 --nb 64 --precision s --memory device --threads 2 --check --json "
                                        "--single-in-double ") + mode + extra + seed_arg());
      CAPTURE(o.out);
      CHECK(o.code == 0);
      CHECK(o.out.find("\"passed\": true") != std::string::npos);
      CHECK(o.out.find(std::string("\"in_double\": ") + (mode[0] == '1' ? "true" : "false")) != std::string::npos);
    }
}

TEST_CASE("tessera_qr --gpus: more GPUs than the machine has exit 2 naming them; on one device, checked with peer bytes") {
  const int present = tessera::qr::gpu_count();
  const outcome over = run("--m 300 --n 200 --gpus " + std::to_string(std::max(2, present + 1)));
  CAPTURE(over.out);
  CHECK(over.code == 2);
  CHECK(over.out.find("this machine has " + std::to_string(present) + " CUDA device") != std::string::npos);
  CHECK(run("--m 300 --n 200 --gpus 0").code == 2);
  if (!tessera::qr::gpu_available()) return;
  // Two logical GPUs on device 0: the several-GPU QR, checked; JSON names the GPUs and the bytes
  // that went between them, step by step (3 steps of nb 128: V and T of the first two panels).
  const std::string exe = TESSERA_QR_EXE;
  const std::string check =
      "import json, sys; d = json.load(sys.stdin); "
      "assert d['gpus'] == 2 and d['passed'] is True, d; "
      "steps = d['peer_bytes_per_step']; assert len(steps) == 3 and steps[2] == 0, d; "
      "assert steps[0] == (600 * 128 + 128 * 128) * 8, d; "
      "assert d['peer_bytes'] == sum(steps), d; assert 'on 2 GPUs' in d['reason'], d";
  CHECK(shell(exe + " --m 600 --n 300 --nb 128 --gpus 2 --gpus-on-one-device --check --json" + seed_arg() +
              " | python3 -c \"" + check + "\"") == 0);
  const outcome text = run("--m 600 --n 300 --nb 128 --gpus 3 --gpus-on-one-device --precision s --check" + seed_arg());
  CAPTURE(text.out);
  CHECK(text.code == 0);
  CHECK(text.out.find("gpus      3:") != std::string::npos);
  CHECK(text.out.find("PASSED") != std::string::npos);
}
