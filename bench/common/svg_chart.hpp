#pragma once
// A small line chart written as SVG, for the benchmarks' figures (rate against size or step).
// Header-only, standard library only: the benchmarks write their own plots, no plotting stack.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::bench {

struct series {
  std::string name;
  std::vector<double> x, y;  // NaN y: no point (skipped)
};

inline std::string svg_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

inline void write_line_chart(const std::string& path, const std::string& title, const std::string& xlabel,
                             const std::string& ylabel, const std::vector<series>& lines) {
  const double W = 1040, H = 520, left = 80, right = 330, top = 50, bottom = 60;
  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymax = 0, ymin = xmin;
  for (const auto& s : lines)
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (std::isnan(s.y[i])) continue;
      xmin = std::min(xmin, s.x[i]);
      xmax = std::max(xmax, s.x[i]);
      ymax = std::max(ymax, s.y[i]);
      if (s.y[i] > 0) ymin = std::min(ymin, s.y[i]);
    }
  // Rates that span more than two decades (CPU beside GPU) get a logarithmic axis.
  const bool log_axis = ymin > 0 && ymax / ymin > 100;
  if (!(xmax >= xmin)) xmin = 0, xmax = 1;
  if (xmax == xmin) xmax = xmin + 1;
  if (ymax <= 0) ymax = 1;
  // A round axis maximum: 1, 2 or 5 times a power of ten (a whole decade on a log axis).
  const double mag = std::pow(10.0, std::floor(std::log10(ymax)));
  double ytop = log_axis ? 10 * mag : mag;
  if (!log_axis)
    for (double f : {1.0, 2.0, 5.0, 10.0})
      if (f * mag >= ymax) {
        ytop = f * mag;
        break;
      }
  const double ybottom = log_axis ? std::pow(10.0, std::floor(std::log10(ymin))) : 0;
  auto px = [&](double x) { return left + (x - xmin) / (xmax - xmin) * (W - left - right); };
  auto py = [&](double y) {
    const double f = log_axis ? (std::log10(y) - std::log10(ybottom)) / (std::log10(ytop) - std::log10(ybottom))
                              : y / ytop;
    return H - bottom - f * (H - top - bottom);
  };
  static const char* palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#7f7f7f"};

  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path);
  char buf[256];
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out << "<text x=\"" << W / 2 << "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">"
      << svg_escape(title) << "</text>\n";
  std::vector<double> yticks;
  if (log_axis)
    for (double y = ybottom; y <= ytop * 1.0001; y *= 10) yticks.push_back(y);
  else
    for (int t = 0; t <= 5; ++t) yticks.push_back(ytop * t / 5);
  for (double y : yticks) {
    std::snprintf(buf, sizeof buf, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"#ddd\"/>"
                  "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%g</text>\n",
                  left, py(y), W - right, py(y), left - 6, py(y) + 4, y);
    out << buf;
  }
  std::vector<double> ticks;
  for (const auto& s : lines) ticks.insert(ticks.end(), s.x.begin(), s.x.end());
  std::sort(ticks.begin(), ticks.end());
  ticks.erase(std::unique(ticks.begin(), ticks.end()), ticks.end());
  const std::size_t stride = std::max<std::size_t>(1, ticks.size() / 12);
  for (std::size_t i = 0; i < ticks.size(); i += stride) {
    std::snprintf(buf, sizeof buf, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%g</text>\n", px(ticks[i]),
                  H - bottom + 18, ticks[i]);
    out << buf;
  }
  std::snprintf(buf, sizeof buf,
                "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"black\"/>"
                "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"black\"/>\n",
                left, H - bottom, W - right, H - bottom, left, top, left, H - bottom);
  out << buf;
  out << "<text x=\"" << (left + W - right) / 2 << "\" y=\"" << H - 16 << "\" text-anchor=\"middle\">"
      << svg_escape(xlabel) << "</text>\n";
  out << "<text transform=\"translate(20," << (top + H - bottom) / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
      << svg_escape(ylabel) << "</text>\n";
  for (std::size_t k = 0; k < lines.size(); ++k) {
    const auto& s = lines[k];
    const char* colour = palette[k % 8];
    std::string points;
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (std::isnan(s.y[i])) continue;
      std::snprintf(buf, sizeof buf, "%g,%g ", px(s.x[i]), py(s.y[i]));
      points += buf;
      std::snprintf(buf, sizeof buf, "<circle cx=\"%g\" cy=\"%g\" r=\"3\" fill=\"%s\"><title>%s: %g at %g</title></circle>\n",
                    px(s.x[i]), py(s.y[i]), colour, svg_escape(s.name).c_str(), s.y[i], s.x[i]);
      out << buf;
    }
    out << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2\" points=\"" << points << "\"/>\n";
    const double ly = top + 10 + 20 * double(k);
    std::snprintf(buf, sizeof buf, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"%s\" stroke-width=\"3\"/>",
                  W - right + 12, ly, W - right + 36, ly, colour);
    out << buf << "<text x=\"" << W - right + 42 << "\" y=\"" << ly + 4 << "\">" << svg_escape(s.name) << "</text>\n";
  }
  out << "</svg>\n";
}

}  // namespace tessera::bench
