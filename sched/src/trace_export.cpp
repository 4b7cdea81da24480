// Exporters for trace_data. Standard library only: output is built in a string buffer with
// std::to_chars (locale-independent) and a small UTF-8-aware escaper per output language.
#include "tessera/sched/trace_export.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tessera {
namespace {

// ---------------------------------------------------------------------------------------------
// Text output

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
std::string fixed(double v, int precision) {
  char buf[512];  // enough for any finite double in fixed notation with <= 6 decimals
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, precision);
  if (r.ec != std::errc{}) r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific, precision);
  return std::string(buf, r.ptr);
}

template <class Int>
std::string integer(Int v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string hex_color(std::uint32_t rgb) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s = "#000000";
  for (int i = 0; i < 6; ++i) s[static_cast<std::size_t>(6 - i)] = digits[(rgb >> (4 * i)) & 0xFu];
  return s;
}

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

// A JSON string literal, quotes included (RFC 8259: escape '"', '\\' and controls).
void append_json_string(std::string& out, std::string_view s) {
  out.push_back('"');
  for_each_code_point(s, [&](char32_t cp, std::string_view bytes) {
    switch (cp) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (cp < 0x20) {
          static constexpr char digits[] = "0123456789abcdef";
          out += "\\u00";
          out.push_back(digits[cp >> 4]);
          out.push_back(digits[cp & 0xF]);
        } else {
          out.append(bytes);
        }
    }
  });
  out.push_back('"');
}

// XML character data or attribute value. XML 1.0 cannot carry most C0 controls even as
// character references, so they become U+FFFD.
void append_xml_text(std::string& out, std::string_view s) {
  for_each_code_point(s, [&](char32_t cp, std::string_view bytes) {
    switch (cp) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\r': out += "&#13;"; break;  // a literal CR would be read back as LF
      default:
        if ((cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || cp == 0xFFFE || cp == 0xFFFF) {
          out += "\xEF\xBF\xBD";
        } else {
          out.append(bytes);
        }
    }
  });
}

// The inside of a DOT double-quoted string. Backslash starts Graphviz escapes (\n, \N, \G...),
// so a literal one is doubled.
void append_dot_text(std::string& out, std::string_view s) {
  for_each_code_point(s, [&](char32_t cp, std::string_view bytes) {
    if (cp == '"') {
      out += "\\\"";
    } else if (cp == '\\') {
      out += "\\\\";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp < 0x20) {
      out.push_back(' ');
    } else {
      out.append(bytes);
    }
  });
}

// Rough width of s in character cells, for layout: East Asian scripts and emoji take two.
double text_cells(std::string_view s) {
  double cells = 0;
  for_each_code_point(s, [&](char32_t cp, std::string_view) { cells += cp >= 0x2E80 ? 2 : 1; });
  return cells;
}

// ---------------------------------------------------------------------------------------------
// Checking the input

// trace_task ids -> positions in trace.tasks. Built from a sorted copy so that an unsorted
// trace still works; duplicates are an error (edges could not be resolved).
class id_index {
 public:
  id_index(const trace_data& trace, const char* who) {
    _ids.reserve(trace.tasks.size());
    for (std::size_t i = 0; i < trace.tasks.size(); ++i) _ids.emplace_back(trace.tasks[i].id, i);
    if (!std::is_sorted(_ids.begin(), _ids.end())) std::sort(_ids.begin(), _ids.end());
    for (std::size_t i = 1; i < _ids.size(); ++i) {
      if (_ids[i].first == _ids[i - 1].first) {
        throw std::invalid_argument(std::string(who) + ": trace has two tasks with id " +
                                    integer(_ids[i].first));
      }
    }
  }
  // Position of the task with this id; throws naming the edge otherwise.
  std::size_t at(std::uint64_t id, const trace_edge& e, const char* who) const {
    auto it = std::lower_bound(_ids.begin(), _ids.end(), std::pair{id, std::size_t{0}});
    if (it == _ids.end() || it->first != id) {
      throw std::invalid_argument(std::string(who) + ": trace edge " + integer(e.from) + " -> " +
                                  integer(e.to) + " names task " + integer(id) +
                                  ", which is not in trace_data::tasks");
    }
    return it->second;
  }

 private:
  std::vector<std::pair<std::uint64_t, std::size_t>> _ids;
};

