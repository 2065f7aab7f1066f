#include "node/launch/supervisor.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>

#include <asio/post.hpp>

#include "node/launch/spawn.hpp"

namespace qgossip {
namespace {

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

std::string format_seconds(double s, const char* unit = " s") {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%g%s", s, unit);
  return buf;
}

}  // namespace

supervisor::supervisor(std::span<const node_process> nodes, const launch_options& options,
                       const std::vector<int>& ranks)
    : nodes_(nodes),
      options_(options),
      board_(ranks),
      display_(options.out, options.live),
      start_(clock_type::now()),
      signals_(io_),
      draw_timer_(io_),
      grace_timer_(io_),
      children_(nodes.size()) {}

launch_result supervisor::run() {
  devnull_.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devnull_) throw_errno("open /dev/null");
  signals_.listen([this](int sig) { on_signal(sig); });
  try {
    start_children();
    schedule_churn();
    schedule_draw(options_.live ? start_ : start_ + seconds(std::max(0.01, options_.plain_interval_s)));
    io_.run();
  } catch (...) {
    kill_and_reap_all();
    throw;
  }
  return finish();
}

// All plans first (a log file that cannot be created stops the launch before any node starts).
void supervisor::start_children() {
  std::vector<spawn_plan> plans;
  for (const node_process& node : nodes_) plans.push_back(make_plan(node));
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    children_[i].end.slot = i;
    start_child(children_[i], plans[i]);
  }
}

void supervisor::start_child(child& c, spawn_plan& plan) {
  const std::vector<int> caught(launch_signals::kCaught.begin(), launch_signals::kCaught.end());
  node_end fresh;  // a restarted node's earlier end is forgotten
  fresh.slot = c.end.slot;
  fresh.rank = nodes_[c.end.slot].rank;
  fresh.log_path = plan.log_path;
  fresh.log_start = plan.log_start;
  c.end = std::move(fresh);
  spawned s = spawn(plan, devnull_.get(), caught);
  plan.log.reset();
  c.pid = s.pid;
  c.running = true;
  c.announced = false;
  c.end.exec_error = std::move(s.exec_error);
  c.out = std::make_unique<child_pipe>(io_, s.out.release(),
                                       [this, &c](std::string line) { on_line(c, std::move(line)); });
  c.out->start();
}

bool supervisor::others_running(const child& c) const {
  return std::any_of(children_.begin(), children_.end(),
                     [&](const child& o) { return &o != &c && o.running && o.end.left.empty(); });
}

bool supervisor::schedule_restart(child& c) {
  const bool others_run = others_running(c);
  const bool refused = WIFEXITED(c.end.wait_status) && WEXITSTATUS(c.end.wait_status) == 2;
  if (!options_.continue_on_failure || c.restarts >= options_.restart_limit || stop_signal_ != 0 ||
      c.end.signalled_by_us || refused || !others_run || !c.end.exec_error.empty())
    return false;
  const double backoff = std::min(30.0, options_.restart_backoff_s * static_cast<double>(1 << std::min(c.restarts, 10)));
  ++c.restarts;
  print_text("node " + std::to_string(c.end.rank) + " " + describe_end(c.end.wait_status) + "; starting it again in " +
             format_seconds(backoff) + " (restart " + std::to_string(c.restarts) + " of " +
             std::to_string(options_.restart_limit) + ")");
  respawn_after(c, backoff);
  return true;
}

void supervisor::respawn_after(child& c, double delay_s) {
  c.restarting = true;
  if (!c.restart_timer) c.restart_timer = std::make_unique<asio::steady_timer>(io_);
  c.restart_timer->expires_after(seconds(delay_s));
  c.restart_timer->async_wait([this, &c](const asio::error_code& ec) {
    if (!ec) on_restart_due(c);
  });
}

void supervisor::schedule_churn() {
  for (const churn_event& ev : options_.churn) {
    auto& timer = churn_timers_.emplace_back(std::make_unique<asio::steady_timer>(io_));
    timer->expires_at(start_ + seconds(ev.at_s));
    timer->async_wait([this, ev](const asio::error_code& ec) {
      if (!ec) on_churn(ev);
    });
  }
}

void supervisor::on_churn(const churn_event& ev) {
  auto it = std::find_if(children_.begin(), children_.end(), [&](const child& c) { return c.end.rank == ev.rank; });
  if (it == children_.end() || stop_signal_ != 0) return;
  child& c = *it;
  const std::string at = format_seconds(ev.at_s);
  if (!c.running) {
    print_text("churn: node " + std::to_string(ev.rank) + " is not running at " + at + "; nothing done");
    return;
  }
  const bool kill = ev.how == churn_event::kind::kill;
  print_text("churn: node " + std::to_string(ev.rank) + (kill ? " killed (SIGKILL)" : " stopped (SIGSTOP)") + " at " +
             at + ", for " + format_seconds(ev.down_s));
  if (kill) {
    c.churn_down_s = ev.down_s;  // reap() starts it again
    signal_group(c.pid, SIGKILL);
    return;
  }
  signal_group(c.pid, SIGSTOP);
  auto& timer = churn_timers_.emplace_back(std::make_unique<asio::steady_timer>(io_));
  timer->expires_after(seconds(ev.down_s));
  const pid_t pid = c.pid;
  timer->async_wait([this, &c, pid, rank = ev.rank](const asio::error_code& ec) {
    if (ec || !c.running || c.pid != pid) return;
    signal_group(pid, SIGCONT);
    print_text("churn: node " + std::to_string(rank) + " continued (SIGCONT)");
  });
}

