#pragma once
// What one node writes while it runs (docs/config.md, "Logs"), all under runs/<name>/:
//   node-<rank>.csv      one row per logged round, flushed as written (a crash loses nothing);
//                        columns in kCsvColumns, cumulative bytes and seconds, test columns empty
//                        on rows without an evaluation
//   node-<rank>.json     the node's summary at the end (or on failure): final metrics, traffic, the
//                        time split under the CSV's names (compute_s, codec_s, comm_s, transfer_s),
//                        end_unix_s (the system clock when written), and 64-bit hashes of its model
//                        ("model_hash") and of every copy it holds ("copy_<rank>"), one flat JSON
//                        object (written with core/json.hpp)
//   run.json             the resolved config, versions and host (rank 0 writes it)
// and, on stdout, one JSON object per line for the launcher (node/launch/progress.hpp parses them):
//   {"event":"start"|"progress"|"done"|"error"|"peer_left"|"peer_joined"|"rejoined", "rank":..., ...}
// Not thread-safe: the node loop's thread owns it.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "node/log/node_status.hpp"

namespace qgossip {

inline constexpr const char* kCsvColumns =
    "iteration,epoch,wall_s,lr,train_loss,test_loss,test_acc,bytes_sent,bytes_recv,round_bytes_sent,"
    "round_bytes_recv,compute_s,codec_s,comm_s,rejected,probe_bytes_sent,consensus_dist,avg_test_loss,avg_test_acc,"
    "transfer_s,transfer_bytes,staleness,rounds_per_s";

struct round_record {
  std::uint64_t iteration = 0;
  double epoch = 0, wall_s = 0, lr = 0;
  double train_loss = 0;                 // mean batch loss since the previous row
  std::optional<double> test_loss, test_acc;
  // Training messages, headers included (notices, finished messages and acknowledgements are not).
  std::uint64_t bytes_sent = 0, bytes_recv = 0;              // cumulative
  std::uint64_t round_bytes_sent = 0, round_bytes_recv = 0;  // the row's round alone
  double compute_s = 0, codec_s = 0, comm_s = 0;             // cumulative
  std::uint64_t rejected = 0;                                // cumulative rejected messages
  // Consensus probes (train.consensus_every): bytes_sent/recv above count training traffic only;
  // probe traffic is counted here. Rank 0 fills the other three on rows where a probe ran.
  std::uint64_t probe_bytes_sent = 0;      // cumulative
  std::optional<double> consensus_dist;    // (1/n) Σ ||x_i − x̄||²
  std::optional<double> avg_test_loss, avg_test_acc;  // the average model x̄ on the test set
  // Copies between host memory and the model's device (a libtorch model on a GPU): cumulative
  // seconds (not counted in compute_s) and bytes. Zero on the CPU.
  double transfer_s = 0;
  std::uint64_t transfer_bytes = 0;
  // Asynchronous gossip: the most rounds a neighbour's newest message was behind this node's round
  // when it mixed, over the rounds since the previous row (0 for synchronous rounds); and this
  // node's own rate over those rounds, rounds per second of wall time.
  std::uint64_t staleness = 0;
  double rounds_per_s = 0;
  // A program's own metrics (node/log/program_metrics.hpp), in the order of the CSV's extra columns:
  // each one's mean since the previous row, empty when none was logged.
  std::vector<std::optional<double>> metrics;
};

struct copy_hash {
  int rank;
  std::uint64_t hash;
  int holder = -1;  // a copy of the node's own kept per edge: the neighbour holding it (held_copy)
};

struct node_summary {
  int rank = 0;
  node_status status = node_status::ok;
  std::string error;             // when not ok
  std::string host;
  round_record last;             // the final row (with the final full test evaluation)
  std::uint64_t rounds = 0;
  double mean_round_bytes_sent = 0;
  double wall_s = 0;
  // Of compute_s, the seconds in the model's forward and backward passes, in this process (not
  // carried over a resume); 0 for a program's model, whose passes are the program's.
  double gradient_s = 0;
  std::uint64_t model_hash = 0;
  std::string copies_kind;  // "replica", "estimate", "public_copy" or ""
  // A hostile node (a scenario's hostile: list, node/attack/): its attack, "flip", "alie (z 1.5)
  // from round 200"; empty for an honest node. `qgossip logs`, verify and the figures leave it out.
  std::string hostile;
  std::vector<copy_hash> copies;
  // A node that speaks for a group of processes: each member's model hash, the speaker's first
  // ("group_model_hashes"; empty for one process). `qgossip verify` checks each equals model_hash.
  std::vector<std::uint64_t> group_hashes;
  std::string rejected_detail;   // per-reason counts, "crc=2 gap=1"
  // Peers that left the run, as this node learnt of them (network.on_peer_failure: continue):
  // "3 at round 120 (rank 2: its link closed ...); ...". Empty when none left.
  std::string departures;
  std::vector<int> departed;     // ranks gone at the end, ascending ("departed": "3 5" in the JSON)
  // Returns of departed peers and of this node itself (docs/failures.md, "Rejoining"): "3 from
  // round 148 (at 12.4 s, admitted by this node); ...". Empty when none.
  std::string rejoins;
  // Asynchronous gossip: the node stopped before its last round because every neighbour had
  // finished ("ended": "with its neighbours"; else "at its last round").
  bool stopped_with_peers = false;
  // Of its rounds, those that only mixed, catching up with finished neighbours ("catch_up_rounds").
  std::uint64_t catch_up_rounds = 0;
  // Of its rounds, those that sent no message: every link was busy ("rounds_unsent"); and its
  // messages not sent, one per round and busy link ("messages_unsent").
  std::uint64_t rounds_unsent = 0;
  std::uint64_t messages_unsent = 0;
  // A program's own metrics, each with the latest value of its column (null: never logged): top-level
  // keys of the summary under their own names.
  std::vector<std::pair<std::string, std::optional<double>>> metrics;
};

class run_log {
 public:
  // Creates dir (and parents) and opens node-<rank>.csv, writing the header. Throws config_error
  // when the directory or file cannot be created.
  // Resuming from a checkpoint (continue_csv_at = the CSV's length recorded with it): the existing
  // CSV is cut back to that many bytes and continued, so rows written after the checkpoint by the
  // stopped run are dropped and written again; throws config_error when the file is missing, does
  // not start with kCsvColumns, or is shorter than that (it is not the one the checkpoint saw).
  run_log(std::filesystem::path dir, int rank, bool progress_to_stdout,
          std::optional<std::uint64_t> continue_csv_at = std::nullopt);
  ~run_log();
  run_log(const run_log&) = delete;
  run_log& operator=(const run_log&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  // A program's metric columns of a CSV continued from a checkpoint (empty otherwise, and before
  // add_metric_columns).
  [[nodiscard]] const std::vector<std::string>& metric_columns() const { return metric_columns_; }
  // True once the CSV's header can no longer change: a row was written (in this process, or in the
  // one whose CSV this continues).
  [[nodiscard]] bool header_final() const { return rows_written_; }

  void write_run_json(const std::string& name, const std::string& canonical_config_yaml, int n,
                      const std::string& algorithm, const std::string& compressor, const std::string& model,
                      std::uint64_t run_id, const std::string& topology_report, const std::string& network_shaping,
                      const std::string& data_note);
  void start(int n, std::uint64_t rounds, double epochs);
  // A program's metrics as extra CSV columns after kCsvColumns (the header is written again). Only
  // before the first row, and not in a CSV continued from a checkpoint (invariant_error).
  void add_metric_columns(const std::vector<std::string>& names);
  void row(const round_record& r);
  // The CSV's length in bytes after forcing the rows written so far to the disk (fdatasync): what a
  // checkpoint records to continue the file from. Throws config_error naming the file on failure.
  [[nodiscard]] std::uint64_t sync_csv();
  // The progress line alone (rows are written every log_every rounds; progress may be sparser).
  void progress(const round_record& r, std::uint64_t rounds);
  void finish(const node_summary& s);
  // A group's members' model hashes (node_summary::group_hashes) for a node whose summary finish()
  // wrote already: it ended by itself (its neighbours done) before its program closed it. Writes the
  // summary again with them; nothing to the launcher. REQUIRES: finish() was called.
  void amend_group_hashes(std::vector<std::uint64_t> hashes);
  // An error event of the progress protocol, ahead of finish()'s: a failing node tells the launcher
  // why before it tells its neighbours (node/run/round_steps.cpp, finish).
  void error(const std::string& message);
  // A peer left the run (docs/failures.md): {"event":"peer_left","rank":<this node>,"peer":...,
  // "round":...,"reported_by":...,"cause":...,"unix_s":<when this node learnt it>} for the launcher,
  // which shows it.
  void peer_left(int peer, std::uint64_t round, int reported_by, const std::string& cause);
  // A departed peer was admitted again (docs/failures.md, "Rejoining"), mixed from `round` on:
  // {"event":"peer_joined","rank":<this node>,"peer":...,"round":...,"reported_by":<this node>,
  // "unix_s":...}; and this node itself rejoined at `round` from `donor`'s model:
  // {"event":"rejoined","rank":...,"round":...,"donor":...,"unix_s":...}.
  void peer_joined(int peer, std::uint64_t round, int reported_by);
  void rejoined(std::uint64_t round, int donor);

 private:
  void emit(const std::string& json_line);
  void write_summary(const node_summary& s);  // node-<rank>.json, atomically
  void continue_csv(std::uint64_t length);
  std::filesystem::path dir_;
  int rank_;
  bool progress_to_stdout_;
  std::filesystem::path csv_path_;
  std::FILE* csv_ = nullptr;
  bool rows_written_ = false;  // or continued: the header is final
  std::vector<std::string> metric_columns_;
  std::optional<node_summary> finished_;  // what finish() wrote
};

// True when `name` is already a column of the node's CSV or a key of its summary (node-<r>.json).
[[nodiscard]] bool is_node_log_key(const std::string& name);

// The host name of this machine ("unknown" when it cannot be read).
std::string host_name();

}  // namespace qgossip