// Throws std::invalid_argument naming the first malformed task or edge. Returns every edge
// resolved into (from, to) positions in trace.tasks.
struct checked {
  std::vector<std::pair<std::size_t, std::size_t>> edges;
};

checked check(const trace_data& trace, const char* who) {
  const std::string prefix(who);
  for (const trace_task& t : trace.tasks) {
    if (t.track < 0 || static_cast<std::size_t>(t.track) >= trace.tracks.size()) {
      throw std::invalid_argument(prefix + ": trace task " + integer(t.id) + " has track " +
                                  integer(t.track) + ", but trace_data::tracks has " +
                                  integer(trace.tracks.size()) + " entries");
    }
    if (!std::isfinite(t.start_us) || !std::isfinite(t.end_us) || t.end_us < t.start_us) {
      throw std::invalid_argument(prefix + ": trace task " + integer(t.id) +
                                  " has start_us/end_us that are not finite or end before they start");
    }
  }
  const id_index index(trace, who);
  checked c;
  c.edges.reserve(trace.edges.size());
  for (const trace_edge& e : trace.edges) c.edges.emplace_back(index.at(e.from, e, who), index.at(e.to, e, who));
  return c;
}

// ---------------------------------------------------------------------------------------------
// Colours

// A qualitative 20-colour palette (pairs of strong and light shades of ten hues).
constexpr std::uint32_t palette[] = {
    0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd, 0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf,
    0xaec7e8, 0xffbb78, 0x98df8a, 0xff9896, 0xc5b0d5, 0xc49c94, 0xf7b6d2, 0xc7c7c7, 0xdbdb8d, 0x9edae5};
constexpr std::size_t palette_size = sizeof palette / sizeof palette[0];

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return h;
}

// Label -> colour for tasks without an explicit one. Each label starts at the palette slot of
// its hash (so a label keeps its colour from trace to trace); labels that collide move to the
// next free slot, in sorted label order, so up to 20 labels always get distinct colours.
class label_colors {
 public:
  explicit label_colors(const trace_data& trace) {
    std::map<std::string_view, std::uint32_t> sorted;
    for (const trace_task& t : trace.tasks) sorted.emplace(t.label, 0);
    bool used[palette_size] = {};
    std::size_t n_used = 0;
    for (auto& [label, rgb] : sorted) {
      std::size_t slot = fnv1a(label) % palette_size;
      if (n_used < palette_size) {
        while (used[slot]) slot = (slot + 1) % palette_size;
        used[slot] = true;
        ++n_used;
      }
      rgb = palette[slot];
      _map.emplace(label, rgb);
    }
  }
  std::uint32_t operator()(const trace_task& t) const { return t.color != 0 ? t.color : _map.at(t.label); }

 private:
  std::unordered_map<std::string_view, std::uint32_t> _map;
};

bool is_dark(std::uint32_t rgb) {
  const double r = (rgb >> 16) & 0xFF, g = (rgb >> 8) & 0xFF, b = rgb & 0xFF;
  return 0.299 * r + 0.587 * g + 0.114 * b < 128;
}

const char* device_name(device d) { return d == device::gpu ? "gpu" : "cpu"; }

// ---------------------------------------------------------------------------------------------
// Time units for axes and tables

struct time_unit {
  double div;
  const char* name;
};

time_unit unit_for(double us) {
  if (us >= 1e6) return {1e6, "s"};
  if (us >= 1e3) return {1e3, "ms"};
  return {1, "\xC2\xB5s"};  // µs
}

}  // namespace

// =============================================================================================
// Chrome Trace Event format

