// The exporters' shared helpers, and write_trace_file, which picks an exporter by extension.
#include "trace_common.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <system_error>

#include "tessera/sched/trace_export.hpp"

namespace tessera::detail::trace_out {

std::string fixed(double v, int precision) {
  char buf[512];  // enough for any finite double in fixed notation with <= 6 decimals
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, precision);
  if (r.ec != std::errc{}) r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific, precision);
  return std::string(buf, r.ptr);
}

std::string hex_color(std::uint32_t rgb) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s = "#000000";
  for (int i = 0; i < 6; ++i) s[static_cast<std::size_t>(6 - i)] = digits[(rgb >> (4 * i)) & 0xFu];
  return s;
}

namespace {

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

}  // namespace

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

label_colors::label_colors(const trace_data& trace) {
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

time_unit unit_for(double us) {
  if (us >= 1e6) return {1e6, "s"};
  if (us >= 1e3) return {1e3, "ms"};
  return {1, "\xC2\xB5s"};  // µs
}

}  // namespace tessera::detail::trace_out

namespace tessera {

using namespace detail::trace_out;

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
