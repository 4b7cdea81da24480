// Inserts a small chain of dependent tasks through the installed headers and library, and checks
// that they ran in insertion order: a wrong result or a missing symbol fails the install test.
#include <cstdio>

#include <tessera/sched.hpp>

int main() {
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
  std::printf("consumer: x=%ld (want %ld), y=%ld (want %ld)\n", x, want_x, y, want_y);
  return x == want_x && y == want_y ? 0 : 1;
}
