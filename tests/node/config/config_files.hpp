#pragma once
// Helpers shared by the config loader's tests: a scratch directory to write YAML files into, the
// message load_run_config throws for a file, and an environment made up for it.
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "node/config/config.hpp"
#include "tests/scratch_dir.hpp"

namespace qgossip::testing {

// An environment of exactly these variables (a Slurm step's, for nodes: {from: slurm}).
inline env_lookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

// What loading `file` (with `sets` as --set overrides, in `env`) throws, or "(no error)".
inline std::string error_of(const std::string& file, const std::vector<std::string>& sets = {},
                            const env_lookup& env = env_of({})) {
  try {
    (void)load_run_config(file, sets, env);
  } catch (const config_error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace qgossip::testing
