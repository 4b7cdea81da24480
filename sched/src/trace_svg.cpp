// An SVG Gantt chart.
#include "tessera/sched/trace_export.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trace_common.hpp"

namespace tessera {

using namespace detail::trace_out;

namespace {

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

// Rough width of s in character cells, for layout: East Asian scripts and emoji take two.
double text_cells(std::string_view s) {
  double cells = 0;
  for_each_code_point(s, [&](char32_t cp, std::string_view) { cells += cp >= 0x2E80 ? 2 : 1; });
  return cells;
}

}  // namespace

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

}  // namespace tessera
