// Trace exporters on synthetic traces: the JSON and SVG are read back by Python's own parsers
// (json, xml.etree) and compared task by task and edge by edge; the DOT is parsed line by line;
// summaries are checked on hand-built DAGs with known critical paths and against a reference.
#include <doctest/doctest.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <locale>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "tessera/sched/trace_export.hpp"
#include "test_util.hpp"

using namespace tessera;

namespace {
namespace fs = std::filesystem;

// Reads an exporter's output back with the standard parsers and prints what it found, one record
// per line, ending with END. Hex-encoded strings survive any bytes.
constexpr const char* checker_py = R"PY(
import json, sys
import xml.etree.ElementTree as ET

def h(s):
    return 'h' + s.encode('utf-8').hex()

def reject(name):
    raise ValueError('non-standard JSON constant ' + name)

def check_json(path, full):
    with open(path, encoding='utf-8') as f:
        doc = json.load(f, parse_constant=reject)
    assert isinstance(doc, dict), 'top level is not an object'
    assert doc.get('displayTimeUnit') == 'ms', 'displayTimeUnit'
    counts = {}
    for e in doc['traceEvents']:
        ph = e['ph']
        counts[ph] = counts.get(ph, 0) + 1
        if not full:
            continue
        if ph == 'M':
            v = e['args'].get('name', e['args'].get('sort_index'))
            print('M', e['name'], e['pid'], e['tid'], h(v) if isinstance(v, str) else v)
        elif ph == 'X':
            a = e['args']
            assert isinstance(a['skipped'], bool) and isinstance(a['id'], int)
            print('X', a['id'], e['pid'], e['tid'], repr(float(e['ts'])), repr(float(e['dur'])), h(e['name']),
                  a['priority'], a['device'], int(a['skipped']), e['cat'])
        elif ph in ('s', 'f'):
            print('F', ph, e['id'], e['pid'], e['tid'], repr(float(e['ts'])), e['name'], e['cat'], e.get('bp', '-'))
        else:
            print('?', ph)
    for ph in sorted(counts):
        print('count', ph, counts[ph])

def check_svg(path, full):
    root = ET.parse(path).getroot()
    ns = '{http://www.w3.org/2000/svg}'
    assert root.tag == ns + 'svg', root.tag
    groups = {g.get('id'): g for g in root.iter(ns + 'g') if g.get('id')}
    rects = list(groups['tasks'])
    for r in rects:
        assert r.tag == ns + 'rect', r.tag
        t = r.find(ns + 'title')
        if full:
            print('R', r.get('x'), r.get('y'), r.get('width'), r.get('fill'), h(t.text or ''))
    if full:
        for t in groups['tracks'].iter(ns + 'text'):
            print('T', h(t.text or ''))
        for t in groups['legend'].iter(ns + 'text'):
            print('L', h(t.text or ''))
    print('count rect', len(rects))
    print('count tick', len(list(groups['axis'].iter(ns + 'text'))))

{'json': check_json, 'svg': check_svg}[sys.argv[1]](sys.argv[2], sys.argv[3] == 'full')
print('END')
)PY";

struct temp_dir {
  fs::path path;
  temp_dir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("tessera_trace_test_" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

const fs::path& tmp() {
  static temp_dir d;
  return d.path;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void dump(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  REQUIRE(out.good());
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> v;
  std::istringstream in(line);
  for (std::string w; in >> w;) v.push_back(w);
  return v;
}

// Runs the checker on FILE; every line it printed, split into words. Fails the test when python3
// is missing or the parser rejects the file: the check must never pass for want of a parser.
std::vector<std::vector<std::string>> run_checker(const char* mode, const std::string& text, bool full) {
  static const bool have_python =
      std::system("python3 -c \"import json, xml.etree.ElementTree\" > /dev/null 2>&1") == 0;
  REQUIRE_MESSAGE(have_python, "python3 (with json and xml.etree) is required to check the exporters' output");
  const fs::path script = tmp() / "trace_check.py", file = tmp() / (std::string("trace.") + mode),
                 out = tmp() / "check.out";
  if (!fs::exists(script)) dump(script, checker_py);
  dump(file, text);
  const std::string cmd = "python3 '" + script.string() + "' " + mode + " '" + file.string() + "' " +
                          (full ? "full" : "count") + " > '" + out.string() + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  const std::string result = slurp(out);
  REQUIRE_MESSAGE(rc == 0, "the " << mode << " checker rejected the output: " << result.substr(0, 3000));
  std::vector<std::vector<std::string>> lines;
  std::istringstream in(result);
  for (std::string line; std::getline(in, line);) lines.push_back(split(line));
  REQUIRE_MESSAGE((!lines.empty() && lines.back() == std::vector<std::string>{"END"}), result.substr(0, 3000));
  lines.pop_back();
  return lines;
}

double num(const std::string& s) {
  double v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  REQUIRE_MESSAGE((r.ec == std::errc{} && r.ptr == s.data() + s.size()), "not a number: " << s);
  return v;
}

std::uint64_t unum(const std::string& s) {
  std::uint64_t v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  REQUIRE_MESSAGE((r.ec == std::errc{} && r.ptr == s.data() + s.size()), "not an integer: " << s);
  return v;
}

std::string hex(const std::string& s) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string h = "h";
  for (unsigned char c : s) h += digits[c >> 4], h += digits[c & 0xF];
  return h;
}

std::string rgb_string(std::uint32_t rgb) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "#%06x", static_cast<unsigned>(rgb & 0xFFFFFFu));
  return buf;
}

