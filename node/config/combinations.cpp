// check_combinations (node/config/sections.hpp): the rules that span sections.
#include <algorithm>

#include "algorithms/compress/compressor.hpp"
#include "node/config/config_fields.hpp"
#include "node/config/sections.hpp"

namespace qgossip {

namespace {

void check_codec(yaml_reader& r, const run_config& c) {
  // Each error points at the compressor's value (a codec other than identity was given somewhere).
  const YAML::Node at = value_node(r, "compressor");
  const bool isgq = c.compressor.name == "isgq";
  if (c.algorithm == algorithm_kind::dpsgd && c.compressor.name != "identity")
    throw r.error_at(at, "algorithm: dpsgd is the full-precision reference and sends raw floats; remove 'compressor' "
                         "or use naive, dcd or ecd to compress");
  if (isgq && c.algorithm != algorithm_kind::allgather)
    throw r.error_at(at, "compressor: isgq sends each node's gradient factors to every node; use algorithm: allgather");
  if (isgq && (c.train.momentum > 0 || c.train.weight_decay > 0))
    throw r.error_at(at, "compressor: isgq encodes the raw loss gradient's factors, so train.momentum and "
                         "train.weight_decay cannot be applied before sending; set them to 0");
  if (isgq && (c.train.local_steps > 1 || !c.train.outer.is_identity()))
    throw r.error_at(at, "compressor: isgq encodes one gradient's factors; train.local_steps > 1 and train.outer send a "
                         "change of several steps, which has no such factors; use another codec");
  // A quantized ring all-reduce re-codes partial sums at every hop: a codec that keeps every value.
  static const std::vector<std::string> kQuantizers{"identity", "qsgd", "nuqsgd", "dither", "fp16", "bf16"};
  if (c.algorithm == algorithm_kind::allreduce &&
      std::find(kQuantizers.begin(), kQuantizers.end(), c.compressor.name) == kQuantizers.end())
    throw r.error_at(at,
                     "compressor: allreduce sends each hop's partial sum quantized, so every value must be coded; " +
                         c.compressor.name + " is not a quantizer (use qsgd, nuqsgd, dither, fp16 or bf16, or "
                         "allgather for sparsifiers and sign)");
}

// model.kind external: the node only mixes what another program's loop trains (docs/python.md);
// what needs the node's own data, evaluation or step-by-step state is not there yet.
void check_external(yaml_reader& r, const run_config& c) {
  const std::string why = "model.kind external (a program's own model, docs/python.md): ";
  if (c.compressor.name == "isgq")
    throw r.error(why + "compressor: isgq needs the node's own gradient factors; use another codec");
  if (c.train.consensus_every > 0)
    throw r.error(why + "train.consensus_every evaluates the average model on the node's test data, which the "
                        "program keeps; set it to 0");
  // Unbounded, a node may run any number of rounds ahead of a neighbour. Where its rounds skip a busy
  // link (choco, dpsgd, naive: docs/algorithms.md, "A busy uplink") its queues hold a message or so
  // per link; dcd's and ecd's rounds send on every link, so their queues would hold the whole run's.
  if (c.train.max_staleness == kUnboundedStaleness &&
      (c.algorithm == algorithm_kind::dcd || c.algorithm == algorithm_kind::ecd))
    throw r.error(why + "train.max_staleness: unbounded: " + to_text(c.algorithm) +
                  " sends every round on every link, so a node ahead of a slow neighbour would queue messages "
                  "without end (a run length, which bounds them, is the program's); give a bound, or use choco");
  if (c.algorithm_params.robust.screen)
    throw r.error(why +
                  "algorithm.robust.screen evaluates neighbours' copies on the node's own data, which the "
                  "program keeps; leave it out (clipping alone still applies)");
  if (c.train.checkpoint_every > 0)
    throw r.error(why + "train.checkpoint_every: the program saves its own checkpoints, with the node's state in "
                        "them (node.state_dict(), docs/python.md); set it to 0");
}

void check_model(yaml_reader& r, const run_config& c) {
  const model_spec& m = c.model;
  const std::string kind(name_of(m.kind));
  if (m.kind == model_kind::external) check_external(r, c);
  if (!is_torch(m.kind)) {
    if (c.device == device_kind::cuda)
      throw r.error("device: cuda trains the libtorch models (lenet5, resnet20, torchscript); " + kind +
                    " runs on the CPU (use device: auto or cpu)");
    return;
  }
  if (c.compressor.name == "isgq")
    throw r.error("compressor: isgq needs the gradient factors of a fully connected Eigen model (mlp or softmax); " +
                  kind + " is a libtorch model");
  if ((m.kind == model_kind::lenet5 || m.kind == model_kind::resnet20) && c.data.dataset == dataset_kind::synthetic)
    throw r.error("model: " + kind + " takes images; data.dataset synthetic has none (use fashion-mnist, cifar10 or npy)");
  if (c.train.checkpoint_every > 0 && m.buffers == buffers_kind::local && m.kind != model_kind::lenet5)
    throw r.error("train.checkpoint_every: " + kind + " with model.buffers: local keeps BatchNorm running statistics "
                  "inside the module, which checkpoints do not hold yet; use buffers: average (they then travel with "
                  "the model and are checkpointed), or no checkpoints");
  if (m.buffers == buffers_kind::average && (c.train.momentum > 0 || c.train.weight_decay > 0))
    throw r.error("model.buffers: average sends BatchNorm statistics as part of the model, stepped by plain SGD; set "
                  "train.momentum and train.weight_decay to 0, or keep buffers local");
}

void check_failures(yaml_reader& r, const run_config& c) {
  if (c.network.restart > 0 && (c.network.on_peer_failure != peer_failure_policy::train_on || c.train.max_staleness > 0))
    throw r.error("network.restart: a restarted node rejoins the running graph, which needs network.on_peer_failure: "
                  "continue and synchronous gossip (train.max_staleness: 0); set restart: 0, or on_peer_failure: continue");
  if (c.network.on_peer_failure != peer_failure_policy::train_on) return;
  if (is_centralized(c.algorithm))
    throw r.error("network.on_peer_failure: continue trains on around a failed neighbour on the graph; " +
                  std::string(name_of(c.algorithm)) +
                  " needs every node in every round: use stop, or a decentralized algorithm (dpsgd, naive, dcd, ecd, "
                  "choco)");
  if (c.train.consensus_every > 0)
    throw r.error("network.on_peer_failure: continue cannot be combined with train.consensus_every: the consensus "
                  "probe gathers every node's model and would wait for one that left; set consensus_every: 0");
}

void check_asynchronous(yaml_reader& r, const run_config& c) {
  if (c.train.max_staleness == 0) return;
  if (is_centralized(c.algorithm))
    throw r.error("train.max_staleness: asynchronous gossip is for the decentralized algorithms (dpsgd, naive, dcd, "
                  "ecd, choco); " + to_text(c.algorithm) + " needs every node's message in every round");
  if (c.train.consensus_every > 0)
    throw r.error("train.max_staleness: the consensus probe gathers every node's model at the same round, which "
                  "asynchronous nodes do not share; set consensus_every: 0");
  if (c.train.checkpoint_every > 0)
    throw r.error("train.max_staleness: checkpoints of asynchronous nodes are not built (which messages each has "
                  "absorbed differs from node to node); set checkpoint_every: 0, or max_staleness: 0");
  // CHOCO-SGD with τ unbounded encodes one message per edge (a public copy per edge): an encoder that
  // carries state from one message to the next would carry one edge's remainder into another's.
  if (c.train.max_staleness == kUnboundedStaleness && c.algorithm == algorithm_kind::choco &&
      make_compressor(c.compressor)->has_sender_state())
    throw r.error_at(
        value_node(r, "compressor"),
        "compressor: " + c.compressor.name +
            " keeps state from one message to the next, and choco with "
            "train.max_staleness: unbounded encodes a message per edge (docs/algorithms.md, \"A busy "
            "uplink\"); use a codec without sender state (mcgq without variant=accumulate or dynamic), or a "
            "bounded max_staleness");
}

// train.overlap: the round's mix lands one round late, on top of the steps taken meanwhile, which
// an algorithm whose neighbours rebuild its model from its messages cannot take (docs/algorithms.md,
// "Overlapped rounds"); allreduce and allgather take it as DiLoCo with a delayed outer step.
void check_overlap(yaml_reader& r, const run_config& c) {
  if (!c.train.overlap) return;
  const std::string name = to_text(c.algorithm);
  const YAML::Node train = value_node(r, "train");
  const YAML::Node at = train.IsMap() ? train["overlap"] : YAML::Node();  // the error points at the key's value
  if (c.algorithm == algorithm_kind::dcd || c.algorithm == algorithm_kind::ecd)
    throw r.error_at(at, "train.overlap: " + name + "'s neighbours hold an exact copy of its model built from its messages "
                  "alone; steps taken beside the round would leave those copies behind; use choco, dpsgd, naive or "
                  "allreduce, or overlap: false");
}

// The model's size, where the data's shape is known without reading it (npy: at node start).
void check_size(const run_config& c, const YAML::Node& model_at, yaml_reader& r) {
  const data_spec& d = c.data;
  if (d.dataset == dataset_kind::npy) return;
  const std::uint64_t dim = d.dataset == dataset_kind::fashion_mnist ? 784
                            : d.dataset == dataset_kind::cifar10     ? 3072
                                                                     : static_cast<std::uint64_t>(d.synthetic_dim);
  const std::uint64_t classes = d.dataset == dataset_kind::synthetic ? static_cast<std::uint64_t>(d.synthetic_classes) : 10;
  try {
    check_model_size(c.model, dim, classes);
  } catch (const config_error& e) {
    throw r.error_at(model_at, e.message());
  }
}

}  // namespace

void check_combinations(yaml_reader& r, const run_config& c, const YAML::Node& model_at) {
  check_codec(r, c);
  check_model(r, c);
  check_failures(r, c);
  check_asynchronous(r, c);
  check_overlap(r, c);
  check_size(c, model_at, r);
}

}  // namespace qgossip
