#pragma once
// What the launcher learns from its nodes, and how it shows it.
//
// Each node process writes one JSON object per line on stdout (the node <-> launcher protocol):
//   {"event":"start","rank":0,"n":8,"rounds":1170,"epochs":5.0}
//   {"event":"progress","rank":0,"iteration":120,"rounds":1170,"epoch":0.51,"train_loss":0.63,
//    "test_acc":null,"bytes_sent":12345678,"bytes_recv":12345678,"wall_s":12.3}
//   {"event":"done", ... same fields as progress ...}
//   {"event":"error","rank":0,"message":"timeout: no message from rank 3 for iteration 17 within 30000 ms"}
// This file holds
//  - parse_node_event: a protocol line (one JSON object, read by core/json.hpp) -> node_event
//    (unknown keys are ignored so nodes may add fields);
//  - progress_board: the latest metrics of every node, and the text the launcher prints from them
//    (the one-line status and the final per-node table).
// Everything here is pure (no I/O, no clocks) and not thread-safe; the launcher owns one board.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.hpp"

namespace qgossip {

enum class event_kind { start, progress, done, error, peer_left, peer_joined, rejoined };

// One protocol line. Fields an event does not carry keep their defaults.
struct node_event {
  event_kind kind = event_kind::progress;
  int rank = -1;
  // start: the number of nodes, the planned rounds and epochs.
  int n = 0;
  std::int64_t rounds = 0;  // also on progress/done when present; 0 = not given
  double epochs = 0;
  // progress / done: where the node is.
  std::int64_t iteration = 0;
  double epoch = 0;
  std::optional<double> train_loss;
  std::optional<double> test_acc;  // null until the node has evaluated
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_recv = 0;
  double wall_s = 0;
  // error: what went wrong. peer_left: why the peer left (its "cause").
  std::string message;
  // peer_left: who left, at which round (as noticed), and which node noticed it first. peer_joined:
  // who was admitted again, from which round, by whom. rejoined: the round (iteration) and the
  // donor (peer) of this node's own return.
  int peer = -1;
  int reported_by = -1;
};

// Parses one stdout line of a node. Returns nullopt for anything that is not a protocol event (not
// JSON, no known "event", a required field missing or of the wrong type); *error then says why.
// Required: "event" and an integral "rank"; progress/done need "iteration" and "epoch"; error needs
// "message"; peer_left needs "peer" and "round" ("round" is read into iteration, "cause" into
// message). Other fields are optional, but when present must have the documented type.
[[nodiscard]] std::optional<node_event> parse_node_event(std::string_view line, std::string* error = nullptr);

// The latest metrics one node reported; final once the node has exited.
struct final_metrics {
  int rank = -1;
  bool started = false;  // any event seen
  bool done = false;     // a "done" event seen
  std::int64_t iteration = 0;
  std::int64_t rounds = 0;  // planned rounds (from start, or the latest event that carried it)
  double epoch = 0;
  double epochs = 0;  // planned epochs (from start)
  std::optional<double> train_loss;
  std::optional<double> test_acc;
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_recv = 0;
  double wall_s = 0;
  std::string error;  // the message of an "error" event, if one came
};

// Aggregates the nodes' events into one view.
class progress_board {
 public:
  // One slot per node, in launch order; `ranks[i]` is the rank of slot i.
  explicit progress_board(std::span<const int> ranks);

  // Records an event from the node in `slot` (the launcher knows the slot from the pipe it read; the
  // rank inside the event is not trusted for that).
  void apply(std::size_t slot, const node_event& event);
  // The node in `slot` was started again: what its earlier process reported is forgotten.
  void restart(std::size_t slot);

  [[nodiscard]] std::size_t size() const { return nodes_.size(); }
  [[nodiscard]] const final_metrics& node(std::size_t slot) const { return nodes_.at(slot); }
  [[nodiscard]] const std::vector<final_metrics>& nodes() const { return nodes_; }

  // One line, min-max across nodes of their latest values, e.g.
  //   round 412/1170 (35%)  epoch 1.76  loss 0.41–0.47  acc 0.820–0.840  sent 123.4 MB  ETA 1m12s
  // round/epoch: the slowest node; sent: total over nodes; ETA: from the slowest node's own rate.
  // Parts with no data yet are left out; "nodes k/n" leads while not every node has reported.
  [[nodiscard]] std::string status_line() const;

  // The final table, one row per node: rank, epoch, loss, acc, MB sent, wall s, and `outcome[i]`
  // (e.g. "done", "exit 1") when given (outcome.size() must then equal size()). Ends with '\n'.
  [[nodiscard]] std::string summary_table(std::span<const std::string> outcome = {}) const;

 private:
  std::vector<final_metrics> nodes_;
};


}  // namespace qgossip