// Labels that need escaping, with what each format must read back. Malformed UTF-8 becomes
// U+FFFD per bad byte; XML cannot carry C0 controls, DOT flattens them to spaces.
#define FFFD "\xEF\xBF\xBD"
struct tricky_label {
  std::string raw, json, xml, dot;
};
const std::vector<tricky_label>& tricky_labels() {
  static const std::vector<tricky_label> v = {
      {"say \"hi\"", "say \"hi\"", "say \"hi\"", "say \\\"hi\\\""},
      {"back\\slash \\n not newline", "back\\slash \\n not newline", "back\\slash \\n not newline",
       "back\\\\slash \\\\n not newline"},
      {"two\nlines\ttab\rcr", "two\nlines\ttab\rcr", "two\nlines\ttab\rcr", "two\\nlines tab cr"},
      {"ctl\x01\x1f!", "ctl\x01\x1f!", "ctl" FFFD FFFD "!", "ctl  !"},
      {"\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x99\x82", "\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x99\x82",
       "\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x99\x82", "\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x99\x82"},
      {"<tag> & 'apos' </svg>", "<tag> & 'apos' </svg>", "<tag> & 'apos' </svg>", "<tag> & 'apos' </svg>"},
      {"bad\xff\xc3(", "bad" FFFD FFFD "(", "bad" FFFD FFFD "(", "bad" FFFD FFFD "("},
      {"", "", "", ""},
      {"overlong\xc0\xaf", "overlong" FFFD FFFD, "overlong" FFFD FFFD, "overlong" FFFD FFFD},
      {"surrogate\xed\xa0\x80", "surrogate" FFFD FFFD FFFD, "surrogate" FFFD FFFD FFFD,
       "surrogate" FFFD FFFD FFFD},
      {"trunc\xe4\xb8", "trunc" FFFD FFFD, "trunc" FFFD FFFD, "trunc" FFFD FFFD},
  };
  return v;
}

const tricky_label& expected_for(const std::string& raw) {
  static std::vector<tricky_label> plain;
  for (const tricky_label& t : tricky_labels()) {
    if (t.raw == raw) return t;
  }
  for (const tricky_label& t : plain) {
    if (t.raw == raw) return t;
  }
  plain.push_back({raw, raw, raw, raw});
  return plain.back();
}

const std::vector<std::string> tricky_tracks = {"worker 0", "worker \"1\" <&>", "stream \xC3\xA9", "H2D"};

// Tasks on tracks that never overlap; edges from lower to higher id (as the runtime makes them),
// deduplicated per pair. Durations >= 0.5 us unless zero durations are allowed.
trace_data random_trace(std::mt19937_64& rng, std::size_t n_tasks, std::size_t n_edges, bool tricky,
                        std::uint64_t id0 = 0, bool allow_zero = false) {
  trace_data tr;
  tr.tracks = tricky ? tricky_tracks : std::vector<std::string>{"worker 0", "worker 1", "worker 2", "worker 3"};
  std::vector<std::string> labels = {"geqrt", "tsqrt", "unmqr", "tsmqr"};
  if (tricky) {
    for (const tricky_label& t : tricky_labels()) labels.push_back(t.raw);
  }
  std::vector<double> clock(tr.tracks.size(), 0);
  std::uniform_real_distribution<double> dur(0.5, 20), gap(0, 10);
  std::uniform_int_distribution<std::size_t> pick_label(0, labels.size() - 1), pick_track(0, tr.tracks.size() - 1);
  for (std::size_t i = 0; i < n_tasks; ++i) {
    trace_task t;
    t.id = id0 + i;
    t.label = labels[pick_label(rng)];
    t.track = static_cast<int>(pick_track(rng));
    double& c = clock[static_cast<std::size_t>(t.track)];
    t.start_us = c + (rng() % 2 ? gap(rng) : 0.0);
    t.end_us = t.start_us + (allow_zero && rng() % 10 == 0 ? 0.0 : dur(rng));
    c = t.end_us;
    t.priority = static_cast<int>(rng() % 7) - 3;
    t.where = rng() % 3 == 0 ? device::gpu : device::cpu;
    t.skipped = rng() % 20 == 0;
    if (rng() % 10 == 0) t.color = static_cast<std::uint32_t>(rng() % 0x1000000) | 1u;
    tr.tasks.push_back(t);
  }
  std::set<std::pair<std::uint64_t, std::uint64_t>> seen;
  std::uniform_int_distribution<std::size_t> pick_task(0, n_tasks - 1);
  for (std::size_t k = 0; n_tasks > 1 && seen.size() < n_edges && k < 20 * n_edges; ++k) {
    std::size_t a = pick_task(rng), b = pick_task(rng);
    if (a == b) continue;
    if (a > b) std::swap(a, b);
    if (!seen.emplace(id0 + a, id0 + b).second) continue;
    tr.edges.push_back({id0 + a, id0 + b, static_cast<hazard>(rng() % 4)});
  }
  return tr;
}

