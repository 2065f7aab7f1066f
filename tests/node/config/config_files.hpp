#pragma once
// Helpers shared by the config loader's tests: a scratch directory to write YAML files into, and
// the message load_run_config throws for a file.
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "node/config/config.hpp"

namespace qgossip::testing {

struct scratch {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("qgossip-config-" + std::to_string(std::random_device{}()));
  scratch() { std::filesystem::create_directories(dir); }
  ~scratch() { std::filesystem::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};

// What loading `file` (with `sets` as --set overrides) throws, or "(no error)".
inline std::string error_of(const std::string& file, const std::vector<std::string>& sets = {}) {
  try {
    (void)load_run_config(file, sets);
  } catch (const config_error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace qgossip::testing
