#include "node/launch/launcher.hpp"

#include <unistd.h>

#include <iostream>
#include <set>

#include "core/errors.hpp"
#include "node/launch/supervisor.hpp"

namespace qgossip {

bool launch_options::default_live() { return ::isatty(STDERR_FILENO) == 1; }
std::ostream* launch_options::default_out() { return &std::cerr; }

launch_result launch(std::span<const node_process> nodes, const launch_options& options) {
  std::set<int> ranks_seen;
  std::vector<int> ranks;
  for (const node_process& n : nodes) {
    if (n.argv.empty()) throw config_error("node " + std::to_string(n.rank) + ": empty command line");
    if (!ranks_seen.insert(n.rank).second)
      throw config_error("rank " + std::to_string(n.rank) + " given twice");
    ranks.push_back(n.rank);
  }
  if (nodes.empty()) return {};
  supervisor s(nodes, options, ranks);
  return s.run();
}

int count_local_gpus(const std::filesystem::path& gpus_dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(gpus_dir, ec), end;
  int count = 0;
  for (; !ec && it != end; it.increment(ec)) ++count;
  return count;
}

}  // namespace qgossip
