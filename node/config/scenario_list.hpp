#pragma once
// A list of a scenario file (configs/scenarios/): churn: (churn_file.hpp) and hostile:
// (hostile_file.hpp) are each a list of maps, one per rank's event or attack. The file's other keys
// are scripts/cluster.sh's.
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "node/config/yaml_reader.hpp"

namespace qgossip {

// Calls entry(reader, i) for each item of the list `key` of scenario file `path`, the reader's errors
// naming "KEY[i].FIELD" at its line; none when the file has no `key`. Throws config_error when the
// file cannot be read or `key` is not a list ("KEY: expected a list of SHAPE").
void read_scenario_list(const std::string& path, std::string_view key, std::string_view shape,
                        const std::function<void(yaml_reader& entry, std::size_t i)>& entry);

// An entry's `rank`: required, one of the run's 0..n-1.
[[nodiscard]] int require_rank(yaml_reader& entry, int n);

}  // namespace qgossip
