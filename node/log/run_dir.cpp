#include "node/log/run_dir.hpp"

#include <climits>
#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

namespace qgossip {

namespace fs = std::filesystem;

namespace {

// The JSON object in `path`; nullopt with *error saying why when it cannot be read or parsed.
std::optional<nlohmann::ordered_json> read_json_file(const fs::path& path, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read it";
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  return parse_json_object(text.str(), &error);
}

// Records a directory entry's name: run.json, or a node-<r> file.
void note_entry(run_dir_contents& d, const std::string& name) {
  static const std::regex kNodeFile(R"(node-(0|[1-9]\d{0,5})\.(csv|json|log))");
  if (name == "run.json") d.has_run_json = true;
  std::smatch m;
  if (!std::regex_match(name, m, kNodeFile)) return;
  const int rank = std::stoi(m[1].str());
  node_files& f = d.nodes[rank];
  f.rank = rank;
  const std::string kind = m[2].str();
  (kind == "json" ? f.has_json : kind == "csv" ? f.has_csv : f.has_log) = true;
}

}  // namespace

fs::path run_dir_contents::file(int rank, std::string_view suffix) const {
  return dir / ("node-" + std::to_string(rank) + std::string(suffix));
}

run_dir_contents read_run_dir(const fs::path& dir) {
  run_dir_contents d;
  d.dir = dir;
  std::error_code ec;
  d.is_directory = fs::is_directory(dir, ec);
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    note_entry(d, it->path().filename().string());
  if (ec) d.list_error = ec.message();

  if (d.has_run_json) {
    d.run_json = read_json_file(dir / "run.json", d.run_json_error);
    const std::optional<double> n = d.run_json ? json_number(*d.run_json, "n") : std::nullopt;
    if (n && *n >= 1 && *n <= INT_MAX) d.n = static_cast<int>(std::llround(*n));
  }
  if (d.n > 0)
    for (auto it = d.nodes.lower_bound(d.n); it != d.nodes.end(); it = d.nodes.erase(it)) d.strays.push_back(it->first);
  for (auto& [rank, f] : d.nodes)
    if (f.has_json) f.summary = read_json_file(d.file(rank, ".json"), f.summary_error);
  return d;
}

namespace {

// The files of a run in its folder, keys/ left out.
bool is_run_file(const std::string& name) {
  static const std::regex kRunFile(R"(run\.json|node-\d+\.(csv|json|log)|[^/]*\.png|checkpoints)");
  return std::regex_match(name, kRunFile);
}

}  // namespace

std::optional<fs::path> set_aside_earlier_run(const fs::path& dir, const std::string& run_id) {
  const run_dir_contents d = read_run_dir(dir);
  if (!d.is_directory) return std::nullopt;
  const std::string* id = d.run_json ? json_string(*d.run_json, "run_id") : nullptr;
  const std::string earlier = id ? *id : "";
  const bool other_run = d.has_run_json ? earlier != run_id : !d.nodes.empty();
  if (!other_run) return std::nullopt;
  fs::path to;
  for (int k = 1; to.empty() || fs::exists(to); ++k) to = dir.string() + ".earlier-" + std::to_string(k);
  fs::create_directories(to);
  std::vector<fs::path> moving;
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    if (is_run_file(e.path().filename().string())) moving.push_back(e.path());
  for (const fs::path& p : moving) fs::rename(p, to / p.filename());
  return to;
}

}  // namespace qgossip
