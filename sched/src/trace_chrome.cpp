// Chrome Trace Event format (Perfetto, chrome://tracing).
#include "tessera/sched/trace_export.hpp"

#include <cstddef>
#include <ostream>
#include <string>

#include "trace_common.hpp"

namespace tessera {

using namespace detail::trace_out;

namespace {

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

const char* device_name(device d) { return d == device::gpu ? "gpu" : "cpu"; }

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

}  // namespace tessera
