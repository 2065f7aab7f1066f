#include "tests/integration/process.hpp"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <stdexcept>

namespace qgossip::testing {

namespace fs = std::filesystem;

process_result run_qgossip(const std::vector<std::string>& args) {
  std::string cmd = "'" QGOSSIP_BINARY "'";
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += " 2>&1 </dev/null";
  auto start = std::chrono::steady_clock::now();
  process_result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("popen failed");
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  int st = pclose(p);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

temp_dir::temp_dir() {
  std::random_device rd;
  path = fs::temp_directory_path() / ("qgossip-test-" + std::to_string(getpid()) + "-" + std::to_string(rd()));
  fs::create_directories(path);
}

temp_dir::~temp_dir() {
  if (std::getenv("QGOSSIP_TEST_KEEP")) {  // for a failure's post-mortem: the nodes' logs stay
    std::fprintf(stderr, "kept %s\n", path.c_str());
    return;
  }
  std::error_code ec;
  fs::remove_all(path, ec);
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

namespace {

bool can_bind(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return ok;
}

}  // namespace

int free_port_range(int count) {
  // Random bases below the kernel's ephemeral range (32768+), so outgoing connections of other
  // programs do not take them; tests running in parallel pick different bases.
  std::mt19937 rng(static_cast<unsigned>(getpid()) * 7919u + static_cast<unsigned>(std::random_device{}()));
  std::uniform_int_distribution<int> pick(20000, 32000 - count);
  for (int attempt = 0; attempt < 200; ++attempt) {
    int base = pick(rng);
    bool all = true;
    for (int i = 0; i < count && all; ++i) all = can_bind(base + i);
    if (all) return base;
  }
  throw std::runtime_error("no free range of " + std::to_string(count) + " ports on 127.0.0.1");
}

}  // namespace qgossip::testing

namespace qgossip::testing {

background_process start_qgossip(const std::vector<std::string>& args, const std::filesystem::path& log) {
  background_process p;
  p.log = log;
  // The child's freopen flushes what stdout holds: flushed here first, doctest's pending report
  // is not written once more by every child.
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    FILE* f = std::freopen(log.c_str(), "w", stdout);
    if (!f) _exit(127);
    dup2(fileno(stdout), fileno(stderr));
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(QGOSSIP_BINARY));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(QGOSSIP_BINARY, argv.data());
    _exit(127);
  }
  p.pid = pid;
  return p;
}

int wait_for(background_process& p, double timeout_s) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < until) {
    int st = 0;
    pid_t r = waitpid(p.pid, &st, WNOHANG);
    if (r == p.pid) {
      p.pid = -1;
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::map<int, nlohmann::ordered_json> summaries(const fs::path& dir, int n) {
  std::map<int, nlohmann::ordered_json> out;
  for (int r = 0; r < n; ++r) {
    std::ifstream in(dir / ("node-" + std::to_string(r) + ".json"));
    std::stringstream ss;
    ss << in.rdbuf();
    std::string error;
    auto j = parse_json_object(ss.str(), &error);
    REQUIRE_MESSAGE(j.has_value(), "summary of node " << r << " unreadable in " << dir << ": " << error);
    out[r] = *j;
  }
  return out;
}

double number(const nlohmann::ordered_json& j, const char* key) {
  REQUIRE_MESSAGE(j.contains(key), "missing " << key);
  const std::optional<double> v = json_number(j, key);
  REQUIRE_MESSAGE(v.has_value(), key << " is not a number");
  return *v;
}

std::string text(const nlohmann::ordered_json& j, const std::string& key) {
  REQUIRE_MESSAGE(j.contains(key), "missing " << key);
  const std::string* v = json_string(j, key);
  REQUIRE_MESSAGE(v != nullptr, key << " is not a string");
  return *v;
}

}  // namespace qgossip::testing
