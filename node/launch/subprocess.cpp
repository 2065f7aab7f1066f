#include "node/launch/subprocess.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "qgossip/build_config.hpp"

namespace qgossip {

namespace fs = std::filesystem;

int run_and_wait(const std::vector<std::string>& argv) {
  if (argv.empty()) return 127;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return 127;
  if (pid == 0) {
    execvp(args[0], args.data());
    _exit(127);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return 127;
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return 127;
}

standby_process::standby_process(const std::vector<std::string>& argv) {
  if (argv.empty()) return;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return;
  }
  if (pid == 0) {
    (void)setpgid(0, 0);
    errno = 0;
    (void)nice(10);
    if (dup2(fds[0], STDIN_FILENO) < 0) _exit(127);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(fds[0]);
  pid_ = pid;
  stdin_ = fds[1];
}

standby_process::~standby_process() {
  if (stdin_ >= 0) close(stdin_);
  stdin_ = -1;
  if (pid_ > 0) (void)wait();
}

int standby_process::wait() {
  if (pid_ <= 0) return 127;
  if (stdin_ >= 0) close(stdin_);
  stdin_ = -1;
  int st = 0;
  const pid_t pid = pid_;
  pid_ = -1;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return 127;
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return 127;
}

void standby_process::go() {
  if (pid_ <= 0 || stdin_ < 0) return;
  // A program that died early has closed its end: no SIGPIPE, just its exit code.
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old);
  const char line[] = "go\n";
  (void)!write(stdin_, line, sizeof line - 1);
  sigaction(SIGPIPE, &old, nullptr);
  close(stdin_);
  stdin_ = -1;
}

std::string self_executable() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("qgossip") : p.string();
}

std::string find_script(const std::string& name) {
  std::error_code ec;
  for (fs::path root : {fs::path(QGOSSIP_SOURCE_DIR), fs::path(self_executable()).parent_path().parent_path()}) {
    fs::path p = root / "scripts" / name;
    if (fs::exists(p, ec)) return p.string();
  }
  return "";
}

}  // namespace qgossip
