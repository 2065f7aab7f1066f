#include "node/run/node_setup.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>
#include <new>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "core/errors.hpp"
#include "node/config/topology_builder.hpp"
#include "node/checkpoint/checkpoint_store.hpp"
#include "node/models/model_factory.hpp"
#include "node/run/resume.hpp"

namespace qgossip {

namespace {

std::vector<int> sorted_union(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  std::sort(a.begin(), a.end());
  a.erase(std::unique(a.begin(), a.end()), a.end());
  return a;
}

mixing_row row_of(const topology& t, int rank) {
  mixing_row row;
  row.rank = rank;
  row.self_weight = t.self_weight(rank);
  for (int j : t.neighbours(rank)) {
    row.neighbours.push_back(j);
    row.weights.push_back(t.weight(rank, j));
  }
  return row;
}

// Runs f, turning a failed allocation inside into a config_error that says what was being
// allocated (a bare "std::bad_alloc" names nothing). `what` is only built when needed.
template <class F, class What>
decltype(auto) allocating(What&& what, F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    throw config_error("out of memory while " + what() +
                       "; make the model or the data smaller, or run fewer "
                       "nodes on this host");
  } catch (const std::length_error&) {
    throw config_error("out of memory while " + what() + " (more elements than a vector can hold)");
  }
}

std::string mib(std::uint64_t floats) {
  std::ostringstream os;
  os.precision(3);
  os << static_cast<double>(floats) * sizeof(float) / double(1 << 20) << " MiB";
  return os.str();
}

std::atomic<const char*> g_phase{"starting"};

// The start-up moves on to `next`: a stop requested (SIGINT, SIGTERM) so far ends it here, else
// `next` is what the node is now doing (for a stop the watchdog in run_node handles).
void start_up_step(const char* next) {
  if (stop_requested()) throw start_up_interrupted{std::string("before ") + next};
  g_phase.store(next);
}

}  // namespace

const char* start_up_phase() { return g_phase.load(); }

void say(int rank, const std::string& text) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) std::fprintf(stderr, "[node %d] %s\n", rank, line.c_str());
  std::fflush(stderr);
}

