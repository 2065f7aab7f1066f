// The round's patterns on their own, over the in-process transport (one thread per node): gossip on
// a ring with a message codec that is a test double (it sends float32 with the low 12 mantissa bits
// cleared: lossy, so a node that applied its own vector instead of what its neighbours decode would
// drift from their copies of it), and the ring all-reduce. A new codec plugs into the round through
// message_codec alone (docs/design.md, "Where things go"): this file is the whole of the double.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "core/errors.hpp"
#include "core/hash.hpp"
#include "gossip/exchange.hpp"
#include "gossip/faulty_transport.hpp"
#include "gossip/inproc/transport.hpp"
#include "gossip/transport_wrapper.hpp"
#include "gossip/wire.hpp"
#include "node/config/config.hpp"
#include "node/run/async_gossip_round.hpp"
#include "node/run/gossip_round.hpp"
#include "node/run/hostile_round.hpp"
#include "node/run/message_codec.hpp"
#include "node/run/message_inbox.hpp"
#include "node/run/pattern_factory.hpp"
#include "node/run/round_pattern.hpp"
#include "tests/gossip/spawn.hpp"

using namespace qgossip;

namespace {

// float32 with the low 12 bits of the mantissa cleared: deterministic and lossy. Under the identity
// codec's id (1) by default, which a ring sends as raw float32; under another id a ring codes its
// hops with it. It records the stream of every encode.
class truncating_codec final : public message_codec {
 public:
  explicit truncating_codec(std::uint16_t id = 1) : id_(id) {}
  std::uint16_t id() const override { return id_; }
  std::uint32_t tag() const override { return 0x4a1fu; }
  std::size_t max_encoded_bytes() const override { return 4 * kValues; }
  std::string describe() const override { return "truncating (a test double)"; }
  double relative_error_bound() const override { return 0; }
  void encode(std::span<const float> v, const codec_context& ctx, std::vector<std::byte>& out) override {
    streams.push_back(ctx.stream);
    for (float x : v) {
      std::uint32_t bits;
      std::memcpy(&bits, &x, 4);
      bits &= ~std::uint32_t{0xfff};
      const auto* b = reinterpret_cast<const std::byte*>(&bits);
      out.insert(out.end(), b, b + 4);
    }
  }
  status decode(std::span<const std::byte> in, const codec_context&, std::span<float> out) const override {
    if (in.size() != 4 * out.size()) return status::error(errc::corrupt, "wrong size");
    for (std::size_t i = 0; i < out.size(); ++i) std::memcpy(&out[i], in.data() + 4 * i, 4);
    return status::ok();
  }
  void save_state(state_writer&) const override {}
  void load_state(state_reader&) override {}
  static constexpr std::size_t kValues = 24;
  std::vector<std::uint32_t> streams;

 private:
  std::uint16_t id_;
};

mixing_row ring_row(int rank, int n) {
  mixing_row row;
  row.rank = rank;
  row.neighbours = test::ring_neighbours(rank, n);
  row.weights.assign(row.neighbours.size(), 1.0 / 3);
  row.self_weight = 1.0 - static_cast<double>(row.neighbours.size()) / 3;
  return row;
}

exchange_options options(int rank, const pattern_shape& shape) {
  exchange_options o;
  o.rank = rank;
  o.neighbours = shape.train_peers;
  o.run_id = 7;
  o.lookahead = shape.lookahead;
  return o;
}

// Train messages into the inbox, as node/run/link_events.hpp puts them (none: the ring collects its own).
struct inbox_events final : exchange_events {
  explicit inbox_events(message_inbox* in) : inbox(in) {}
  status train_message(const wire_header& h, received_bytes& p) override {
    return inbox ? inbox->accept(h, p) : status::ok();
  }
  message_inbox* inbox;
};

// Node rank's model after `rounds` rounds of `name` over its pattern, and its copies' hashes.
struct node_result {
  std::uint64_t model = 0;
  std::vector<std::pair<int, std::uint64_t>> copies;
  std::vector<std::uint32_t> streams;  // the codec's, of each encode
};

// hostile: this node's attack (node/run/hostile_round.hpp wraps its pattern), if any.
node_result run_node(inproc_transport& t, const std::string& name, int rank, int n, int rounds,
                     std::uint16_t codec_id = 1, const std::optional<attack_spec>& hostile = std::nullopt) {
  std::vector<float> x0(truncating_codec::kValues, 0.5f);
  const bool ring = name == "allreduce";
  const mixing_row row = ring ? complete_mixing_row(rank, n) : ring_row(rank, n);
  auto alg = make_algorithm(name, row, x0);
  truncating_codec codec(codec_id);
  const pattern_shape shape = shape_of(alg->pattern(), rank, n, alg->row().neighbours);
  auto inbox = shape.gossip ? std::make_unique<message_inbox>(codec, 1, shape.train_peers, x0.size()) : nullptr;
  inbox_events events(inbox.get());
  exchange ex(t, options(rank, shape), &events);
  auto pattern = make_round_pattern(shape, {.alg = *alg, .codec = codec, .ex = ex, .inbox = inbox.get(), .rank = rank,
                                            .n = n, .seed = 1, .train_peers = shape.train_peers});
  CHECK(async_progress_of(*pattern) == nullptr);  // synchronous rounds: nothing to say of them
  dataset no_data;  // the attacks below send messages; none poisons data
  if (hostile)
    pattern = std::make_unique<hostile_round>(std::move(pattern), *hostile, robust_options{}, *alg, codec, rank, 1,
                                              no_data, 1);
  std::vector<float> grad(x0.size());
  for (int t = 1; t <= rounds; ++t) {
    for (std::size_t i = 0; i < grad.size(); ++i) grad[i] = std::sin(float(rank * 31 + t * 7 + int(i)));
    pattern->encode(alg->outgoing(grad, 0.1f, static_cast<std::uint64_t>(t)), static_cast<std::uint64_t>(t));
    REQUIRE(pattern->exchange(static_cast<std::uint64_t>(t)).is_ok());
    pattern->absorb(static_cast<std::uint64_t>(t));
    alg->finish(static_cast<std::uint64_t>(t));
  }
  node_result r{.model = hash64(alg->model()), .copies = {}, .streams = codec.streams};
  for (const auto& c : alg->held_copies()) r.copies.emplace_back(c.rank, hash64(c.values));
  return r;
}

}  // namespace