void write_chrome_json(const trace_data& trace, std::ostream& out) {
  const checked c = check(trace, "tessera::write_chrome_json");
  const label_colors colors(trace);
  // Perfetto treats pid/tid 0 as the kernel's idle task, so tracks are tids 1..n.
  auto tid = [](int track) { return integer(track + 1); };

  sink s(out);
  std::string& b = s.buffer();
  s << "{\"traceEvents\":[\n";
  s << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"tessera\"}}";
  for (std::size_t i = 0; i < trace.tracks.size(); ++i) {
    const int track = static_cast<int>(i);
    s << ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":" << tid(track) << ",\"args\":{\"name\":";
    append_json_string(b, trace.tracks[i]);
    s << "}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":" << tid(track)
      << ",\"args\":{\"sort_index\":" << integer(track) << "}}";
  }
  for (const trace_task& t : trace.tasks) {
    s << ",\n{\"name\":";
    append_json_string(b, t.label);
    s << ",\"cat\":\"task\",\"ph\":\"X\",\"pid\":1,\"tid\":" << tid(t.track) << ",\"ts\":" << fixed(t.start_us, 3)
      << ",\"dur\":" << fixed(t.end_us - t.start_us, 3) << ",\"args\":{\"id\":" << integer(t.id)
      << ",\"priority\":" << integer(t.priority) << ",\"device\":\"" << device_name(t.where)
      << "\",\"skipped\":" << (t.skipped ? "true" : "false") << ",\"color\":\"" << hex_color(colors(t)) << "\"}}";
  }
  // One flow per edge. Both ends sit at the middle of their slice: "s" binds to the slice that
  // encloses it, "f" with "bp":"e" likewise, and a midpoint is enclosed even after rounding.
  for (std::size_t i = 0; i < trace.edges.size(); ++i) {
    const trace_task& from = trace.tasks[c.edges[i].first];
    const trace_task& to = trace.tasks[c.edges[i].second];
    const std::string id = integer(i), name = to_string(trace.edges[i].kind);
    s << ",\n{\"name\":\"" << name << "\",\"cat\":\"dep\",\"ph\":\"s\",\"id\":" << id
      << ",\"pid\":1,\"tid\":" << tid(from.track) << ",\"ts\":" << fixed(0.5 * (from.start_us + from.end_us), 3)
      << "}";
    s << ",\n{\"name\":\"" << name << "\",\"cat\":\"dep\",\"ph\":\"f\",\"bp\":\"e\",\"id\":" << id
      << ",\"pid\":1,\"tid\":" << tid(to.track) << ",\"ts\":" << fixed(0.5 * (to.start_us + to.end_us), 3) << "}";
  }
  s << "\n],\"displayTimeUnit\":\"ms\"}\n";
}

// =============================================================================================
// Graphviz DOT

void write_dot(const trace_data& trace, std::ostream& out) {
  check(trace, "tessera::write_dot");
  const label_colors colors(trace);
  sink s(out);
  std::string& b = s.buffer();
  s << "digraph tessera {\n"
       "  node [shape=box, style=\"filled,rounded\", fontname=\"Helvetica\"];\n"
       "  edge [fontname=\"Helvetica\", fontsize=10];\n";
  for (const trace_task& t : trace.tasks) {
    const std::uint32_t rgb = colors(t);
    s << "  t" << integer(t.id) << " [label=\"";
    append_dot_text(b, t.label);
    s << "\\n#" << integer(t.id) << (t.skipped ? " (skipped)" : "") << "\", fillcolor=\"" << hex_color(rgb) << '"';
    if (is_dark(rgb)) s << ", fontcolor=\"white\"";
    if (t.skipped) s << ", style=\"filled,rounded,dashed\"";
    if (t.where == device::gpu) s << ", peripheries=2";  // GPU tasks get a double border
    s << "];\n";
  }
  for (const trace_edge& e : trace.edges) {
    const char* style = "solid";
    switch (e.kind) {
      case hazard::raw: style = "solid"; break;
      case hazard::war: style = "dashed"; break;
      case hazard::waw: style = "dotted"; break;
      case hazard::accumulate: style = "bold"; break;
    }
    s << "  t" << integer(e.from) << " -> t" << integer(e.to) << " [label=\"" << to_string(e.kind)
      << "\", style=" << style << "];\n";
  }
  s << "}\n";
}

// =============================================================================================
// SVG Gantt chart

