#include "node/log/run_summary.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/json.hpp"
#include "core/units.hpp"
#include "node/log/node_status.hpp"
#include "node/log/run_dir.hpp"

namespace qgossip {

namespace fs = std::filesystem;

namespace {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// nullopt when the file cannot be opened.
std::optional<std::string> slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    auto pos = line.find(sep, start);
    out.push_back(line.substr(start, pos - start));
    if (pos == std::string::npos) return out;
    start = pos + 1;
  }
}

// A whole cell as a number ("nan" and "inf" included, as the node writes them); nullopt otherwise.
std::optional<double> parse_number(const std::string& cell) {
  if (cell.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(cell.c_str(), &end);
  if (end != cell.c_str() + cell.size()) return std::nullopt;
  return v;
}

std::optional<double> finite(std::optional<double> v) { return v && std::isfinite(*v) ? v : std::nullopt; }

// ---- node-<r>.csv ------------------------------------------------------------------------------

// The columns the report reads, noted when absent. Others (node/log/run_log.hpp's kCsvColumns grows) are
// optional: read when present (consensus_dist, avg_test_*), ignored when unknown.
const char* const kReadColumns[] = {"iteration", "epoch",    "wall_s",     "train_loss",
                                    "test_loss", "test_acc", "bytes_sent", "bytes_recv",
                                    "compute_s", "codec_s",  "comm_s",     "rejected"};

// The last row's values by column, plus the latest non-empty test columns (a run in progress may
// end on a row without an evaluation).
struct csv_tail {
  std::map<std::string, std::optional<double>> last;  // column -> value of the last complete row
  std::map<std::string, double> latest;               // column -> its last non-empty value
  std::size_t rows = 0;
};

std::optional<csv_tail> read_csv(const fs::path& path, std::vector<std::string>& notes) {
  const std::string file = path.filename().string();
  auto text = slurp(path);
  if (!text) {
    notes.push_back("cannot read " + file);
    return std::nullopt;
  }
  std::vector<std::string> lines = split(*text, '\n');
  // A file the node is writing may end in the middle of a line: everything after the last newline
  // is not a row yet.
  if (!lines.back().empty())
    notes.push_back(file + ": the last line is incomplete (still being written?); ignored");
  lines.pop_back();
  for (auto& l : lines)
    if (!l.empty() && l.back() == '\r') l.pop_back();
  if (lines.empty()) {
    notes.push_back(file + " is empty (the node had not started logging)");
    return std::nullopt;
  }
  const std::vector<std::string> header = split(lines[0], ',');
  if (std::find(header.begin(), header.end(), "iteration") == header.end()) {
    notes.push_back(file + ": no 'iteration' column in the header; not a node CSV");
    return std::nullopt;
  }
  std::vector<std::string> absent;
  for (const auto& column : kReadColumns)
    if (std::find(header.begin(), header.end(), column) == header.end()) absent.push_back(column);
  if (!absent.empty()) {
    std::string list;
    for (const auto& a : absent) list += (list.empty() ? "" : ", ") + a;
    notes.push_back(file + ": no column " + list);
  }

  csv_tail tail;
  std::size_t bad_rows = 0;
  std::string first_bad;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    std::vector<std::string> cells = split(lines[i], ',');
    std::map<std::string, std::optional<double>> row;
    bool ok = cells.size() == header.size();
    for (std::size_t c = 0; ok && c < cells.size(); ++c) {
      auto v = parse_number(cells[c]);
      if (!v && !cells[c].empty()) ok = false;
      row[header[c]] = v;
    }
    if (!ok || !row["iteration"]) {
      if (bad_rows++ == 0) first_bad = file + ":" + std::to_string(i + 1);
      continue;
    }
    for (const auto& [column, v] : row)
      if (v) tail.latest[column] = *v;
    tail.last = std::move(row);
    ++tail.rows;
  }
  if (bad_rows > 0)
    notes.push_back(std::to_string(bad_rows) + " malformed row(s) skipped, the first at " + first_bad);
  return tail;
}

std::optional<double> csv_value(const csv_tail& t, const std::string& column) {
  auto it = t.last.find(column);
  return it == t.last.end() ? std::nullopt : it->second;
}

