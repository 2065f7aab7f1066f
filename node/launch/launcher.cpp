#include "node/launch/launcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <optional>
#include <set>
#include <system_error>

#include "core/errors.hpp"

extern char** environ;

namespace qgossip {
namespace {

using clock_type = std::chrono::steady_clock;

// Longest stdout line kept whole; a longer one is shown in pieces (a node gone wrong must not make
// the launcher grow without bound).
constexpr std::size_t kMaxLine = 64 * 1024;
// How much of the end of a node's stderr log is searched for its last non-empty line.
constexpr std::size_t kLogTail = 64 * 1024;

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) : fd_(fd) {}
  unique_fd(unique_fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  unique_fd& operator=(unique_fd&& o) noexcept {
    if (this != &o) reset(std::exchange(o.fd_, -1));
    return *this;
  }
  ~unique_fd() { reset(); }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

struct fd_pair {
  unique_fd read, write;
};

fd_pair make_pipe(int flags) {
  int fds[2];
  if (::pipe2(fds, flags) != 0) throw_errno("pipe2");
  return {unique_fd(fds[0]), unique_fd(fds[1])};
}

// --- Signals: the handler only writes the signal number into a self-pipe that poll() watches. ---

std::atomic<int> g_signal_fd{-1};
std::atomic<bool> g_launch_active{false};

extern "C" void on_launcher_signal(int sig) {
  const int saved = errno;
  const int fd = g_signal_fd.load(std::memory_order_relaxed);
  if (fd >= 0) {
    const unsigned char b = static_cast<unsigned char>(sig);
    [[maybe_unused]] ssize_t n = ::write(fd, &b, 1);  // full pipe: poll wakes anyway
  }
  errno = saved;
}

constexpr int kHandled[] = {SIGINT, SIGTERM, SIGCHLD};

// Owns the self-pipe and the handlers for the duration of one launch().
class signal_scope {
 public:
  signal_scope() : pipe_(make_pipe(O_CLOEXEC | O_NONBLOCK)) {
    QG_ENFORCE(!g_launch_active.exchange(true), "launch() is already running in this process");
    g_signal_fd.store(pipe_.write.get());
    struct sigaction sa {};
    sa.sa_handler = on_launcher_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (std::size_t i = 0; i < std::size(kHandled); ++i) {
      sa.sa_flags = SA_RESTART | (kHandled[i] == SIGCHLD ? SA_NOCLDSTOP : 0);
      ::sigaction(kHandled[i], &sa, &old_[i]);
    }
  }
  ~signal_scope() {
    for (std::size_t i = 0; i < std::size(kHandled); ++i) ::sigaction(kHandled[i], &old_[i], nullptr);
    g_signal_fd.store(-1);
    g_launch_active.store(false);
  }
  signal_scope(const signal_scope&) = delete;
  signal_scope& operator=(const signal_scope&) = delete;

  int read_fd() const { return pipe_.read.get(); }
  // The signals that arrived since the last call, in order.
  std::vector<int> drain() const {
    std::vector<int> out;
    unsigned char buf[64];
    for (;;) {
      const ssize_t n = ::read(pipe_.read.get(), buf, sizeof buf);
      if (n <= 0) break;
      out.insert(out.end(), buf, buf + n);
    }
    return out;
  }

 private:
  fd_pair pipe_;
  struct sigaction old_[std::size(kHandled)]{};
};

std::string signal_name(int sig) {
  switch (sig) {
    case SIGHUP:
      return "SIGHUP";
    case SIGINT:
      return "SIGINT";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGILL:
      return "SIGILL";
    case SIGTRAP:
      return "SIGTRAP";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGKILL:
      return "SIGKILL";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGALRM:
      return "SIGALRM";
    case SIGTERM:
      return "SIGTERM";
    default:
      return "signal " + std::to_string(sig);
  }
}

// How a node ended, for the failure line: "failed (exit 3)", "was killed by signal 9 (SIGKILL)".
std::string describe_end(int status) {
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + signal_name(WTERMSIG(status)) +
           ")";
  if (WIFEXITED(status)) return "failed (exit " + std::to_string(WEXITSTATUS(status)) + ")";
  return "failed (status " + std::to_string(status) + ")";
}

// "exit 3", "signal SIGSEGV".
std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + signal_name(WTERMSIG(status));
  return "status " + std::to_string(status);
}

// argv[0] resolved against PATH here, before fork, so the child only has to execve().
std::string resolve_program(const std::string& name, const char* path_env) {
  if (name.find('/') != std::string::npos || !path_env) return name;
  std::string_view path(path_env);
  while (true) {
    const std::size_t colon = path.find(':');
    std::string dir(path.substr(0, colon));
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    if (colon == std::string_view::npos) break;
    path.remove_prefix(colon + 1);
  }
  return name;  // execve fails with ENOENT and the child reports it
}

// The last non-empty line of `path` written at or after byte `from`.
std::string last_log_line(const std::string& path, off_t from) {
  unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return {};
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || st.st_size <= from) return {};
  const off_t begin = std::max<off_t>(from, st.st_size - off_t(kLogTail));
  std::string text(std::size_t(st.st_size - begin), '\0');
  const ssize_t n = ::pread(fd.get(), text.data(), text.size(), begin);
  if (n <= 0) return {};
  text.resize(std::size_t(n));
  std::size_t end = text.size();
  while (end > 0) {
    const std::size_t nl = text.rfind('\n', end - 1);
    const std::size_t start = nl == std::string::npos ? 0 : nl + 1;
    std::string line = text.substr(start, end - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
      line.pop_back();
    if (!line.empty()) return line;
    if (nl == std::string::npos) break;
    end = nl;
  }
  return {};
}

int terminal_columns() {
  struct winsize ws {};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 0;
}

// Cuts `line` to `columns` terminal cells (UTF-8 continuation bytes take none).
std::string fit_columns(const std::string& line, int columns) {
  if (columns <= 0) return line;
  int cells = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80 && ++cells > columns) return line.substr(0, i);
  }
  return line;
}