TEST_CASE("gossip_round with a codec test double: every copy equals its owner, bit for bit") {
  for (const std::string name : {"dcd", "ecd", "choco"}) {
    CAPTURE(name);
    constexpr int n = 5;
    inproc_network net(n);
    std::vector<inproc_transport> ends;
    for (int r = 0; r < n; ++r) ends.push_back(net.endpoint(r));
    const auto results = test::spawn(n, [&](int rank) { return run_node(ends[static_cast<std::size_t>(rank)], name, rank, n, 12); });
    for (int r = 0; r < n; ++r)
      for (const auto& [owner, hash] : results[static_cast<std::size_t>(r)].copies)
        if (owner != r) {
          CAPTURE(r);
          CAPTURE(owner);
          // The owner's own copy of itself (ECD estimate, CHOCO public copy, DCD model) is what
          // its neighbours hold.
          std::uint64_t own = results[static_cast<std::size_t>(owner)].model;
          for (const auto& [o, h] : results[static_cast<std::size_t>(owner)].copies)
            if (o == owner) own = h;
          CHECK(hash == own);
        }
  }
}

namespace {

// A transport that, while `hold` is set, keeps each kept payload's owner as ZeroMQ does a message
// still being sent (delivered at once through the inner transport's copy), with the bytes as sent.
struct holding_sends final : transport_wrapper {
  explicit holding_sends(transport& inner) : transport_wrapper(inner) {}
  status send_all_kept(std::span<const int> peers, std::span<const std::byte> header,
                       std::span<const std::byte> payload, std::shared_ptr<const void> owner) override {
    if (hold && owner) held.push_back({std::move(owner), payload, {payload.begin(), payload.end()}});
    return send_all(peers, header, payload);
  }
  struct sent {
    std::shared_ptr<const void> owner;
    std::span<const std::byte> bytes;
    std::vector<std::byte> as_sent;
  };
  bool hold = false;
  std::vector<sent> held;
};

}  // namespace