std::optional<double> csv_latest(const csv_tail& t, const std::string& column) {
  auto it = t.latest.find(column);
  return it == t.latest.end() ? std::nullopt : std::optional<double>(it->second);
}

// ---- node-<r>.json / run.json -----------------------------------------------------------------

using json = nlohmann::ordered_json;

// The string at j[key]; "" when absent or not a string.
std::string text_of(const json& j, std::string_view key) {
  const std::string* s = json_string(j, key);
  return s ? *s : "";
}

std::uint64_t to_count(std::optional<double> v) {
  return v && *v > 0 && std::isfinite(*v) ? static_cast<std::uint64_t>(std::llround(*v)) : 0;
}

// A time of the summary: `key` (compute_s, codec_s, comm_s), or, in a summary written before the
// keys took the CSV's names, "time_<key>". That alias is read for one release, then removed.
std::optional<double> seconds(const json& j, const std::string& key) {
  if (auto v = json_number(j, key)) return v;
  return json_number(j, "time_" + key);
}

void fill_from_summary(node_report& r, const json& j) {
  r.source = "summary";
  r.status = text_of(j, "status");
  if (r.status.empty()) {
    r.status = "?";
    r.notes.push_back("node-" + std::to_string(r.rank) + ".json has no status");
  }
  r.error = text_of(j, "error");
  r.departures = text_of(j, "departures");
  r.rejoins = text_of(j, "rejoins");
  r.host = text_of(j, "host");
  r.hostile = text_of(j, "hostile");
  r.rounds = to_count(json_number(j, "rounds"));
  r.epoch = json_number(j, "epoch").value_or(0);
  r.wall_s = json_number(j, "wall_s").value_or(0);
  r.train_loss = finite(json_number(j, "train_loss"));  // null when it was not finite
  r.test_loss = finite(json_number(j, "test_loss"));
  r.test_acc = finite(json_number(j, "test_acc"));
  r.bytes_sent = to_count(json_number(j, "bytes_sent"));
  r.bytes_recv = to_count(json_number(j, "bytes_recv"));
  r.mean_round_bytes_sent = json_number(j, "mean_round_bytes_sent").value_or(0);
  r.compute_s = seconds(j, "compute_s").value_or(0);
  r.codec_s = seconds(j, "codec_s").value_or(0);
  r.comm_s = seconds(j, "comm_s").value_or(0);
  r.rejected = to_count(json_number(j, "rejected"));
  r.rejected_detail = text_of(j, "rejected_detail");
  if (auto v = json_number(j, "consensus_dist")) r.consensus_dist = v;
  if (auto v = json_number(j, "avg_test_loss")) r.avg_test_loss = v;
  if (auto v = json_number(j, "avg_test_acc")) r.avg_test_acc = v;
}

void fill_from_csv(node_report& r, const csv_tail& t) {
  r.source = "csv";
  r.rounds = to_count(csv_value(t, "iteration"));
  r.epoch = csv_value(t, "epoch").value_or(0);
  r.wall_s = csv_value(t, "wall_s").value_or(0);
  r.train_loss = finite(csv_value(t, "train_loss"));
  r.test_loss = finite(csv_latest(t, "test_loss"));
  r.test_acc = finite(csv_latest(t, "test_acc"));
  r.bytes_sent = to_count(csv_value(t, "bytes_sent"));
  r.bytes_recv = to_count(csv_value(t, "bytes_recv"));
  r.mean_round_bytes_sent =
      r.rounds ? static_cast<double>(r.bytes_sent) / static_cast<double>(r.rounds) : 0.0;
  r.compute_s = csv_value(t, "compute_s").value_or(0);
  r.codec_s = csv_value(t, "codec_s").value_or(0);
  r.comm_s = csv_value(t, "comm_s").value_or(0);
  r.rejected = to_count(csv_value(t, "rejected"));
}

// The last non-empty line of node-<r>.log: where a crashed node usually said why.
std::string last_log_line(const fs::path& path) {
  auto text = slurp(path);
  if (!text) return "";
  std::vector<std::string> lines = split(*text, '\n');
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    std::string l = *it;
    while (!l.empty() && (l.back() == '\r' || l.back() == ' ')) l.pop_back();
    if (!l.empty()) return l.size() > 300 ? l.substr(0, 300) + "..." : l;
  }
  return "";
}

