#pragma once
// The signals the launcher catches while launch() runs — SIGINT, SIGTERM (stop the nodes) and
// SIGCHLD (a node exited) — delivered as ordinary handlers on the launcher's io_context through
// asio::signal_set.
//
// For the lifetime of one launch_signals:
//  - the three signals run Asio's handler, with SA_RESTART (all three) and SA_NOCLDSTOP (SIGCHLD)
//    added to the action Asio installs (Asio 1.22's signal_set cannot pass sigaction flags);
//  - a signal that arrives while no handler is waiting is kept by Asio and delivered on the next
//    wait, so none is lost between two waits (coalescing aside: two SIGCHLDs may come as one).
// On destruction the previous actions are restored with the three signals blocked, so a Ctrl-C in
// between reaches the previous handler, never the default action.
//
// REQUIRES: at most one launch_signals per process at a time (enforced: config is global), and no
// other asio::signal_set in the process on these signals. Owned by one thread (launch()'s).
#include <signal.h>

#include <array>
#include <functional>

#include <asio/io_context.hpp>
#include <asio/signal_set.hpp>

namespace qgossip {

class launch_signals {
 public:
  static constexpr std::array<int, 3> kCaught = {SIGINT, SIGTERM, SIGCHLD};

  // Throws invariant_error when another launch_signals is alive, std::system_error when the OS
  // refuses a handler.
  explicit launch_signals(asio::io_context& io);
  ~launch_signals();
  launch_signals(const launch_signals&) = delete;
  launch_signals& operator=(const launch_signals&) = delete;

  // Calls on_signal(signal number) on the io_context for every signal that arrives, until this
  // object is destroyed. Call once.
  void listen(std::function<void(int)> on_signal);

 private:
  void wait();

  std::array<struct sigaction, kCaught.size()> previous_{};
  asio::signal_set set_;
  std::function<void(int)> on_signal_;
};

}  // namespace qgossip
