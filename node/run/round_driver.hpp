#pragma once
// The frame around a node's rounds (docs/design.md, "A node, and the round as a table of contents"),
// one for both loops that drive a node: `qgossip run`'s own (node/run/node_runner.cpp) and a
// program's (node/run/node_session.cpp, under the Python module):
//   start   round_driver(s): the round steps over the node's set-up, its checkpoint restored, the log
//           started; a fresh start announced to the neighbours (the start check), or a restarted
//           node's request to be admitted again (returns)
//   next    one round, with what surrounds it: the stop request (SIGINT/SIGTERM: interrupted), the
//           halt signal (SIGUSR1: a halt round proposed, once), the round's steps, a rejoin (the
//           node then runs the round it restarts at), the agreed halt round reached (halted), and
//           whether the node's rounds are over (done: the plan's last round, or every peer done)
//   end     finish(end): leave the run or tell the neighbours why not, the last row, the summary
// The loop is `while (end && !driver.done()) end = driver.next(); driver.finish(end);`, whoever
// calls it. Not thread-safe: one thread at a time.
#include <cstdint>
#include <memory>
#include <string>

#include "node/run/round_steps.hpp"

namespace qgossip {

struct node_setup;

class round_driver {
 public:
  // Restores the set-up's checkpoint, if it has one (a file of --resume, or a program's saved state:
  // s.checkpoints.resume, kept until start() so that its caller may read a section of its own), and
  // starts the log. Throws config_error when the round buffers cannot be allocated, state_error for
  // a checkpoint of another run, algorithm, codec, shard or size (nothing has been sent yet).
  explicit round_driver(node_setup& s);

  // Announces the start to the neighbours (a fresh start, or a restarted node's request to be
  // admitted again), the checkpoint let go. Once, before the first next().
  void start();
  // The next round and what surrounds it (see the top). ok: the round completed; done() says
  // whether it was the last. Otherwise how the node stops (halted included).
  [[nodiscard]] step_end next();
  // True when the node's rounds are over: the plan's last round ran, or every peer is done
  // (asynchronous gossip: the node ended with its neighbours; round_steps::ended).
  [[nodiscard]] bool done() const;
  // Ends the node (round_steps::finish) and returns its exit.
  node_exit finish(const step_end& end);
  // Overlapped rounds (train.overlap): lands the round in flight, if any, as the next round would
  // (round_steps::settle); ok when none is. A program's state() and mix() call it first.
  [[nodiscard]] step_end settle();

  // The latest round completed (0: none yet; after a resume, the checkpoint's).
  [[nodiscard]] std::uint64_t round() const { return t_; }
  [[nodiscard]] round_steps& steps() { return *steps_; }
  [[nodiscard]] const round_steps& steps() const { return *steps_; }

 private:
  // SIGUSR1 at round t: the proposer's halt round is t plus twice the graph's diameter and two.
  void halt_signal();

  node_setup& s_;
  std::unique_ptr<round_steps> steps_;
  std::uint64_t t_ = 0;
  bool halt_seen_ = false;
};

}  // namespace qgossip