// The own message goes to the transport with its owner (send_all_kept), and the node encodes the
// next one into a buffer the transport let go of: the same one round after round while each is sent
// at once, another while the transport still holds it (up to three, then a new one in the oldest's
// place), and never into bytes the transport holds. Copies stay exact throughout.
TEST_CASE("gossip_round: the own message's buffer is reused once the transport lets go, never while held") {
  constexpr int n = 2;
  inproc_network net(n);
  inproc_transport end0 = net.endpoint(0), end1 = net.endpoint(1);
  holding_sends held0(end0);
  std::thread peer([&] { (void)run_node(end1, "choco", 1, n, 9); });
  const std::vector<float> x0(truncating_codec::kValues, 0.5f);
  auto alg = make_algorithm("choco", ring_row(0, n), x0);
  truncating_codec codec;
  const pattern_shape shape = shape_of(alg->pattern(), 0, n, alg->row().neighbours);
  message_inbox inbox(codec, 1, shape.train_peers, x0.size());
  inbox_events events(&inbox);
  exchange ex(held0, options(0, shape), &events);
  auto pattern = make_round_pattern(shape, {.alg = *alg, .codec = codec, .ex = ex, .inbox = &inbox, .rank = 0,
                                            .n = n, .seed = 1, .train_peers = shape.train_peers});
  auto* gossip = dynamic_cast<gossip_round*>(pattern.get());
  REQUIRE(gossip);
  std::vector<const std::byte*> at;  // each round's encoded bytes
  std::vector<float> grad(x0.size());
  for (std::uint64_t t = 1; t <= 9; ++t) {
    held0.hold = t >= 3 && t <= 6;  // the transport holds rounds 3..6's messages
    if (t == 7) held0.held.clear();  // then lets go of them all
    for (std::size_t i = 0; i < grad.size(); ++i) grad[i] = std::sin(float(t * 7 + i));
    pattern->encode(alg->outgoing(grad, 0.1f, t), t);
    const outgoing_message wire = gossip->message().wire();
    CHECK(wire.payload_owner != nullptr);
    at.push_back(wire.payload.data());
    for (const auto& h : held0.held) {  // nothing held was written over
      CHECK(h.bytes.data() != wire.payload.data());
      CHECK(std::equal(h.bytes.begin(), h.bytes.end(), h.as_sent.begin(), h.as_sent.end()));
    }
    REQUIRE(pattern->exchange(t).is_ok());
    pattern->absorb(t);
    alg->finish(t);
  }
  peer.join();
  CHECK(at[1] == at[0]);  // sent at once: one buffer
  CHECK(at[2] == at[0]);  // round 3's own encode came before the hold
  CHECK(at[3] != at[2]);  // 3's held: another
  CHECK(at[4] != at[3]);
  CHECK(at[4] != at[2]);  // 3's and 4's held: the third
  CHECK(at[5] != at[4]);  // all three held: a new one in the oldest's place
  CHECK(at[6] == at[5]);  // let go: the latest is reused again
  CHECK(at[7] == at[6]);
  CHECK(at[8] == at[6]);
}

// A hostile node (node/run/hostile_round.hpp) trains and mixes honestly: its own state after the
// attack's first round is the honest run's (that round's mix used its neighbours' messages, made
// before they heard it), while its neighbours hold the attack's copy of it; per-neighbour attacks
// give each neighbour its own (the exchange's per-link payloads). The honest nodes' copies of each
// other stay exact.
TEST_CASE("hostile_round: the honest pattern's message is replaced from the attack's round on") {
  constexpr int n = 5;
  auto run = [](const std::optional<attack_spec>& hostile) {
    inproc_network net(n);
    std::vector<inproc_transport> ends;
    for (int r = 0; r < n; ++r) ends.push_back(net.endpoint(r));
    return test::spawn(n, [&](int rank) {
      return run_node(ends[static_cast<std::size_t>(rank)], "choco", rank, n, 4, 1,
                      rank == 0 ? hostile : std::nullopt);
    });
  };
  auto copy_of = [](const node_result& r, int owner) {
    for (const auto& [o, h] : r.copies)
      if (o == owner) return h;
    FAIL("no copy of " << owner);
    return std::uint64_t{0};
  };
  const auto honest = run(std::nullopt);
  for (const attack_kind a : {attack_kind::flip, attack_kind::equivocate}) {
    CAPTURE(to_text(a));
    const auto attacked = run(attack_spec{.rank = 0, .attack = a, .from_round = 4});
    CHECK(attacked[0].model == honest[0].model);
    CHECK(copy_of(attacked[0], 0) == copy_of(honest[0], 0));  // its own public copy: honest
    CHECK(copy_of(attacked[4], 0) != copy_of(honest[4], 0));  // what its neighbours hold: the attack's
    // flip: one message for both neighbours. equivocate: x to neighbour 1 (the first), so the honest
    // message there; −x to neighbour 4.
    const bool equivocating = a == attack_kind::equivocate;
    CHECK((copy_of(attacked[1], 0) == copy_of(attacked[4], 0)) == !equivocating);
    CHECK((copy_of(attacked[1], 0) == copy_of(honest[1], 0)) == equivocating);
    CHECK(copy_of(attacked[2], 1) == copy_of(attacked[1], 1));  // honest copies stay exact
    CHECK(copy_of(attacked[3], 4) == copy_of(attacked[4], 4));
  }
}

TEST_CASE("ring_round: every node ends with the same model") {
  constexpr int n = 4;
  inproc_network net(n);
  std::vector<inproc_transport> ends;
  for (int r = 0; r < n; ++r) ends.push_back(net.endpoint(r));
  const auto results = test::spawn(n, [&](int rank) { return run_node(ends[static_cast<std::size_t>(rank)], "allreduce", rank, n, 6); });
  for (int r = 1; r < n; ++r) CHECK(results[static_cast<std::size_t>(r)].model == results[0].model);
  for (const node_result& r : results) CHECK(r.streams.empty());  // the identity's id: raw float32
}