// Longest duration-weighted path, by memoised recursion over predecessors: a reference
// independent of the exporter's Kahn sweep.
double reference_critical_path(const trace_data& tr) {
  std::map<std::uint64_t, std::size_t> pos;
  for (std::size_t i = 0; i < tr.tasks.size(); ++i) pos[tr.tasks[i].id] = i;
  std::vector<std::vector<std::size_t>> preds(tr.tasks.size());
  for (const trace_edge& e : tr.edges) preds[pos.at(e.to)].push_back(pos.at(e.from));
  std::vector<double> memo(tr.tasks.size(), -1);
  std::function<double(std::size_t)> longest = [&](std::size_t v) {
    if (memo[v] >= 0) return memo[v];
    double best = 0;
    for (std::size_t u : preds[v]) best = std::max(best, longest(u));
    return memo[v] = best + tr.tasks[v].end_us - tr.tasks[v].start_us;
  };
  double cp = 0;
  for (std::size_t v = 0; v < tr.tasks.size(); ++v) cp = std::max(cp, longest(v));
  return cp;
}

template <class F>
std::string exported(const trace_data& tr, F writer) {
  std::ostringstream s;
  writer(tr, s);
  return s.str();
}

trace_task task(std::uint64_t id, int track, double start, double end, std::string label = "t") {
  trace_task t;
  t.id = id;
  t.track = track;
  t.start_us = start;
  t.end_us = end;
  t.label = std::move(label);
  return t;
}

}  // namespace

TEST_CASE("chrome json: parses, one X per task, one bound flow pair per edge, escaped names") {
  std::mt19937_64 rng(tessera::testing::seed());
  const trace_data tr = random_trace(rng, 600, 1200, true, rng() % 1000);
  const auto lines = run_checker("json", exported(tr, write_chrome_json), true);

  std::map<std::string, std::string> thread_name;  // tid -> hex name
  std::map<std::string, std::uint64_t> sort_index;
  std::map<std::uint64_t, std::vector<std::string>> xs;  // task id -> X record
  struct flow_end {
    std::string ph, tid, name, cat, bp;
    double ts;
  };
  std::map<std::uint64_t, std::vector<flow_end>> flows;
  std::map<std::string, std::size_t> counts;
  bool process_named = false;
  for (const auto& w : lines) {
    REQUIRE(!w.empty());
    if (w[0] == "M") {
      REQUIRE(w.size() == 5);
      CHECK(w[2] == "1");
      if (w[1] == "process_name") process_named = w[4] == hex("tessera");
      if (w[1] == "thread_name") thread_name[w[3]] = w[4];
      if (w[1] == "thread_sort_index") sort_index[w[3]] = unum(w[4]);
    } else if (w[0] == "X") {
      REQUIRE(w.size() == 11);
      CHECK_MESSAGE(xs.emplace(unum(w[1]), w).second, "two X events for task " << w[1]);
    } else if (w[0] == "F") {
      REQUIRE(w.size() == 9);
      CHECK(w[3] == "1");
      flows[unum(w[2])].push_back({w[1], w[4], w[6], w[7], w[8], num(w[5])});
    } else if (w[0] == "count") {
      counts[w[1]] = unum(w[2]);
    } else {
      FAIL("unexpected event: ", w[1]);
    }
  }
  CHECK(process_named);
  CHECK(counts["X"] == tr.tasks.size());
  CHECK(xs.size() == tr.tasks.size());
  CHECK(counts["s"] == tr.edges.size());
  CHECK(counts["f"] == tr.edges.size());
  CHECK(counts["M"] == 1 + 2 * tr.tracks.size());

  // Tracks: a name and sort index per track, names escaped correctly.
  std::map<std::string, int> track_of_tid;
  for (const auto& [tid, name] : thread_name) {
    const auto it = std::find_if(tr.tracks.begin(), tr.tracks.end(), [&](auto& n) { return hex(n) == name; });
    REQUIRE_MESSAGE(it != tr.tracks.end(), "unknown thread name " << name);
    track_of_tid[tid] = static_cast<int>(it - tr.tracks.begin());
    CHECK(sort_index[tid] == static_cast<std::uint64_t>(it - tr.tracks.begin()));
  }
  CHECK(track_of_tid.size() == tr.tracks.size());

  // Every task: its own X on its track's thread with its times, escaped name and args.
  std::size_t bad = 0;
  std::string first_bad;
  for (const trace_task& t : tr.tasks) {
    const auto& w = xs[t.id];
    const bool ok = w.size() == 11 && track_of_tid.count(w[3]) && track_of_tid[w[3]] == t.track &&
                    std::abs(num(w[4]) - t.start_us) <= 1e-3 && std::abs(num(w[5]) - (t.end_us - t.start_us)) <= 1e-3 &&
                    w[6] == hex(expected_for(t.label).json) && w[7] == std::to_string(t.priority) &&
                    w[8] == (t.where == device::gpu ? "gpu" : "cpu") && w[9] == (t.skipped ? "1" : "0") &&
                    w[10] == "task";
    if (!ok && bad++ == 0) first_bad = "task " + std::to_string(t.id);
  }
  CHECK_MESSAGE(bad == 0, first_bad);

  // Every flow id: one "s" and one "f", each strictly inside a slice of its thread (that is what
  // viewers bind them to); the bound (from, to, kind) triples are exactly the edges.
  std::map<std::string, std::vector<std::tuple<double, double, std::uint64_t>>> slices;  // tid -> (ts, end, id)
  for (const auto& [id, w] : xs) slices[w[3]].emplace_back(num(w[4]), num(w[4]) + num(w[5]), id);
  for (auto& [tid, v] : slices) std::sort(v.begin(), v.end());
  auto enclosing = [&](const flow_end& f) -> std::int64_t {
    const auto& v = slices[f.tid];
    auto it = std::upper_bound(v.begin(), v.end(), std::tuple{f.ts, 1e300, std::uint64_t{0}});
    if (it == v.begin()) return -1;
    --it;
    return std::get<0>(*it) < f.ts && f.ts < std::get<1>(*it) ? static_cast<std::int64_t>(std::get<2>(*it)) : -1;
  };
  std::multiset<std::tuple<std::int64_t, std::int64_t, std::string>> got, want;
  bad = 0;
  for (const auto& [id, ends] : flows) {
    const bool pair = ends.size() == 2 && ends[0].ph != ends[1].ph && ends[0].name == ends[1].name &&
                      ends[0].cat == "dep" && ends[1].cat == "dep";
    if (!pair) {
      ++bad;
      continue;
    }
    const flow_end& s = ends[0].ph == "s" ? ends[0] : ends[1];
    const flow_end& f = ends[0].ph == "f" ? ends[0] : ends[1];
    if (f.bp != "e") ++bad;
    got.emplace(enclosing(s), enclosing(f), s.name);
  }
  CHECK(bad == 0);
  for (const trace_edge& e : tr.edges) {
    want.emplace(static_cast<std::int64_t>(e.from), static_cast<std::int64_t>(e.to), to_string(e.kind));
  }
  CHECK(flows.size() == tr.edges.size());
  CHECK(got == want);
}

