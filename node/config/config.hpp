#pragma once
// The run configuration: one YAML file (configs/*.yaml) resolved into plain structs, every field
// with its default documented here. YAML is read only in node/config (through yaml_reader): one
// reader and one emitter per section (node/config/sections.hpp), then check_combinations; the
// layers below receive these structs. Choices are enums with one name table each (core/names.hpp).
// Unknown keys, duplicate keys, wrong types and non-finite numbers are config_errors with
// file:line:column. See docs/config.md for the full reference.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/compress/compressor.hpp"
#include "node/data/data_spec.hpp"
#include "node/optim/lr_schedule.hpp"
#include "node/optim/outer_step.hpp"
#include "node/config/slurm_step.hpp"
#include "node/models/model_factory.hpp"
#include "topology/graph.hpp"
#include "topology/weights.hpp"

namespace qgossip {

// network.transport: tcp, or ipc (/tmp sockets, single host, for tests).
enum class transport_kind { tcp, ipc };
inline constexpr named<transport_kind> kTransportNames[] = {{transport_kind::tcp, "tcp"}, {transport_kind::ipc, "ipc"}};
constexpr std::span<const named<transport_kind>> names_of(transport_kind) { return kTransportNames; }

// network.security: curve (CurveZMQ, docs/security.md) or none (plain text, an explicit opt-out).
enum class security_kind { curve, none };
inline constexpr named<security_kind> kSecurityNames[] = {{security_kind::curve, "curve"}, {security_kind::none, "none"}};
constexpr std::span<const named<security_kind>> names_of(security_kind) { return kSecurityNames; }

// network.on_peer_failure (docs/failures.md): stop, or continue (train on around the failed peer).
enum class peer_failure_policy { stop, train_on };
inline constexpr named<peer_failure_policy> kPeerFailureNames[] = {{peer_failure_policy::stop, "stop"},
                                                                   {peer_failure_policy::train_on, "continue"}};
constexpr std::span<const named<peer_failure_policy>> names_of(peer_failure_policy) { return kPeerFailureNames; }

// topology.nodes: {from: ...}: where the nodes' hosts come from when they are not listed. slurm: the
// Slurm step this process runs in (node/config/slurm_step.hpp, docs/slurm.md).
enum class node_source { slurm };
inline constexpr named<node_source> kNodeSourceNames[] = {{node_source::slurm, "slurm"}};
constexpr std::span<const named<node_source>> names_of(node_source) { return kNodeSourceNames; }

struct node_address {
  std::string host;  // where the node listens (and what neighbours connect to)
  int port = 0;
  int gpu = -1;      // CUDA device for this node; -1 = launcher's choice
};

struct topology_config {
  std::string file;                        // where it was defined (for messages)
  graph_kind graph = graph_kind::ring;
  int n = 0;                               // number of nodes (required unless nodes: lists them)
  int rows = 0, cols = 0;                  // torus
  int dim = 0;                             // hypercube (n = 2^dim)
  std::vector<std::pair<int, int>> edges;  // graph: edge_list
  weight_kind weights = weight_kind::uniform;
  std::vector<std::vector<double>> matrix; // weights: explicit (n rows of n)
  std::string host = "127.0.0.1";          // default host of every node
  int base_port = 29500;                   // node r listens on base_port + r unless nodes: says
  std::vector<node_address> nodes;         // resolved: exactly n entries after loading
  // nodes: {from: slurm, base_port: P}: node r at the host of the Slurm step's task r, port P + r
  // (base_port above holds P). nullopt: nodes listed, or all at host.
  std::optional<node_source> nodes_from;
  std::string nodes_origin;                // with nodes_from: the variables the hosts came from
  // The processes of one gossip node, for a program's nodes (python/qgossip/group.py): 0, not given,
  // is one group per host (torchrun's node, a Slurm step's node) and one process per node under
  // `qgossip launch`; g >= 1: every node is g processes of consecutive ranks. `qgossip run` nodes
  // are one process each (g <= 1).
  int group_size = 0;
};


struct train_config {
  double epochs = 5;          // passes over the node's shard
  int batch = 32;             // mini-batch per node per round
  lr_schedule_spec lr;        // train.lr (base rate) and train.schedule: {kind, gamma, step_epochs,
                              // milestones, warmup_epochs, warmup_start}; see node/optim/lr_schedule.hpp
  double eval_every = 1.0;    // evaluate test accuracy every this many epochs (and at the end)
  int eval_examples = 0;      // test examples per evaluation during training; 0 = all (the final one uses all)
  int log_every = 10;         // CSV row and progress line every this many rounds
  double diverge_loss = 1e4;  // a training loss above this ends the run as diverged (exit 3)
  double momentum = 0.0;      // local heavy-ball: m = momentum·m + g, the step uses m; in [0, 1)
  double weight_decay = 0.0;  // L2 penalty: g += weight_decay·x before momentum; >= 0
  // Every this many rounds (and at the last), every node sends its model to rank 0 over a separate
  // probe exchange; rank 0 logs the consensus distance (1/n)Σ‖x_i − x̄‖² and the test loss and
  // accuracy of the average model x̄. Probe bytes are logged apart from training traffic. 0 = off.
  int consensus_every = 0;
  // H: local optimizer steps per gossip round (docs/algorithms.md, "Local steps and the outer step").
  // 1 = one stochastic gradient per round, today's rules bit for bit. With H > 1 a node takes H
  // steps (each on its own batch, with the schedule's rate, momentum and weight decay) from its
  // model x_t and hands the algorithm the outer step of the change (node/optim/outer_step.hpp).
  int local_steps = 1;
  outer_spec outer;  // train.outer: {lr, momentum, nesterov}; default lr 1, momentum 0: no outer optimizer
  // Every this many rounds every node writes a checkpoint (docs/checkpoints.md) into
  // <output_dir>/<name>/checkpoints/node-<rank>/, from which `--resume` continues exactly. Rounds
  // only: every node must checkpoint at the same round. 0 = off.
  int checkpoint_every = 0;
  // Asynchronous gossip (docs/algorithms.md, "Asynchronous gossip"): how many rounds a node may run
  // ahead of a neighbour's newest message before it waits for one. 0 = synchronous rounds (every
  // round waits for every neighbour's message of that round), bit for bit the rules without it;
  // kUnboundedStaleness (`unbounded` in the YAML) = never wait for a neighbour. Decentralized
  // algorithms only, without consensus probes or checkpoints.
  std::uint64_t max_staleness = 0;
  // Overlapped rounds (docs/algorithms.md, "Overlapped rounds"): a round's encoding, sending,
  // receiving and decoding run on the node's own thread beside the next round's local steps, and
  // its mix is added at the next boundary on top of the steps taken meanwhile (one round late).
  // false = every round completes before the next step, bit for bit as without the key. choco,
  // dpsgd and naive only.
  bool overlap = false;
};

inline constexpr std::uint64_t kUnboundedStaleness = ~std::uint64_t{0};

struct network_config {
  transport_kind transport = transport_kind::tcp;
  double start_timeout_s = 60;    // round 1: how long to wait for neighbours to come up
  double round_timeout_s = 30;    // later rounds: a neighbour silent this long is an error
  double linger_s = 10;           // at exit, how long unsent messages may still leave
  // Link emulation in the transport (gossip/link_emulation.hpp): each node's egress paced at this
  // rate, each message delivered this much later. 0 = off. For kernels without tc netem.
  double emulate_rate_mbit = 0;
  double emulate_delay_ms = 0;
  // Sender pacing (gossip/zmq/transport.hpp zmq_options::pace_bytes_per_s): the rate in Mbit/s of the
  // node's egress link (tc's mbit, 10^6 bit/s); the node's TCP connections together send at most
  // this much. 0 = unpaced. For links shaped by a queue (tc tbf, a slow uplink): docs/cluster.md.
  double pace_mbit = 0;
  // Free text recorded in run.json saying how the network was shaped outside qgossip (e.g. by
  // scripts/cluster.sh: "tc tbf rate 10mbit on each node's veth"). Empty = not shaped outside.
  std::string shaping;
  // curve: every link authenticated and encrypted with CurveZMQ, connections admitted only from the
  // topology's neighbours' keys (docs/security.md). none: plain text, no authentication (an
  // explicit opt-out; the node warns at start).
  security_kind security = security_kind::curve;
  // Where the CURVE keys are: node-<r>.key (rank r's secret, mode 0600) and node-<r>.pub for every
  // rank. Empty = <output_dir>/<name>/keys, where `qgossip launch` generates them when absent
  // (node/run/node_network.hpp keys_directory). Not part of the run id: hosts may keep keys apart.
  std::string keys_dir;
  // What a node does when a neighbour fails (docs/failures.md): its link closes, it answers no
  // heartbeat for heartbeat_s, or it misbehaves (a message that does not decode, max_rejected
  // rejected messages). stop: the node stops, naming it, and tells its neighbours, who stop too.
  // continue: the node drops it, re-weights its mixing row over the surviving neighbours and goes
  // on; the news spreads hop by hop. Decentralized algorithms only.
  peer_failure_policy on_peer_failure = peer_failure_policy::stop;
  double heartbeat_s = 1.0;  // a link silent this long (ZeroMQ heartbeats, 4 per period) is lost; 0: off
  // A neighbour whose messages are late but whose process is alive (it answers heartbeats: its
  // program is busy between two steps, in an evaluation, a checkpoint, a compile) is waited for past
  // round_timeout_s, each waiting neighbour saying "waiting for rank 2: alive, 40 s behind", up to
  // this long from the round's start; then it counts as failed. nullopt (`none`, the default): for
  // as long as it is alive. 0: not waited for (judged at round_timeout_s). Needs heartbeat_s > 0.
  // Each node's own tolerance: not part of the run id (like keys_dir).
  std::optional<double> stall_timeout_s;
  int max_rejected = 16;     // rejected messages on a neighbour's link before it counts as misbehaving; 0: never
  // A rejoining state (a model and a public state) travels in chunks of at most this many MiB
  // (2^20 bytes) each (gossip/exchange/state_chunks.hpp); the largest message a node sends or takes
  // is this or its codec's largest train message, whichever is larger. Fractions allowed.
  double max_message_mib = 64;
  // `qgossip launch` restarts a node that died, at most this many times per node, after a back-off
  // (1 s, doubling, at most 30 s); the restarted node rejoins the running graph (docs/failures.md,
  // "Rejoining"). 0: never. Needs on_peer_failure: continue. The launcher's policy, not the nodes':
  // not part of the run id (like keys_dir).
  int restart = 0;
};

struct run_config {
  std::string file;           // the run YAML
  std::string name = "run";   // runs/<name>/
  std::uint64_t seed = 1;     // same initial model on every node; data order; quantization noise
  topology_config topology;
  // dpsgd | naive | dcd | ecd | choco (decentralized, over topology's graph) | allreduce | allgather
  // (centralized data-parallel baselines: every node talks to every other); or {name: choco, consensus_step: 0.3}
  algorithm_kind algorithm = algorithm_kind::dcd;
  algorithm_options algorithm_params;
  codec_spec compressor{"identity", {}};
  // Where libtorch models compute: auto (a GPU when this libtorch has CUDA and one is visible, else
  // the CPU) | cpu | cuda. The launcher gives node r the GPU r mod G (CUDA_VISIBLE_DEVICES).
  device_kind device = device_kind::automatic;
  model_spec model;                 // model: {kind, hidden, path, threads, buffers}; see model_factory.hpp
  data_spec data;                   // data: {dataset, dir, partition, skew, standardize, augment, synthetic}
  train_config train;
  network_config network;
  std::string output_dir = "runs";  // the run writes into <output_dir>/<name>/
  // output.model: each node also writes its final model, model-<rank>.npy (float32, the model's
  // parameters in its own order), beside its summary. Not part of the canonical config (it changes
  // what is written, not what is trained).
  bool save_model = false;
  // node.threads: the threads of the node's round work that splits into pieces (the codec, the
  // mix, the model-sized copies: core/work_pool.hpp); 0, the default: the cores the node may use
  // (usable_cores(): its CPU affinity under its cgroup's quota). Not part of the canonical config:
  // what a round computes is the same bits on any number of threads, only its time changes.
  int threads = 0;