// Seconds since the file was last written; nullopt when that cannot be read.
std::optional<double> age_s(const fs::path& path) {
  std::error_code ec;
  auto when = fs::last_write_time(path, ec);
  if (ec) return std::nullopt;
  return std::max(0.0, std::chrono::duration<double>(fs::file_time_type::clock::now() - when).count());
}

// Nodes write their summaries when the run ends (all at about the same time: the rounds are
// synchronous). So while no node has one and some CSV is fresh, the run is in progress and the nodes
// without a summary are "running"; otherwise they stopped before writing it (crashed or killed).
void classify_unfinished(run_summary& s, const log_thresholds& th) {
  bool any_summary = false;
  std::optional<double> freshest;
  for (const auto& n : s.nodes) {
    any_summary = any_summary || n.has_summary;
    if (n.csv_age_s && (!freshest || *n.csv_age_s < *freshest)) freshest = n.csv_age_s;
  }
  const bool in_progress = !any_summary && freshest && *freshest <= th.in_progress_s;
  for (auto& n : s.nodes) {
    if (n.status != "no summary") continue;
    const std::string stem = "node-" + std::to_string(n.rank);
    if (in_progress) {
      n.status = "running";
      n.error.clear();
    } else if (n.csv_rows > 0) {
      n.notes.push_back("no " + stem + ".json: the node stopped before writing it (crashed or killed?); " +
                        "figures are from its last CSV row, written " +
                        format_duration(n.csv_age_s.value_or(-1)) + " ago");
    } else {
      n.notes.push_back("no " + stem + ".json and no CSV rows: the node never got to log a round");
    }
  }
  if (in_progress)
    s.notes.push_back(
        "run in progress: no node has written its summary yet; figures are from the latest CSV rows "
        "(the newest written " +
        format_duration(*freshest) + " ago)");
}

node_report read_node(const run_dir_contents& d, const node_files& f) {
  node_report r;
  r.rank = f.rank;
  const std::string stem = "node-" + std::to_string(f.rank);
  std::optional<csv_tail> csv;
  if (f.has_csv) {
    csv = read_csv(d.file(f.rank, ".csv"), r.notes);
    r.has_csv = csv.has_value();
    if (csv) r.csv_rows = csv->rows;
  } else {
    r.notes.push_back("no " + stem + ".csv");
  }
  if (f.summary) {
    r.has_summary = true;
    fill_from_summary(r, *f.summary);
  } else if (f.has_json) {
    r.notes.push_back(stem + ".json is unreadable (" + f.summary_error + ")");
  }
  if (csv) {  // the summary's values, read above, win
    if (!r.consensus_dist) r.consensus_dist = csv_latest(*csv, "consensus_dist");
    if (!r.avg_test_loss) r.avg_test_loss = csv_latest(*csv, "avg_test_loss");
    if (!r.avg_test_acc) r.avg_test_acc = csv_latest(*csv, "avg_test_acc");
  }
  if (!r.has_summary) {
    // Running or stopped: read_run_summary decides, from all the nodes together.
    r.status = "no summary";
    if (csv && csv->rows > 0) fill_from_csv(r, *csv);
    if (r.has_csv) r.csv_age_s = age_s(d.file(f.rank, ".csv"));
    if (f.has_log) {
      std::string last = last_log_line(d.file(f.rank, ".log"));
      if (!last.empty()) r.error = "last line of " + stem + ".log: " + last;
    }
  }
  return r;
}

// The run's name, algorithm, ... from run.json, or a note saying why there are none.
void read_run_meta(run_summary& s, const run_dir_contents& d) {
  if (d.run_json) {
    const json& j = *d.run_json;
    s.name = text_of(j, "name");
    s.algorithm = text_of(j, "algorithm");
    s.compressor = text_of(j, "compressor");
    s.model = text_of(j, "model");
    s.started = text_of(j, "started");
    s.network_shaping = text_of(j, "network_shaping");
    s.n = d.n;
  } else if (d.has_run_json) {
    s.notes.push_back("run.json is unreadable (" + d.run_json_error + ")");
  } else {
    s.notes.push_back("no run.json (rank 0 writes it when it starts)");
  }
  if (s.name.empty()) s.name = fs::absolute(d.dir).lexically_normal().filename().string();
  if (s.name.empty()) s.name = fs::absolute(d.dir).lexically_normal().parent_path().filename().string();
}

