#pragma once
// Turns the topology section of a config into a validated topology (graph + mixing matrix W).
#include "node/config/config.hpp"
#include "topology/report.hpp"
#include "topology/topology.hpp"

namespace qgossip {

// Throws config_error naming the topology's file for an impossible graph or, when `validate`, a W
// that is not a valid mixing matrix (not symmetric, not doubly stochastic, negative, off the
// edges, disconnected). validate = false builds what was given so that it can be reported on.
topology build_topology(const topology_config& config, bool validate = true);

}  // namespace qgossip