TEST_CASE("svg: valid XML, one rect per task on a linear time scale, titles and legend escaped") {
  std::mt19937_64 rng(tessera::testing::seed() + 1);
  const trace_data tr = random_trace(rng, 500, 600, true, 0, true);
  const auto lines = run_checker("svg", exported(tr, write_svg), true);

  std::vector<std::vector<std::string>> rects;
  std::vector<std::string> track_texts, legend_texts;
  std::map<std::string, std::size_t> counts;
  for (const auto& w : lines) {
    if (w[0] == "R") rects.push_back(w);
    if (w[0] == "T") track_texts.push_back(w[1]);
    if (w[0] == "L") legend_texts.push_back(w.size() > 1 ? w[1] : "h");
    if (w[0] == "count") counts[w[1]] = unum(w[2]);
  }
  REQUIRE(rects.size() == tr.tasks.size());
  CHECK(counts["rect"] == tr.tasks.size());
  CHECK(counts["tick"] >= 4);

  std::vector<std::string> want_tracks;
  for (const std::string& n : tr.tracks) want_tracks.push_back(hex(n));
  CHECK(track_texts == want_tracks);

  // x is one affine function of the start time; the width is the duration on the same scale.
  std::size_t lo = 0, hi = 0;
  for (std::size_t i = 0; i < tr.tasks.size(); ++i) {
    if (tr.tasks[i].start_us < tr.tasks[lo].start_us) lo = i;
    if (tr.tasks[i].start_us > tr.tasks[hi].start_us) hi = i;
  }
  const double scale = (num(rects[hi][1]) - num(rects[lo][1])) / (tr.tasks[hi].start_us - tr.tasks[lo].start_us);
  CHECK(scale > 0);
  std::map<int, std::string> y_of_track;
  std::map<std::string, std::string> fill_of_label;
  std::size_t bad = 0;
  std::string first_bad;
  for (std::size_t i = 0; i < tr.tasks.size(); ++i) {
    const trace_task& t = tr.tasks[i];
    const auto& w = rects[i];
    const double x = num(w[1]), width = num(w[3]);
    const std::string title = hex(expected_for(t.label).xml + " #" + std::to_string(t.id) + ":");
    bool ok = std::abs(x - (num(rects[lo][1]) + scale * (t.start_us - tr.tasks[lo].start_us))) < 0.02 &&
              std::abs(width - std::max(0.5, scale * (t.end_us - t.start_us))) < 0.02 &&
              w[5].compare(0, title.size(), title) == 0;
    ok = ok && y_of_track.emplace(t.track, w[2]).first->second == w[2];
    if (t.color != 0) {
      ok = ok && w[4] == rgb_string(t.color);
    } else {
      ok = ok && fill_of_label.emplace(t.label, w[4]).first->second == w[4];  // one colour per label
    }
    if (!ok && bad++ == 0) first_bad = "task " + std::to_string(t.id) + " " + w[1] + " " + w[3] + " " + w[4];
  }
  CHECK_MESSAGE(bad == 0, first_bad);
  for (const auto& [a, ya] : y_of_track) {
    for (const auto& [b, yb] : y_of_track) CHECK((a < b) == (num(ya) < num(yb)));
  }
  // Up to 20 labels get distinct colours.
  std::set<std::string> fills;
  for (const auto& [label, fill] : fill_of_label) fills.insert(fill);
  CHECK(fills.size() == fill_of_label.size());

  // The legend names every label once.
  std::set<std::string> want_legend;
  for (const trace_task& t : tr.tasks) want_legend.insert(hex(expected_for(t.label).xml));
  CHECK(legend_texts.size() == want_legend.size());
  CHECK(std::set<std::string>(legend_texts.begin(), legend_texts.end()) == want_legend);
}