node_setup::node_setup(const run_config& c, int r, const node_run_options& options)
    : config(c), rank(r), n(c.topology.n), schedule(c.train.lr) {
  if (rank < 0 || rank >= n)
    throw config_error("rank " + std::to_string(rank) + ": the rank must be in 0.." + std::to_string(n - 1) +
                       " (the topology has " + std::to_string(n) + " nodes)");
  start_up_step("building the topology");
  const topology topo = build_topology(c.topology);
  report = analyze(topo);

  // Data and model: the same x_1 on every node (the same seed).
  start_up_step("loading the data");
  data = allocating(
      [&] {
        return "loading the data (" + c.data.dataset +
               (c.data.dataset == "synthetic" ? "" : " from " + c.data.dir) + ")";
      },
      [&] { return load_shard(c.data, n, rank, c.seed); });
  start_up_step("building the model");
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
    return "building the model (" + spec.kind +
           (planned ? ", " + std::to_string(planned) + " parameters, " + mib(planned) + " per copy"
                    : std::string()) +
           ")";
  };
  std::vector<float> x0;
  allocating(building, [&] {
    net = make_model(spec, data.train.dim, data.train.classes, data.train.shape);
    x0.resize(net->num_params());
    net->init(x0, c.seed);
  });
  start_up_step("building the compressor and the algorithm");
  const std::size_t params = net->num_params();

  allocating(
      [&] {
        return "building the compressor " + c.compressor.name + " for " + std::to_string(params) +
               " parameters";
      },
      [&] {
        factored = c.compressor.name == "isgq" ? make_isgq(c.compressor) : nullptr;
        codec = make_compressor(factored ? codec_spec{"identity", {}} : c.compressor, net->layer_bounds());
        if (factored) fc_shapes = net->fc_shapes();
      });
  codec_description = factored ? factored->describe() : codec->describe();

  // The algorithm and whom it talks to.
  const mixing_row row = is_centralized(c.algorithm) ? complete_mixing_row(rank, n) : row_of(topo, rank);
  allocating(
      [&] {
        return "allocating the state of " + c.algorithm + " (" + std::to_string(params) + " parameters, " +
               mib(params) + " per vector, with copies for up to " + std::to_string(row.neighbours.size()) +
               " neighbours)";
      },
      [&] { alg = make_algorithm(c.algorithm, row, x0, c.algorithm_params); });
  start_up_step("writing the run's first logs");
  pattern = alg->pattern();
  const bool ring = pattern == communication::ring_allreduce;
  train_peers = row.neighbours;
  if (ring) train_peers = n > 1 ? sorted_union({(rank + 1) % n}, {(rank + n - 1) % n}) : std::vector<int>{};
  probing = c.train.consensus_every > 0 && n > 1;
  all_others = complete_mixing_row(rank, n).neighbours;
  peers = probing ? sorted_union(train_peers, rank == 0 ? all_others : std::vector<int>{0}) : train_peers;
  steps_per_round = ring ? ring_allreduce_steps(n) : 1;

  // Every node runs the same number of rounds: derived from the smallest shard, which every node
  // can compute (shards differ by at most one example).
  const std::size_t smallest_shard = data.total_train / static_cast<std::size_t>(n);
  const auto batch = static_cast<std::size_t>(c.train.batch);
  if (smallest_shard < batch)
    throw config_error(c.file, 0, 0, "train.batch " + std::to_string(batch) + " is larger than a node's shard (" +
                                          std::to_string(smallest_shard) + " examples)");
  steps_per_epoch = smallest_shard / batch;
  local_steps = static_cast<std::uint64_t>(c.train.local_steps);
  const double rounds_per_epoch = static_cast<double>(steps_per_epoch) / static_cast<double>(local_steps);
  rounds = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(c.train.epochs * rounds_per_epoch)));
  eval_period = c.train.eval_every > 0
                    ? std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(c.train.eval_every * rounds_per_epoch)))
                    : std::numeric_limits<std::uint64_t>::max();
  std::vector<std::size_t> shard_rows(data.train.size);  // data.train is the shard already
  std::iota(shard_rows.begin(), shard_rows.end(), std::size_t{0});
  sampler = std::make_unique<batch_sampler>(
      shard_rows, batch, batch_order_seed(c.seed, rank));

  start_up_step("reading the checkpoints");
  prepare_checkpoints(topo, options);
  const std::optional<std::uint64_t> csv_at =
      resume ? std::optional(checkpoint_csv_bytes(*resume, checkpoint_path(checkpoint_dir, resume->round).string()))
             : std::nullopt;
  log = std::make_unique<run_log>(std::filesystem::path(c.output_dir) / c.name, rank, options.progress_json, csv_at);
  if (rank == 0)
    log->write_run_json(c.name, c.canonical, n, c.algorithm, codec_description, net->describe(), c.run_id,
                        format_report(report), shaping_description(c.network), describe_data());

  // Links: a peer may run ahead by one round in gossip; by up to n-1 exchange rounds in a ring
  // all-reduce, and a probe may come from a node up to n-1 hops (rounds) away.
  largest_message = std::max(factored ? factored->max_encoded_bytes(fc_shapes, batch)
                                      : codec->max_encoded_bytes(net->num_params()),
                             probing ? net->num_params() * sizeof(float) : std::size_t{0});
  lookahead = ring || probing ? static_cast<std::uint64_t>(std::max(n, 2)) : 1;
  start_up_step("opening the network");
  // Host names that do not resolve, or that are not this machine's, are said now rather than after
  // the start time-out.
  check_hosts(c, rank, peers, [rank = rank](const std::string& line) { say(rank, line); });
  network = allocating(
      [&] {
        return "opening the network (messages of up to " + std::to_string(largest_message) + " bytes, " +
               std::to_string(lookahead) + " rounds ahead)";
      },
      [&] { return std::make_unique<node_network>(c, rank, peers, largest_message, lookahead); });
  exchange_options eo;
  eo.rank = rank;
  eo.neighbours = peers;
  eo.lookahead = lookahead;
  eo.run_id = c.run_id;
  eo.first_deadline = to_ms(c.network.start_timeout_s);
  eo.round_deadline = to_ms(c.network.round_timeout_s);
  eo.max_payload_bytes = network->max_payload_bytes();
  eo.log = [rank = rank](const std::string& line) { say(rank, line); };
  eo.should_stop = stop_requested;
  eo.max_rejected = static_cast<std::uint32_t>(c.network.max_rejected);
  // Every pattern tells its peers why it stops, so that they stop naming the node that failed first
  // (the centralized algorithms need every node: the config allows them only `stop`).
  failures = std::make_unique<peer_failures>(c, topo, rank, peers);
  eo.on_peer_failure = [f = failures.get()](int peer, const std::string& why) { return f->on_peer_failure(peer, why); };
  eo.on_notice = [f = failures.get()](int from, std::span<const std::byte> p) { return f->on_notice(from, p); };
  eo.validate = [this](const wire_header& h, std::span<const std::byte> p) { return validate ? validate(h, p) : status::ok(); };
  allocating(
      [&] {
        return "allocating the exchange's buffers (" + std::to_string(peers.size()) +
               " peers, messages of up to " + std::to_string(largest_message) + " bytes, " +
               std::to_string(lookahead) + " rounds ahead)";
      },
      [&] {
        ex = std::make_unique<exchange>(network->link(), eo);
        if (failures) failures->attach(*ex, *alg, *log);
        if (ring && n > 1) reducer = std::make_unique<ring_allreduce>(*ex, rank, n);
      });
}

