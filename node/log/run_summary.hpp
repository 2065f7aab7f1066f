#pragma once
// A run directory (runs/<name>/, see node/log/run_log.hpp) read back into one struct, with the
// cross-node spread and the warnings a person should see first: what `qgossip logs` prints. The
// directory is read by read_run_dir (node/log/run_dir.hpp), as `qgossip verify` reads it; this file
// adds the CSVs' last rows and the logs' last lines.
//
// Reading never throws on the directory's content: a run still in progress, a node that crashed
// before writing its node-<r>.json, a half-written last CSV line or an unreadable file each become
// a note on the node (or on the run) and the report is built from what is there. CSV columns are
// found by header name; unknown columns are ignored and optional ones may be absent.
//
// Warnings (thresholds in log_thresholds; time thresholds are relative and absolute at once, so the
// noise of a run of a few seconds does not trip them):
//  - "status":   a node whose summary says failed, diverged or interrupted (with its error);
//  - "missing":  a node with no summary that is not running (it stopped before writing it), or a
//                rank of run.json's n with no files at all;
//  - "rounds":   a node that completed fewer rounds than the most any node completed;
//  - "wall":     a node whose wall time is far above the median;
//  - "straggler": a node whose own work (compute + codec seconds) is far above the median, i.e.
//                 the node its neighbours wait for in a synchronous round;
//  - "accuracy": a node whose final test accuracy is far below the median;
//  - "departures": peers that left the run (network.on_peer_failure: continue), who and when;
//  - "rejoins":  each node's account of the returns it saw (who, from which round, when).
// Hostile nodes (a scenario's attack, their summary's "hostile") are shown in the table, marked, and
// left out of the spread and of the warnings that compare nodes: the spread, its minimum the worst
// honest node, is of the honest nodes only.
// Thread-safety: read_run_summary only reads files and returns a value; no shared state anywhere.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "node/log/run_dir.hpp"

namespace qgossip {

// One node as its files describe it. Metrics come from node-<r>.json when it is there, else from the
// last row of node-<r>.csv (source says which).
struct node_report {
  int rank = 0;
  bool has_summary = false;  // node-<r>.json read
  bool has_csv = false;      // node-<r>.csv read (header found)
  std::string source;        // "summary", "csv" or "" (nothing readable)
  // ok | failed | diverged | interrupted (from the summary); without one: "running" (the run is in
  // progress: no node has a summary yet and a CSV is fresh), "no summary" (it stopped before writing
  // it), "no files" (a rank of run.json's n with no file at all).
  std::string status;
  std::string error;  // the summary's error (or a hint from node-<r>.log when there is no summary)
  std::string departures;  // peers that left the run, as this node learnt of them (its summary's "departures")
  std::string rejoins;     // returns it saw (its summary's "rejoins"; docs/failures.md "Rejoining")
  std::string host;
  std::string hostile;       // a hostile node's attack (its summary's "hostile"); empty: honest
  std::uint64_t rounds = 0;  // rounds completed (summary), else the last logged iteration
  double epoch = 0;
  double wall_s = 0;
  std::optional<double> train_loss;  // absent when not finite (a diverged node) or never logged
  std::optional<double> test_loss, test_acc;
  std::uint64_t bytes_sent = 0, bytes_recv = 0;  // cumulative, headers included
  double mean_round_bytes_sent = 0;
  double compute_s = 0, codec_s = 0, comm_s = 0;
  std::uint64_t rejected = 0;
  std::string rejected_detail;      // "crc=2 gap=1"
  std::size_t csv_rows = 0;         // complete data rows read
  std::optional<double> csv_age_s;  // seconds since node-<r>.csv was written (only without a summary)
  // Optional columns, the latest non-empty value (the summary's when it has the key, else the CSV's);
  // the node that probes the average model logs them (train.consensus_every > 0).
  std::optional<double> consensus_dist, avg_test_loss, avg_test_acc;
  std::vector<std::string> notes;  // what was missing or unreadable, in words
};

struct value_spread {
  double min = 0, median = 0, max = 0;
  int count = 0;  // nodes that had the value
};

struct run_warning {
  int rank = -1;     // -1: the run as a whole
  std::string kind;  // see the list at the top of this file
  std::string message;
};

// When a node counts as lagging or poor; every threshold must be exceeded in both its relative and its
// absolute form, so that tiny runs (a few seconds, a few rounds) do not raise warnings over noise.
struct log_thresholds {
  double wall_ratio = 1.5;         // "wall": wall_s > wall_ratio * median ...
  double wall_min_excess_s = 2.0;  //          ... and wall_s - median > this
  double work_ratio = 1.5;         // "straggler": compute_s + codec_s > work_ratio * median ...
  double work_min_excess_s = 1.0;  //          ... and the difference > this
  double accuracy_gap = 0.05;      // "accuracy": test_acc < median - this (absolute, 5 points)
  // A run with no summary yet is in progress while its freshest CSV is younger than this; 5 min covers
  // a row every 20 rounds of 32-bit gossip at 1 Mbit/s.
  double in_progress_s = 300;
};

struct run_summary {
  std::filesystem::path dir;
  // From run.json (empty / 0 when it is absent or unreadable).
  std::string name, algorithm, compressor, model, started;
  std::string network_shaping;  // how the network was shaped, when the run recorded it
  int n = 0;
  std::vector<node_report> nodes;  // by rank
  // Of the honest nodes (hostile ones left out).
  std::optional<value_spread> test_acc, test_loss, train_loss, wall_s;
  std::vector<int> hostile;        // ranks whose summary names an attack
  std::vector<std::string> notes;  // run-level: no run.json, ranks with no files at all
  std::vector<run_warning> warnings;
};

// Reads the run in `d` (and its node-<r>.csv and node-<r>.log). Returns nullopt when it holds no run
// at all (no node-<r>.csv, node-<r>.json or run.json, or it is not a readable directory); *why then
// says which: "<dir>: not a directory", "cannot read <dir>: <the system's words>", "<dir> holds no run (...)".
[[nodiscard]] std::optional<run_summary> read_run_summary(const run_dir_contents& d, std::string* why,
                                                          const log_thresholds& thresholds = {});
// The same on read_run_dir(dir).
[[nodiscard]] std::optional<run_summary> read_run_summary(const std::filesystem::path& dir, std::string* why,
                                                          const log_thresholds& thresholds = {});

// min / median (mean of the middle two for an even count) / max; nullopt for no values.
[[nodiscard]] std::optional<value_spread> spread_of(std::vector<double> values);

// The human-readable report: header, per-node table, spread, notes and warnings. Ends with '\n'.
[[nodiscard]] std::string format_run_summary(const run_summary& s);

// The same content as one JSON object (pretty-printed), for scripts.
[[nodiscard]] std::string run_summary_json(const run_summary& s);

}  // namespace qgossip