// One report per rank with files, and a "no files" one per rank of run.json's n without any.
void read_nodes(run_summary& s, const run_dir_contents& d) {
  for (const auto& [rank, f] : d.nodes) s.nodes.push_back(read_node(d, f));
  std::string absent;
  for (int r = 0; r < s.n; ++r) {
    if (d.nodes.count(r)) continue;
    node_report nr;
    nr.rank = r;
    nr.status = "no files";
    s.nodes.push_back(nr);
    absent += (absent.empty() ? "" : ", ") + std::to_string(r);
  }
  if (!absent.empty()) s.notes.push_back("rank(s) " + absent + ": no files at all");
  std::sort(s.nodes.begin(), s.nodes.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  if (s.n > 0 && !d.nodes.empty() && d.nodes.rbegin()->first >= s.n)
    s.notes.push_back("files for rank " + std::to_string(d.nodes.rbegin()->first) + " but run.json says n = " +
                      std::to_string(s.n) + " (left over from an earlier, larger run?)");
}

// ---- warnings ---------------------------------------------------------------------------------

std::optional<value_spread> spread_over(const std::vector<node_report>& nodes,
                                        std::optional<double> (*get)(const node_report&)) {
  std::vector<double> v;
  for (const auto& n : nodes)
    if (n.hostile.empty())
      if (auto x = get(n)) v.push_back(*x);
  return spread_of(std::move(v));
}

bool has_data(const node_report& n) { return !n.source.empty(); }

// An honest node that finished normally: the only kind compared against the others (a failed or
// still-running node has fewer rounds and an earlier accuracy as a matter of course; its status
// warning says why; a hostile node is meant to differ).
bool comparable(const node_report& n) {
  return has_data(n) && n.status == name_of(node_status::ok) && n.hostile.empty();
}

// In a node's "rejoins" account, its own return: "from round 300 (at 20.1 s, from rank 2's model)"
// (node/run/returns.hpp); "" when it tells none.
std::string own_return(const std::string& rejoins) {
  constexpr std::string_view kOwn = "this node ";
  const auto at = rejoins.find(kOwn);
  if (at == std::string::npos) return "";
  const auto end = rejoins.find("; ", at);
  return rejoins.substr(at + kOwn.size(), end == std::string::npos ? std::string::npos : end - at - kOwn.size());
}

// The ranks that tell their own return.
std::set<int> returned_nodes(const run_summary& s) {
  std::set<int> out;
  for (const auto& n : s.nodes)
    if (!own_return(n.rejoins).empty()) out.insert(n.rank);
  return out;
}

// Peers that left the run (network.on_peer_failure: continue), as the first node that lists them
// says; and returns: each joiner's own account, once. Every neighbour tells the same return on its
// own clock; theirs stand in (the first one) only when no joiner's own account survives.
void add_membership_warnings(run_summary& s, const std::set<int>& returned) {
  auto warn = [&](int rank, std::string kind, std::string message) {
    s.warnings.push_back({rank, std::move(kind), std::move(message)});
  };
  for (const auto& n : s.nodes)
    if (!n.departures.empty()) {
      warn(-1, "departures", "peers left the run (node " + std::to_string(n.rank) + "'s account): " + n.departures);
      break;
    }
  for (const auto& n : s.nodes)
    if (const std::string own = own_return(n.rejoins); !own.empty())
      warn(n.rank, "rejoins", "node " + std::to_string(n.rank) + " rejoined the run " + own);
  if (returned.empty())
    for (const auto& n : s.nodes)
      if (!n.rejoins.empty()) {
        warn(n.rank, "rejoins", "node " + std::to_string(n.rank) + " saw returns: " + n.rejoins);
        break;
      }
}

void add_warnings(run_summary& s, const log_thresholds& th) {
  auto warn = [&](int rank, std::string kind, std::string message) {
    s.warnings.push_back({rank, std::move(kind), std::move(message)});
  };
  const std::set<int> returned = returned_nodes(s);
  add_membership_warnings(s, returned);
  for (const auto& n : s.nodes) {
    const std::string who = "node " + std::to_string(n.rank);
    if (n.status == name_of(node_status::ok) || n.status == "running") continue;  // a run in progress: the run's note says so
    if (n.status == "no summary" || n.status == "no files") {
      std::string m =
          who + (n.status == "no files" ? " left no files at all (never started?)"
                                        : " stopped before writing its summary (crashed or killed?)");
      if (!n.error.empty()) m += " (" + n.error + ")";
      warn(n.rank, "missing", m);
    } else {
      warn(n.rank, "status", who + " " + n.status + (n.error.empty() ? "" : ": " + n.error));
    }
  }

  std::uint64_t most = 0;
  for (const auto& n : s.nodes)
    if (has_data(n)) most = std::max(most, n.rounds);
  for (const auto& n : s.nodes)
    if (comparable(n) && n.rounds < most)
      warn(n.rank, "rounds",
           "node " + std::to_string(n.rank) + " completed " + std::to_string(n.rounds) +
               " rounds, another node " + std::to_string(most));

  if (s.wall_s && s.wall_s->count >= 2) {
    const double median = s.wall_s->median;
    for (const auto& n : s.nodes)
      if (comparable(n) && n.wall_s > th.wall_ratio * median && n.wall_s - median > th.wall_min_excess_s)
        warn(n.rank, "wall",
             "node " + std::to_string(n.rank) + " ran " + fmt("%.1f", n.wall_s) + " s, the median " +
                 fmt("%.1f", median) + " s (threshold: " + fmt("%.2g", th.wall_ratio) + "x and +" +
                 fmt("%.3g", th.wall_min_excess_s) + " s)");
  }

  std::vector<double> work;
  for (const auto& n : s.nodes)
    if (has_data(n) && n.hostile.empty()) work.push_back(n.compute_s + n.codec_s);
  if (auto w = spread_of(work); w && w->count >= 2) {
    for (const auto& n : s.nodes) {
      const double mine = n.compute_s + n.codec_s;
      // A node that was away (stopped, or killed and restarted) and came back: its time includes
      // the absence, which is no slowness of its own.
      if (returned.count(n.rank)) continue;
      if (comparable(n) && mine > th.work_ratio * w->median && mine - w->median > th.work_min_excess_s)
        warn(n.rank, "straggler",
             "node " + std::to_string(n.rank) + " spent " + fmt("%.1f", mine) +
                 " s computing and coding, the median " + fmt("%.1f", w->median) +
                 " s: the others wait for it each round (threshold: " + fmt("%.2g", th.work_ratio) +
                 "x and +" + fmt("%.3g", th.work_min_excess_s) + " s)");
    }
  }

  if (s.test_acc && s.test_acc->count >= 2) {
    const double median = s.test_acc->median;
    for (const auto& n : s.nodes)
      if (comparable(n) && n.test_acc && *n.test_acc < median - th.accuracy_gap)
        warn(n.rank, "accuracy",
             "node " + std::to_string(n.rank) + " reached test accuracy " + fmt("%.4f", *n.test_acc) +
                 ", the median " + fmt("%.4f", median) + " (threshold: " + fmt("%.3g", th.accuracy_gap) +
                 " below)");
  }
}

}  // namespace

