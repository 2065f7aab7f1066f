#include "node/launch/spawn.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "core/errors.hpp"

extern char** environ;

namespace qgossip {
namespace {

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

void open_log(const std::string& path, spawn_plan& plan) {
  const std::filesystem::path log(path);
  std::error_code ec;
  if (log.has_parent_path()) std::filesystem::create_directories(log.parent_path(), ec);
  if (ec)
    throw config_error("cannot create the log directory " + log.parent_path().string() + ": " + ec.message());
  plan.log.reset(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!plan.log) throw config_error("cannot open the log file " + path + ": " + std::strerror(errno));
  struct stat st {};
  plan.log_start = ::fstat(plan.log.get(), &st) == 0 ? st.st_size : 0;
  plan.log_path = path;
}

// dup2 that also works when fd == target (then only FD_CLOEXEC is cleared). Async-signal-safe.
bool move_fd(int fd, int target) {
  if (fd == target) return ::fcntl(fd, F_SETFD, 0) == 0;
  return ::dup2(fd, target) == target;
}

// The child between fork and exec: async-signal-safe calls only. Never returns.
[[noreturn]] void exec_child(const spawn_plan& plan, char* const* argv, char* const* envp, int devnull,
                             int out, int exec_status, pid_t parent, const std::vector<int>& reset_signals) {
  for (int sig : reset_signals) ::signal(sig, SIG_DFL);
  ::signal(SIGPIPE, SIG_DFL);
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the launcher died before prctl took effect
  const bool ok = move_fd(devnull, STDIN_FILENO) && move_fd(out, STDOUT_FILENO) &&
                  (!plan.log || move_fd(plan.log.get(), STDERR_FILENO));
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (ok) ::execve(plan.program.c_str(), argv, envp);
  const int err = errno;
  [[maybe_unused]] ssize_t n = ::write(exec_status, &err, sizeof err);
  ::_exit(127);
}

// Waits for the exec-status pipe: EOF when execve succeeded, the errno when it failed.
std::string read_exec_error(spawn_plan& plan, int exec_status) {
  int err = 0;
  ssize_t n;
  do {
    n = ::read(exec_status, &err, sizeof err);
  } while (n < 0 && errno == EINTR);
  if (n != ssize_t(sizeof err)) return {};
  std::string what = "cannot execute '" + plan.program + "': " + std::strerror(err);
  if (plan.log) {
    const std::string line = "qgossip launcher: " + what + "\n";
    [[maybe_unused]] ssize_t w = ::write(plan.log.get(), line.data(), line.size());
  }
  return what;
}

}  // namespace

std::vector<std::string> environment_with(const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    const std::string_view key = entry.substr(0, entry.find('='));
    const bool overridden =
        std::any_of(overrides.begin(), overrides.end(), [&](const auto& kv) { return kv.first == key; });
    if (!overridden) env.emplace_back(entry);
  }
  for (const auto& [key, value] : overrides) env.push_back(key + "=" + value);
  return env;
}

spawn_plan make_plan(const node_process& node) {
  spawn_plan plan;
  plan.args = node.argv;
  plan.env = environment_with(node.env);
  const char* path_env = ::getenv("PATH");
  for (const auto& [key, value] : node.env)
    if (key == "PATH") path_env = value.c_str();  // node.env outlives the plan
  plan.program = resolve_program(node.argv.front(), path_env);
  if (!node.stderr_log.empty()) open_log(node.stderr_log, plan);
  return plan;
}

spawned spawn(spawn_plan& plan, int devnull, const std::vector<int>& reset_signals) {
  std::vector<char*> argv, envp;
  for (std::string& a : plan.args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : plan.env) envp.push_back(e.data());
  envp.push_back(nullptr);
  fd_pair out = make_pipe(O_CLOEXEC);
  fd_pair exec_status = make_pipe(O_CLOEXEC);
  const pid_t parent = ::getpid();

  // Block signals across fork so the child cannot run the launcher's handler (which writes into the
  // launcher's signal pipe) before it has reset them.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t pid = ::fork();
  if (pid == 0)
    exec_child(plan, argv.data(), envp.data(), devnull, out.write.get(), exec_status.write.get(), parent,
               reset_signals);
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) {
    errno = fork_errno;
    throw_errno("fork");
  }
  ::setpgid(pid, pid);  // also here, so signals to the group work before the child gets to it
  exec_status.write.reset();
  out.write.reset();
  spawned s;
  s.pid = pid;
  s.exec_error = read_exec_error(plan, exec_status.read.get());
  s.out = std::move(out.read);
  return s;
}

void signal_group(pid_t pid, int sig) {
  if (::kill(-pid, sig) != 0) ::kill(pid, sig);
}

}  // namespace qgossip