// One supervised node.
struct child {
  std::size_t slot = 0;
  int rank = 0;
  pid_t pid = -1;
  bool running = false;
  unique_fd out;        // its stdout, non-blocking
  std::string partial;  // stdout bytes after the last '\n'
  std::string log_path;
  off_t log_start = 0;  // the log's size before this run: only later lines describe it
  std::string exec_error;
  int wait_status = 0;
  bool signalled_by_us = false;
  bool announced = false;
  // When the launcher first saw it fail (an error event, or a failed exit).
  std::optional<clock_type::time_point> failed_at;
};

// Everything a child needs, prepared before fork: after fork only async-signal-safe calls are made.
struct spawn_plan {
  std::string program;
  std::vector<std::string> args;
  std::vector<std::string> env;
  unique_fd log;  // -1: inherit stderr
};

spawn_plan make_plan(const node_process& node, child& c) {
  spawn_plan plan;
  plan.args = node.argv;
  const char* path_env = ::getenv("PATH");
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    const std::string_view key = entry.substr(0, entry.find('='));
    const bool overridden =
        std::any_of(node.env.begin(), node.env.end(), [&](const auto& kv) { return kv.first == key; });
    if (!overridden) plan.env.emplace_back(entry);
  }
  for (const auto& [key, value] : node.env) {
    plan.env.push_back(key + "=" + value);
    if (key == "PATH") path_env = value.c_str();  // node.env outlives the plan
  }
  plan.program = resolve_program(node.argv.front(), path_env);
  if (!node.stderr_log.empty()) {
    const std::filesystem::path log(node.stderr_log);
    std::error_code ec;
    if (log.has_parent_path()) std::filesystem::create_directories(log.parent_path(), ec);
    if (ec)
      throw config_error("cannot create the log directory " + log.parent_path().string() + ": " +
                         ec.message());
    plan.log.reset(::open(node.stderr_log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    if (!plan.log)
      throw config_error("cannot open the log file " + node.stderr_log + ": " + std::strerror(errno));
    struct stat st {};
    c.log_start = ::fstat(plan.log.get(), &st) == 0 ? st.st_size : 0;
    c.log_path = node.stderr_log;
  }
  return plan;
}

// dup2 that also works when fd == target (then only FD_CLOEXEC is cleared). Async-signal-safe.
bool move_fd(int fd, int target) {
  if (fd == target) return ::fcntl(fd, F_SETFD, 0) == 0;
  return ::dup2(fd, target) == target;
}

// Starts one node; `c` receives its pid and stdout pipe. Exec failures come back through a
// close-on-exec pipe (EOF: exec succeeded; an int: the errno) and leave c.exec_error set.
void spawn(spawn_plan& plan, int devnull, child& c) {
  std::vector<char*> argv, envp;
  for (std::string& a : plan.args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : plan.env) envp.push_back(e.data());
  envp.push_back(nullptr);
  fd_pair out = make_pipe(O_CLOEXEC);
  fd_pair exec_status = make_pipe(O_CLOEXEC);
  const pid_t parent = ::getpid();

  // Block signals across fork so the child cannot run our handler (and write into our self-pipe)
  // before it has reset them.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (int sig : kHandled) ::signal(sig, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the launcher died before prctl took effect
    const bool ok = move_fd(devnull, STDIN_FILENO) && move_fd(out.write.get(), STDOUT_FILENO) &&
                    (!plan.log || move_fd(plan.log.get(), STDERR_FILENO));
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (ok) ::execve(plan.program.c_str(), argv.data(), envp.data());
    const int err = errno;
    [[maybe_unused]] ssize_t n = ::write(exec_status.write.get(), &err, sizeof err);
    ::_exit(127);
  }
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) {
    errno = fork_errno;
    throw_errno("fork");
  }
  ::setpgid(pid, pid);  // also here, so signals to the group work before the child gets to it
  c.pid = pid;
  c.running = true;
  exec_status.write.reset();
  out.write.reset();
  int err = 0;
  ssize_t n;
  do {
    n = ::read(exec_status.read.get(), &err, sizeof err);
  } while (n < 0 && errno == EINTR);
  if (n == ssize_t(sizeof err)) {
    c.exec_error = "cannot execute '" + plan.program + "': " + std::strerror(err);
    if (plan.log) {
      const std::string line = "qgossip launcher: " + c.exec_error + "\n";
      [[maybe_unused]] ssize_t w = ::write(plan.log.get(), line.data(), line.size());
    }
  }
  ::fcntl(out.read.get(), F_SETFL, ::fcntl(out.read.get(), F_GETFL) | O_NONBLOCK);
  c.out = std::move(out.read);
}