std::optional<value_spread> spread_of(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const std::size_t k = values.size();
  value_spread s;
  s.min = values.front();
  s.max = values.back();
  s.median = k % 2 ? values[k / 2] : (values[k / 2 - 1] + values[k / 2]) / 2;
  s.count = static_cast<int>(k);
  return s;
}

std::optional<run_summary> read_run_summary(const run_dir_contents& d, std::string* why, const log_thresholds& th) {
  auto fail = [&](std::string m) -> std::optional<run_summary> {
    if (why) *why = std::move(m);
    return std::nullopt;
  };
  if (!d.is_directory) return fail(d.dir.string() + ": not a directory");
  if (!d.list_error.empty()) return fail("cannot read " + d.dir.string() + ": " + d.list_error);
  if (d.nodes.empty() && !d.has_run_json)
    return fail(d.dir.string() + " holds no run (no node-<rank>.csv, node-<rank>.json or run.json)");

  run_summary s;
  s.dir = d.dir;
  read_run_meta(s, d);
  read_nodes(s, d);
  classify_unfinished(s, th);
  for (const auto& n : s.nodes)
    if (!n.hostile.empty()) s.hostile.push_back(n.rank);
  s.test_acc = spread_over(s.nodes, [](const node_report& n) { return n.test_acc; });
  s.test_loss = spread_over(s.nodes, [](const node_report& n) { return n.test_loss; });
  s.train_loss = spread_over(s.nodes, [](const node_report& n) { return n.train_loss; });
  s.wall_s = spread_over(s.nodes, [](const node_report& n) {
    return has_data(n) ? std::optional<double>(n.wall_s) : std::nullopt;
  });
  add_warnings(s, th);
  return s;
}

