#include "node/run/node_runner.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <sstream>

#include "algorithms/algorithm.hpp"
#include "algorithms/compress/isgq.hpp"
#include "core/errors.hpp"
#include "core/hash.hpp"
#include "gossip/exchange.hpp"
#include "gossip/link_emulation.hpp"
#include "gossip/ring_allreduce.hpp"
#include "gossip/zmq/transport.hpp"
#include "node/data/batch_sampler.hpp"
#include "node/data/dataset.hpp"
#include "node/data/idx_reader.hpp"
#include "node/optim/local_step.hpp"
#include "node/optim/lr_schedule.hpp"
#include "node/models/model_factory.hpp"
#include "node/data/partition.hpp"
#include "node/log/run_log.hpp"
#include "node/data/synthetic.hpp"
#include "node/config/topology_builder.hpp"

namespace qgossip {

namespace {

std::atomic<bool> g_stop{false};

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

// Human-readable log lines on stderr, prefixed with the rank so interleaved output stays legible.
void say(int rank, const std::string& text) {
  std::fprintf(stderr, "[node %d] %s\n", rank, text.c_str());
  std::fflush(stderr);
}

struct data_split {
  dataset train;  // this node's shard only
  dataset test;
};

data_split load_data(const run_config& c, int rank) {
  dataset train, test;
  if (c.data.dataset == "fashion-mnist") {
    train = load_fashion_mnist(c.data.dir, split::train);
    test = load_fashion_mnist(c.data.dir, split::test);
  } else {
    synthetic_options o;
    o.size = static_cast<std::size_t>(c.data.synthetic_train + c.data.synthetic_test);
    o.dim = static_cast<std::size_t>(c.data.synthetic_dim);
    o.classes = static_cast<std::size_t>(c.data.synthetic_classes);
    o.noise = c.data.synthetic_noise;
    o.seed = c.seed;
    dataset all = make_synthetic(o);
    std::vector<std::size_t> first(static_cast<std::size_t>(c.data.synthetic_train)),
        rest(static_cast<std::size_t>(c.data.synthetic_test));
    for (std::size_t i = 0; i < first.size(); ++i) first[i] = i;
    for (std::size_t i = 0; i < rest.size(); ++i) rest[i] = first.size() + i;
    train = all.subset(first);
    test = all.subset(rest);
  }
  const int n = c.topology.n;
  std::vector<std::size_t> shard =
      c.data.partition == "iid"
          ? partition_iid(train.size, n, rank, c.seed)
          : partition_by_label(train.labels, train.classes, n, rank, c.seed, c.data.skew);
  return {train.subset(shard), std::move(test)};
}

std::vector<int> sorted_union(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  std::sort(a.begin(), a.end());
  a.erase(std::unique(a.begin(), a.end()), a.end());
  return a;
}

// How the run's network is shaped, for run.json: the transport's own emulation, shaping done
// outside qgossip (network.shaping, e.g. scripts/cluster.sh's tc), both, or none.
std::string shaping_description(const network_config& nw) {
  std::string out;
  if (nw.emulate_rate_mbit > 0 || nw.emulate_delay_ms > 0) {
    std::ostringstream os;
    os << "transport link emulation (gossip/link_emulation.hpp): each node's egress ";
    if (nw.emulate_rate_mbit > 0) os << "paced at " << nw.emulate_rate_mbit << " Mbit/s";
    else os << "unpaced";
    os << ", " << nw.emulate_delay_ms << " ms one-way delay per message";
    out = os.str();
  }
  if (!nw.shaping.empty()) out += (out.empty() ? "" : "; ") + nw.shaping;
  return out.empty() ? "none" : out;
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

bool is_loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

std::string bind_endpoint(const run_config& c, int rank) {
  const auto& a = c.topology.nodes[static_cast<std::size_t>(rank)];
  if (c.network.transport == "ipc") return "ipc:///tmp/qgossip-" + hex64(c.run_id) + "-" + std::to_string(rank);
  // Loopback runs stay on loopback; a multi-host run listens on every interface at its port.
  return "tcp://" + std::string(is_loopback(a.host) ? "127.0.0.1" : "*") + ":" + std::to_string(a.port);
}

std::string peer_endpoint(const run_config& c, int peer) {
  const auto& a = c.topology.nodes[static_cast<std::size_t>(peer)];
  if (c.network.transport == "ipc") return "ipc:///tmp/qgossip-" + hex64(c.run_id) + "-" + std::to_string(peer);
  return "tcp://" + (a.host == "localhost" ? std::string("127.0.0.1") : a.host) + ":" + std::to_string(a.port);
}

std::string rejected_detail(const exchange_stats& s) {
  std::string out;
  for (std::size_t r = 0; r < kRejectReasons; ++r)
    if (s.rejected[r] > 0)
      out += (out.empty() ? "" : " ") + std::string(to_string(static_cast<reject_reason>(r))) + "=" +
             std::to_string(s.rejected[r]);
  if (s.duplicates > 0) out += (out.empty() ? "" : " ") + std::string("duplicate=") + std::to_string(s.duplicates);
  return out;
}

bool all_finite(std::span<const float> v) {
  for (float x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(seconds * 1000.0)));
}

}  // namespace

void request_stop() { g_stop.store(true); }
bool stop_requested() { return g_stop.load(); }

node_exit run_node(const run_config& c, int rank, const node_run_options& options) {
  const int n = c.topology.n;
  if (rank < 0 || rank >= n)
    throw config_error("--rank " + std::to_string(rank) + " is outside the topology's ranks 0.." +
                       std::to_string(n - 1));
  const auto wall_start = clock_type::now();

  // --- Start-up: everything here may throw config_error. ---
  topology topo = build_topology(c.topology);
  topology_report report = analyze(topo);
  data_split data = load_data(c, rank);
  std::unique_ptr<model> net = make_model(c.model, data.train.dim, data.train.classes);
  std::vector<float> x0(net->num_params());
  net->init(x0, c.seed);  // the same x_1 on every node
  // ISGQ (all-gather only) sends each layer's quantized factors instead of a compressed gradient:
  // `factored` encodes and decodes the messages; `codec` is then the raw-float identity, used for
  // nothing but sizing.
  std::unique_ptr<isgq_codec> factored = c.compressor.name == "isgq" ? make_isgq(c.compressor) : nullptr;
  std::unique_ptr<compressor> codec =
      make_compressor(factored ? codec_spec{"identity", {}} : c.compressor, net->layer_bounds());
  const std::vector<fc_factors> fc_shapes = factored ? net->fc_shapes() : std::vector<fc_factors>{};
  const std::string codec_description = factored ? factored->describe() : codec->describe();
  const bool centralized = is_centralized(c.algorithm);
  mixing_row row = centralized ? complete_mixing_row(rank, n) : row_of(topo, rank);
  std::unique_ptr<algorithm> alg = make_algorithm(c.algorithm, row, x0, c.algorithm_params);
  const communication pattern = alg->pattern();
  // Whom training messages go to and come from (a ring all-reduce: its left and right), and every
  // peer this node talks to at all (probes add rank 0, or, on rank 0, everyone).
  std::vector<int> train_peers = row.neighbours;
  if (pattern == communication::ring_allreduce)
    train_peers = n > 1 ? sorted_union({(rank + 1) % n}, {(rank + n - 1) % n}) : std::vector<int>{};
  const bool probing = c.train.consensus_every > 0 && n > 1;
  std::vector<int> all_others = complete_mixing_row(rank, n).neighbours;
  std::vector<int> peers = train_peers;
  if (probing) peers = sorted_union(peers, rank == 0 ? all_others : std::vector<int>{0});
  // Training iterations per round: a ring all-reduce takes 2(n-1) exchange rounds.
  const std::uint64_t steps_per_round = pattern == communication::ring_allreduce ? ring_allreduce_steps(n) : 1;
  lr_schedule schedule(c.train.lr);
  std::vector<std::size_t> shard_rows(data.train.size);  // data.train is the shard already
  for (std::size_t i = 0; i < shard_rows.size(); ++i) shard_rows[i] = i;

  // Every node must run the same number of rounds: derive it from the smallest shard, which
  // every node can compute (shards differ by at most one example).
  const std::size_t total_train = c.data.dataset == "fashion-mnist" ? 60000 : c.data.synthetic_train;
  const std::size_t smallest_shard = total_train / static_cast<std::size_t>(n);
  if (smallest_shard < static_cast<std::size_t>(c.train.batch))
    throw config_error(c.file, 0, 0, "train.batch " + std::to_string(c.train.batch) + " is larger than a node's shard (" +
                                          std::to_string(smallest_shard) + " examples)");
  const std::uint64_t rounds_per_epoch = smallest_shard / static_cast<std::size_t>(c.train.batch);
  const std::uint64_t rounds =
      std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(c.train.epochs * rounds_per_epoch)));
  const std::uint64_t eval_period =
      c.train.eval_every > 0 ? std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(c.train.eval_every * rounds_per_epoch)))
                             : std::numeric_limits<std::uint64_t>::max();

  // Each node draws its own order of its own shard.
  batch_sampler sampler(shard_rows, static_cast<std::size_t>(c.train.batch),
                        hash64(std::string_view("batches"), c.seed * 1000003u + static_cast<std::uint64_t>(rank)));

  std::filesystem::path dir = std::filesystem::path(c.output_dir) / c.name;
  run_log log(dir, rank, options.progress_json);
  if (rank == 0)
    log.write_run_json(c.name, c.canonical, n, c.algorithm, codec_description, net->describe(), c.run_id,
                       format_report(report), shaping_description(c.network));

  const std::size_t largest_message =
      std::max(factored ? factored->max_encoded_bytes(fc_shapes, static_cast<std::size_t>(c.train.batch))
                        : codec->max_encoded_bytes(net->num_params()),
               probing ? net->num_params() * sizeof(float) : std::size_t{0});
  // A peer may run ahead by one round in gossip; by up to n-1 exchange rounds in a ring all-reduce,
  // and a probe may come from a node up to n-1 hops (rounds) away.
  const std::uint64_t lookahead =
      pattern == communication::ring_allreduce || probing ? static_cast<std::uint64_t>(std::max(n, 2)) : 1;
  zmq_options zo;
  zo.max_payload_bytes =
      static_cast<std::uint32_t>(std::min<std::size_t>(largest_message, std::numeric_limits<std::uint32_t>::max()));
  zo.linger = to_ms(c.network.linger_s);
  zo.send_timeout = to_ms(c.network.round_timeout_s);
  zo.send_hwm = static_cast<int>(std::max<std::uint64_t>(16, 2 * lookahead + 4));
  zo.receive_hwm = zo.send_hwm;
  std::map<int, std::string> endpoints;
  for (int j : peers) endpoints[j] = peer_endpoint(c, j);
  zmq_transport zmq(rank, bind_endpoint(c, rank), endpoints, zo);
  link_emulation emulation;
  emulation.rate_bits_per_s = c.network.emulate_rate_mbit * 1e6;
  emulation.delay = std::chrono::microseconds(static_cast<std::int64_t>(std::llround(c.network.emulate_delay_ms * 1000)));
  std::unique_ptr<emulated_link_transport> emulated;
  if (!emulation.pass_through()) emulated = std::make_unique<emulated_link_transport>(zmq, emulation);
  transport& transport = emulated ? static_cast<class transport&>(*emulated) : zmq;

  exchange_options eo;
  eo.rank = rank;
  eo.neighbours = peers;
  eo.lookahead = lookahead;
  eo.run_id = c.run_id;
  eo.first_deadline = to_ms(c.network.start_timeout_s);
  eo.round_deadline = to_ms(c.network.round_timeout_s);
  eo.max_payload_bytes = zo.max_payload_bytes;
  eo.log = [rank](const std::string& line) { say(rank, line); };
  eo.should_stop = stop_requested;
  exchange ex(transport, eo);
  std::unique_ptr<ring_allreduce> reducer;
  if (pattern == communication::ring_allreduce && n > 1) reducer = std::make_unique<ring_allreduce>(ex, rank, n);

  {
    std::ostringstream os;
    os << c.algorithm << " with " << codec_description << ", " << net->describe() << " (" << net->num_params()
       << " parameters), shard of " << data.train.size << " examples, "
       << (pattern == communication::ring_allreduce ? "ring all-reduce with" : "sends to");
    for (int j : train_peers) os << " " << j;
    os << "; " << rounds << " rounds (" << rounds_per_epoch << " per epoch); listening on "
       << bind_endpoint(c, rank);
    say(rank, os.str());
    if (rank == 0 && alg->compresses() && c.algorithm == "dcd") {
      double alpha2 = codec->relative_error_bound(net->num_params());
      std::ostringstream b;
      b << "DCD-PSGD condition (1-rho)^2 - 4 mu^2 alpha^2 > 0: rho=" << report.rho << " mu=" << report.mu
        << " alpha^2<=" << alpha2 << " (bound " << report.dcd_alpha2_max << "): "
        << (dcd_condition_holds(report, alpha2) ? "holds" : "NOT guaranteed by the theory for this compressor");
      say(rank, b.str());
    }
  }
  log.start(n, rounds, static_cast<double>(rounds) / static_cast<double>(rounds_per_epoch));

  // --- The round loop: faults from here on are values. ---
  const std::size_t dim = net->num_params();
  float_vector grad(dim), own_decoded(dim), decoded(dim);  // aligned: see core/aligned.hpp
  local_step local(dim, c.train.momentum, c.train.weight_decay);
  float_vector reduced(pattern == communication::ring_allreduce ? dim : 0);
  float_vector average(probing && rank == 0 ? dim : 0);
  std::vector<double> average_sum(average.size());
  std::vector<std::byte> encoded;
  encoded.reserve(largest_message);
  std::vector<fc_factors> factors;
  std::vector<inbound_message> inbound, probe_inbound;
  round_record rec;
  double compute_s = 0, codec_s = 0, loss_sum = 0;
  std::chrono::nanoseconds probe_comm{0};                   // exchange time spent in probes
  std::uint64_t last_round_sent = 0, last_round_recv = 0;  // the latest round's traffic alone
  std::uint64_t loss_count = 0;
  node_summary summary;
  summary.rank = rank;
  summary.host = host_name();
  summary.copies_kind = std::string(alg->copies_kind());

  auto evaluate = [&](std::size_t max_examples) {
    eval_result r = net->evaluate(alg->model(), data.test, max_examples == 0 ? model::kAllExamples : max_examples);
    rec.test_loss = r.loss;
    rec.test_acc = r.accuracy;
  };
  auto fill_record = [&](std::uint64_t t, double lr) {
    const auto& s = ex.stats();
    rec.iteration = t;
    rec.epoch = static_cast<double>(t) / static_cast<double>(rounds_per_epoch);
    rec.wall_s = seconds_since(wall_start);
    rec.lr = lr;
    rec.train_loss = loss_count ? loss_sum / static_cast<double>(loss_count) : rec.train_loss;
    rec.round_bytes_sent = last_round_sent;
    rec.round_bytes_recv = last_round_recv;
    rec.bytes_sent = s.bytes_sent - s.probe_bytes_sent;
    rec.bytes_recv = s.bytes_received - s.probe_bytes_received;
    rec.probe_bytes_sent = s.probe_bytes_sent;
    rec.compute_s = compute_s;
    rec.codec_s = codec_s;
    rec.comm_s = std::chrono::duration<double>(s.wait_time + s.send_time - probe_comm).count();
    rec.rejected = s.rejected_total();
  };
  // Every node sends its model to rank 0; rank 0 averages them (in rank order, in double) and logs
  // the consensus distance and the average model's test metrics into rec.
  const std::vector<int> to_rank0{0}, nobody;
  auto probe = [&](std::uint64_t t, bool last) -> status {
    const auto before = ex.stats().wait_time + ex.stats().send_time;
    const std::span<const float> x = alg->model();
    const outgoing_message msg{.codec = static_cast<std::uint16_t>(codec_id::identity), .codec_tag = 0,
                               .count = static_cast<std::uint32_t>(dim), .payload = std::as_bytes(x)};
    status st = ex.round(message_kind::probe, t * steps_per_round, msg, probe_inbound,
                         rank == 0 ? round_peers{nobody, all_others} : round_peers{to_rank0, nobody});
    probe_comm += ex.stats().wait_time + ex.stats().send_time - before;
    if (!st || rank != 0) return st;
    std::vector<std::span<const float>> models{x};
    for (const auto& m : probe_inbound) {
      if (m.payload.size() != dim * sizeof(float))
        return status::error(errc::corrupt, "probe from rank " + std::to_string(m.header.sender) + " has " +
                                                std::to_string(m.payload.size()) + " bytes, expected " +
                                                std::to_string(dim * sizeof(float)));
      models.emplace_back(reinterpret_cast<const float*>(m.payload.data()), dim);
    }
    std::fill(average_sum.begin(), average_sum.end(), 0.0);
    for (const auto& m : models)  // rank order: rank 0, then the others ascending
      for (std::size_t i = 0; i < dim; ++i) average_sum[i] += m[i];
    for (std::size_t i = 0; i < dim; ++i) average_sum[i] /= static_cast<double>(n);
    double distance = 0;
    for (const auto& m : models)
      for (std::size_t i = 0; i < dim; ++i) distance += (m[i] - average_sum[i]) * (m[i] - average_sum[i]);
    for (std::size_t i = 0; i < dim; ++i) average[i] = static_cast<float>(average_sum[i]);
    rec.consensus_dist = distance / static_cast<double>(n);
    const std::size_t examples = last || c.train.eval_examples == 0 ? model::kAllExamples
                                                                      : static_cast<std::size_t>(c.train.eval_examples);
    eval_result r = net->evaluate(average, data.test, examples);
    rec.avg_test_loss = r.loss;
    rec.avg_test_acc = r.accuracy;
    return st;
  };

  node_exit outcome = node_exit::ok;
  std::uint64_t t = 0, completed = 0;  // the round under way, the last one finished
  double lr = 0;
  while (t < rounds) {
    if (stop_requested()) {
      outcome = node_exit::interrupted;
      summary.error = "interrupted by a signal at round " + std::to_string(t);
      break;
    }
    ++t;
    const auto t0 = clock_type::now();
    lr = schedule.lr_at(static_cast<double>(t - 1) / static_cast<double>(rounds_per_epoch));
    double loss = 0;
    if (factored) {
      loss = net->loss_and_factors(alg->model(), data.train, sampler.next(), factors);
      gradient_from_factors(factors, grad);  // the exact local gradient, for the checks below
    } else {
      loss = net->loss_and_grad(alg->model(), data.train, sampler.next(), grad);
    }
    if (!std::isfinite(loss) || loss > c.train.diverge_loss || !all_finite(grad)) {
      outcome = node_exit::diverged;
      summary.error = "diverged at round " + std::to_string(t) + ": training loss " + std::to_string(loss) +
                      (std::isfinite(loss) && loss > c.train.diverge_loss
                           ? " > train.diverge_loss " + std::to_string(c.train.diverge_loss)
                           : "");
      break;
    }
    loss_sum += loss;
    ++loss_count;
    std::span<const float> v = alg->outgoing(local.apply(grad, alg->model()), static_cast<float>(lr), t);
    if (!all_finite(v)) {
      outcome = node_exit::diverged;
      summary.error = "diverged at round " + std::to_string(t) + ": the outgoing message is not finite";
      break;
    }
    const auto t1 = clock_type::now();
    auto t2 = t1, t3 = t1, t4 = t1;
    const std::uint64_t sent_before = ex.stats().bytes_sent, recv_before = ex.stats().bytes_received;
    status st;
    if (pattern == communication::ring_allreduce) {
      std::copy(v.begin(), v.end(), reduced.begin());
      if (reducer) st = reducer->sum(reduced, (t - 1) * steps_per_round + 1);
      t3 = t4 = clock_type::now();
      if (st) alg->absorb_own(reduced, t);
    } else {
      codec_context ctx{.seed = c.seed, .rank = static_cast<std::uint32_t>(rank), .iteration = t, .stream = 0};
      encoded.clear();
      if (factored) factored->encode(factors, ctx, encoded);
      else codec->encode(v, ctx, encoded);
      auto decode = [&](std::span<const std::byte> bytes, const codec_context& dctx, float_vector& out) {
        if (!factored) return codec->decode(bytes, dctx, out);
        std::fill(out.begin(), out.end(), 0.0f);
        return factored->decode(bytes, dctx, fc_shapes, out);
      };
      status own = decode(encoded, ctx, own_decoded);
      QG_ENFORCE(own.is_ok(), "the compressor cannot decode its own message: " << own.to_string());
      alg->absorb_own(own_decoded, t);
      t2 = clock_type::now();
      outgoing_message msg{.codec = static_cast<std::uint16_t>(factored ? factored->id() : codec->id()),
                           .codec_tag = factored ? factored->params_tag() : codec->params_tag(),
                           .count = static_cast<std::uint32_t>(dim),
                           .payload = encoded};
      st = ex.round(message_kind::train, t, msg, inbound, round_peers{train_peers, train_peers});
      t3 = clock_type::now();
      for (std::size_t k = 0; st && k < inbound.size(); ++k) {
        const int from = train_peers[k];
        codec_context rctx{.seed = c.seed, .rank = static_cast<std::uint32_t>(from), .iteration = t, .stream = 0};
        status d = decode(inbound[k].payload, rctx, decoded);
        if (!d.is_ok()) {
          // The checksum matched, so the sender encoded something invalid: a bug or a mismatched build.
          st = status::error(d.code(), "cannot decode the message of rank " + std::to_string(from) + ": " + d.message());
          break;
        }
        alg->absorb(from, decoded, t);
      }
      t4 = clock_type::now();
    }
    last_round_sent = ex.stats().bytes_sent - sent_before;
    last_round_recv = ex.stats().bytes_received - recv_before;
    if (!st.is_ok()) {
      outcome = st.code() == errc::cancelled ? node_exit::interrupted : node_exit::failed;
      summary.error = "round " + std::to_string(t) + ": " + st.to_string();
      break;
    }
    alg->finish(t);
    completed = t;
    const auto t5 = clock_type::now();
    compute_s += std::chrono::duration<double>((t1 - t0) + (t5 - t4)).count();
    codec_s += std::chrono::duration<double>((t2 - t1) + (t4 - t3)).count();

    rec.consensus_dist.reset();
    rec.avg_test_loss.reset();
    rec.avg_test_acc.reset();
    const bool probe_now = probing && (t % static_cast<std::uint64_t>(c.train.consensus_every) == 0 || t == rounds);
    if (probe_now) {
      if (status ps = probe(t, t == rounds); !ps) {
        outcome = ps.code() == errc::cancelled ? node_exit::interrupted : node_exit::failed;
        summary.error = "round " + std::to_string(t) + ": consensus probe: " + ps.to_string();
        break;
      }
    }
    const bool eval_now = t % eval_period == 0 && t != rounds;
    if (eval_now || probe_now || t % static_cast<std::uint64_t>(c.train.log_every) == 0 || t == rounds) {
      rec.test_loss.reset();
      rec.test_acc.reset();
      if (eval_now) evaluate(static_cast<std::size_t>(c.train.eval_examples));
      if (t == rounds) evaluate(0);
      fill_record(t, lr);
      log.row(rec);
      log.progress(rec, rounds);
      loss_sum = 0;
      loss_count = 0;
    }
  }

  if (outcome == node_exit::ok && emulated) {
    // The last round's messages may still be in the emulated link: let them leave.
    if (status fs = emulated->flush(clock_type::now() + to_ms(c.network.linger_s)); !fs)
      say(rank, "warning: messages still in the emulated link at exit: " + fs.to_string());
  }

  if (outcome != node_exit::ok) {
    say(rank, "stopping: " + summary.error);
    zmq.abandon_queued();
    if (rec.iteration != t) {
      rec.test_loss.reset();
      rec.test_acc.reset();
      if (outcome != node_exit::diverged) evaluate(0);
      fill_record(t, lr);
      log.row(rec);
    }
  }
  summary.status = outcome == node_exit::ok ? "ok"
                   : outcome == node_exit::diverged ? "diverged"
                   : outcome == node_exit::interrupted ? "interrupted" : "failed";
  summary.last = rec;
  summary.rounds = completed;
  summary.mean_round_bytes_sent =
      summary.rounds ? static_cast<double>(ex.stats().bytes_sent - ex.stats().probe_bytes_sent) /
                           static_cast<double>(summary.rounds)
                     : 0.0;
  summary.wall_s = seconds_since(wall_start);
  summary.model_hash = hash64(alg->model());
  for (const auto& copy : alg->held_copies()) summary.copies.push_back({copy.rank, hash64(copy.values)});
  summary.rejected_detail = rejected_detail(ex.stats());
  log.finish(summary);
  if (outcome == node_exit::ok) {
    std::ostringstream os;
    os << "done: " << summary.rounds << " rounds in " << summary.wall_s << " s, test accuracy "
       << (rec.test_acc ? *rec.test_acc : 0.0) << ", sent " << rec.bytes_sent / 1e6 << " MB ("
       << summary.mean_round_bytes_sent << " B/round), time compute " << rec.compute_s << " s, codec "
       << rec.codec_s << " s, comm " << rec.comm_s << " s";
    say(rank, os.str());
  }
  return outcome;
}

}  // namespace qgossip