// The checkpoint directory and keep count, the checkpoint to resume from (options.resume), and no
// checkpoint of a later round left behind (a fresh start: none at all).
void node_setup::prepare_checkpoints(const topology& topo, const node_run_options& options) {
  if (config.train.checkpoint_every == 0 && !options.resume) return;
  if (config.train.checkpoint_every == 0)
    throw config_error(config.file, 0, 0,
                       "--resume: train.checkpoint_every is 0, so this run writes no checkpoints to resume from");
  checkpoint_dir = qgossip::checkpoint_dir(config, rank);
  checkpoint_pause = options.checkpoint_pause_for_testing;
  // Neighbours are at most one round apart, so nodes D hops apart at most D; the centralized
  // algorithms wait for every node each round.
  const int apart = is_centralized(config.algorithm) ? 1 : graph_diameter(topo);
  checkpoint_keep = qgossip::checkpoint_keep(static_cast<std::uint64_t>(apart),
                                             static_cast<std::uint64_t>(config.train.checkpoint_every));
  std::uint64_t from = 0;
  if (options.resume) {
    from = options.resume_round ? *options.resume_round
                                : common_resume_round(config, [this](const std::string& line) { say(rank, line); });
    if (from > 0) {
      resume = read_checkpoint(checkpoint_path(checkpoint_dir, from),
                               {.run_id = config.run_id, .rank = static_cast<std::uint32_t>(rank)});
      if (from >= rounds)
        throw config_error(checkpoint_path(checkpoint_dir, from).string() + ": round " + std::to_string(from) +
                           " is not before the run's last round " + std::to_string(rounds));
    }
    say(rank, from > 0 ? "resuming from " + checkpoint_path(checkpoint_dir, from).string()
                       : std::string("resuming from round 0: no round has a checkpoint on every node"));
  }
  const std::size_t discarded = discard_checkpoints_after(checkpoint_dir, from);
  if (discarded > 0)
    say(rank, "deleted " + std::to_string(discarded) + " checkpoint file(s) of rounds after " + std::to_string(from) +
                  " in " + checkpoint_dir.string());
  std::error_code ec;
  std::filesystem::create_directories(checkpoint_dir, ec);
  if (ec) throw config_error("cannot create the checkpoint directory " + checkpoint_dir.string() + ": " + ec.message());
}

std::string node_setup::describe_data() const {
  std::ostringstream os;
  const dataset& d = data.train;
  os << config.data.dataset << ": " << data.total_train << " training examples, " << data.test.size << " test, ";
  if (d.shape.is_image()) os << d.shape.channels << "x" << d.shape.height << "x" << d.shape.width << " images";
  else os << d.dim << " features";
  os << ", " << d.classes << " classes";
  if (!data.standardization.empty()) {
    os << "; standardized per channel with the training set's mean";
    for (double m : data.standardization.mean) os << " " << m;
    os << " and standard deviation";
    for (double s : data.standardization.stddev) os << " " << s;
  }
  const augment_spec& a = config.data.augment;
  if (a.crop_padding > 0 || a.flip)
    os << "; augmented: random crop after padding " << a.crop_padding << (a.flip ? ", horizontal flip" : "");
  return os.str();
}

std::string node_setup::describe() const {
  std::ostringstream os;
  os << config.algorithm << " with " << codec_description << ", " << net->describe() << " (" << net->num_params()
     << " parameters), shard of " << data.train.size << " examples, "
     << (pattern == communication::ring_allreduce ? "ring all-reduce with" : "sends to");
  for (int j : train_peers) os << " " << j;
  os << "; " << rounds << " rounds (" << static_cast<double>(steps_per_epoch) / static_cast<double>(local_steps)
     << " per epoch";
  if (local_steps > 1) os << ", " << local_steps << " local steps each";
  os << "); listening on " << bind_endpoint(config, rank);
  if (rank == 0 && alg->compresses() && config.algorithm == "dcd") {
    const double alpha2 = codec->relative_error_bound(net->num_params());
    os << "\nDCD-PSGD condition (1-rho)^2 - 4 mu^2 alpha^2 > 0: rho=" << report.rho << " mu=" << report.mu
       << " alpha^2<=" << alpha2 << " (bound " << report.dcd_alpha2_max << "): "
       << (dcd_condition_holds(report, alpha2) ? "holds" : "NOT guaranteed by the theory for this compressor");
  }
  return os.str();
}

}  // namespace qgossip