void supervisor::on_restart_due(child& c) {
  c.restarting = false;
  const bool others_run = others_running(c);
  if (stop_signal_ == 0 && others_run) {
    spawn_plan plan = make_plan(nodes_[c.end.slot]);
    board_.restart(c.end.slot);
    start_child(c, plan);
  }
  request_settle();
}

void supervisor::on_signal(int sig) {
  if (sig == SIGCHLD) return on_children_exited();
  if (stop_signal_ == 0) {
    interrupted_by_ = sig;
    print_text("launcher: " + signal_name(sig) +
               " received, stopping the nodes (SIGINT, then SIGKILL after " +
               format_seconds(options_.kill_grace_s) + ")");
    stop_nodes(SIGINT);
  } else if (!killed_) {
    kill_all();  // already stopping (an earlier signal, or a failed node): a further Ctrl-C means "now"
  }
  request_settle();
}

// Everything the nodes wrote so far is read first: an error event sent before another node's exit
// was noticed counts as the earlier failure.
void supervisor::on_children_exited() {
  for (child& c : children_) {
    if (c.out) c.out->drain();
  }
  for (child& c : children_) {
    if (c.running) reap(c);
  }
  end_leftovers();
  request_settle();
}

void supervisor::reap(child& c) {
  int status = 0;
  const pid_t r = ::waitpid(c.pid, &status, WNOHANG);
  if (r == 0 || (r < 0 && errno == EINTR)) return;
  c.running = false;
  c.end.wait_status = r == c.pid ? status : (127 << 8);
  c.out->drain();  // what it wrote just before exiting
  c.out->close();
  if (c.churn_down_s >= 0) {  // killed by churn: no failure; back after its down time
    const double down = c.churn_down_s;
    c.churn_down_s = -1;
    if (stop_signal_ == 0) respawn_after(c, down);
    return;
  }
  if (!has_failed(c.end, board_)) return;
  if (schedule_restart(c)) return;
  if (!c.end.failed_at) c.end.failed_at = clock_type::now();
  if (!c.end.signalled_by_us)
    print_text("node " + std::to_string(c.end.rank) + " " + describe_end(c.end.wait_status));
  if (stop_signal_ == 0 && !options_.continue_on_failure) stop_nodes(SIGTERM);
}

// Under continue: the nodes that left the run but still run (a stopped process, one that did not
// hear it was dropped) are ended once every other node has exited.
void supervisor::end_leftovers() {
  if (!options_.continue_on_failure || stop_signal_ != 0) return;
  const bool others_done = std::none_of(children_.begin(), children_.end(),
                                        [](const child& c) { return c.running && c.end.left.empty(); });
  if (!others_done || !any_running()) return;
  for (child& c : children_)
    if (c.running)
      print_text("node " + std::to_string(c.end.rank) + " left the run and is still running: ending it");
  stop_nodes(SIGTERM);
  for (child& c : children_) signal_node(c, SIGCONT);  // a stopped process acts on SIGTERM only once continued
}

// A node that has itself left (it was dropped: cut off, or refused as a hostile sender) reports its
// neighbours as gone from where it stands; that is its departure, not theirs, so it is not taken.
void supervisor::note_departure(const node_event& ev) {
  for (const child& c : children_)
    if (c.end.rank == ev.reported_by && !c.end.left.empty()) return;
  for (child& c : children_) {
    if (c.end.rank != ev.peer || !c.end.left.empty()) continue;
    c.end.left = "at round " + std::to_string(ev.iteration) + " (rank " + std::to_string(ev.reported_by) + ": " +
                 ev.message + ")";
    print_text("node " + std::to_string(ev.peer) + " left the run " + c.end.left + "; the others train on");
  }
}

void supervisor::on_line(child& c, std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.empty()) return;
  std::string why;
  std::optional<node_event> ev = parse_node_event(line, &why);
  if (!ev) {
    // Not protocol: shown as text (a stray printf in a node must not break the launcher). What looks
    // like a botched event also says why it was not taken as one.
    std::string text = "[node " + std::to_string(c.end.rank) + "] " + line;
    if (line.front() == '{') text += "  (not a protocol event: " + why + ")";
    print_text(text);
  } else {
    board_.apply(c.end.slot, *ev);
    announce(c, *ev);
  }
  request_settle();
}