std::optional<run_summary> read_run_summary(const fs::path& dir, std::string* why, const log_thresholds& th) {
  return read_run_summary(read_run_dir(dir), why, th);
}

// ---- output -----------------------------------------------------------------------------------

namespace {

std::string opt_text(const std::optional<double>& v, const char* format) { return v ? fmt(format, *v) : "-"; }

std::string time_cell(double seconds, double total) {
  if (total <= 0) return fmt("%.1f", seconds);
  return fmt("%.1f", seconds) + " (" + fmt("%.0f", 100 * seconds / total) + "%)";
}

std::string spread_line(const char* label, const std::optional<value_spread>& s, const char* format) {
  char buf[200];
  if (!s) {
    std::snprintf(buf, sizeof buf, "  %-15s -\n", label);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "  %-15s min %s  median %s  max %s  (%d nodes)\n", label,
                fmt(format, s->min).c_str(), fmt(format, s->median).c_str(), fmt(format, s->max).c_str(),
                s->count);
  return buf;
}

nlohmann::ordered_json spread_json(const std::optional<value_spread>& s) {
  if (!s) return nullptr;
  return {{"min", s->min}, {"median", s->median}, {"max", s->max}, {"count", s->count}};
}

nlohmann::ordered_json node_json(const node_report& n) {
  return {{"rank", n.rank},
          {"status", n.status},
          {"error", n.error},
          {"source", n.source},
          {"has_summary", n.has_summary},
          {"has_csv", n.has_csv},
          {"csv_rows", n.csv_rows},
          {"host", n.host},
          {"hostile", n.hostile},
          {"rounds", n.rounds},
          {"epoch", n.epoch},
          {"wall_s", n.wall_s},
          {"train_loss", json_or_null(n.train_loss)},
          {"test_loss", json_or_null(n.test_loss)},
          {"test_acc", json_or_null(n.test_acc)},
          {"bytes_sent", n.bytes_sent},
          {"bytes_recv", n.bytes_recv},
          {"mean_round_bytes_sent", n.mean_round_bytes_sent},
          {"compute_s", n.compute_s},
          {"codec_s", n.codec_s},
          {"comm_s", n.comm_s},
          {"rejected", n.rejected},
          {"rejected_detail", n.rejected_detail},
          {"consensus_dist", json_or_null(n.consensus_dist)},
          {"avg_test_loss", json_or_null(n.avg_test_loss)},
          {"avg_test_acc", json_or_null(n.avg_test_acc)},
          {"notes", n.notes}};
}

}  // namespace

