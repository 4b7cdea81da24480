// Graphviz DOT.
#include "tessera/sched/trace_export.hpp"

#include <cstdint>
#include <ostream>
#include <string>

#include "trace_common.hpp"

namespace tessera {

using namespace detail::trace_out;

namespace {

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

bool is_dark(std::uint32_t rgb) {
  const double r = (rgb >> 16) & 0xFF, g = (rgb >> 8) & 0xFF, b = rgb & 0xFF;
  return 0.299 * r + 0.587 * g + 0.114 * b < 128;
}

}  // namespace

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

}  // namespace tessera
