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
#include "tests/scratch_dir.hpp"

namespace qgossip::testing {

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