void write_svg(const trace_data& trace, std::ostream& out) {
  check(trace, "tessera::write_svg");
  const label_colors colors(trace);

  double t0 = 0, t1 = 0;
  if (!trace.tasks.empty()) {
    t0 = std::numeric_limits<double>::infinity();
    t1 = -t0;
    for (const trace_task& t : trace.tasks) t0 = std::min(t0, t.start_us), t1 = std::max(t1, t.end_us);
  }
  const double span = t1 - t0;

  // Layout, in pixels. Text widths are estimated at 7.5 px per cell (12 px sans-serif).
  double longest_name = 0;
  for (const std::string& n : trace.tracks) longest_name = std::max(longest_name, text_cells(n));
  const double width = 1200, row_h = 18, bar_h = 14, axis_y = 48, right = 20;
  const double left = std::clamp(12.0 + 7.5 * longest_name, 80.0, 300.0);
  const double plot_w = width - left - right;
  const double rows_y = axis_y + 4;
  const double rows_end = rows_y + row_h * static_cast<double>(trace.tracks.size());
  const double scale = span > 0 ? plot_w / span : 0;
  auto x_of = [&](double us) { return left + (us - t0) * scale; };

  // Legend: distinct labels in order of first appearance, at most max_legend of them, wrapped.
  constexpr std::size_t max_legend = 64;
  std::vector<std::pair<std::string_view, std::uint32_t>> legend;
  std::size_t n_labels = 0;
  {
    std::unordered_map<std::string_view, bool> seen;
    for (const trace_task& t : trace.tasks) {
      if (!seen.emplace(t.label, true).second) continue;
      ++n_labels;
      if (legend.size() < max_legend) legend.emplace_back(t.label, colors(t));
    }
  }
  struct placed {
    double x, y;
  };
  std::vector<placed> legend_pos;
  double lx = left, ly = rows_end + 36;
  for (const auto& [label, rgb] : legend) {
    const double w = 32 + 7.5 * std::min(text_cells(label), 41.0);
    if (lx + w > width - right && lx > left) lx = left, ly += 18;
    legend_pos.push_back({lx, ly});
    lx += w;
  }
  const double height = (legend.empty() ? rows_end + 24 : ly + 24) + (n_labels > legend.size() ? 18 : 0);

  sink s(out);
  std::string& b = s.buffer();
  s << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << fixed(width, 0) << "\" height=\"" << fixed(height, 0)
    << "\" viewBox=\"0 0 " << fixed(width, 0) << ' ' << fixed(height, 0)
    << "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n";
  const time_unit span_unit = unit_for(span);
  s << "<title>tessera trace</title>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << fixed(left, 1) << "\" y=\"18\" font-size=\"14\" font-weight=\"bold\">tessera trace: "
    << integer(trace.tasks.size()) << " tasks, " << integer(trace.edges.size()) << " edges, span "
    << fixed(span / span_unit.div, 3) << ' ' << span_unit.name << "</text>\n";

  // Track rows: alternating bands and names.
  s << "<g id=\"tracks\">\n";
  for (std::size_t i = 0; i < trace.tracks.size(); ++i) {
    const double y = rows_y + row_h * static_cast<double>(i);
    if (i % 2 == 0) {
      s << "<rect x=\"0\" y=\"" << fixed(y, 1) << "\" width=\"" << fixed(width, 0) << "\" height=\""
        << fixed(row_h, 0) << "\" fill=\"#f2f2f2\"/>\n";
    }
    s << "<text x=\"" << fixed(left - 6, 1) << "\" y=\"" << fixed(y + 13, 1) << "\" text-anchor=\"end\">";
    append_xml_text(b, trace.tracks[i]);
    s << "</text>\n";
  }
  s << "</g>\n";

  // Time axis: a 1-2-5 step giving about ten ticks, labelled in the unit that suits the step.
  s << "<g id=\"axis\" stroke=\"#999\" font-size=\"10\">\n<line x1=\"" << fixed(left, 1) << "\" y1=\""
    << fixed(axis_y, 1) << "\" x2=\"" << fixed(left + plot_w, 1) << "\" y2=\"" << fixed(axis_y, 1) << "\"/>\n";
  if (span > 0) {
    const double raw = span / 10;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = 10 * mag;
    for (double m : {1.0, 2.0, 5.0}) {
      if (m * mag >= raw) {
        step = m * mag;
        break;
      }
    }
    const time_unit u = unit_for(step);
    const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step / u.div) + 1e-9)));
    for (int k = 0;; ++k) {
      const double t = k * step;
      if (t > span * (1 + 1e-9)) break;
      const double x = x_of(t0 + t);
      s << "<line x1=\"" << fixed(x, 2) << "\" y1=\"" << fixed(axis_y - 4, 1) << "\" x2=\"" << fixed(x, 2)
        << "\" y2=\"" << fixed(rows_end, 1) << "\" stroke-opacity=\"0.35\"/>"
        << "<text x=\"" << fixed(x, 2) << "\" y=\"" << fixed(axis_y - 7, 1)
        << "\" text-anchor=\"middle\" stroke=\"none\" fill=\"#333\">" << fixed(t / u.div, decimals) << ' ' << u.name
        << "</text>\n";
    }
  }
  s << "</g>\n";

  // Tasks: one rect each; the only per-task text is the tooltip. Back-to-back tasks of one label
  // would merge into one bar, so bars get a white outline, unless they are mostly too thin for it.
  double drawn = 0;
  for (const trace_task& t : trace.tasks) drawn += (t.end_us - t.start_us) * scale;
  const bool outline = !trace.tasks.empty() && drawn >= 4.0 * static_cast<double>(trace.tasks.size());
  s << (outline ? "<g id=\"tasks\" stroke=\"#fff\" stroke-width=\"0.75\">\n" : "<g id=\"tasks\">\n");
  for (const trace_task& t : trace.tasks) {
    const double x = x_of(t.start_us);
    const double w = std::max(0.5, (t.end_us - t.start_us) * scale);
    const double y = rows_y + row_h * t.track + (row_h - bar_h) / 2;
    s << "<rect x=\"" << fixed(x, 2) << "\" y=\"" << fixed(y, 1) << "\" width=\"" << fixed(w, 2) << "\" height=\""
      << fixed(bar_h, 0) << "\" fill=\"" << hex_color(colors(t)) << '"';
    if (t.skipped) s << " fill-opacity=\"0.3\" stroke=\"#000\" stroke-dasharray=\"2 2\"";
    s << "><title>";
    append_xml_text(b, t.label);
    s << " #" << integer(t.id) << ": start " << fixed(t.start_us - t0, 3) << " \xC2\xB5s, duration "
      << fixed(t.end_us - t.start_us, 3) << " \xC2\xB5s" << (t.skipped ? " (skipped)" : "") << "</title></rect>\n";
  }
  s << "</g>\n";

  // Legend.
  s << "<g id=\"legend\">\n";
  for (std::size_t i = 0; i < legend.size(); ++i) {
    const auto [x, y] = legend_pos[i];
    s << "<rect x=\"" << fixed(x, 1) << "\" y=\"" << fixed(y - 10, 1) << "\" width=\"12\" height=\"12\" fill=\""
      << hex_color(legend[i].second) << "\"/><text x=\"" << fixed(x + 16, 1) << "\" y=\"" << fixed(y, 1) << "\">";
    std::string_view label = legend[i].first;
    // Cut long labels at a UTF-8 boundary so the text stays valid.
    if (label.size() > 40) {
      std::size_t cut = 40;
      while (cut > 0 && (static_cast<unsigned char>(label[cut]) & 0xC0u) == 0x80u) --cut;
      label = label.substr(0, cut);
    }
    append_xml_text(b, label);
    s << (label.size() < legend[i].first.size() ? "\xE2\x80\xA6" : "") << "</text>\n";
  }
  if (n_labels > legend.size()) {
    s << "<text x=\"" << fixed(left, 1) << "\" y=\"" << fixed(ly + 18, 1) << "\">\xE2\x80\xA6 and "
      << integer(n_labels - legend.size()) << " more labels</text>\n";
  }
  s << "</g>\n</svg>\n";
}

