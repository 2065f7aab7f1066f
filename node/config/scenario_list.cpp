#include "node/config/scenario_list.hpp"

#include <cstdint>

#include "core/errors.hpp"

namespace qgossip {

void read_scenario_list(const std::string& path, std::string_view key, std::string_view shape,
                        const std::function<void(yaml_reader& entry, std::size_t i)>& entry) {
  const YAML::Node root = load_yaml_file(path, "a scenario file (configs/scenarios/)");
  yaml_reader r(root, path, "");
  const auto list = r.child(key);
  if (!list) return;
  if (!list->IsSequence())
    throw r.error_at(*list, std::string(key) + ": expected a list of " + std::string(shape));
  for (std::size_t i = 0; i < list->size(); ++i) {
    yaml_reader e((*list)[i], path, std::string(key) + "[" + std::to_string(i) + "]");
    entry(e, i);
  }
}

int require_rank(yaml_reader& e, int n) {
  const std::int64_t rank = e.require_int("rank");
  if (rank < 0 || rank >= n)
    throw e.error_at(*e.child("rank"), e.key_path("rank") + ": expected a rank of the run, 0.." +
                                           std::to_string(n - 1) + ", received " + std::to_string(rank));
  return static_cast<int>(rank);
}

}  // namespace qgossip