  std::string canonical;     // the resolved config as YAML text (what run.json records)
  std::uint64_t run_id = 0;  // hash of `canonical`: messages from another run are rejected
};

// The --set with which a node driven by a program reads a run YAML (the Python module, `qgossip launch
// --exec`): the model is the program's, whatever the YAML's model: section says, so that a CLI run's
// YAML drives a program's loop as it is (its data: section and train.epochs are the program's then).
inline constexpr const char* kProgramModelSet = "model={kind: external}";

// Loads and validates a run config. `overrides` are `key.path=value` strings (the --set option),
// applied before validation. `env` is where a topology with nodes: {from: slurm} finds its Slurm
// step (the only environment the loader reads). Throws config_error.
run_config load_run_config(const std::string& file, const std::vector<std::string>& overrides = {},
                           const env_lookup& env = process_environment());

// Loads a topology YAML file (the `topology:` section's own format).
topology_config load_topology_config(const std::string& file, const env_lookup& env = process_environment());

// Every key a run YAML's defaults resolve to, as dotted paths ("train.epochs", "model.hidden"), in
// the order run.json lists them: for hints such as "did you mean --set train.epochs=2?".
[[nodiscard]] std::vector<std::string> config_key_paths();

// The most parameters an Eigen model (mlp, softmax) may have: 2^28, 1 GiB per copy in float, and a
// node holds several copies (model, gradient, replicas or estimates of its neighbours, messages).
inline constexpr std::uint64_t kMaxModelParams = std::uint64_t{1} << 28;

// The parameters of an Eigen model (mlp or softmax; 0 for the others) on `dim` features and
// `classes` classes: every layer's weights and biases, in 64 bits, saturating at UINT64_MAX.
[[nodiscard]] std::uint64_t eigen_model_params(const model_spec& m, std::uint64_t dim, std::uint64_t classes);

// Throws config_error (no position) naming the shape, the count and the limit when the model has
// more than kMaxModelParams parameters. load_run_config checks this when the data's shape is known
// from the config (every data set but npy); the node checks it again with the data it loaded.
void check_model_size(const model_spec& m, std::uint64_t dim, std::uint64_t classes);


}  // namespace qgossip
