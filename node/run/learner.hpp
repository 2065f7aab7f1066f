#pragma once
// The learner (docs/design.md): the model, the algorithm that owns this node's
// parameters and copies of its neighbours' (starting from the same x_1 on every node: the seed's),
// and the codec its messages are made of. Built once, before the links.
#include <memory>

#include "algorithms/algorithm.hpp"
#include "node/config/config.hpp"
#include "node/data/load.hpp"
#include "node/models/model.hpp"
#include "node/run/message_codec.hpp"
#include "topology/topology.hpp"

namespace qgossip {

struct node_learner {
  std::unique_ptr<qgossip::model> model;
  std::unique_ptr<algorithm> alg;
  std::unique_ptr<message_codec> codec;
  // model.kind external: the program's parameters (node/run/node_setup.hpp program_model), which
  // its loop trains in place and the node writes each round's model back into; empty otherwise.
  std::span<float> program;
};

// The mixing row node `rank` starts with: the topology's, or every other node's for the
// centralized algorithms.
[[nodiscard]] mixing_row starting_row(const run_config& c, const topology& topo, int rank);

// Whether the algorithm keeps its model x in the program's parameters themselves (algorithm_options::
// model_storage): CHOCO-SGD, whose round reads only x_{t+1/2}, the program's steps done, without
// overlapped rounds (their mix lands on steps taken meanwhile); with an outer step, in synchronous
// rounds (the step after the round: local_training keeps x_t itself). The node then holds no copy
// of the program's parameters and writes nothing back.
[[nodiscard]] bool model_in_program(const run_config& c, std::span<const float> program_params);

// Builds the learner of node row.rank on its loaded data; with model.kind external, around the
// program's parameters (x_1; node/run/node_setup.hpp program_model). Throws config_error (a model
// too large, an allocation that fails, named), start_up_interrupted (a stop request between its
// steps).
[[nodiscard]] node_learner build_learner(const run_config& c, const data_split& data, const mixing_row& row,
                                         std::span<float> program_params = {});

}  // namespace qgossip
