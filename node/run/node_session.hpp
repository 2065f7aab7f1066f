#pragma once
// A node driven by another program's training loop (model.kind external; the Python module,
// docs/python.md): the program owns the model, the data, the loss and the optimizer and takes the
// steps; the node owns the rounds. The program attaches its parameters once, as one flat float32
// vector in its own memory, which it goes on training in place; after each of its optimizer steps
// it calls step(), and every train.local_steps steps the node runs one round,
// the same round `qgossip run` runs (node/run/round_steps.hpp): the round's change is the program's
// parameters minus the model at the round's start, the outer step of train.outer applies to it, and
// it is encoded, exchanged, mixed and written back into the parameters: the same round driver as
// `qgossip run`'s (node/run/round_driver.hpp). close() leaves the run as the last round of
// `qgossip run` does and writes the node's summary. A node whose rounds are over before the
// program's loop is (asynchronous gossip: every neighbour has finished and the node caught up with
// them) ends then, as `qgossip run` would, its summary written: done() says so, and later steps
// leave the program's parameters alone.
//
// Every node of the run must attach parameters of the same size and value (the program seeds its
// model's initialization the same on every node) and call step() the same number of times.
// Failures are node_failure exceptions carrying the node's own message and exit; the node has then
// stopped (its neighbours told why, its summary written). Not thread-safe: one thread at a time,
// which may be a different one for each call.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "node/config/config.hpp"
#include "node/run/run_control.hpp"

namespace qgossip {

struct node_setup;
struct step_end;
class round_driver;

// How a session's node stopped: its exit (failed, refused, diverged, interrupted) and why.
class node_failure : public std::runtime_error {
 public:
  node_failure(node_exit exit, const std::string& what) : std::runtime_error(what), exit_(exit) {}
  [[nodiscard]] node_exit exit() const { return exit_; }

 private:
  node_exit exit_;
};

class node_session {
 public:
  // config: a run config whose model.kind is external (config_error otherwise).
  node_session(run_config config, int rank, node_run_options options = {});
  ~node_session();  // closes the node if it is open (errors are said, not thrown)
  node_session(const node_session&) = delete;
  node_session& operator=(const node_session&) = delete;

  // Builds the node around the program's parameters (their values now are x_1): its links,
  // exchange and algorithm. `params` must stay valid until close(); the node reads each round's
  // change from them and writes the round's model back into them. Throws config_error (a port in
  // use, a host that does not resolve, a second attach, no parameters) and start_up_interrupted
  // (a stop request meanwhile).
  // With `state` (what state() returned in an earlier process of this run and rank) the node
  // continues from it as `qgossip run --resume` continues from a checkpoint: its round, its
  // algorithm's model and copies, its codec, optimizer and membership state, its CSV (cut back to
  // the rows written then); the parameters are the program's, restored by the program (they may
  // have moved since the round). Every node of the run must continue from the state of the same
  // round. Throws config_error for a state of another run or rank, or a damaged one.
  void attach(std::span<float> params, std::span<const std::byte> state = {});
  // The node's state after its latest round, for the program to save beside its own (a checkpoint's
  // bytes, docs/checkpoints.md; with the steps taken since that round). Forces the CSV to the disk.
  // Overlapped (train.overlap), the round in flight lands first, its mix added to the parameters.
  // Throws config_error when that fails, node_failure as step() does, invariant_error before attach
  // or after close.
  [[nodiscard]] std::vector<std::byte> state();
  [[nodiscard]] std::size_t size() const { return params_.size(); }
  // After the program's optimizer step: every train.local_steps calls, one round (nothing once
  // done()). Throws node_failure when the round fails (the node has then stopped), invariant_error
  // before attach or after close.
  void step();
  // `rounds` rounds that only mix, now (before an evaluation, or the end): the program's parameters
  // take no step, the round's rule runs with a zero change and no outer step, so each model moves to
  // its neighbours' and the ranks' models come closer together (CHOCO-SGD keeps their mean). Every
  // node of the run calls it at the same step with the same rounds. Throws config_error off a round
  // boundary (steps() not a multiple of train.local_steps), node_failure as step() does.
  void mix(std::uint64_t rounds);
  // Overlapped rounds (train.overlap): lands the round in flight now, its mix added to the
  // parameters (before an evaluation of them); nothing otherwise or once done(). Throws
  // node_failure as step() does.
  void settle();
  // A training loss of the program's, for the node's CSV (the mean since the last row).
  void log_loss(double loss);
  // One of the program's own numbers (a validation loss, a perplexity), as a column of the node's
  // CSV (the mean since the last row) and a key of its summary (the latest); names are fixed at the
  // CSV's first row (node/log/program_metrics.hpp). Throws config_error for a name it refuses.
  void log_metric(const std::string& name, double value);
  // The hashes of the models of the processes this node speaks for (a group: the Python module's
  // group=, the speaker's own first), for its summary ("group_model_hashes"): `qgossip verify`
  // checks each against the node's model. Call before close() (after the node ended by itself, done,
  // its written summary gets them). Throws invariant_error before attach.
  void set_group_hashes(std::vector<std::uint64_t> hashes);
  // Leaves the run after the last round (once the neighbours have finished too) and writes the
  // summary; returns how the node ended. Closing twice does nothing more.
  node_exit close();
  // Ends the node as `exit` (failed: the program's loop raised; interrupted: Ctrl-C there), `why`
  // its summary's error, without waiting for the neighbours: they are told at once, as of a failed
  // `qgossip run` (a notice; network.on_peer_failure decides what they do). Returns `exit`, or how
  // the node had ended when it was closed already (then it does nothing more). REQUIRES: exit is
  // failed or interrupted.
  node_exit end(node_exit exit, const std::string& why);

  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] std::uint64_t round() const;
  // True once the node has ended by itself, its rounds over before the program's loop (see the
  // top): the program may stop its loop; close() returns how the node ended.
  [[nodiscard]] bool done() const { return done_; }
  [[nodiscard]] std::uint64_t steps() const { return steps_; }
  [[nodiscard]] bool attached() const { return driver_ != nullptr; }
  [[nodiscard]] bool closed() const { return closed_; }
  [[nodiscard]] const run_config& config() const { return config_; }

 private:
  // One round of the driver, and the node's end when it was its last or it failed.
  void run_round();
  // The node's end after a round that ended it (end ok: its rounds are over) or failed (throws).
  void end_after(const step_end& end);
  // The end of a node stopped by a signal (SIGINT, SIGTERM) after its latest round.
  [[nodiscard]] step_end interrupted() const;

  run_config config_;
  int rank_;
  node_run_options options_;
  std::span<float> params_;  // the program's, from attach()
  std::unique_ptr<node_setup> setup_;
  std::unique_ptr<round_driver> driver_;
  std::uint64_t steps_ = 0;
  bool closed_ = false;
  bool done_ = false;
  node_exit exit_ = node_exit::ok;
};

}  // namespace qgossip