TEST_CASE("dot: one node per task, one edge line per edge, styled by hazard, escaped labels") {
  std::mt19937_64 rng(tessera::testing::seed() + 2);
  const trace_data tr = random_trace(rng, 300, 700, true, 5);
  const std::string dot = exported(tr, write_dot);
  REQUIRE(dot.rfind("digraph", 0) == 0);
  REQUIRE(dot.size() >= 2);
  CHECK(dot.substr(dot.size() - 2) == "}\n");

  const std::regex node_re(R"re(^  t(\d+) \[label="((?:[^"\\]|\\.)*)", fillcolor="(#[0-9a-f]{6})".*\];$)re");
  const std::regex edge_re(R"re(^  t(\d+) -> t(\d+) \[label="(RAW|WAR|WAW|ACC)", style=(\w+)\];$)re");
  std::map<std::uint64_t, std::pair<std::string, std::string>> nodes;  // id -> (label, fill)
  std::multiset<std::tuple<std::uint64_t, std::uint64_t, std::string>> edges, want_edges;
  std::size_t edge_lines = 0, bad_style = 0;
  std::istringstream in(dot);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (line.find("->") != std::string::npos) {
      ++edge_lines;
      REQUIRE_MESSAGE(std::regex_match(line, m, edge_re), line);
      edges.emplace(unum(m[1]), unum(m[2]), m[3]);
      const std::map<std::string, std::string> style = {
          {"RAW", "solid"}, {"WAR", "dashed"}, {"WAW", "dotted"}, {"ACC", "bold"}};
      if (style.at(m[3]) != m[4]) ++bad_style;
    } else if (std::regex_match(line, m, node_re)) {
      CHECK_MESSAGE(nodes.emplace(unum(m[1]), std::pair{m[2].str(), m[3].str()}).second, "node twice: " << line);
    }
  }
  CHECK(bad_style == 0);
  CHECK(edge_lines == tr.edges.size());
  for (const trace_edge& e : tr.edges) want_edges.emplace(e.from, e.to, to_string(e.kind));
  CHECK(edges == want_edges);

  REQUIRE(nodes.size() == tr.tasks.size());
  std::size_t bad = 0;
  std::string first_bad;
  std::map<std::string, std::string> fill_of_label;
  for (const trace_task& t : tr.tasks) {
    const auto it = nodes.find(t.id);
    const std::string want = expected_for(t.label).dot + "\\n#" + std::to_string(t.id) + (t.skipped ? " (skipped)" : "");
    bool ok = it != nodes.end() && it->second.first == want;
    if (ok && t.color != 0) ok = it->second.second == rgb_string(t.color);
    if (ok && t.color == 0) ok = fill_of_label.emplace(t.label, it->second.second).first->second == it->second.second;
    if (!ok && bad++ == 0) first_bad = "task " + std::to_string(t.id) + ": " + (it == nodes.end() ? "" : it->second.first);
  }
  CHECK_MESSAGE(bad == 0, first_bad);
}

TEST_CASE("summarize: known critical paths, busy, idle and gaps") {
  SUBCASE("chain across two tracks") {
    trace_data tr;
    tr.tracks = {"a", "b"};
    tr.tasks = {task(0, 0, 0, 10), task(1, 1, 12, 15), task(2, 0, 20, 30)};
    tr.edges = {{0, 1, hazard::raw}, {1, 2, hazard::war}};
    const trace_summary s = summarize(tr);
    CHECK(s.tasks == 3);
    CHECK(s.edges == 2);
    CHECK(s.span_us == doctest::Approx(30));
    CHECK(s.critical_path_us == doctest::Approx(23));
    CHECK(s.busy_us == std::vector<double>{20, 3});
    CHECK(s.idle_us == std::vector<double>{10, 27});
    CHECK(s.longest_gap_us == std::vector<double>{10, 0});
  }
  SUBCASE("diamond: the long branch, not the span") {
    trace_data tr;
    tr.tracks = {"a", "b", "idle"};
    tr.tasks = {task(0, 0, 0, 1), task(1, 0, 1, 6), task(2, 1, 1, 3), task(3, 1, 10, 11)};
    tr.edges = {{0, 1, hazard::raw}, {0, 2, hazard::raw}, {1, 3, hazard::waw}, {2, 3, hazard::accumulate}};
    const trace_summary s = summarize(tr);
    CHECK(s.span_us == doctest::Approx(11));
    CHECK(s.critical_path_us == doctest::Approx(1 + 5 + 1));
    CHECK(s.busy_us == std::vector<double>{6, 3, 0});
    CHECK(s.idle_us == std::vector<double>{5, 8, 11});
    CHECK(s.longest_gap_us == std::vector<double>{0, 7, 0});

    // Same DAG with ids permuted so edges run from higher to lower id, tasks unsorted.
    trace_data p = tr;
    const std::uint64_t perm[] = {9, 4, 7, 1};
    for (trace_task& t : p.tasks) t.id = perm[t.id];
    for (trace_edge& e : p.edges) e.from = perm[e.from], e.to = perm[e.to];
    std::swap(p.tasks[0], p.tasks[2]);
    CHECK(summarize(p).critical_path_us == doctest::Approx(7));

    trace_data cyc = tr;
    cyc.edges.push_back({3, 0, hazard::raw});
    CHECK_THROWS_WITH_AS(summarize(cyc), doctest::Contains("cycle"), std::invalid_argument);
  }
  SUBCASE("overlapping tasks on a track count once") {
    trace_data tr;
    tr.tracks = {"a"};
    tr.tasks = {task(0, 0, 0, 10), task(1, 0, 5, 12), task(2, 0, 20, 25)};
    const trace_summary s = summarize(tr);
    CHECK(s.busy_us[0] == doctest::Approx(17));
    CHECK(s.longest_gap_us[0] == doctest::Approx(8));
    CHECK(s.critical_path_us == doctest::Approx(10));  // no edges: the longest task
  }
  SUBCASE("empty") {
    trace_data tr;
    tr.tracks = {"a", "b"};
    const trace_summary s = summarize(tr);
    CHECK(s.span_us == 0);
    CHECK(s.critical_path_us == 0);
    CHECK(s.busy_us == std::vector<double>{0, 0});
    CHECK(s.idle_us == std::vector<double>{0, 0});
  }
  SUBCASE("random: busy is the sum of durations, critical path matches a reference") {
    std::mt19937_64 rng(tessera::testing::seed() + 3);
    const trace_data tr = random_trace(rng, 2000, 6000, false, 0, true);
    const trace_summary s = summarize(tr);
    std::vector<double> busy(tr.tracks.size(), 0), gap(tr.tracks.size(), 0), last_end(tr.tracks.size(), -1);
    double t0 = 1e300, t1 = -1e300;
    for (const trace_task& t : tr.tasks) {  // tasks of a track are generated in time order
      const auto k = static_cast<std::size_t>(t.track);
      busy[k] += t.end_us - t.start_us;
      if (last_end[k] >= 0) gap[k] = std::max(gap[k], t.start_us - last_end[k]);
      last_end[k] = t.end_us;
      t0 = std::min(t0, t.start_us), t1 = std::max(t1, t.end_us);
    }
    CHECK(s.span_us == doctest::Approx(t1 - t0));
    for (std::size_t k = 0; k < tr.tracks.size(); ++k) {
      CHECK(s.busy_us[k] == doctest::Approx(busy[k]).epsilon(1e-12));
      CHECK(s.idle_us[k] == doctest::Approx(t1 - t0 - busy[k]).epsilon(1e-12));
      CHECK(s.longest_gap_us[k] == doctest::Approx(gap[k]));
    }
    const double ref = reference_critical_path(tr);
    MESSAGE("random DAG: span " << s.span_us << " us, critical path " << s.critical_path_us << " us (reference "
                                << ref << ")");
    CHECK(s.critical_path_us == doctest::Approx(ref).epsilon(1e-12));
  }
}

TEST_CASE("summarize: per-label count, total, median and max; copies grouped by direction") {
  std::mt19937_64 rng(tessera::testing::seed() + 5);
  // Copies (trace_task::copy) are grouped by direction; a task whose own label has " for " is not.
  const char* names[] = {"tsqrt", "update for row 2", "H2D for 3", "H2D for 4", "D2H for 9"};
  const char* groups[] = {"tsqrt", "update for row 2", "H2D", "H2D", "D2H"};
  std::map<std::string, std::vector<double>> want;
  trace_data tr;
  tr.tracks = {"a", "b", "c"};
  std::uniform_real_distribution<double> dur(0.5, 100.0);
  std::uniform_int_distribution<int> pick(0, 4), track(0, 2);
  const int n = 1 + static_cast<int>(rng() % 400);
  double t = 0;
  for (int i = 0; i < n; ++i) {
    const int k = pick(rng);
    const double d = dur(rng);
    trace_task rec = task(std::uint64_t(i), track(rng), t, t + d, names[k]);
    rec.copy = k >= 2;
    tr.tasks.push_back(rec);
    want[groups[k]].push_back(d);
    t += d;
  }
  const trace_summary s = summarize(tr);
  REQUIRE(s.labels.size() == want.size());
  for (std::size_t i = 0; i + 1 < s.labels.size(); ++i) CHECK(s.labels[i].total_us >= s.labels[i + 1].total_us);
  for (const label_stats& l : s.labels) {
    CAPTURE(l.label);
    REQUIRE(want.count(l.label) == 1);
    std::vector<double> d = want[l.label];
    std::sort(d.begin(), d.end());
    const double median = d.size() % 2 ? d[d.size() / 2] : (d[d.size() / 2 - 1] + d[d.size() / 2]) / 2;
    double total = 0;
    for (double x : d) total += x;
    CHECK(l.tasks == d.size());
    CHECK(l.total_us == doctest::Approx(total));
    CHECK(l.median_us == doctest::Approx(median));
    CHECK(l.max_us == doctest::Approx(d.back()));
  }
  std::ostringstream out;
  print_summary(tr, s, out);
  CHECK(out.str().find("median") != std::string::npos);
  CHECK(out.str().find("H2D for") == std::string::npos);
}

TEST_CASE("summarize: GPU busy is the union of GPU tasks over all streams, copies excluded") {
  std::mt19937_64 rng(tessera::testing::seed() + 6);
  trace_data tr;
  tr.tracks = {"worker 0", "GPU stream 0", "GPU stream 1", "GPU stream 2", "copy H2D"};
  // Integer endpoints in [0, 1000): the union is counted cell by cell below.
  std::vector<bool> covered(1000, false);
  std::uniform_int_distribution<int> at(0, 999), len(1, 60), stream(1, 3);
  const int n = 1 + static_cast<int>(rng() % 60);
  std::uint64_t id = 0;
  for (int i = 0; i < n; ++i) {
    const int a = at(rng), b = std::min(1000, a + len(rng));
    trace_task t = task(id++, stream(rng), a, b, "gpu_sssmqr");
    t.where = tessera::device::gpu;
    tr.tasks.push_back(t);
    for (int c = a; c < b; ++c) covered[std::size_t(c)] = true;
  }
  trace_task copy = task(id++, 4, 0, 1000, "H2D for 0");  // copies do not count
  copy.where = tessera::device::gpu;
  copy.copy = true;
  tr.tasks.push_back(copy);
  tr.tasks.push_back(task(id++, 0, 0, 1000, "cpu"));      // nor CPU tasks
  const double want = double(std::count(covered.begin(), covered.end(), true));
  const trace_summary s = summarize(tr);
  CHECK(s.gpu_busy_us == doctest::Approx(want));
  std::ostringstream out;
  print_summary(tr, s, out);
  CHECK(out.str().find("GPU (any stream) busy") != std::string::npos);
  // Without GPU tasks there is no such line.
  trace_data cpu;
  cpu.tracks = {"worker 0"};
  cpu.tasks = {task(0, 0, 0, 10)};
  std::ostringstream none;
  print_summary(cpu, summarize(cpu), none);
  CHECK(summarize(cpu).gpu_busy_us == 0);
  CHECK(none.str().find("GPU (any stream)") == std::string::npos);
}

TEST_CASE("print_summary: one line per track, span and critical path") {
  trace_data tr;
  tr.tracks = {"worker 0", "worker 1"};
  tr.tasks = {task(0, 0, 0, 10), task(1, 1, 12, 15), task(2, 0, 20, 30)};
  tr.edges = {{0, 1, hazard::raw}, {1, 2, hazard::raw}};
  std::ostringstream out;
  print_summary(tr, summarize(tr), out);
  const std::string text = out.str();
  MESSAGE(text);
  CHECK(text.find("worker 0") != std::string::npos);
  CHECK(text.find("worker 1") != std::string::npos);
  CHECK(text.find("20.000") != std::string::npos);  // busy of worker 0
  CHECK(text.find("span 30.000 \xC2\xB5s, critical path 23.000 \xC2\xB5s (76.7% of span)") != std::string::npos);
  trace_summary wrong = summarize(tr);
  wrong.busy_us.pop_back();
  CHECK_THROWS_AS(print_summary(tr, wrong, out), std::invalid_argument);
}

TEST_CASE("output does not depend on the stream's or the global C++ locale") {
  struct comma : std::numpunct<char> {
    char do_decimal_point() const override { return ','; }
    char do_thousands_sep() const override { return '.'; }
    std::string do_grouping() const override { return "\3"; }
  };
  std::mt19937_64 rng(tessera::testing::seed() + 4);
  const trace_data tr = random_trace(rng, 300, 300, false, 1000);
  const std::string json = exported(tr, write_chrome_json), svg = exported(tr, write_svg),
                    dot = exported(tr, write_dot);
  std::ostringstream sum_plain;
  print_summary(tr, summarize(tr), sum_plain);

  const std::locale odd(std::locale::classic(), new comma);
  const std::locale old = std::locale::global(odd);
  auto imbued = [&](auto writer) {
    std::ostringstream s;
    s.imbue(odd);
    writer(tr, s);
    return s.str();
  };
  const std::string json2 = imbued(write_chrome_json), svg2 = imbued(write_svg), dot2 = imbued(write_dot);
  std::ostringstream sum_odd;
  sum_odd.imbue(odd);
  print_summary(tr, summarize(tr), sum_odd);
  std::locale::global(old);
  CHECK(json == json2);
  CHECK(svg == svg2);
  CHECK(dot == dot2);
  CHECK(sum_plain.str() == sum_odd.str());
}

TEST_CASE("empty traces export valid files") {
  trace_data tr;
  tr.tracks = {"worker 0"};
  for (const auto& w : run_checker("json", exported(tr, write_chrome_json), false)) {
    if (w[0] == "count") CHECK(w[1] == "M");
  }
  for (const auto& w : run_checker("svg", exported(tr, write_svg), false)) {
    if (w[1] == "rect") CHECK(w[2] == "0");
  }
  tr.tracks.clear();
  CHECK_NOTHROW(run_checker("svg", exported(tr, write_svg), false));
  CHECK(exported(tr, write_dot).find("->") == std::string::npos);
}

TEST_CASE("malformed traces are rejected with the offending task or edge named") {
  trace_data good;
  good.tracks = {"a", "b"};
  good.tasks = {task(0, 0, 0, 1), task(1, 1, 1, 2)};
  good.edges = {{0, 1, hazard::raw}};
  auto rejects = [&](const trace_data& tr, const char* what) {
    std::ostringstream out;
    CHECK_THROWS_WITH_AS(write_chrome_json(tr, out), doctest::Contains(what), std::invalid_argument);
    CHECK_THROWS_WITH_AS(write_dot(tr, out), doctest::Contains(what), std::invalid_argument);
    CHECK_THROWS_WITH_AS(write_svg(tr, out), doctest::Contains(what), std::invalid_argument);
    CHECK_THROWS_WITH_AS(summarize(tr), doctest::Contains(what), std::invalid_argument);
  };
  trace_data t = good;
  t.tasks[1].track = 2;
  rejects(t, "task 1 has track 2");
  t = good;
  t.tasks[0].track = -1;
  rejects(t, "task 0 has track -1");
  t = good;
  t.tasks[1].end_us = 0.5;
  rejects(t, "task 1 has start_us/end_us");
  t = good;
  t.tasks[0].start_us = std::nan("");
  rejects(t, "task 0 has start_us/end_us");
  t = good;
  t.edges.push_back({1, 7, hazard::war});
  rejects(t, "names task 7");
  t = good;
  t.tasks[1].id = 0;
  t.edges.clear();
  rejects(t, "two tasks with id 0");
}

TEST_CASE("write_trace_file: by extension, errors name the path") {
  std::mt19937_64 rng(tessera::testing::seed() + 5);
  const trace_data tr = random_trace(rng, 50, 80, true);
  const fs::path dir = tmp();
  write_trace_file(tr, (dir / "t.json").string());
  write_trace_file(tr, (dir / "t.dot").string());
  write_trace_file(tr, (dir / "t.SVG").string());
  CHECK(slurp(dir / "t.json") == exported(tr, write_chrome_json));
  CHECK(slurp(dir / "t.dot") == exported(tr, write_dot));
  CHECK(slurp(dir / "t.SVG") == exported(tr, write_svg));
  const std::string txt = (dir / "t.txt").string();
  CHECK_THROWS_WITH_AS(write_trace_file(tr, txt), doctest::Contains(txt.c_str()), std::invalid_argument);
  CHECK_FALSE(fs::exists(txt));
  const std::string nowhere = (dir / "no such dir" / "t.json").string();
  CHECK_THROWS_WITH_AS(write_trace_file(tr, nowhere), doctest::Contains(nowhere.c_str()), std::runtime_error);
  trace_data bad = tr;
  bad.tasks[0].track = 99;
  CHECK_THROWS_AS(write_trace_file(bad, (dir / "bad.json").string()), std::invalid_argument);
  CHECK_FALSE(fs::exists(dir / "bad.json"));
}

TEST_CASE("100k tasks: SVG and JSON stay linear in size and parse") {
  std::mt19937_64 rng(tessera::testing::seed() + 6);
  const std::size_t n = 100000;
  trace_data tr = random_trace(rng, n, n, false);
  tr.tracks = {"w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7"};
  for (std::size_t i = 0; i < n; ++i) tr.tasks[i].track = static_cast<int>(i % 8);
  {  // re-time so tracks do not overlap after the reassignment
    std::vector<double> clock(8, 0);
    for (trace_task& t : tr.tasks) {
      const double d = t.end_us - t.start_us;
      t.start_us = clock[static_cast<std::size_t>(t.track)];
      t.end_us = t.start_us + d;
      clock[static_cast<std::size_t>(t.track)] = t.end_us + 0.25;
    }
  }
  auto timed = [&](auto writer, std::string& out) {
    const auto t0 = std::chrono::steady_clock::now();
    out = exported(tr, writer);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  std::string svg, json;
  const double t_svg = timed(write_svg, svg), t_json = timed(write_chrome_json, json);
  MESSAGE("100k tasks, " << tr.edges.size() << " edges: SVG " << static_cast<double>(svg.size()) / 1e6 << " MB in " << t_svg
                         << " s, JSON " << static_cast<double>(json.size()) / 1e6 << " MB in " << t_json << " s");
  CHECK(svg.size() < 200 * n + 100000);
  for (const auto& w : run_checker("svg", svg, false)) {
    if (w[1] == "rect") CHECK(unum(w[2]) == n);
  }
  std::map<std::string, std::uint64_t> counts;
  for (const auto& w : run_checker("json", json, false)) counts[w[1]] = unum(w[2]);
  CHECK(counts["X"] == n);
  CHECK(counts["s"] == tr.edges.size());
  CHECK(counts["f"] == tr.edges.size());
}