std::string format_run_summary(const run_summary& s) {
  std::string out = "run " + s.name + " (" + s.dir.string() + "): ";
  out += (s.n > 0 ? std::to_string(s.n) : std::to_string(s.nodes.size())) + " nodes";
  for (const auto* part : {&s.algorithm, &s.compressor, &s.model})
    if (!part->empty()) out += ", " + *part;
  if (!s.started.empty()) out += "; started " + s.started;
  out += '\n';
  if (!s.network_shaping.empty()) out += "network: " + s.network_shaping + '\n';

  char buf[512];
  std::snprintf(buf, sizeof buf, "%4s %-11s %7s %6s %10s %9s %8s %8s %8s %9s %13s %13s %13s %8s\n", "rank",
                "status", "rounds", "epoch", "train_loss", "test_loss", "test_acc", "MB_sent", "MB_recv",
                "B/round", "compute_s", "codec_s", "comm_s", "rejected");
  out += buf;
  for (const auto& n : s.nodes) {
    if (n.source.empty()) {
      std::snprintf(buf, sizeof buf, "%4d %-11s %7s\n", n.rank, n.status.c_str(), "-");
      out += buf;
      continue;
    }
    const double total = n.compute_s + n.codec_s + n.comm_s;
    std::snprintf(
        buf, sizeof buf, "%4d %-11s %7llu %6.2f %10s %9s %8s %8.2f %8.2f %9.0f %13s %13s %13s %8llu\n",
        n.rank, (n.hostile.empty() ? n.status : n.status + " hostile").c_str(),
        static_cast<unsigned long long>(n.rounds), n.epoch, opt_text(n.train_loss, "%.4g").c_str(),
        opt_text(n.test_loss, "%.4g").c_str(), opt_text(n.test_acc, "%.4f").c_str(),
        static_cast<double>(n.bytes_sent) / 1e6, static_cast<double>(n.bytes_recv) / 1e6,
        n.mean_round_bytes_sent, time_cell(n.compute_s, total).c_str(), time_cell(n.codec_s, total).c_str(),
        time_cell(n.comm_s, total).c_str(), static_cast<unsigned long long>(n.rejected));
    out += buf;
  }

  if (s.hostile.empty()) {
    out += "spread across nodes:\n";
  } else {
    out += "hostile (a scenario's attack; left out of the spread and the warnings):";
    for (const auto& n : s.nodes)
      if (!n.hostile.empty()) out += " rank " + std::to_string(n.rank) + " " + n.hostile + ";";
    out.back() = '\n';
    out += "spread across the honest nodes (min: the worst honest node):\n";
  }
  out += spread_line("test accuracy", s.test_acc, "%.4f");
  out += spread_line("test loss", s.test_loss, "%.4g");
  out += spread_line("train loss", s.train_loss, "%.4g");
  out += spread_line("wall time (s)", s.wall_s, "%.1f");
  for (const auto& n : s.nodes) {
    if (!n.consensus_dist && !n.avg_test_acc && !n.avg_test_loss) continue;
    out += "average model (probed by node " + std::to_string(n.rank) + "): test accuracy " +
           opt_text(n.avg_test_acc, "%.4f") + ", test loss " + opt_text(n.avg_test_loss, "%.4g") +
           ", consensus distance " + opt_text(n.consensus_dist, "%.4g") + "\n";
  }

  bool any_note = !s.notes.empty();
  for (const auto& n : s.nodes) any_note = any_note || !n.notes.empty() || !n.rejected_detail.empty();
  if (any_note) {
    out += "notes:\n";
    for (const auto& note : s.notes) out += "  " + note + "\n";
    for (const auto& n : s.nodes) {
      for (const auto& note : n.notes) out += "  node " + std::to_string(n.rank) + ": " + note + "\n";
      if (!n.rejected_detail.empty())
        out +=
            "  node " + std::to_string(n.rank) + ": rejected messages by reason: " + n.rejected_detail + "\n";
    }
  }
  if (s.warnings.empty()) {
    out += "no warnings\n";
  } else {
    out += "WARNINGS:\n";
    for (const auto& w : s.warnings) out += "  [" + w.kind + "] " + w.message + "\n";
  }
  return out;
}

std::string run_summary_json(const run_summary& s) {
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (const auto& n : s.nodes) nodes.push_back(node_json(n));
  nlohmann::ordered_json warnings = nlohmann::ordered_json::array();
  for (const auto& w : s.warnings) warnings.push_back({{"rank", w.rank}, {"kind", w.kind}, {"message", w.message}});
  const nlohmann::ordered_json j = {{"dir", s.dir.string()},
                                    {"name", s.name},
                                    {"algorithm", s.algorithm},
                                    {"compressor", s.compressor},
                                    {"model", s.model},
                                    {"started", s.started},
                                    {"network_shaping", s.network_shaping},
                                    {"n", s.n},
                                    {"nodes", std::move(nodes)},
                                    {"hostile", s.hostile},
                                    {"spread",
                                     {{"test_acc", spread_json(s.test_acc)},
                                      {"test_loss", spread_json(s.test_loss)},
                                      {"train_loss", spread_json(s.train_loss)},
                                      {"wall_s", spread_json(s.wall_s)}}},
                                    {"notes", s.notes},
                                    {"warnings", std::move(warnings)}};
  return json_text(j, true);
}

}  // namespace qgossip
