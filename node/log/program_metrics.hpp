#pragma once
// A program's own numbers for the node's log (model.kind external: node.log(val_loss=…) in Python,
// docs/python.md), and the node's robust-mixing figures (clip_tau, clip_fraction,
// clip_largest_distance: algorithms/robust_mixing.hpp): each name becomes a CSV column after
// kCsvColumns and a key of the summary. A row
// holds each metric's mean over the values logged since the previous row, empty when none was.
// The columns are fixed when the first row is written (the CSV has one header): a name logged for
// the first time after that is refused, as is a name that is not an identifier or that is already
// a column or a summary key. Not thread-safe: the node's one thread.
#include <optional>
#include <string>
#include <vector>

#include "core/state_io.hpp"

namespace qgossip {

class program_metrics {
 public:
  // Adds one value of metric `name`. Throws config_error naming it when the name is not
  // [A-Za-z_][A-Za-z0-9_]* (at most 64 characters), is one of the node's own columns or summary
  // keys, or is new after the columns were fixed (fix()).
  void add(const std::string& name, double value);
  // The names, in the order first logged (the CSV's extra columns).
  [[nodiscard]] const std::vector<std::string>& names() const { return names_; }
  // No new names from now on (the first row is being written).
  void fix() { fixed_ = true; }
  // A CSV continued from a checkpoint: its columns are these, fixed already.
  void resume(std::vector<std::string> names);
  [[nodiscard]] bool fixed() const { return fixed_; }
  // Each metric's mean since the last take into `means`, in names() order (nullopt: none logged),
  // and starts over. The latest value taken of each is kept for the summary (last()).
  void take_means(std::vector<std::optional<double>>& means);
  [[nodiscard]] const std::vector<std::optional<double>>& last() const { return last_; }

  // A program's node state (node_session::state()): the sums since the last row and the latest
  // values, by name. load_state takes them for the names it has (resume() gave them, from the CSV's
  // header), adds the others while the columns are open (no row yet) and else throws state_error.
  void save_state(state_writer& out) const;
  void load_state(state_reader& in);

 private:
  struct sum {
    double total = 0;
    std::size_t count = 0;
  };
  std::vector<std::string> names_;
  std::vector<sum> sums_;
  std::vector<std::optional<double>> last_;
  bool fixed_ = false;
};

}  // namespace qgossip
