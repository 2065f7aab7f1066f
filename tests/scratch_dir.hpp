#pragma once
// A fresh temporary directory for one unit test, removed with everything in it when the test
// ends, and the two file helpers the tests use with it. (The integration tests have temp_dir in
// tests/integration/process.hpp.)
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <system_error>

namespace qgossip::testing {

struct scratch {
  // tag names the directory: <tmp>/qgossip-<tag>-<pid>-<random>.
  explicit scratch(const std::string& tag = "test")
      : dir(std::filesystem::temp_directory_path() / ("qgossip-" + tag + "-" + std::to_string(::getpid()) + "-" +
                                                      std::to_string(std::random_device{}()))) {
    std::filesystem::create_directories(dir);
  }
  ~scratch() {
    std::error_code ec;  // a destructor must not throw
    std::filesystem::remove_all(dir, ec);
  }
  scratch(const scratch&) = delete;
  scratch& operator=(const scratch&) = delete;

  // Writes text to dir/name and returns that path.
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name, std::ios::binary) << text;
    return (dir / name).string();
  }

  std::filesystem::path dir;
};

// The whole file as bytes ("" when it cannot be read).
inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace qgossip::testing
