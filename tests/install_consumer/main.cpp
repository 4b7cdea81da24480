// Inserts a small chain of dependent tasks through the installed headers and library, and checks
// that they ran in insertion order, and that Tessera::sched alone has no GPU backend (it names the
// library that has): a wrong result or a missing symbol fails the install test.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include <tessera/sched.hpp>

namespace {
// The resident set size from /proc (Linux), in KiB; -1 where there is none.
long rss_kib() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kib = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, "VmRSS:", 6) == 0) kib = std::strtol(line + 6, nullptr, 10);
  std::fclose(f);
  return kib;
}
}  // namespace

int main() {
  std::printf("consumer: RSS at start %ld KiB\n", rss_kib());
  // Linked to Tessera::sched alone: no GPU backend, and asking for one says which library it is in.
  if (tessera::runtime::gpu_available()) return 2;
  try {
    tessera::runtime gpu({.workers = 1, .gpu_streams = 1});
    return 3;
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).find("Tessera::sched_cuda") == std::string::npos) return 4;
  }
  tessera::runtime rt({.workers = 2});
  long x = 0, y = 0;
  auto hx = rt.register_data(&x, sizeof x);
  auto hy = rt.register_data(&y, sizeof y);
  for (int i = 1; i <= 100; ++i) {
    rt.task([&x, i] { x = x * 3 % 1000003 + i; }).read_write(hx).submit();  // a chain on x (WAW)
    rt.task([&x, &y] { y += x; }).read(hx).read_write(hy).submit();         // RAW on x, then WAR
  }
  rt.wait_all();
  long want_x = 0, want_y = 0;
  for (int i = 1; i <= 100; ++i) {
    want_x = want_x * 3 % 1000003 + i;
    want_y += want_x;
  }
  std::printf("consumer: x=%ld (want %ld), y=%ld (want %ld), RSS %ld KiB\n", x, want_x, y, want_y, rss_kib());
  return x == want_x && y == want_y ? 0 : 1;
}