// The ring codes its hops with the learner's codec (a codec under another id than the identity's),
// each chunk its own stream: a rank encodes the partial sum of chunks rank, rank − 1, ... (n − 1
// reduce-scatter hops) and the full sum of chunk rank + 1 once, so each of the n streams comes up.
TEST_CASE("ring_round: the hops are coded with the learner's codec, the chunk as the stream") {
  constexpr int n = 4;
  constexpr int rounds = 3;
  auto run = [](std::uint16_t codec_id) {
    inproc_network net(n);
    std::vector<inproc_transport> ends;
    for (int r = 0; r < n; ++r) ends.push_back(net.endpoint(r));
    return test::spawn(n, [&](int rank) {
      return run_node(ends[static_cast<std::size_t>(rank)], "allreduce", rank, n, rounds, codec_id);
    });
  };
  const auto raw = run(1);
  const auto coded = run(static_cast<std::uint16_t>(codec_id::qsgd));
  for (int r = 0; r < n; ++r) {
    CAPTURE(r);
    const node_result& c = coded[static_cast<std::size_t>(r)];
    CHECK(c.model == coded[0].model);
    CHECK(c.model != raw[0].model);  // lossy: the truncation shows in the sum
    REQUIRE(c.streams.size() == static_cast<std::size_t>(n * rounds));
    std::vector<std::uint32_t> first(c.streams.begin(), c.streams.begin() + n);
    std::sort(first.begin(), first.end());
    CHECK(first == std::vector<std::uint32_t>{0, 1, 2, 3});
  }
}

// Asynchronous gossip needs the algorithm's async_mixing (algorithms/capabilities.hpp): a centralized
// algorithm, which has none (the config refuses the combination first), is an invariant error.
TEST_CASE("make_round_pattern: asynchronous rounds refuse an algorithm without async_mixing") {
  constexpr int n = 3;
  inproc_network net(n);
  inproc_transport end0 = net.endpoint(0);
  const std::vector<float> x0(truncating_codec::kValues, 0.5f);
  auto alg = make_algorithm("allgather", complete_mixing_row(0, n), x0);
  truncating_codec codec;
  const pattern_shape shape = shape_of(alg->pattern(), 0, n, alg->row().neighbours, 2);
  message_inbox inbox(codec, 1, shape.train_peers, x0.size());
  inbox_events events(&inbox);
  exchange ex(end0, options(0, shape), &events);
  const round_pattern_parts parts{.alg = *alg, .codec = codec, .ex = ex, .inbox = &inbox, .rank = 0,
                                  .n = n, .seed = 1, .train_peers = shape.train_peers};
  CHECK_THROWS_AS((void)make_round_pattern(shape, parts), invariant_error);
}

namespace {

// Rank 0 of a ring of 3, alone, gossiping asynchronously (CHOCO): its neighbours never send.
struct lone_async_node {
  static constexpr int n = 3;
  inproc_network net{n};
  inproc_transport end0 = net.endpoint(0);
  std::vector<float> x0 = std::vector<float>(truncating_codec::kValues, 0.5f);
  std::unique_ptr<algorithm> alg =
      make_algorithm("choco", ring_row(0, n), x0, {.consensus_step = 0.8, .asynchronous = true});
  truncating_codec codec;
  pattern_shape shape;
  std::unique_ptr<message_inbox> inbox;
  inbox_events events{nullptr};
  std::unique_ptr<exchange> ex;
  std::unique_ptr<round_pattern> pattern;

  lone_async_node(std::uint64_t tau, std::chrono::milliseconds first_deadline,
                  std::chrono::milliseconds round_deadline)
      : shape(shape_of(alg->pattern(), 0, n, alg->row().neighbours, tau)),
        inbox(std::make_unique<message_inbox>(codec, 1, shape.train_peers, x0.size())) {
    events.inbox = inbox.get();
    exchange_options o = options(0, shape);
    o.asynchronous = true;
    o.first_deadline = first_deadline;
    o.round_deadline = round_deadline;
    ex = std::make_unique<exchange>(end0, o, &events);
    pattern = make_round_pattern(shape, {.alg = *alg, .codec = codec, .ex = *ex, .inbox = inbox.get(),
                                         .rank = 0, .n = n, .seed = 1, .train_peers = shape.train_peers});
  }
  // Round t: encode and send, then gather; on success absorb and finish the round.
  status round(std::uint64_t t) {
    const std::vector<float> grad(x0.size(), 0.25f);
    pattern->encode(alg->outgoing(grad, 0.1f, t), t);
    status st = pattern->exchange(t);
    if (!st) return st;
    pattern->absorb(t);
    alg->finish(t);
    return st;
  }
};

}  // namespace

// Asynchronous gossip waits for nobody in rounds 1 to τ (τ unbounded: in no round), a neighbour that
// has not sent anything yet included (a slow start-up is a straggler like any other); round τ + 1
// waits for a message of round 1.
TEST_CASE("async_gossip_round: a neighbour that has sent nothing holds back only round τ + 1 and later") {
  using std::chrono::milliseconds;
  for (const std::uint64_t tau : {kUnboundedStaleness, std::uint64_t{2}}) {
    CAPTURE(tau);
    lone_async_node node(tau, milliseconds(300), milliseconds(300));
    const std::uint64_t free_rounds = tau == kUnboundedStaleness ? 4 : tau;
    for (std::uint64_t t = 1; t <= free_rounds; ++t) {
      CAPTURE(t);
      REQUIRE(node.round(t).is_ok());
    }
    const status st = node.round(free_rounds + 1);
    if (tau == kUnboundedStaleness) {
      CHECK(st.is_ok());  // within first_deadline of round 1: nobody is owed a message yet
    } else {
      REQUIRE_FALSE(st.is_ok());
      CHECK(st.code() == errc::timeout);
      CHECK(st.message().find("iteration 1 or later") != std::string::npos);
    }
  }
}