void signal_group(child& c, int sig) {
  if (!c.running) return;
  c.signalled_by_us = true;
  if (::kill(-c.pid, sig) != 0) ::kill(c.pid, sig);
}

// The poll loop and the display. Single-threaded: everything here runs on launch()'s thread.
class supervisor {
 public:
  supervisor(std::span<const node_process> nodes, const launch_options& options,
             const std::vector<int>& ranks)
      : nodes_(nodes), options_(options), board_(ranks), start_(clock_type::now()) {
    columns_ = options_.live ? terminal_columns() : 0;
  }

  launch_result run() {
    devnull_.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!devnull_) throw_errno("open /dev/null");
    std::vector<spawn_plan> plans;
    children_.resize(nodes_.size());
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      children_[i].slot = i;
      children_[i].rank = nodes_[i].rank;
      plans.push_back(make_plan(nodes_[i], children_[i]));
    }
    try {
      for (std::size_t i = 0; i < nodes_.size(); ++i) {
        spawn(plans[i], devnull_.get(), children_[i]);
        plans[i].log.reset();
      }
      loop();
    } catch (...) {
      kill_and_reap_all();
      throw;
    }
    return finish();
  }

 private:
  void loop() {
    next_draw_ = options_.live ? start_ : start_ + to_duration(options_.plain_interval_s);
    while (std::any_of(children_.begin(), children_.end(), [](const child& c) { return c.running; })) {
      std::vector<pollfd> fds;
      fds.push_back({signals_.read_fd(), POLLIN, 0});
      for (const child& c : children_) {
        if (c.out) fds.push_back({c.out.get(), POLLIN, 0});
      }
      const int rc = ::poll(fds.data(), fds.size(), poll_timeout_ms());
      if (rc < 0 && errno != EINTR) throw_errno("poll");

      for (int sig : signals_.drain()) on_signal(sig);
      for (child& c : children_) read_output(c);
      reap();
      if (stop_signal_ != 0 && !killed_ && clock_type::now() >= kill_deadline_) kill_all();
      draw();
    }
  }

  int poll_timeout_ms() const {
    auto next = next_draw_;
    if (stop_signal_ != 0 && !killed_) next = std::min(next, kill_deadline_);
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - clock_type::now()).count();
    // Child exits also arrive as SIGCHLD through the self-pipe; the cap only bounds the damage if a
    // wake-up were ever lost.
    return static_cast<int>(std::clamp<long long>(wait + 1, 0, 1000));
  }

  void on_signal(int sig) {
    if (sig != SIGINT && sig != SIGTERM) return;  // SIGCHLD: reap() runs on every wake-up
    if (stop_signal_ != 0) {
      // Already stopping (an earlier signal, or a failed node): a further Ctrl-C means "now".
      if (!killed_) kill_all();
      return;
    }
    interrupted_by_ = sig;
    print_text("launcher: " + signal_name(sig) +
               " received, stopping the nodes (SIGINT, then SIGKILL after " +
               format_seconds(options_.kill_grace_s) + ")");
    begin_stop(SIGINT);
  }

  void begin_stop(int sig) {
    stop_signal_ = sig;
    kill_deadline_ =
        clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                std::chrono::duration<double>(std::max(0.0, options_.kill_grace_s)));
    for (child& c : children_) signal_group(c, sig);
  }

  void kill_all() {
    killed_ = true;
    for (child& c : children_) {
      if (c.running) print_text("node " + std::to_string(c.rank) + ": still running, sending SIGKILL");
      signal_group(c, SIGKILL);
    }
  }

  // Reads what is available without blocking; EOF closes the pipe.
  void read_output(child& c) {
    if (!c.out) return;
    char buf[16384];
    for (;;) {
      const ssize_t n = ::read(c.out.get(), buf, sizeof buf);
      if (n > 0) {
        c.partial.append(buf, std::size_t(n));
        split_lines(c);
        continue;
      }
      if (n == 0) {
        if (!c.partial.empty()) handle_line(c, std::exchange(c.partial, {}));
        c.out.reset();
      } else if (errno == EINTR) {
        continue;
      }
      return;  // EAGAIN, or an error (the exit will be reaped anyway)
    }
  }

  void split_lines(child& c) {
    std::size_t begin = 0;
    for (std::size_t nl; (nl = c.partial.find('\n', begin)) != std::string::npos; begin = nl + 1)
      handle_line(c, c.partial.substr(begin, nl - begin));
    c.partial.erase(0, begin);
    if (c.partial.size() > kMaxLine) handle_line(c, std::exchange(c.partial, {}));
  }

  void handle_line(child& c, std::string line) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) return;
    std::string why;
    std::optional<node_event> ev = parse_node_event(line, &why);
    if (!ev) {
      // Not protocol: shown as text (a stray printf in a node must not break the launcher). What
      // looks like a botched event also says why it was not taken as one.
      std::string text = "[node " + std::to_string(c.rank) + "] " + line;
      if (line.front() == '{') text += "  (not a protocol event: " + why + ")";
      print_text(text);
      return;
    }
    board_.apply(c.slot, *ev);
    const final_metrics& m = board_.node(c.slot);
    const std::string who = "node " + std::to_string(c.rank);
    if (ev->kind == event_kind::error) {
      if (!c.failed_at) c.failed_at = clock_type::now();
      print_text(who + ": error: " + ev->message);
      return;
    }
    if (!options_.live && !c.announced) {
      std::string text = who + ": started";
      if (ev->kind == event_kind::start) {
        text += " (n=" + std::to_string(ev->n) + ", " + std::to_string(ev->rounds) + " rounds, " +
                format_seconds(ev->epochs, "") + " epochs)";
      }
      print_text(text);
    }
    c.announced = true;
    if (ev->kind == event_kind::done && !options_.live) {
      char buf[160];
      std::snprintf(buf, sizeof buf, ": done at round %lld, epoch %.2f in %.1f s",
                    static_cast<long long>(m.iteration), m.epoch, m.wall_s);
      print_text(who + buf);
    }
  }

  void reap() {
    for (child& c : children_) {
      if (!c.running) continue;
      int status = 0;
      const pid_t r = ::waitpid(c.pid, &status, WNOHANG);
      if (r == 0 || (r < 0 && errno == EINTR)) continue;
      c.running = false;
      c.wait_status = r == c.pid ? status : (127 << 8);
      read_output(c);  // what it wrote just before exiting
      if (!c.partial.empty()) handle_line(c, std::exchange(c.partial, {}));
      c.out.reset();  // a grandchild may still hold the pipe; we are done with it
      const bool failed = !(WIFEXITED(c.wait_status) && WEXITSTATUS(c.wait_status) == 0) ||
                          !board_.node(c.slot).error.empty();
      if (!failed) continue;
      if (!c.failed_at) c.failed_at = clock_type::now();
      if (!c.signalled_by_us)
        print_text("node " + std::to_string(c.rank) + " " + describe_end(c.wait_status));
      if (stop_signal_ == 0) begin_stop(SIGTERM);
    }
  }

  void kill_and_reap_all() {
    for (child& c : children_) {
      if (!c.running) continue;
      ::kill(-c.pid, SIGKILL);
      ::kill(c.pid, SIGKILL);
      while (::waitpid(c.pid, &c.wait_status, 0) < 0 && errno == EINTR) {
      }
      c.running = false;
    }
  }

  launch_result finish() {
    launch_result result;
    result.finals = board_.nodes();
    const child* first = nullptr;
    for (const child& c : children_) {
      if (c.failed_at && (!first || *c.failed_at < *first->failed_at)) first = &c;
    }
    if (interrupted_by_) {
      result.exit_code = 128 + interrupted_by_;
      result.failure = "interrupted by " + signal_name(interrupted_by_);
    } else if (first) {
      // Bad input found by the first node to fail (exit 2: its config, data files, ports) is bad
      // input of the whole launch; any other failure is a run-time failure.
      const bool bad_input = WIFEXITED(first->wait_status) && WEXITSTATUS(first->wait_status) == 2;
      result.exit_code = bad_input ? 2 : 1;
      result.failed_rank = first->rank;
      const bool killed = WIFSIGNALED(first->wait_status);
      std::string message = board_.node(first->slot).error;
      if (message.empty()) message = first->exec_error;
      // The last stderr line explains an exit (a node prints its error last); a node killed by a
      // signal wrote nothing about it, and its last line (often the start-up banner) is no cause.
      if (message.empty() && !killed && !first->log_path.empty())
        message = last_log_line(first->log_path, first->log_start);
      result.failure = "node " + std::to_string(first->rank) + " " + describe_end(first->wait_status);
      if (!message.empty()) result.failure += (killed ? " after reporting: " : ": ") + message;
    }

    if (options_.out) {
      std::vector<std::string> outcome;
      for (const child& c : children_) {
        const bool clean = WIFEXITED(c.wait_status) && WEXITSTATUS(c.wait_status) == 0;
        std::string o = clean && board_.node(c.slot).done ? "done" : describe_wait_status(c.wait_status);
        if (c.signalled_by_us && !clean) o += " (stopped)";
        if (!board_.node(c.slot).error.empty()) o += " (error)";
        outcome.push_back(std::move(o));
      }
      std::ostream& os = *options_.out;
      if (options_.live && drawn_) os << "\r\x1b[K";
      os << board_.status_line() << '\n'
         << board_.summary_table(outcome);  // the caller reports result.failure
      os.flush();
    }
    return result;
  }

  // A line of text above the live status line (or simply a line, when not live).
  void print_text(const std::string& text) {
    if (!options_.out) return;
    std::ostream& os = *options_.out;
    if (options_.live && drawn_) os << "\r\x1b[K";
    os << text << '\n';
    drawn_ = false;
    os.flush();
  }

  // Live: redraw every refresh_s, and at once after a text line scrolled it away. Plain: one line
  // every plain_interval_s once some node has reported.
  void draw() {
    const auto now = clock_type::now();
    if (now < next_draw_ && (drawn_ || !options_.live)) return;
    next_draw_ = now + to_duration(options_.live ? options_.refresh_s : options_.plain_interval_s);
    if (!options_.out) return;
    std::ostream& os = *options_.out;
    if (options_.live) {
      os << '\r' << fit_columns(board_.status_line(), columns_ > 1 ? columns_ - 1 : 0) << "\x1b[K";
      drawn_ = true;
    } else if (std::any_of(board_.nodes().begin(), board_.nodes().end(),
                           [](const auto& m) { return m.started; })) {
      os << board_.status_line() << '\n';
    }
    os.flush();
  }

  static clock_type::duration to_duration(double seconds) {
    return std::chrono::duration_cast<clock_type::duration>(
        std::chrono::duration<double>(std::max(0.01, seconds)));
  }
  static std::string format_seconds(double s, const char* unit = " s") {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%g%s", s, unit);
    return buf;
  }

  std::span<const node_process> nodes_;
  const launch_options& options_;
  progress_board board_;
  signal_scope signals_;
  unique_fd devnull_;
  std::vector<child> children_;
  clock_type::time_point start_;
  clock_type::time_point next_draw_{};
  clock_type::time_point kill_deadline_{};
  int stop_signal_ = 0;     // the signal sent to stop the nodes; 0: not stopping
  int interrupted_by_ = 0;  // the signal that made the launcher stop them, if it was one
  bool killed_ = false;
  bool drawn_ = false;  // the live line is on screen
  int columns_ = 0;
};

}  // namespace

bool launch_options::default_live() { return ::isatty(STDERR_FILENO) == 1; }
std::ostream* launch_options::default_out() { return &std::cerr; }

launch_result launch(std::span<const node_process> nodes, const launch_options& options) {
  std::set<int> ranks_seen;
  std::vector<int> ranks;
  for (const node_process& n : nodes) {
    if (n.argv.empty()) throw config_error("node " + std::to_string(n.rank) + ": empty command line");
    if (!ranks_seen.insert(n.rank).second)
      throw config_error("rank " + std::to_string(n.rank) + " given twice");
    ranks.push_back(n.rank);
  }
  if (nodes.empty()) return {};
  supervisor s(nodes, options, ranks);
  return s.run();
}

int count_local_gpus(const std::filesystem::path& gpus_dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(gpus_dir, ec), end;
  int count = 0;
  for (; !ec && it != end; it.increment(ec)) ++count;
  return count;
}

}  // namespace qgossip
