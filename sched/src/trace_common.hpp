#pragma once
// What the trace exporters (trace_chrome.cpp, trace_dot.cpp, trace_svg.cpp, trace_summary.cpp) share:
// buffered text output, locale-independent numbers, UTF-8 decoding, input checks, label colours
// and time units. Not installed.
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tessera/sched/trace.hpp"

namespace tessera::detail::trace_out {

// Collects output and hands it to the stream in large pieces: one virtual call per 64 KiB
// instead of one per token keeps 10^5-task exports fast.
class sink {
 public:
  explicit sink(std::ostream& out) : _out(out) { _buf.reserve(1 << 17); }
  sink(const sink&) = delete;
  sink& operator=(const sink&) = delete;
  ~sink() { flush(); }

  sink& operator<<(std::string_view s) {
    _buf.append(s);
    if (_buf.size() >= (1 << 16)) flush();
    return *this;
  }
  sink& operator<<(char c) {
    _buf.push_back(c);
    return *this;
  }
  std::string& buffer() { return _buf; }
  void flush() {
    if (!_buf.empty()) _out.write(_buf.data(), static_cast<std::streamsize>(_buf.size()));
    _buf.clear();
  }

 private:
  std::ostream& _out;
  std::string _buf;
};

// Decimal numbers through std::to_chars: never affected by std::locale or setlocale.
std::string fixed(double v, int precision);

template <class Int>
std::string integer(Int v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string hex_color(std::uint32_t rgb);  // "#rrggbb"

// Calls f(code_point, bytes) for each UTF-8 sequence of s. Malformed input (stray continuation
// bytes, overlong forms, surrogates, truncation) becomes U+FFFD one byte at a time, so every
// exporter emits valid UTF-8 whatever the labels hold.
template <class F>
void for_each_code_point(std::string_view s, F&& f) {
  static constexpr std::string_view replacement = "\xEF\xBF\xBD";
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      f(char32_t{c}, s.substr(i, 1));
      ++i;
      continue;
    }
    std::size_t len = 0;
    char32_t cp = 0, min = 0;
    if ((c & 0xE0u) == 0xC0u) {
      len = 2, cp = c & 0x1Fu, min = 0x80;
    } else if ((c & 0xF0u) == 0xE0u) {
      len = 3, cp = c & 0x0Fu, min = 0x800;
    } else if ((c & 0xF8u) == 0xF0u) {
      len = 4, cp = c & 0x07u, min = 0x10000;
    }
    bool ok = len != 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      ok = (cc & 0xC0u) == 0x80u;
      cp = (cp << 6) | (cc & 0x3Fu);
    }
    ok = ok && cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    if (ok) {
      f(cp, s.substr(i, len));
      i += len;
    } else {
      f(char32_t{0xFFFD}, replacement);
      ++i;
    }
  }
}

// Throws std::invalid_argument naming the first malformed task or edge. Returns every edge
// resolved into (from, to) positions in trace.tasks.
struct checked {
  std::vector<std::pair<std::size_t, std::size_t>> edges;
};

checked check(const trace_data& trace, const char* who);

// Label -> colour for tasks without an explicit one. Each label starts at the palette slot of
// its hash (so a label keeps its colour from trace to trace); labels that collide move to the
// next free slot, in sorted label order, so up to 20 labels always get distinct colours.
class label_colors {
 public:
  explicit label_colors(const trace_data& trace);
  std::uint32_t operator()(const trace_task& t) const { return t.color != 0 ? t.color : _map.at(t.label); }

 private:
  std::unordered_map<std::string_view, std::uint32_t> _map;
};

// Time units for axes and tables.
struct time_unit {
  double div;
  const char* name;
};

time_unit unit_for(double us);

}  // namespace tessera::detail::trace_out