// The text lines an event gives rise to: an error, and when not live "started" and "done".
void supervisor::announce(child& c, const node_event& ev) {
  const std::string who = "node " + std::to_string(c.end.rank);
  if (ev.kind == event_kind::peer_left) return note_departure(ev);
  if (ev.kind == event_kind::rejoined) {
    c.end.left.clear();  // it is back in the run
    return print_text(who + ": rejoined the run at round " + std::to_string(ev.iteration) + " from node " +
                      std::to_string(ev.peer) + "'s model");
  }
  if (ev.kind == event_kind::peer_joined) return;  // each neighbour says so; the joiner's line suffices
  if (ev.kind == event_kind::error) {
    // A node the launcher told to stop (Ctrl-C, or another node failed) reports its end as an
    // error ("cancelled"): not a cause, and not printed; its row says "stopped".
    if (c.end.signalled_by_us || c.end.failed_at) return;  // a failed node says why first, then ends saying it again
    c.end.failed_at = clock_type::now();
    print_text(who + ": error: " + ev.message);
    return;
  }
  if (!options_.live && !c.announced) {
    std::string text = who + ": started";
    if (ev.kind == event_kind::start && ev.rounds > 0)
      text += " (n=" + std::to_string(ev.n) + ", " + std::to_string(ev.rounds) + " rounds, " +
              format_seconds(ev.epochs, "") + " epochs)";
    else if (ev.kind == event_kind::start)  // a program's loop (docs/python.md): as long as it runs
      text += " (n=" + std::to_string(ev.n) + ", rounds as the program runs them)";
    print_text(text);
  }
  c.announced = true;
  if (ev.kind == event_kind::done && !options_.live) {
    const final_metrics& m = board_.node(c.end.slot);
    char buf[160];
    if (m.rounds > 0)
      std::snprintf(buf, sizeof buf, ": done at round %lld, epoch %.2f in %.1f s",
                    static_cast<long long>(m.iteration), m.epoch, m.wall_s);
    else
      std::snprintf(buf, sizeof buf, ": done at round %lld in %.1f s", static_cast<long long>(m.iteration),
                    m.wall_s);
    print_text(who + buf);
  }
}

void supervisor::stop_nodes(int sig) {
  stop_signal_ = sig;
  for (child& c : children_)
    if (c.restarting) {
      c.restarting = false;
      c.restart_timer->cancel();
    }
  for (child& c : children_) signal_node(c, sig);
  grace_timer_.expires_after(seconds(std::max(0.0, options_.kill_grace_s)));
  grace_timer_.async_wait([this](const asio::error_code& ec) {
    if (!ec) on_grace_over();
  });
}

void supervisor::on_grace_over() {
  if (!killed_) kill_all();
  request_settle();
}

void supervisor::kill_all() {
  killed_ = true;
  for (child& c : children_) {
    if (c.running) print_text("node " + std::to_string(c.end.rank) + ": still running, sending SIGKILL");
    signal_node(c, SIGKILL);
  }
}

void supervisor::signal_node(child& c, int sig) {
  if (!c.running) return;
  c.end.signalled_by_us = true;
  signal_group(c.pid, sig);
}

// Live: redraw every refresh_s (and at once after a text line scrolled it away, see settle). Plain:
// a line every plain_interval_s once some node has reported.
void supervisor::on_draw_due() { draw(); }

void supervisor::draw() {
  const bool any_started =
      std::any_of(board_.nodes().begin(), board_.nodes().end(), [](const auto& m) { return m.started; });
  display_.draw(board_.status_line(), any_started);
  const double interval = options_.live ? options_.refresh_s : options_.plain_interval_s;
  schedule_draw(clock_type::now() + seconds(std::max(0.01, interval)));
}

void supervisor::schedule_draw(clock_type::time_point at) {
  draw_timer_.expires_at(at);  // cancels a pending wait (its handler sees operation_aborted)
  draw_timer_.async_wait([this](const asio::error_code& ec) {
    if (!ec) on_draw_due();
  });
}

// Runs settle() once, after the handlers already queued (a burst of lines redraws once).
void supervisor::request_settle() {
  if (settle_requested_) return;
  settle_requested_ = true;
  asio::post(io_, [this] { settle(); });
}

void supervisor::settle() {
  settle_requested_ = false;
  if (display_.needs_redraw()) draw();
  if (!any_running()) io_.stop();
}

bool supervisor::any_running() const {
  return std::any_of(children_.begin(), children_.end(), [](const child& c) { return c.running || c.restarting; });
}

void supervisor::kill_and_reap_all() {
  for (child& c : children_) {
    if (!c.running) continue;
    ::kill(-c.pid, SIGKILL);
    ::kill(c.pid, SIGKILL);
    while (::waitpid(c.pid, &c.end.wait_status, 0) < 0 && errno == EINTR) {
    }
    c.running = false;
  }
}

launch_result supervisor::finish() {
  std::vector<node_end> ends;
  for (const child& c : children_) ends.push_back(c.end);
  if (options_.out) display_.finish(board_.status_line(), board_.summary_table(outcome_column(ends, board_)));
  return make_result(ends, board_, interrupted_by_);
}

}  // namespace qgossip