// Waiting for nobody is not waiting for ever: a neighbour not heard from at all by the first
// round's start + network.start_timeout_s (first_deadline) is a timeout, as in synchronous round 1.
TEST_CASE("async_gossip_round: a neighbour never heard from is a timeout after the start-up's deadline") {
  using std::chrono::milliseconds;
  lone_async_node node(kUnboundedStaleness, milliseconds(100), milliseconds(30000));
  REQUIRE(node.round(1).is_ok());
  std::this_thread::sleep_for(milliseconds(150));
  const status st = node.round(2);
  REQUIRE_FALSE(st.is_ok());
  CHECK(st.code() == errc::timeout);
  CHECK(st.message().find("rank 1") != std::string::npos);
}

namespace {

// One node of a ring of 3 gossiping asynchronously (CHOCO, τ unbounded) over `net`: it waits
// `delay`, then runs rounds until its last (`rounds`) or until the pattern says its peers are done,
// taking no step in the rounds the pattern says only mix, and leaves.
struct async_run {
  int rounds_run = 0;
  std::vector<bool> mixing_only;  // by round, from round 1
  std::vector<float> model, own_copy;
  std::vector<std::pair<int, std::uint64_t>> copies;
  double distance_after_round_1 = 0;  // ‖x_i − the mean of its neighbours' copies‖ then
  std::uint64_t delivered_by_round_1 = 0;  // the neighbours' newest rounds, summed, after it
  std::size_t most_held = 0;               // the most messages the inbox held after an exchange
};

double distance_to_neighbours(const algorithm& alg) {
  const auto held = alg.held_copies();  // own copy first, then the neighbours'
  double d = 0;
  for (std::size_t i = 0; i < alg.model().size(); ++i) {
    double mean = 0;
    for (std::size_t c = 1; c < held.size(); ++c) mean += held[c].values[i];
    mean /= static_cast<double>(held.size() - 1);
    d += (alg.model()[i] - mean) * (alg.model()[i] - mean);
  }
  return std::sqrt(d);
}

async_run run_async_node(inproc_transport& t, int rank, int rounds, std::chrono::milliseconds delay) {
  constexpr int n = 3;
  std::vector<float> x0(truncating_codec::kValues, 0.5f);
  auto alg = make_algorithm("choco", ring_row(rank, n), x0, {.consensus_step = 0.8, .asynchronous = true});
  truncating_codec codec;
  const pattern_shape shape = shape_of(alg->pattern(), rank, n, alg->row().neighbours, kUnboundedStaleness);
  auto inbox = std::make_unique<message_inbox>(codec, 1, shape.train_peers, x0.size());
  exchange_options o = options(rank, shape);
  o.asynchronous = true;
  inbox_events events(inbox.get());
  exchange ex(t, o, &events);
  const round_pattern_parts parts{.alg = *alg, .codec = codec, .ex = ex, .inbox = inbox.get(), .rank = rank,
                                  .n = n, .seed = 1, .train_peers = shape.train_peers};
  auto pattern = make_round_pattern(shape, parts);
  const async_progress* progress = async_progress_of(*pattern);
  REQUIRE(progress != nullptr);
  std::this_thread::sleep_for(delay);
  async_run r;
  std::vector<float> grad(x0.size());
  for (int k = 1; k <= rounds; ++k) {
    const auto round = static_cast<std::uint64_t>(k);
    r.mixing_only.push_back(progress->mixing_only());
    for (std::size_t i = 0; i < grad.size(); ++i)
      grad[i] = r.mixing_only.back() ? 0.0f : std::sin(float(rank * 31 + k * 7 + int(i)));
    pattern->encode(alg->outgoing(grad, 0.1f, round), round);
    REQUIRE(pattern->exchange(round).is_ok());
    r.most_held = std::max(r.most_held, inbox->size());
    pattern->absorb(round);
    alg->finish(round);
    r.rounds_run = k;
    if (k == 1) {
      r.distance_after_round_1 = distance_to_neighbours(*alg);
      for (int j : alg->row().neighbours) r.delivered_by_round_1 += ex.newest(j);
    }
    if (progress->peers_done()) break;
  }
  REQUIRE(pattern->leave(static_cast<std::uint64_t>(r.rounds_run),
                         transport_clock::now() + std::chrono::seconds(10)).is_ok());
  r.model.assign(alg->model().begin(), alg->model().end());
  for (const auto& c : alg->held_copies()) {
    if (c.rank == rank) r.own_copy.assign(c.values.begin(), c.values.end());
    r.copies.emplace_back(c.rank, hash64(c.values));
  }
  return r;
}

}  // namespace

