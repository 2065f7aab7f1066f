#include "node/run/node_setup.hpp"

#include <cmath>
#include <sstream>

#include "core/errors.hpp"
#include "core/hash.hpp"
#include "node/checkpoint/checkpoint_file.hpp"
#include "node/checkpoint/checkpoint_store.hpp"
#include "node/config/hostile_file.hpp"
#include "node/config/topology_builder.hpp"
#include "node/models/model_factory.hpp"
#include "node/run/hostile_round.hpp"
#include "node/run/resume.hpp"
#include "topology/diameter.hpp"

namespace qgossip {

namespace {

int checked_rank(const run_config& c, int rank) {
  if (rank < 0 || rank >= c.topology.n)
    throw config_error("rank " + std::to_string(rank) + ": the rank must be in 0.." + std::to_string(c.topology.n - 1) +
                       " (the topology has " + std::to_string(c.topology.n) + " nodes)");
  return rank;
}

topology topology_of(const run_config& c) {
  start_up_step("building the topology");
  return build_topology(c.topology);
}

data_split data_of(const run_config& c, int rank) {
  if (c.model.kind == model_kind::external) return {};  // the program that drives the node has the data
  start_up_step("loading the data");
  return allocating(
      [&] {
        return "loading the data (" + to_text(c.data.dataset) +
               (c.data.dataset == dataset_kind::synthetic ? "" : " from " + c.data.dir) + ")";
      },
      [&] { return load_shard(c.data, c.topology.n, rank, c.seed); });
}

node_plan plan_of(const run_config& c, const data_split& data, int rank) {
  start_up_step("planning the rounds");
  return make_plan(c, data, rank);
}

// A program's node state (program_model::state, docs/python.md): the checkpoint it holds, checked to
// be this run's and this rank's.
node_checkpoints program_state_of(const run_config& c, int rank, std::span<const std::byte> bytes) {
  node_checkpoints k;
  checkpoint ck;
  const std::string what = "load_state_dict: ";
  if (const status st = decode_checkpoint(bytes, ck); !st)
    throw config_error(what + "not a qgossip node's state (node.state_dict()): " + st.message());
  if (ck.run_id != c.run_id)
    throw config_error(what + "the state is of another run (run id " + hex64(ck.run_id) + "; this one's is " +
                       hex64(c.run_id) + "): another run YAML, or other --set options");
  if (ck.rank != static_cast<std::uint32_t>(rank))
    throw config_error(what + "the state is rank " + std::to_string(ck.rank) + "'s; this node is rank " +
                       std::to_string(rank));
  k.resume = std::move(ck);
  return k;
}

// The checkpoint directory and keep count, the checkpoint to resume from (options.resume), and no
// checkpoint of a later round left behind (a fresh start: none at all).
node_checkpoints checkpoints_of(const run_config& c, int rank, const topology& topo, std::uint64_t rounds,
                                const node_run_options& options, std::span<const std::byte> program_state) {
  start_up_step("reading the checkpoints");
  if (!program_state.empty()) return program_state_of(c, rank, program_state);
  node_checkpoints k;
  if (c.train.checkpoint_every == 0 && !options.resume) return k;
  if (c.train.checkpoint_every == 0)
    throw config_error(c.file, 0, 0, "--resume: train.checkpoint_every is 0, so this run writes no checkpoints to resume from");
  k.dir = checkpoint_dir(c, rank);
  k.pause = options.checkpoint_pause_for_testing;
  // Neighbours are at most one round apart, so nodes D hops apart at most D; the centralized
  // algorithms wait for every node each round.
  const int apart = is_centralized(c.algorithm) ? 1 : graph_diameter(topo);
  k.keep = checkpoint_keep(static_cast<std::uint64_t>(apart), static_cast<std::uint64_t>(c.train.checkpoint_every));
  std::uint64_t from = 0;
  if (options.resume) {
    from = options.resume_round ? *options.resume_round
                                : common_resume_round(c, [rank](const std::string& line) { say(rank, line); });
    if (from > 0) {
      k.resume = read_checkpoint(checkpoint_path(k.dir, from), {.run_id = c.run_id, .rank = static_cast<std::uint32_t>(rank)});
      if (from >= rounds)
        throw config_error(checkpoint_path(k.dir, from).string() + ": round " + std::to_string(from) +
                           " is not before the run's last round " + std::to_string(rounds));
    }
    say(rank, from > 0 ? "resuming from " + checkpoint_path(k.dir, from).string()
                       : std::string("resuming from round 0: no round has a checkpoint on every node"));
  }
  const std::size_t discarded = discard_checkpoints_after(k.dir, from);
  if (discarded > 0)
    say(rank, "deleted " + std::to_string(discarded) + " checkpoint file(s) of rounds after " + std::to_string(from) +
                  " in " + k.dir.string());
  std::error_code ec;
  std::filesystem::create_directories(k.dir, ec);
  if (ec) throw config_error("cannot create the checkpoint directory " + k.dir.string() + ": " + ec.message());
  return k;
}

// This rank's entry of the scenario's hostile: list (options.scenario), checked against the run
// (config_error, FILE:LINE:COL, for an attack the run cannot carry): before the network opens.
std::optional<attack_spec> hostile_of(const run_config& c, int rank, const node_run_options& options) {
  if (options.scenario.empty()) return std::nullopt;
  const std::vector<attack_spec> list = read_hostile(options.scenario, c.topology.n);
  check_hostile(c, list, options.scenario);
  return hostile_entry(list, rank);
}

}  // namespace

node_setup::node_setup(const run_config& c, int r, const node_run_options& options, program_model program)
    : config(c),
      rank(checked_rank(c, r)),
      n(c.topology.n),
      pool(c.threads > 0 ? static_cast<unsigned>(c.threads) : usable_cores()),
      topo(topology_of(c)),
      report(analyze(topo)),
      data(data_of(c, rank)),
      learner(build_learner(c, data, starting_row(c, topo, rank), program.params)),
      plan(plan_of(c, data, rank)),
      checkpoints(checkpoints_of(c, rank, topo, plan.rounds, options, program.state)) {
  const std::optional<attack_spec> hostile = hostile_of(c, rank, options);
  const std::optional<std::uint64_t> csv_at =
      checkpoints.resume ? std::optional(checkpoint_csv_bytes(*checkpoints.resume,
                                                              checkpoint_path(checkpoints.dir, checkpoints.resume->round).string()))
                         : std::nullopt;
  log = std::make_unique<run_log>(std::filesystem::path(c.output_dir) / c.name, rank, options.progress_json, csv_at);
  if (rank == 0)
    log->write_run_json(c.name, c.canonical, n, to_text(c.algorithm), learner.codec->describe(), learner.model->describe(),
                        c.run_id, format_report(report), shaping_description(c.network), describe_data());
  if (hostile) {
    attack = qgossip::describe(*hostile);
    say(rank, "hostile (scenario): this node attacks: " + attack);
  }
  links = open_links(c, rank, topo, learner, *log, plan.rounds);
  if (hostile) {
    const std::uint64_t first_round = checkpoints.resume ? checkpoints.resume->round + 1 : 1;
    links.pattern = std::make_unique<hostile_round>(std::move(links.pattern), *hostile, c.algorithm_params.robust,
                                                    *learner.alg, *learner.codec, rank, c.seed, data.train, first_round);
  }
}

std::string node_setup::describe_data() const {
  if (config.model.kind == model_kind::external) return "the program's own (model.kind external)";
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
  const model& m = *learner.model;
  os << config.algorithm << " with " << learner.codec->describe();
  // `bits: 3` is described by what it means, levels=3: say what was written too.
  for (const auto& [key, value] : config.compressor.params)
    if (key == "bits") os << " (bits=" << value << ")";
  os << ", " << m.describe() << " (" << m.num_params() << " parameters), ";
  if (config.model.kind == model_kind::external) {
    os << links.pattern->describe() << "; a round every " << plan.local_steps
       << " step(s) of the program's loop, for as long as it runs";
  } else {
    os << "shard of " << data.train.size << " examples, " << links.pattern->describe() << "; " << plan.rounds
       << " rounds (" << plan.rounds_per_epoch() << " per epoch";
    if (plan.local_steps > 1) os << ", " << plan.local_steps << " local steps each";
    // train.epochs: 10 that runs 10.1197 epochs: say why.
    const double reached = plan.epoch_after(plan.rounds * plan.local_steps);
    if (std::abs(reached - config.train.epochs) > 1e-9)
      os << "; whole rounds, so it ends at epoch " << reached << " for train.epochs " << config.train.epochs;
    os << ")";
  }
  os << "; " << pool.threads() << (pool.threads() == 1 ? " thread" : " threads") << " for the round's work (node.threads)";
  os << "; listening on " << bind_endpoint(config, rank);
  if (rank == 0 && learner.alg->compresses() && config.algorithm == algorithm_kind::dcd) {
    const double alpha2 = learner.codec->relative_error_bound();
    os << "\nDCD-PSGD condition (1-rho)^2 - 4 mu^2 alpha^2 > 0: rho=" << report.rho << " mu=" << report.mu
       << " alpha^2<=" << alpha2 << " (bound " << report.dcd_alpha2_max << "): "
       << (dcd_condition_holds(report, alpha2) ? "holds" : "NOT guaranteed by the theory for this compressor");
  }
  // Overlapped rounds mix one round late: the consensus error then follows e' = e − s·(I − W)·e_prev,
  // which shrinks only while s·(1 − lambda_n) < 1 (docs/algorithms.md, "Overlapped rounds").
  // The centralized algorithms have no consensus error: every node's model is the same after each round.
  if (rank == 0 && config.train.overlap && !is_centralized(config.algorithm) && std::isfinite(report.lambda_n)) {
    const double s = config.algorithm == algorithm_kind::choco ? config.algorithm_params.consensus_step : 1.0;
    const double k = s * (1.0 - report.lambda_n);
    if (k >= 1.0)
      os << "\nwarning: train.overlap mixes one round late, and on this graph "
         << (config.algorithm == algorithm_kind::choco ? "consensus_step" : "the mixing step") << " " << s
         << " times (1 - lambda_n) = " << k << " >= 1: the ranks' models drift apart instead of together"
         << (config.algorithm == algorithm_kind::choco
                 ? "; use consensus_step below " + std::to_string(1.0 / (1.0 - report.lambda_n))
                 : std::string("; use choco with a smaller consensus_step"));
  }
  return os.str();
}

}  // namespace qgossip
