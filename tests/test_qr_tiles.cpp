// Tile storage, handles and the conversions to and from LAPACK layout.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/qr.hpp"
#include "tessera/sched.hpp"
#include "test_util.hpp"

using namespace tessera::qr;
using tessera::testing::invalid_message;
using tessera::testing::random_matrix;

TEST_CASE("tile_matrix: tile counts, partial tiles, compact layout") {
  tile_matrix<double> a(1000, 700, 256);
  CHECK(a.mt() == 4);
  CHECK(a.nt() == 3);
  CHECK(a.tile_rows(0) == 256);
  CHECK(a.tile_rows(3) == 1000 - 3 * 256);
  CHECK(a.tile_cols(2) == 700 - 2 * 256);
  CHECK(a.ld(3) == a.tile_rows(3));
  // Tiles are contiguous, back to back in tile-column-major order, and fill exactly m * n.
  const double* expected = a.data();
  for (int j = 0; j < a.nt(); ++j)
    for (int i = 0; i < a.mt(); ++i) {
      CHECK(a.tile(i, j) == expected);
      expected += a.tile_elements(i, j);
    }
  CHECK(expected == a.data() + a.size());
  CHECK(a.size() == 1000u * 700u);

  tile_matrix<float> small(5, 3, 8);   // nb larger than both sizes: one partial tile
  CHECK(small.mt() == 1);
  CHECK(small.nt() == 1);
  CHECK(small.tile_rows(0) == 5);
  CHECK(small.tile_cols(0) == 3);

  tile_matrix<double> rect(10, 9, 4, 8);   // mb x nb tiles (the T storage shape)
  CHECK(rect.mt() == 3);
  CHECK(rect.nt() == 2);
  CHECK(rect.tile_rows(2) == 2);
  CHECK(rect.tile_cols(1) == 1);
}

TEST_CASE("tile_matrix: moves keep the storage, a custom allocator is used") {
  static int allocations = 0, deallocations = 0;
  tile_allocator counting{[](std::size_t bytes) -> void* {
                            ++allocations;
                            return ::operator new(bytes);
                          },
                          [](void* p, std::size_t) noexcept {
                            ++deallocations;
                            ::operator delete(p);
                          }};
  {
    tile_matrix<double> a(64, 64, 16, counting);
    double* p = a.data();
    tile_matrix<double> b(std::move(a));
    CHECK(b.data() == p);
    CHECK(a.data() == nullptr);
    CHECK(allocations == 1);
  }
  CHECK(deallocations == 1);
}

TEST_CASE("tile_matrix: bad sizes are std::invalid_argument naming the argument") {
  CHECK(invalid_message([] { tile_matrix<double>(0, 5, 4); }).find("m = 0") != std::string::npos);
  CHECK(invalid_message([] { tile_matrix<double>(5, -1, 4); }).find("n = -1") != std::string::npos);
  CHECK(invalid_message([] { tile_matrix<double>(5, 5, 0); }).find("nb = 0") != std::string::npos);
  CHECK(invalid_message([] { tile_matrix<float>(5, 5, 0, 4); }).find("mb = 0") != std::string::npos);
}

TEST_CASE("register_tiles: one handle per tile, over the tile's bytes") {
  tessera::runtime rt({.workers = 1});
  tile_matrix<float> a(50, 30, 16);
  const tile_handles h = register_tiles(rt, a);
  CHECK(h.mt() == a.mt());
  CHECK(h.nt() == a.nt());
  for (int j = 0; j < a.nt(); ++j)
    for (int i = 0; i < a.mt(); ++i) {
      CHECK(h(i, j).data() == a.tile(i, j));
      CHECK(h(i, j).bytes() == a.tile_elements(i, j) * sizeof(float));
    }
  CHECK_FALSE(h(0, 0) == h(1, 0));
}