// A node that is behind when its neighbours finish (it starts 200 ms after them) finds them finished
// in its first round, then runs async_gossip_round::kCatchUpRounds rounds that only mix, pulling its
// model to their final copies (each round a fraction γ(1 − W_ii) = 0.8 · 2/3 of the way: 0.47^4 of
// the distance is left, well under the 0.1 checked), and stops; every copy equals its owner.
TEST_CASE("async_gossip_round: a node behind finished neighbours catches up by mixing only, then stops") {
  constexpr int kRounds = 12, kNeighbourRounds = 5;
  inproc_network net(3);
  std::vector<inproc_transport> ends;
  for (int r = 0; r < 3; ++r) ends.push_back(net.endpoint(r));
  const auto runs = test::spawn(3, [&](int r) {
    return run_async_node(ends[static_cast<std::size_t>(r)], r, r == 0 ? kRounds : kNeighbourRounds,
                          std::chrono::milliseconds(r == 0 ? 200 : 0));
  });
  const async_run& behind = runs[0];
  const auto catch_up = static_cast<int>(async_gossip_round::kCatchUpRounds);
  CHECK(behind.rounds_run == 1 + catch_up);
  // Its first round was delivered all ten of its neighbours' messages; the inbox held at most two per
  // neighbour (the rest went to the algorithm as they came), and the copies below are still exact.
  CHECK(behind.delivered_by_round_1 == 2 * kNeighbourRounds);
  CHECK(behind.most_held <= 2 * async_gossip_round::kHeldPerPeer);
  REQUIRE(behind.mixing_only.size() == static_cast<std::size_t>(1 + catch_up));
  CHECK_FALSE(behind.mixing_only[0]);
  for (int k = 1; k <= catch_up; ++k) CHECK(behind.mixing_only[static_cast<std::size_t>(k)]);
  for (int r = 1; r < 3; ++r) {
    CHECK(runs[static_cast<std::size_t>(r)].rounds_run == kNeighbourRounds);
    for (bool m : runs[static_cast<std::size_t>(r)].mixing_only) CHECK_FALSE(m);
  }
  // Distance to the mean of the (final) neighbours' copies, from the end of round 1 to the end.
  double d = 0;
  for (std::size_t i = 0; i < behind.model.size(); ++i) {
    double mean = 0;
    for (int r = 1; r < 3; ++r) mean += runs[static_cast<std::size_t>(r)].own_copy[i] / 2.0;
    d += (behind.model[i] - mean) * (behind.model[i] - mean);
  }
  REQUIRE(behind.distance_after_round_1 > 0.01);
  CHECK(std::sqrt(d) < 0.1 * behind.distance_after_round_1);
  // Every holder's copy of rank r equals r's own (the catch-up rounds' messages were taken by the
  // finished neighbours in their leave()).
  for (int owner = 0; owner < 3; ++owner) {
    const std::uint64_t own = hash64(runs[static_cast<std::size_t>(owner)].own_copy);
    for (int holder = 0; holder < 3; ++holder)
      for (const auto& [rank, hash] : runs[static_cast<std::size_t>(holder)].copies)
        if (rank == owner) CHECK_MESSAGE(hash == own, "rank " << holder << "'s copy of rank " << owner);
  }
}

// hold_at_most: the inbox hands what it holds to its flush before it takes one more; unset, it holds
// every message a round delivers.
TEST_CASE("message_inbox: hold_at_most bounds the messages held, flushing them in delivery order") {
  truncating_codec codec;
  message_inbox inbox(codec, 1, {1, 2}, truncating_codec::kValues);
  std::vector<std::pair<int, std::uint64_t>> flushed;
  inbox.hold_at_most(3, [&] {
    for (std::size_t i = 0; i < inbox.size(); ++i) flushed.emplace_back(inbox.at(i).from, inbox.at(i).iteration);
    inbox.clear();
  });
  std::vector<std::byte> encoded;
  codec.encode(std::vector<float>(truncating_codec::kValues, 1.0f), {}, encoded);
  received_bytes payload;  // taken by each accept: a fresh copy each time
  for (std::uint64_t t = 1; t <= 4; ++t)
    for (std::uint32_t from : {1u, 2u}) {
      wire_header h;
      h.sender = from;
      h.iteration = t;
      payload.assign(encoded.begin(), encoded.end());
      REQUIRE(inbox.accept(h, payload).is_ok());
    }
  // Eight messages: two flushes of three, two left.
  const std::vector<std::pair<int, std::uint64_t>> expected{{1, 1}, {2, 1}, {1, 2}, {2, 2}, {1, 3}, {2, 3}};
  CHECK(flushed == expected);
  REQUIRE(inbox.size() == 2);
  CHECK(inbox.at(0).iteration == 4);
  CHECK(inbox.at(1).from == 2);
  inbox.hold_at_most(0, {});
  inbox.clear();
  wire_header h;
  h.sender = 1;
  for (std::uint64_t t = 1; t <= 5; ++t) {
    h.iteration = t;
    payload.assign(encoded.begin(), encoded.end());
    REQUIRE(inbox.accept(h, payload).is_ok());
  }
  CHECK(inbox.size() == 5);
  CHECK(flushed.size() == expected.size());
  CHECK_THROWS_AS(inbox.hold_at_most(2, {}), invariant_error);
}

