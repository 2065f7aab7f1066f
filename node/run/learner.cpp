#include "node/run/learner.hpp"

#include <memory>
#include <vector>

#include "node/models/external_model.hpp"
#include "node/models/model_factory.hpp"
#include "node/run/loss_screen.hpp"
#include "node/run/start_up.hpp"
#include "topology/topology.hpp"

namespace qgossip {

namespace {

std::unique_ptr<model> build_model(const run_config& c, const data_split& data, std::vector<float>& x0,
                                   std::span<const float> program_params) {
  if (c.model.kind == model_kind::external) {
    if (program_params.empty())
      throw config_error(c.file, 0, 0,
                         "model.kind external is a model a program attaches (qgossip.Node.attach, "
                         "docs/python.md); qgossip run cannot train it");
    return std::make_unique<external_model>(program_params.size());  // x_1: the program's own
  }
  model_spec spec = c.model;
  spec.device = resolve_device(c.device, spec.kind);  // the launcher set CUDA_VISIBLE_DEVICES: GPU 0 here
  // The config checked the size where the data's shape was known; npy data are known only now.
  try {
    check_model_size(spec, data.train.dim, data.train.classes);
  } catch (const config_error& e) {
    throw config_error(c.file, 0, 0, e.message());
  }
  const std::uint64_t planned = eigen_model_params(spec, data.train.dim, data.train.classes);
  auto building = [&] {
    return "building the model (" + std::string(name_of(spec.kind)) +
           (planned ? ", " + std::to_string(planned) + " parameters, " + mib(planned) + " per copy"
                    : std::string()) +
           ")";
  };
  return allocating(building, [&] {
    std::unique_ptr<model> m = make_model(spec, data.train.dim, data.train.classes, data.train.shape);
    x0.resize(m->num_params());
    m->init(x0, c.seed);
    return m;
  });
}

}  // namespace

bool model_in_program(const run_config& c, std::span<const float> program_params) {
  return !program_params.empty() && c.algorithm == algorithm_kind::choco && !c.train.overlap &&
         (c.train.outer.is_identity() || c.train.max_staleness == 0);
}

mixing_row starting_row(const run_config& c, const topology& topo, int rank) {
  if (is_centralized(c.algorithm)) return complete_mixing_row(rank, c.topology.n);
  mixing_row row;
  row.rank = rank;
  row.self_weight = topo.self_weight(rank);
  for (int j : topo.neighbours(rank)) {
    row.neighbours.push_back(j);
    row.weights.push_back(topo.weight(rank, j));
  }
  return row;
}

node_learner build_learner(const run_config& c, const data_split& data, const mixing_row& row,
                           std::span<float> program_params) {
  node_learner l;
  l.program = program_params;
  start_up_step("building the model");
  std::vector<float> x0;  // the same x_1 on every node (the same seed); a program's: its parameters
  l.model = build_model(c, data, x0, program_params);
  start_up_step("building the compressor and the algorithm");
  const std::size_t params = l.model->num_params();
  l.codec = allocating(
      [&] {
        return "building the compressor " + c.compressor.name + " for " + std::to_string(params) +
               " parameters";
      },
      [&] {
        const bool ring = c.algorithm == algorithm_kind::allreduce;  // it codes chunks
        return make_message_codec(c.compressor, *l.model, static_cast<std::size_t>(c.train.batch), ring);
      });
  l.alg = allocating(
      [&] {
        return "allocating the state of " + std::string(name_of(c.algorithm)) + " (" +
               std::to_string(params) + " parameters, " + mib(params) +
               " per vector, with copies for up to " + std::to_string(row.neighbours.size()) + " neighbours)";
      },
      [&] {
        algorithm_options options = c.algorithm_params;
        options.asynchronous = c.train.max_staleness > 0;
        options.per_edge_copies = c.train.max_staleness == kUnboundedStaleness;
        if (model_in_program(c, program_params)) options.model_storage = program_params;
        // CHOCO-SGD's q encoded as x and x^_i are read, then decoded into x^_i: no vector of q.
        options.difference_messages = l.codec->encodes_difference() && l.codec->adds_decoded();
        return make_algorithm(c.algorithm, row, program_params.empty() ? std::span<const float>(x0) : program_params,
                              options);
      });
  if (clip_rule* clip = clip_rule_of(*l.alg); clip && c.algorithm_params.robust.screen) {
    auto screen = std::make_shared<loss_screen>(*l.model, data.train);
    clip->set_screen(
        [screen](std::span<const float> copy, std::span<const float> own) { return screen->gap(copy, own); });
  }
  return l;
}

}  // namespace qgossip