// =============================================================================================
// Summary

namespace {
struct interval_union {
  double busy = 0;
  double longest_gap = 0;
};
interval_union unite(std::vector<std::pair<double, double>>& intervals) {
  interval_union u;
  std::sort(intervals.begin(), intervals.end());
  for (std::size_t i = 0; i < intervals.size();) {
    double lo = intervals[i].first, hi = intervals[i].second;
    for (++i; i < intervals.size() && intervals[i].first <= hi; ++i) hi = std::max(hi, intervals[i].second);
    u.busy += hi - lo;
    if (i < intervals.size()) u.longest_gap = std::max(u.longest_gap, intervals[i].first - hi);
  }
  return u;
}
}  // namespace

trace_summary summarize(const trace_data& trace) {
  const checked c = check(trace, "tessera::summarize");
  const std::size_t n = trace.tasks.size(), n_tracks = trace.tracks.size();
  trace_summary sum;
  sum.tasks = n;
  sum.edges = trace.edges.size();
  sum.busy_us.assign(n_tracks, 0);
  sum.idle_us.assign(n_tracks, 0);
  sum.longest_gap_us.assign(n_tracks, 0);
  if (n == 0) return sum;

  double t0 = std::numeric_limits<double>::infinity(), t1 = -t0;
  for (const trace_task& t : trace.tasks) t0 = std::min(t0, t.start_us), t1 = std::max(t1, t.end_us);
  sum.span_us = t1 - t0;

  // Per track, and the GPU as a whole (its streams overlap, so their busy times do not add up):
  // busy is the union of the tasks' intervals, gaps are the holes in that union.
  std::vector<std::vector<std::pair<double, double>>> per_track(n_tracks);
  std::vector<std::pair<double, double>> gpu;
  for (const trace_task& t : trace.tasks) {
    per_track[static_cast<std::size_t>(t.track)].emplace_back(t.start_us, t.end_us);
    if (t.where == device::gpu && !t.copy) gpu.emplace_back(t.start_us, t.end_us);
  }
  for (std::size_t k = 0; k < n_tracks; ++k) {
    const interval_union u = unite(per_track[k]);
    sum.busy_us[k] = u.busy;
    sum.longest_gap_us[k] = u.longest_gap;
    sum.idle_us[k] = std::max(0.0, sum.span_us - u.busy);
  }
  sum.gpu_busy_us = unite(gpu).busy;

  // Critical path: longest duration-weighted path, by Kahn's algorithm. The runtime's edges go
  // from lower to higher id, but any acyclic edge set works; a cycle is reported, not looped on.
  std::vector<std::size_t> first(n + 1, 0), succ(c.edges.size()), indeg(n, 0);
  for (const auto& [from, to] : c.edges) ++first[from + 1], ++indeg[to];
  for (std::size_t i = 0; i < n; ++i) first[i + 1] += first[i];
  {
    std::vector<std::size_t> fill(first.begin(), first.end() - 1);
    for (const auto& [from, to] : c.edges) succ[fill[from]++] = to;
  }
  std::vector<double> before(n, 0);  // longest chain ending just before task i starts
  std::vector<std::size_t> ready;
  for (std::size_t i = 0; i < n; ++i) {
    if (indeg[i] == 0) ready.push_back(i);
  }
  std::size_t done = 0;
  while (!ready.empty()) {
    const std::size_t u = ready.back();
    ready.pop_back();
    ++done;
    const double end = before[u] + (trace.tasks[u].end_us - trace.tasks[u].start_us);
    sum.critical_path_us = std::max(sum.critical_path_us, end);
    for (std::size_t k = first[u]; k < first[u + 1]; ++k) {
      const std::size_t v = succ[k];
      before[v] = std::max(before[v], end);
      if (--indeg[v] == 0) ready.push_back(v);
    }
  }
  if (done != n) {
    throw std::invalid_argument("tessera::summarize: the trace's edges form a cycle (" + integer(n - done) +
                                " tasks on or after it), so there is no critical path");
  }

  // Per label; a copy's label names the task it was for ("H2D for 12"): copies grouped as "H2D".
  std::map<std::string, std::vector<double>, std::less<>> by_label;
  for (const trace_task& t : trace.tasks) {
    const std::string_view label(t.label);
    by_label[std::string(t.copy ? label.substr(0, label.find(" for ")) : label)].push_back(t.end_us - t.start_us);
  }
  for (auto& [label, d] : by_label) {
    label_stats st;
    st.label = label;
    st.tasks = d.size();
    for (double x : d) st.total_us += x;
    auto mid = d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2);
    std::nth_element(d.begin(), mid, d.end());
    st.median_us = *mid;
    if (d.size() % 2 == 0) st.median_us = (st.median_us + *std::max_element(d.begin(), mid)) / 2;
    st.max_us = *std::max_element(d.begin(), d.end());
    sum.labels.push_back(std::move(st));
  }
  std::stable_sort(sum.labels.begin(), sum.labels.end(),
                   [](const label_stats& a, const label_stats& b) { return a.total_us > b.total_us; });
  return sum;
}

