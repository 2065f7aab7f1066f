// Every choice the run YAML names is documented with all its names: for each enum's name table
// (core/names.hpp), the line of docs/config.md that documents its key lists every name. A choice
// added to a table and not to the reference fails here.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/names.hpp"
#include "node/config/config.hpp"
#include "qgossip/build_config.hpp"

using namespace qgossip;

namespace {

// docs/config.md's lines from the occurrence-th line that starts (after spaces) with "key:" to the
// next key line.
std::string documented(const std::string& key, int occurrence) {
  std::ifstream in(std::string(QGOSSIP_SOURCE_DIR) + "/docs/config.md");
  REQUIRE(in.good());
  std::string line, text;
  bool inside = false;
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(' ');
    const bool key_line = first != std::string::npos && line[first] != '#' && line.find(':', first) != std::string::npos &&
                          line.find('#') != std::string::npos && line.find(':', first) < line.find('#');
    if (inside && key_line) break;
    if (!inside && first != std::string::npos && line.compare(first, key.size() + 1, key + ":") == 0)
      inside = --occurrence == 0;
    if (inside) text += line + "\n";
  }
  return text;
}

template <class E>
void check_listed(const std::string& key, int occurrence = 1) {
  CAPTURE(key);
  const std::string text = documented(key, occurrence);
  REQUIRE_FALSE(text.empty());
  for (const auto& n : names_of(E{})) {
    CAPTURE(n.name);
    CHECK(text.find(std::string(n.name)) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("docs/config.md lists every name of every choice") {
  check_listed<graph_kind>("graph");
  check_listed<weight_kind>("weights");
  check_listed<algorithm_kind>("algorithm");
  check_listed<device_kind>("device");
  check_listed<model_kind>("kind");
  check_listed<init_kind>("init");
  check_listed<lr_kind>("kind", 2);  // train.schedule.kind
  check_listed<buffers_kind>("buffers");
  check_listed<model_dtype>("dtype");
  check_listed<dataset_kind>("dataset");
  check_listed<partition_kind>("partition");
  check_listed<transport_kind>("transport");
  check_listed<security_kind>("security");
  check_listed<peer_failure_policy>("on_peer_failure");
  check_listed<node_source>("from");  // topology.nodes.from
}