TEST_CASE("to_tiles / to_lapack: round trip over shapes, tile sizes and workers") {
  struct shape { int m, n, nb; };
  const shape shapes[] = {{1, 1, 4}, {1, 9, 4}, {9, 1, 4}, {37, 23, 8}, {23, 37, 8},
                          {64, 64, 16}, {10, 12, 32}, {100, 3, 7}};
  std::uint64_t salt = 0;
  for (unsigned workers : {1u, 3u}) {
    tessera::runtime rt({.workers = workers});
    for (const shape& s : shapes) {
      CAPTURE(s.m);
      CAPTURE(s.n);
      CAPTURE(s.nb);
      const int lda = s.m + 3;
      const std::vector<double> a = random_matrix<double>(s.m, s.n, lda, ++salt);
      tile_matrix<double> t(s.m, s.n, s.nb);
      const tile_handles h = register_tiles(rt, t);
      to_tiles_async(rt, a.data(), lda, t, h);
      std::vector<double> back(a.size(), -7.0);
      to_lapack_async(rt, t, h, back.data(), lda);
      rt.wait_all();
      bool same = true, pad_kept = true;
      for (int c = 0; c < s.n; ++c) {
        for (int r = 0; r < s.m; ++r) {
          same &= t(r, c) == a[r + std::size_t(c) * lda];
          same &= back[r + std::size_t(c) * lda] == a[r + std::size_t(c) * lda];
        }
        for (int r = s.m; r < lda; ++r) pad_kept &= back[r + std::size_t(c) * lda] == -7.0;
      }
      CHECK(same);
      CHECK(pad_kept);   // rows beyond m of the destination are not touched
    }
  }
}

TEST_CASE("set_identity_async") {
  tessera::runtime rt({.workers = 2});
  struct shape { int m, n, nb; };
  for (const auto [m, n, nb] : {shape{7, 7, 3}, shape{9, 4, 4}, shape{4, 9, 2}, shape{5, 5, 8}}) {
    tile_matrix<float> t(m, n, nb);
    const tile_handles h = register_tiles(rt, t);
    std::fill_n(t.data(), t.size(), 5.0f);
    set_identity_async(rt, t, h);
    rt.wait_all();
    bool ok = true;
    for (int c = 0; c < n; ++c)
      for (int r = 0; r < m; ++r) ok &= t(r, c) == (r == c ? 1.0f : 0.0f);
    CHECK(ok);
  }
}

TEST_CASE("to_tiles: NaN and Inf are std::invalid_argument naming the element; lda is checked") {
  tessera::runtime rt({.workers = 2});
  const int m = 20, n = 15;
  tile_matrix<double> t(m, n, 8);
  const tile_handles h = register_tiles(rt, t);
  std::vector<double> a = random_matrix<double>(m, n, m, 99);

  a[11 + 9 * m] = std::numeric_limits<double>::quiet_NaN();
  std::string msg = invalid_message([&] {
    to_tiles_async(rt, a.data(), m, t, h, "A");
    rt.wait_all();
  });
  CHECK(msg.find("A(11, 9)") != std::string::npos);
  CHECK(msg.find("NaN") != std::string::npos);

  a[11 + 9 * m] = 0;
  a[19 + 0 * m] = -std::numeric_limits<double>::infinity();
  msg = invalid_message([&] {
    to_tiles_async(rt, a.data(), m, t, h, "B");
    rt.wait_all();
  });
  CHECK(msg.find("B(19, 0)") != std::string::npos);
  CHECK(msg.find("Inf") != std::string::npos);

  // The runtime stays usable after the error.
  a[19] = 1;
  to_tiles_async(rt, a.data(), m, t, h);
  rt.wait_all();
  CHECK(t(19, 0) == 1.0);

  CHECK(invalid_message([&] { to_tiles_async(rt, a.data(), m - 1, t, h); }).find("lda = 19") != std::string::npos);
  tile_matrix<double> other(m, n, 4);
  CHECK(invalid_message([&] { to_tiles_async(rt, a.data(), m, other, h); }).find("handles") != std::string::npos);
}
