#include "node/launch/subprocess.hpp"

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
