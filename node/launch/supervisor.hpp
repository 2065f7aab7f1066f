#pragma once
// The launcher's event loop: one asio::io_context on launch()'s thread, and one named handler per
// thing that can happen while the nodes run:
//   on_signal           SIGINT/SIGTERM to the launcher (stop the nodes), SIGCHLD (on_children_exited)
//   on_children_exited  a node exited: read what it wrote, reap it, judge the exit
//   on_line             a line on a node's stdout (child_pipe): a protocol event or text
//   on_draw_due         the display timer (refresh_s when live, plain_interval_s otherwise)
//   on_grace_over       the grace timer after a stop signal: SIGKILL to what still runs
//   on_restart_due      a failed node's back-off is over (network.restart): start it again
//   on_churn            a churn event is due (--churn): kill or stop its node
// Each handler runs to completion before the next (single-threaded, no locks); a handler that
// changed what is on screen or who is running asks for settle(), which runs once after the handlers
// already queued: it redraws a live line a text line scrolled away and stops the loop when no node
// runs. A further timer (e.g. a heartbeat) is one more asio::steady_timer member, a schedule_ and
// an on_ function.
#include <sys/types.h>

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>

#include "node/launch/child_pipe.hpp"
#include "node/launch/display.hpp"
#include "node/launch/launch_signals.hpp"
#include "node/launch/launcher.hpp"
#include "node/launch/outcome.hpp"
#include "node/launch/progress.hpp"
#include "node/launch/spawn.hpp"
#include "node/launch/unique_fd.hpp"

namespace qgossip {

class supervisor {
 public:
  // REQUIRES: nodes validated by launch() (non-empty argv, distinct ranks), `ranks` their ranks.
  supervisor(std::span<const node_process> nodes, const launch_options& options,
             const std::vector<int>& ranks);
  // Starts the nodes and runs the loop until none runs. Throws what launch() documents.
  launch_result run();

 private:
  using clock_type = std::chrono::steady_clock;

  // One supervised node.
  struct child {
    node_end end;
    pid_t pid = -1;
    bool running = false;
    bool announced = false;  // its "started" line was printed
    std::unique_ptr<child_pipe> out;
    int restarts = 0;          // network.restart: how many times it was started again
    bool restarting = false;   // waiting out its back-off
    std::unique_ptr<asio::steady_timer> restart_timer;
    double churn_down_s = -1;  // killed by churn: started again this long after it exits
  };

  void start_children();
  void start_child(child& c, spawn_plan& plan);
  // After c failed: starts it again after a back-off when options_.restart_limit allows.
  // A node other than c still runs and has not left the run (a restart has someone to rejoin).
  [[nodiscard]] bool others_running(const child& c) const;
  [[nodiscard]] bool schedule_restart(child& c);
  void respawn_after(child& c, double seconds);
  void on_restart_due(child& c);
  void schedule_churn();
  void on_churn(const churn_event& ev);
  void kill_and_reap_all();
  launch_result finish();

  void on_signal(int sig);
  void on_children_exited();
  void note_departure(const node_event& ev);
  void end_leftovers();
  void on_line(child& c, std::string line);
  void on_draw_due();
  void on_grace_over();

  void reap(child& c);
  void announce(child& c, const node_event& ev);
  void stop_nodes(int sig);
  void kill_all();
  void signal_node(child& c, int sig);
  void print_text(const std::string& text) { display_.print_text(text); }
  void draw();
  void schedule_draw(clock_type::time_point at);
  void request_settle();
  void settle();
  [[nodiscard]] bool any_running() const;

  std::span<const node_process> nodes_;
  const launch_options& options_;
  progress_board board_;
  launch_display display_;
  clock_type::time_point start_;
  // The loop and everything registered with it; declared after io_ so they go before it.
  asio::io_context io_;
  launch_signals signals_;
  asio::steady_timer draw_timer_;
  asio::steady_timer grace_timer_;
  unique_fd devnull_;
  std::vector<child> children_;  // sized once: the pipes' handlers hold references
  std::vector<std::unique_ptr<asio::steady_timer>> churn_timers_;
  int stop_signal_ = 0;          // the signal sent to stop the nodes; 0: not stopping
  int interrupted_by_ = 0;       // the signal that made the launcher stop them, if it was one
  bool killed_ = false;          // SIGKILL sent to all
  bool settle_requested_ = false;
};

}  // namespace qgossip
