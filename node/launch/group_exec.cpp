#include "node/launch/group_exec.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "node/launch/spawn.hpp"
#include "node/launch/unique_fd.hpp"

namespace qgossip {
namespace {

constexpr int kCaught[] = {SIGINT, SIGTERM, SIGHUP};

// A TCP port on 127.0.0.1 nobody listens on now, for the group's rendezvous (torch's TCPStore on
// member 0). Another process could take it before member 0 binds it: then the group fails to start,
// naming the port, and the launch's failure says so.
int free_port() {
  unique_fd s(::socket(AF_INET, SOCK_STREAM, 0));
  if (!s) throw_errno("socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw_errno("bind 127.0.0.1:0");
  if (::getsockname(s.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) throw_errno("getsockname");
  return ntohs(a.sin_port);
}

// Member l's environment: group-exec's own, torchrun's variables replaced.
std::vector<std::string> member_env(int size, int member, int port) {
  return environment_with({{"RANK", std::to_string(member)},
                           {"LOCAL_RANK", std::to_string(member)},
                           {"WORLD_SIZE", std::to_string(size)},
                           {"LOCAL_WORLD_SIZE", std::to_string(size)},
                           {"GROUP_RANK", "0"},
                           {"MASTER_ADDR", "127.0.0.1"},
                           {"MASTER_PORT", std::to_string(port)},
                           {"QGOSSIP_GROUP_SIZE", std::to_string(size)}});
}

// Forks member l; the child only calls async-signal-safe functions before execvpe.
pid_t start_member(const group_request& r, int member, int port) {
  std::vector<std::string> env = member_env(r.size, member, port), args = r.program;
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork");
  if (pid > 0) return pid;
  for (int sig : kCaught) ::signal(sig, SIG_DFL);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
  if (member > 0 && ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) ::_exit(127);  // only the speaker talks to the launcher
  ::execvpe(argv[0], argv.data(), envp.data());
  static const char what[] = "qgossip group-exec: cannot execute the program\n";
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, what, sizeof what - 1);
  ::_exit(127);
}

// The launcher signals the node's process group, which reaches every member: group-exec itself
// only notes it and waits for them to end as they choose.
void ignore_stop_signals() {
  struct sigaction sa{};
  sa.sa_handler = [](int) {};
  sigemptyset(&sa.sa_mask);
  for (int sig : kCaught) ::sigaction(sig, &sa, nullptr);
}

// Ends group-exec as a member ended: its exit code, or its signal.
[[noreturn]] void end_as(int status) {
  if (WIFEXITED(status)) std::exit(WEXITSTATUS(status));
  const int sig = WTERMSIG(status);
  ::signal(sig, SIG_DFL);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, sig);
  ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
  ::raise(sig);
  std::exit(128 + sig);
}

}  // namespace

int run_group(const group_request& r) {
  ignore_stop_signals();
  std::fflush(nullptr);
  const int port = free_port();
  std::vector<pid_t> running;
  for (int l = 0; l < r.size; ++l) running.push_back(start_member(r, l, port));
  std::optional<int> first_failure;  // the first member's wait status that was not exit 0
  auto deadline = std::chrono::steady_clock::time_point::max();
  bool killed = false;
  while (!running.empty()) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, first_failure ? WNOHANG : 0);
    if (pid > 0) {
      std::erase(running, pid);
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (!ok && !first_failure) {
        first_failure = status;
        for (pid_t other : running) ::kill(other, SIGTERM);
        deadline = std::chrono::steady_clock::now() +
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(r.grace_s));
      }
      continue;
    }
    if (pid < 0 && errno != EINTR) throw_errno("waitpid");
    if (!first_failure) continue;  // interrupted: wait again
    if (!killed && std::chrono::steady_clock::now() >= deadline) {
      for (pid_t other : running) ::kill(other, SIGKILL);
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (first_failure) end_as(*first_failure);
  return 0;
}

}  // namespace qgossip
