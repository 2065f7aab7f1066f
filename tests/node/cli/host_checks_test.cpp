// The launch's checks of the topology against this machine (node/cli/host_checks.hpp): issue 28,
// item 6. A host elsewhere made `qgossip launch` wait start_timeout_s (60 s) for a node that could
// never come; a ring of 128 at base port 33000 failed at random with "Address already in use" as
// the nodes' own outgoing connections took ports in the kernel's ephemeral range (32768-60999 here).
#include "node/cli/host_checks.hpp"

#include <doctest/doctest.h>

#include <string>

#include "core/errors.hpp"

using namespace qgossip;

namespace {

topology_config nodes_at(std::initializer_list<node_address> nodes) {
  topology_config t;
  t.nodes = nodes;
  t.n = static_cast<int>(t.nodes.size());
  return t;
}

}  // namespace

TEST_CASE("group_for_run_nodes: a node of `qgossip run` is one process") {
  run_config c;
  CHECK_FALSE(group_for_run_nodes(c));  // group_size not given
  c.topology.group_size = 1;
  CHECK_FALSE(group_for_run_nodes(c));
  c.topology.group_size = 4;
  CHECK(group_for_run_nodes(c).value_or("") ==
        "topology.group_size: 4 processes a node is for a program's nodes (qgossip launch --exec, qgossip.Node; "
        "docs/python.md, \"Groups\"); a node of `qgossip run` is one process: remove it or set it to 1");
}

TEST_CASE("foreign_host names the first node whose host is not this machine") {
  const topology_config t = nodes_at({{"127.0.0.1", 29500}, {"10.0.0.2", 29501}, {"10.0.0.3", 29502}});
  auto here = [](int, const std::string& host) { return host == "127.0.0.1"; };
  const auto message = foreign_host(t, here);
  REQUIRE(message);
  CHECK(message->starts_with("topology: node 1's host 10.0.0.2 is not an address of this machine"));
  CHECK(!foreign_host(t, [](int, const std::string&) { return true; }));
}

TEST_CASE("is_local_host: loopback names and addresses are here, an unresolvable or foreign one is not") {
  CHECK(is_local_host(0, "127.0.0.1"));
  CHECK(is_local_host(0, "localhost"));
  CHECK(is_local_host(0, "127.0.0.5"));  // all of 127/8 is loopback
  CHECK_THROWS_WITH_AS((void)is_local_host(3, "no-such-host.invalid"),
                       doctest::Contains("rank 3's host 'no-such-host.invalid' does not resolve"), config_error);
  CHECK_FALSE(is_local_host(0, "192.0.2.7"));  // TEST-NET-1 (RFC 5737): never an interface's address here
}

TEST_CASE("ephemeral_port_warning names the ports inside the range and a base port below it") {
  const topology_config inside = nodes_at({{"127.0.0.1", 32767}, {"127.0.0.1", 32768}, {"127.0.0.1", 32769}});
  const auto warning = ephemeral_port_warning(inside, {32768, 60999});
  REQUIRE(warning);
  CHECK(warning->find("2 of the nodes' ports (from 32768) lie in this kernel's ephemeral range 32768-60999") !=
        std::string::npos);
  CHECK(warning->find("move topology.base_port below 32768") != std::string::npos);
  CHECK(!ephemeral_port_warning(nodes_at({{"127.0.0.1", 29500}}), {32768, 60999}));
  const auto range = ephemeral_port_range_here();
  REQUIRE(range);  // Linux has it
  CHECK(range->first <= range->second);
}
