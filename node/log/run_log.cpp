#include "node/log/run_log.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>

#include "core/errors.hpp"
#include "core/hash.hpp"
#include "core/json.hpp"
#include "qgossip/build_config.hpp"

namespace qgossip {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

namespace {

// Writes to a temporary file and renames it over the target, so a reader never sees half a file.
void write_atomically(const fs::path& path, const std::string& text) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) throw config_error("cannot write " + tmp.string() + ": " + std::strerror(errno));
    out << text << '\n';
  }
  fs::rename(tmp, path);
}

// The system clock, in seconds since 1970.
double unix_now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

run_log::run_log(fs::path dir, int rank, bool progress_to_stdout, std::optional<std::uint64_t> continue_csv_at)
    : dir_(std::move(dir)), rank_(rank), progress_to_stdout_(progress_to_stdout),
      csv_path_(dir_ / ("node-" + std::to_string(rank) + ".csv")) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw config_error("cannot create the run directory " + dir_.string() + ": " + ec.message());
  if (continue_csv_at) {
    continue_csv(*continue_csv_at);
    return;
  }
  csv_ = std::fopen(csv_path_.c_str(), "w");
  if (!csv_) throw config_error("cannot write " + csv_path_.string() + ": " + std::strerror(errno));
  std::fprintf(csv_, "%s\n", kCsvColumns);
  std::fflush(csv_);
}

// Cuts the CSV back to `length` bytes and opens it for appending (the constructor's resume case).
// A program's metric columns after kCsvColumns are read back (metric_columns()).
void run_log::continue_csv(std::uint64_t length) {
  std::ifstream in(csv_path_);
  if (!in) throw config_error("cannot continue " + csv_path_.string() + ": " + std::strerror(errno));
  std::string header;
  std::getline(in, header);
  const std::string own = kCsvColumns;
  if (!in || !header.starts_with(own) || (header.size() > own.size() && header[own.size()] != ','))
    throw config_error("cannot continue " + csv_path_.string() + ": it does not start with the header line " + own);
  for (std::size_t at = own.size(); at < header.size();) {  // ",name,name"
    const std::size_t next = std::min(header.find(',', at + 1), header.size());
    metric_columns_.push_back(header.substr(at + 1, next - at - 1));
    at = next;
  }
  std::error_code ec;
  const std::uint64_t size = fs::file_size(csv_path_, ec);
  if (ec) throw config_error("cannot continue " + csv_path_.string() + ": " + ec.message());
  if (length < header.size() + 1 || size < length)
    throw config_error("cannot continue " + csv_path_.string() + " at byte " + std::to_string(length) +
                       " (the checkpoint's length of it): the file has " + std::to_string(size) +
                       " bytes; it is not the file the checkpoint was written with");
  if (::truncate(csv_path_.c_str(), static_cast<off_t>(length)) != 0)
    throw config_error("cannot cut " + csv_path_.string() + " back to " + std::to_string(length) +
                       " bytes: " + std::strerror(errno));
  csv_ = std::fopen(csv_path_.c_str(), "a");
  if (!csv_) throw config_error("cannot write " + csv_path_.string() + ": " + std::strerror(errno));
  rows_written_ = length > header.size() + 1;  // no row yet: a program's metrics may still add columns
}