void print_summary(const trace_data& trace, const trace_summary& summary, std::ostream& out) {
  const std::size_t n_tracks = trace.tracks.size();
  if (summary.busy_us.size() != n_tracks || summary.idle_us.size() != n_tracks ||
      summary.longest_gap_us.size() != n_tracks) {
    throw std::invalid_argument("tessera::print_summary: summary has per-track vectors of another size than "
                                "trace.tracks (" + integer(n_tracks) + "); pass summarize(trace)");
  }
  std::vector<std::size_t> count(n_tracks, 0);
  for (const trace_task& t : trace.tasks) {
    if (t.track >= 0 && static_cast<std::size_t>(t.track) < n_tracks) ++count[static_cast<std::size_t>(t.track)];
  }
  const time_unit u = unit_for(summary.span_us);
  const std::string unit = std::string("[") + u.name + "]";
  std::size_t name_w = 5;
  for (const std::string& name : trace.tracks) name_w = std::max(name_w, std::min<std::size_t>(name.size(), 32));

  std::string line;
  auto cell = [&](std::string text, std::size_t w, bool right_align) {
    std::size_t shown = 0;  // code points, so that "µs" pads like "ms"
    for (char ch : text) shown += (static_cast<unsigned char>(ch) & 0xC0u) != 0x80u;
    const std::size_t pad = shown < w ? w - shown : 0;
    if (right_align) line.append(pad, ' ');
    line += text;
    if (!right_align) line.append(pad, ' ');
  };
  auto pct = [](double part, double whole) { return whole > 0 ? fixed(100 * part / whole, 1) + "%" : "-"; };

  sink s(out);
  s << "tessera trace: " << integer(summary.tasks) << " tasks, " << integer(summary.edges) << " edges, "
    << integer(n_tracks) << " tracks\n";
  line.clear();
  cell("track", name_w, false);
  cell("tasks", 9, true);
  cell("busy " + unit, 14, true);
  cell("idle " + unit, 14, true);
  cell("busy", 8, true);
  cell("longest gap " + unit, 20, true);
  s << line << '\n';
  double total_busy = 0;
  for (std::size_t k = 0; k < n_tracks; ++k) {
    total_busy += summary.busy_us[k];
    line.clear();
    cell(trace.tracks[k], name_w, false);
    cell(integer(count[k]), 9, true);
    cell(fixed(summary.busy_us[k] / u.div, 3), 14, true);
    cell(fixed(summary.idle_us[k] / u.div, 3), 14, true);
    cell(pct(summary.busy_us[k], summary.span_us), 8, true);
    cell(fixed(summary.longest_gap_us[k] / u.div, 3), 20, true);
    s << line << '\n';
  }
  s << "span " << fixed(summary.span_us / u.div, 3) << ' ' << u.name << ", critical path "
    << fixed(summary.critical_path_us / u.div, 3) << ' ' << u.name << " ("
    << pct(summary.critical_path_us, summary.span_us) << " of span), average parallelism "
    << (summary.span_us > 0 ? fixed(total_busy / summary.span_us, 2) : std::string("-")) << " of "
    << integer(n_tracks) << " tracks\n";
  if (summary.gpu_busy_us > 0)
    s << "GPU (any stream) busy " << fixed(summary.gpu_busy_us / u.div, 3) << ' ' << u.name << " ("
      << pct(summary.gpu_busy_us, summary.span_us) << " of span; launch to completion)\n";
  if (summary.labels.empty()) return;
  std::size_t label_w = 5;
  for (const label_stats& l : summary.labels) label_w = std::max(label_w, std::min<std::size_t>(l.label.size(), 32));
  line.clear();
  cell("label", label_w, false);
  cell("tasks", 9, true);
  cell("total " + unit, 14, true);
  cell("median [µs]", 14, true);
  cell("max [µs]", 14, true);
  s << line << '\n';
  for (const label_stats& l : summary.labels) {
    line.clear();
    cell(l.label, label_w, false);
    cell(integer(l.tasks), 9, true);
    cell(fixed(l.total_us / u.div, 3), 14, true);
    cell(fixed(l.median_us, 1), 14, true);
    cell(fixed(l.max_us, 1), 14, true);
    s << line << '\n';
  }
}

// =============================================================================================
// Files

void write_trace_file(const trace_data& trace, const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& ch : ext) ch = (ch >= 'A' && ch <= 'Z') ? static_cast<char>(ch - 'A' + 'a') : ch;
  void (*writer)(const trace_data&, std::ostream&) = nullptr;
  if (ext == ".json") {
    writer = write_chrome_json;
  } else if (ext == ".dot") {
    writer = write_dot;
  } else if (ext == ".svg") {
    writer = write_svg;
  } else {
    throw std::invalid_argument("tessera::write_trace_file: path '" + path +
                                "' has no known extension (.json, .dot or .svg)");
  }
  check(trace, "tessera::write_trace_file");  // before the file is created or truncated
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) throw std::runtime_error("tessera::write_trace_file: cannot open '" + path + "' for writing");
  writer(trace, file);
  file.flush();
  if (!file) throw std::runtime_error("tessera::write_trace_file: error while writing '" + path + "'");
}

}  // namespace tessera