// A busy link (docs/algorithms.md, "A busy uplink"), CHOCO with a public copy per edge: rank 0 of a
// ring of 3, 4 rounds, its link to rank 2 busy from round 2 on. Rounds 2 and 3 send to rank 1 alone;
// the last round sends on every link, busy or not, so rank 2's copy of rank 0 is its final one.
TEST_CASE(
    "async_gossip_round: a busy link is skipped, the other sent every round, and the last round sends on "
    "both") {
  constexpr int n = 3;
  constexpr std::uint64_t kRounds = 4;
  inproc_network net{n};
  inproc_transport end0 = net.endpoint(0), end1 = net.endpoint(1), end2 = net.endpoint(2);
  faulty_transport link0{end0, {}};
  const std::vector<float> x0(truncating_codec::kValues, 0.5f);
  algorithm_options per_edge{.consensus_step = 0.8, .asynchronous = true};
  per_edge.per_edge_copies = true;
  auto alg = make_algorithm("choco", ring_row(0, n), x0, per_edge);
  truncating_codec codec;
  const pattern_shape shape = shape_of(alg->pattern(), 0, n, alg->row().neighbours, kUnboundedStaleness);
  message_inbox inbox(codec, 1, shape.train_peers, x0.size());
  exchange_options o = options(0, shape);
  o.asynchronous = true;
  inbox_events events(&inbox);
  exchange ex(link0, o, &events);
  auto pattern = make_round_pattern(shape, {.alg = *alg,
                                            .codec = codec,
                                            .ex = ex,
                                            .inbox = &inbox,
                                            .rank = 0,
                                            .n = n,
                                            .seed = 1,
                                            .train_peers = shape.train_peers,
                                            .rounds = kRounds});
  const std::vector<float> grad(x0.size(), 0.25f);
  for (std::uint64_t t = 1; t <= kRounds; ++t) {
    if (t == 2) link0.set_queued(2, kWireHeaderBytes + 4 * truncating_codec::kValues);  // a whole message
    pattern->encode(alg->outgoing(grad, 0.1f, t), t);
    REQUIRE(pattern->exchange(t).is_ok());
    pattern->absorb(t);
    alg->finish(t);
  }
  CHECK(async_progress_of(*pattern)->messages_unsent() == 2);
  CHECK(async_progress_of(*pattern)->rounds_unsent() == 0);
  CHECK(test::received_train(end1, 7, 0) ==
        std::vector<std::pair<std::uint64_t, std::uint16_t>>{{1, 0}, {2, 0}, {3, 0}, {4, 0}});
  CHECK(test::received_train(end2, 7, 0) ==
        std::vector<std::pair<std::uint64_t, std::uint16_t>>{{1, 0}, {4, 2}});
  // Its copies for the two edges differ (each moved with what its edge carried).
  const std::vector<held_copy> held = alg->held_copies();
  REQUIRE((held[0].holder == 1 && held[1].holder == 2));
  CHECK(hash64(held[0].values) != hash64(held[1].values));
}

// A link to a dropped peer (its remix not yet come) is neither encoded for nor counted as skipped:
// its edge copy stays where the last message left it.
TEST_CASE("async_gossip_round: a dropped peer's link is not sent on, nor counted as a skipped message") {
  constexpr int n = 3;
  inproc_network net{n};
  inproc_transport end0 = net.endpoint(0), end1 = net.endpoint(1), end2 = net.endpoint(2);
  const std::vector<float> x0(truncating_codec::kValues, 0.5f);
  algorithm_options per_edge{.consensus_step = 0.8, .asynchronous = true};
  per_edge.per_edge_copies = true;
  auto alg = make_algorithm("choco", ring_row(0, n), x0, per_edge);
  truncating_codec codec;
  const pattern_shape shape = shape_of(alg->pattern(), 0, n, alg->row().neighbours, kUnboundedStaleness);
  message_inbox inbox(codec, 1, shape.train_peers, x0.size());
  exchange_options o = options(0, shape);
  o.asynchronous = true;
  inbox_events events(&inbox);
  exchange ex(end0, o, &events);
  auto pattern = make_round_pattern(shape, {.alg = *alg,
                                            .codec = codec,
                                            .ex = ex,
                                            .inbox = &inbox,
                                            .rank = 0,
                                            .n = n,
                                            .seed = 1,
                                            .train_peers = shape.train_peers});
  const std::vector<float> grad(x0.size(), 0.25f);
  std::uint64_t copy_for_2 = 0;
  for (std::uint64_t t = 1; t <= 3; ++t) {
    if (t == 2) ex.drop(2);
    pattern->encode(alg->outgoing(grad, 0.1f, t), t);
    REQUIRE(pattern->exchange(t).is_ok());
    pattern->absorb(t);
    alg->finish(t);
    const std::vector<held_copy> held = alg->held_copies();
    REQUIRE(held[1].holder == 2);
    if (t == 1) copy_for_2 = hash64(held[1].values);
    CHECK(hash64(held[1].values) == copy_for_2);
  }
  CHECK(async_progress_of(*pattern)->messages_unsent() == 0);
  CHECK(async_progress_of(*pattern)->rounds_unsent() == 0);
  CHECK(test::received_train(end1, 7, 0) ==
        std::vector<std::pair<std::uint64_t, std::uint16_t>>{{1, 0}, {2, 0}, {3, 0}});
  CHECK(test::received_train(end2, 7, 0) == std::vector<std::pair<std::uint64_t, std::uint16_t>>{{1, 0}});
}