std::uint64_t run_log::sync_csv() {
  if (std::fflush(csv_) != 0 || ::fdatasync(::fileno(csv_)) != 0)
    throw config_error("cannot write " + csv_path_.string() + " to the disk: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(::fileno(csv_), &st) != 0)
    throw config_error("cannot tell the length of " + csv_path_.string() + ": " + std::strerror(errno));
  return static_cast<std::uint64_t>(st.st_size);
}

run_log::~run_log() {
  if (csv_) std::fclose(csv_);
}

void run_log::emit(const std::string& json_line) {
  if (!progress_to_stdout_) return;
  std::fwrite(json_line.data(), 1, json_line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

void run_log::write_run_json(const std::string& name, const std::string& canonical, int n,
                             const std::string& algorithm, const std::string& compressor, const std::string& model,
                             std::uint64_t run_id, const std::string& topology_report,
                             const std::string& network_shaping, const std::string& data_note) {
  std::time_t now = std::time(nullptr);
  char when[64];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  const json j = {{"name", name},
                  {"run_id", hex64(run_id)},
                  {"n", n},
                  {"algorithm", algorithm},
                  {"compressor", compressor},
                  {"model", model},
                  {"started", std::string(when)},
                  {"host", host_name()},
                  {"qgossip_version", QGOSSIP_VERSION},
                  {"compiler", __VERSION__},
                  {"csv_columns", kCsvColumns},
                  {"topology_report", topology_report},
                  {"network_shaping", network_shaping},
                  {"data", data_note},
                  {"config_yaml", canonical}};
  write_atomically(dir_ / "run.json", json_text(j, true));
}

void run_log::start(int n, std::uint64_t rounds, double epochs) {
  emit(json_text({{"event", "start"}, {"rank", rank_}, {"n", n}, {"rounds", rounds}, {"epochs", epochs}}));
}

void run_log::add_metric_columns(const std::vector<std::string>& names) {
  QG_ENFORCE(!rows_written_, "metric columns after the CSV's first row");
  std::string header = kCsvColumns;
  for (const std::string& n : names) header += "," + n;
  if (std::fseek(csv_, 0, SEEK_SET) != 0 || ::ftruncate(::fileno(csv_), 0) != 0 ||
      std::fprintf(csv_, "%s\n", header.c_str()) < 0 || std::fflush(csv_) != 0)
    throw config_error("cannot write " + csv_path_.string() + ": " + std::strerror(errno));
}

// Formatted straight into the file's buffer, one write at the flush: a row allocates nothing.
void run_log::row(const round_record& r) {
  rows_written_ = true;
  std::FILE* f = csv_;
  const auto number = [f](double v) { std::fprintf(f, ",%.6g", v); };
  const auto optional = [f, &number](const std::optional<double>& v) { v ? number(*v) : (void)std::fputc(',', f); };
  const auto count = [f](std::uint64_t v) { std::fprintf(f, ",%llu", static_cast<unsigned long long>(v)); };
  std::fprintf(f, "%llu", static_cast<unsigned long long>(r.iteration));
  number(r.epoch), number(r.wall_s), number(r.lr), number(r.train_loss);
  optional(r.test_loss), optional(r.test_acc);
  count(r.bytes_sent), count(r.bytes_recv), count(r.round_bytes_sent), count(r.round_bytes_recv);
  number(r.compute_s), number(r.codec_s), number(r.comm_s);
  count(r.rejected), count(r.probe_bytes_sent);
  optional(r.consensus_dist), optional(r.avg_test_loss), optional(r.avg_test_acc);
  number(r.transfer_s), count(r.transfer_bytes), count(r.staleness), number(r.rounds_per_s);
  for (const std::optional<double>& m : r.metrics) optional(m);
  std::fputc('\n', f);
  std::fflush(f);
}

// The JSON printed straight into stdout's buffer (as emit() would print json_text's, key for key;
// a number that is not finite as null): a progress line allocates nothing.
void run_log::progress(const round_record& r, std::uint64_t rounds) {
  if (!progress_to_stdout_) return;
  std::FILE* f = stdout;
  const auto real = [f](const char* key, std::optional<double> v) {
    if (v && std::isfinite(*v))
      std::fprintf(f, ",\"%s\":%.17g", key, *v);
    else
      std::fprintf(f, ",\"%s\":null", key);
  };
  const auto count = [f](const char* key, std::uint64_t v) {
    std::fprintf(f, ",\"%s\":%llu", key, static_cast<unsigned long long>(v));
  };
  std::fprintf(f, "{\"event\":\"progress\",\"rank\":%d", rank_);
  count("iteration", r.iteration), count("rounds", rounds);
  real("epoch", r.epoch), real("train_loss", r.train_loss), real("test_acc", r.test_acc);
  count("bytes_sent", r.bytes_sent), count("bytes_recv", r.bytes_recv);
  real("wall_s", r.wall_s);
  std::fputs("}\n", f);
  std::fflush(f);
}

namespace {

// node-<r>.json: one flat object (scripts read its keys at the top level).
json summary_json(const node_summary& s) {
  std::string departed;
  for (int r : s.departed) departed += (departed.empty() ? "" : " ") + std::to_string(r);
  json j = {{"rank", s.rank},
            {"status", to_text(s.status)},
            {"error", s.error},
            {"host", s.host},
            {"rounds", s.rounds},
            {"epoch", s.last.epoch},
            {"wall_s", s.wall_s},
            // The system clock now, in seconds since 1970: wall_s above is the steady clock since the
            // node started, so the node started at about end_unix_s - wall_s (scripts/tta.py measures
            // times from a launch this way).
            {"end_unix_s", unix_now_s()},
            {"train_loss", s.last.train_loss},
            {"test_loss", json_or_null(s.last.test_loss)},
            {"test_acc", json_or_null(s.last.test_acc)},
            {"consensus_dist", json_or_null(s.last.consensus_dist)},
            {"avg_test_loss", json_or_null(s.last.avg_test_loss)},
            {"avg_test_acc", json_or_null(s.last.avg_test_acc)},
            {"bytes_sent", s.last.bytes_sent},
            {"bytes_recv", s.last.bytes_recv},
            {"mean_round_bytes_sent", s.mean_round_bytes_sent},
            // The CSV's column names. Summaries written before the rename said time_compute_s,
            // time_codec_s, time_comm_s, time_transfer_s (run_summary.cpp reads those for a release).
            {"compute_s", s.last.compute_s},
            {"gradient_s", s.gradient_s},
            {"codec_s", s.last.codec_s},
            {"comm_s", s.last.comm_s},
            {"transfer_s", s.last.transfer_s},
            {"transfer_bytes", s.last.transfer_bytes},
            {"rejected", s.last.rejected},
            {"probe_bytes_sent", s.last.probe_bytes_sent},
            {"rejected_detail", s.rejected_detail},
            {"departures", s.departures},
            {"departed", departed},
            {"rejoins", s.rejoins},
            {"ended", s.stopped_with_peers ? "with its neighbours" : "at its last round"},
            {"catch_up_rounds", s.catch_up_rounds},
            {"rounds_unsent", s.rounds_unsent},
            {"messages_unsent", s.messages_unsent},
            {"model_hash", hex64(s.model_hash)},
            {"copies_kind", s.copies_kind},
            {"hostile", s.hostile}};
  for (const auto& c : s.copies)
    j["copy_" + std::to_string(c.rank) + (c.holder >= 0 ? "_at_" + std::to_string(c.holder) : "")] =
        hex64(c.hash);
  for (const auto& [name, value] : s.metrics) j[name] = json_or_null(value);
  json group = json::array();
  for (std::uint64_t h : s.group_hashes) group.push_back(hex64(h));
  j["group_model_hashes"] = std::move(group);
  return j;
}

}  // namespace

bool is_node_log_key(const std::string& name) {
  static const json keys = summary_json(node_summary{});
  const std::string columns = std::string(",") + kCsvColumns + ",";
  return keys.contains(name) || columns.find("," + name + ",") != std::string::npos ||
         name.starts_with("copy_");
}

void run_log::write_summary(const node_summary& s) {
  write_atomically(dir_ / ("node-" + std::to_string(s.rank) + ".json"), json_text(summary_json(s), true));
}

void run_log::finish(const node_summary& s) {
  write_summary(s);
  finished_ = s;

  json p = {{"event", s.status == node_status::ok ? "done" : "error"}, {"rank", s.rank}};
  if (s.status != node_status::ok) p["message"] = s.error;
  p["iteration"] = s.last.iteration;
  p["epoch"] = s.last.epoch;
  p["train_loss"] = s.last.train_loss;
  p["test_acc"] = json_or_null(s.last.test_acc);
  p["bytes_sent"] = s.last.bytes_sent;
  p["bytes_recv"] = s.last.bytes_recv;
  p["wall_s"] = s.wall_s;
  emit(json_text(p));
}

void run_log::amend_group_hashes(std::vector<std::uint64_t> hashes) {
  QG_ENFORCE(finished_, "amend_group_hashes: no summary written yet");
  finished_->group_hashes = std::move(hashes);
  write_summary(*finished_);
}

void run_log::error(const std::string& message) {
  emit(json_text({{"event", "error"}, {"rank", rank_}, {"message", message}}));
}

void run_log::peer_joined(int peer, std::uint64_t round, int reported_by) {
  emit(json_text({{"event", "peer_joined"},
                  {"rank", rank_},
                  {"peer", peer},
                  {"round", round},
                  {"reported_by", reported_by},
                  {"unix_s", unix_now_s()}}));
}

void run_log::rejoined(std::uint64_t round, int donor) {
  emit(json_text({{"event", "rejoined"}, {"rank", rank_}, {"round", round}, {"donor", donor}, {"unix_s", unix_now_s()}}));
}

void run_log::peer_left(int peer, std::uint64_t round, int reported_by, const std::string& cause) {
  emit(json_text({{"event", "peer_left"},
                  {"rank", rank_},
                  {"peer", peer},
                  {"round", round},
                  {"reported_by", reported_by},
                  {"cause", cause},
                  {"unix_s", unix_now_s()}}));
}

}  // namespace qgossip
