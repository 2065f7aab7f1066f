#include "node/launch/outcome.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>

#include "node/launch/unique_fd.hpp"

namespace qgossip {
namespace {

// How much of the end of a node's stderr log is searched for its last non-empty line.
constexpr std::size_t kLogTail = 64 * 1024;

// "exit 3", "signal SIGSEGV".
std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + signal_name(WTERMSIG(status));
  return "status " + std::to_string(status);
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

// The first failure among the nodes that did not leave the run (a node that left is not a failure
// of a run that trains on without it).
const node_end* first_to_fail(std::span<const node_end> ends) {
  const node_end* first = nullptr;
  for (const node_end& e : ends) {
    if (e.left.empty() && e.failed_at && (!first || *e.failed_at < *first->failed_at)) first = &e;
  }
  return first;
}

bool exited(const node_end& e, int code) { return WIFEXITED(e.wait_status) && WEXITSTATUS(e.wait_status) == code; }

// Ended by an interrupt of its own (Ctrl-C in its terminal, a SIGINT sent to it): a node's exit 130,
// or a program killed by SIGINT, as Python ends on an uncaught KeyboardInterrupt. Not the
// launcher's own stop (signalled_by_us) of a node that exits 130 on it; the launcher stops nodes
// with SIGTERM, so a SIGINT death is the node's own even after it (Python still unwinding its
// KeyboardInterrupt when another node's failure made the launcher stop the rest). A launcher that
// is itself interrupted exits 128 + its signal without asking.
// The cause of a failure also counts when it reported its interrupt ("interrupted ...", as a node's
// summary says) and the launcher's SIGTERM then ended it while it was still unwinding: it was the
// first to fail, so its report came before the launcher stopped anyone.
bool interrupted(const node_end& e, const progress_board& board) {
  if (WIFSIGNALED(e.wait_status) && WTERMSIG(e.wait_status) == SIGINT) return true;
  if (board.node(e.slot).error.starts_with("interrupted")) return true;
  return !e.signalled_by_us && exited(e, 130);
}

// The node whose failure the launch reports: the first to diverge (exit 3) when one did, for its
// neighbours then stop naming it and may end first; else the first to fail.
const node_end* cause_of_failure(std::span<const node_end> ends) {
  const node_end* first = first_to_fail(ends);
  const node_end* diverged = nullptr;
  for (const node_end& e : ends)
    if (e.left.empty() && e.failed_at && exited(e, 3) && (!diverged || *e.failed_at < *diverged->failed_at))
      diverged = &e;
  return diverged && first && !exited(*first, 2) ? diverged : first;
}

// "node 3 failed (exit 1): <its error event, else its last log line>", and the like.
std::string failure_line(const node_end& first, const progress_board& board) {
  const bool killed = WIFSIGNALED(first.wait_status);
  std::string message = board.node(first.slot).error;
  if (message.empty()) message = first.exec_error;
  // The last stderr line explains an exit (a node prints its error last); a node killed by a
  // signal wrote nothing about it, and its last line (often the start-up banner) is no cause.
  if (message.empty() && !killed && !first.log_path.empty())
    message = last_log_line(first.log_path, first.log_start);
  std::string failure = "node " + std::to_string(first.rank) + " " + describe_end(first.wait_status);
  if (!message.empty()) failure += (killed ? " after reporting: " : ": ") + message;
  return failure;
}

}  // namespace

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

std::string describe_end(int status) {
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + signal_name(WTERMSIG(status)) +
           ")";
  if (WIFEXITED(status)) return "failed (exit " + std::to_string(WEXITSTATUS(status)) + ")";
  return "failed (status " + std::to_string(status) + ")";
}

bool has_failed(const node_end& end, const progress_board& board) {
  return !exited(end, 0) ||
         !board.node(end.slot).error.empty();
}

launch_result make_result(std::span<const node_end> ends, const progress_board& board, int interrupted_by) {
  launch_result result;
  result.finals = board.nodes();
  for (const node_end& e : ends)
    if (!e.left.empty()) result.departures.push_back("node " + std::to_string(e.rank) + " left the run " + e.left);
  if (interrupted_by) {
    result.exit_code = 128 + interrupted_by;
    result.failure = "interrupted by " + signal_name(interrupted_by);
  } else if (const node_end* first = cause_of_failure(ends)) {
    // As the README's exit codes say: bad input found by the first node to fail (exit 2: its
    // config, data files, ports) is bad input of the whole launch, a diverged node (exit 3) makes
    // the launch exit 3, an interrupted one (130) 130, and any other failure is a run-time failure (1).
    result.exit_code = exited(*first, 2) ? 2 : exited(*first, 3) ? 3 : interrupted(*first, board) ? 130 : 1;
    result.failed_rank = first->rank;
    result.failure = failure_line(*first, board);
  }
  return result;
}

std::vector<std::string> outcome_column(std::span<const node_end> ends, const progress_board& board) {
  std::vector<std::string> outcome;
  for (const node_end& e : ends) {
    const bool clean = exited(e, 0);
    std::string o = clean && board.node(e.slot).done ? "done" : describe_wait_status(e.wait_status);
    // Told to stop by the launcher: stopped, whatever it said about it; no error of its own.
    const bool stopped = e.signalled_by_us && !clean;
    if (stopped) o = "stopped (" + o + ")";
    if (!e.left.empty()) o = "left, " + o;
    if (!stopped && !board.node(e.slot).error.empty()) o += " (error)";
    outcome.push_back(std::move(o));
  }
  return outcome;
}

}  // namespace qgossip