namespace {

// Asynchronous gossip made deterministic: 8 nodes on a hypercube, CHOCO with a public copy per edge
// (train.max_staleness: unbounded, so no round waits), all in ONE thread over the in-process
// transport, in lockstep: round k runs node by node in an order that changes every round (rank
// order, reversed, rotated), so each gather finds a different mix of fresh and stale messages, but
// the same mix on every run. Returns each node's model hash after `rounds` rounds.
std::vector<std::uint64_t> lockstep_async_hypercube(int rounds) {
  constexpr int n = 8;
  inproc_network net(n);
  std::vector<inproc_transport> ends;
  for (int r = 0; r < n; ++r) ends.push_back(net.endpoint(r));
  struct node {
    std::unique_ptr<algorithm> alg;
    std::unique_ptr<message_inbox> inbox;
    std::unique_ptr<inbox_events> events;
    std::unique_ptr<exchange> ex;
    std::unique_ptr<round_pattern> pattern;
  };
  truncating_codec codec;
  std::vector<node> nodes(n);
  for (int r = 0; r < n; ++r) {
    node& v = nodes[static_cast<std::size_t>(r)];
    mixing_row row{.rank = r, .self_weight = 0.25, .neighbours = {r ^ 1, r ^ 2, r ^ 4}, .weights = {0.25, 0.25, 0.25}};
    std::sort(row.neighbours.begin(), row.neighbours.end());
    const std::vector<float> x0(truncating_codec::kValues, 0.5f);
    const algorithm_options alg_options{.consensus_step = 0.8, .asynchronous = true, .per_edge_copies = true};
    v.alg = make_algorithm("choco", row, x0, alg_options);
    const pattern_shape shape = shape_of(v.alg->pattern(), r, n, v.alg->row().neighbours, kUnboundedStaleness);
    v.inbox = std::make_unique<message_inbox>(codec, 1, shape.train_peers, x0.size());
    v.events = std::make_unique<inbox_events>(v.inbox.get());
    exchange_options o = options(r, shape);
    o.asynchronous = true;
    v.ex = std::make_unique<exchange>(ends[static_cast<std::size_t>(r)], o, v.events.get());
    v.pattern = make_round_pattern(shape, {.alg = *v.alg, .codec = codec, .ex = *v.ex, .inbox = v.inbox.get(),
                                           .rank = r, .n = n, .seed = 1, .train_peers = shape.train_peers});
  }
  std::vector<float> grad(truncating_codec::kValues);
  for (int k = 1; k <= rounds; ++k) {
    const auto t = static_cast<std::uint64_t>(k);
    for (int i = 0; i < n; ++i) {
      const int r = k % 3 == 0 ? (i + k) % n : k % 3 == 1 ? i : n - 1 - i;
      node& v = nodes[static_cast<std::size_t>(r)];
      for (std::size_t j = 0; j < grad.size(); ++j) grad[j] = std::sin(float(r * 31 + k * 7 + int(j)));
      v.pattern->encode(v.alg->outgoing(grad, 0.1f, t), t);
      REQUIRE(v.pattern->exchange(t).is_ok());
      v.pattern->absorb(t);
      v.alg->finish(t);
    }
  }
  std::vector<std::uint64_t> hashes;
  for (const node& v : nodes) hashes.push_back(hash64(v.alg->model()));
  return hashes;
}

}  // namespace

TEST_CASE("async_gossip_round: in lockstep on one thread, asynchronous gossip reproduces bit for bit") {
  const std::vector<std::uint64_t> first = lockstep_async_hypercube(40);
  CHECK(lockstep_async_hypercube(40) == first);
  std::ostringstream hashes;
  for (std::uint64_t h : first) hashes << std::hex << " 0x" << h;
  MESSAGE("model hashes:" << hashes.str());  // compared before and after a change to the exchange
}
