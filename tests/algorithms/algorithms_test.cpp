// The algorithms of docs/algorithms.md driven in one process: n nodes on a ring, each minimizing
// f_i(x) = 1/2 ||x - b_i||^2 (so the consensus optimum is the mean of the b_i), messages passed
// directly. A test-local unbiased stochastic rounding stands in for a compressor, so these tests
// pin down the update rules alone; compressors are tested in tests/compress.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/capabilities.hpp"
#include "core/errors.hpp"
#include "tests/algorithms/test_rows.hpp"

using namespace qgossip;
using qgossip::testing::ring_row;
using qgossip::testing::round_to_grid;

namespace {

constexpr int kDim = 64;

// Keeps the k = d/10 largest magnitudes (deterministic, biased): the top-k of CHOCO-SGD's paper.
std::vector<float> top_tenth(std::span<const float> v) {
  std::vector<std::size_t> idx(v.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  const std::size_t k = std::max<std::size_t>(1, v.size() / 10);
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(), [&](std::size_t a, std::size_t b) {
    return std::fabs(v[a]) != std::fabs(v[b]) ? std::fabs(v[a]) > std::fabs(v[b]) : a < b;
  });
  std::vector<float> out(v.size(), 0.0f);
  for (std::size_t i = 0; i < k; ++i) out[idx[i]] = v[idx[i]];
  return out;
}

struct simulation {
  int n;
  std::vector<std::vector<float>> targets;  // b_i
  std::vector<float> optimum;               // mean of b_i
  std::vector<std::unique_ptr<algorithm>> nodes;
  float levels = 0.0f;                      // quantizer levels; 0: exact messages; < 0: top-10%

  simulation(const std::string& name, int n_nodes, float quantizer_levels, double consensus_step = 1.0)
      : n(n_nodes), levels(quantizer_levels) {
    std::mt19937_64 rng(42);
    std::normal_distribution<float> g(0.0f, 1.0f);
    optimum.assign(kDim, 0.0f);
    for (int i = 0; i < n; ++i) {
      std::vector<float> b(kDim);
      for (auto& x : b) x = 3.0f * g(rng);
      for (int k = 0; k < kDim; ++k) optimum[k] += b[k] / n;
      targets.push_back(b);
    }
    std::vector<float> x0(kDim, 0.0f);
    for (int i = 0; i < n; ++i) nodes.push_back(make_algorithm(name, ring_row(i, n), x0, {consensus_step}));
  }

  void round(std::uint64_t t, float lr) {
    std::vector<std::vector<float>> sent(n);
    for (int i = 0; i < n; ++i) {
      auto x = nodes[i]->model();
      std::vector<float> grad(kDim);
      for (int k = 0; k < kDim; ++k) grad[k] = x[k] - targets[i][k];
      auto v = nodes[i]->outgoing(grad, lr, t);
      sent[i] = !nodes[i]->compresses() || levels == 0 ? std::vector<float>(v.begin(), v.end())
                : levels < 0                           ? top_tenth(v)
                                                       : round_to_grid(v, levels, i, t);
      nodes[i]->absorb_own(sent[i], t);
    }
    for (int i = 0; i < n; ++i) {
      for (int j : ring_row(i, n).neighbours) nodes[i]->absorb(j, sent[j], t);
      nodes[i]->finish(t);
    }
  }

  double max_distance_to_optimum() const {
    double worst = 0;
    for (const auto& node : nodes) {
      double d = 0;
      auto x = node->model();
      for (int k = 0; k < kDim; ++k) d += (x[k] - optimum[k]) * (x[k] - optimum[k]);
      worst = std::max(worst, std::sqrt(d));
    }
    return worst;
  }
};

bool bit_equal(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// lr_t = lr0 / sqrt(t): the decaying schedule under which the papers' algorithms reach the
// optimum exactly (a constant rate leaves an O(lr) neighbourhood for heterogeneous f_i).
float decaying(std::uint64_t t) { return 0.5f / std::sqrt(static_cast<float>(t)); }

}  // namespace

TEST_CASE("D-PSGD with exact messages reaches the consensus optimum") {
  simulation sim("dpsgd", 8, 0.0f);
  double start = sim.max_distance_to_optimum();
  for (std::uint64_t t = 1; t <= 3000; ++t) sim.round(t, decaying(t));
  // Deterministic (no randomness in exact D-PSGD): the bound is a plain numerical outcome with
  // a 10x margin over what this configuration reaches (about 0.1 from a start near 8.5).
  CHECK(sim.max_distance_to_optimum() < 0.1 * start);
}

TEST_CASE("DCD-PSGD: every replica equals its owner's model bit for bit, every round") {
  simulation sim("dcd", 6, 8.0f);
  for (std::uint64_t t = 1; t <= 400; ++t) {
    sim.round(t, decaying(t));
    for (int i = 0; i < sim.n; ++i)
      for (const auto& copy : sim.nodes[i]->held_copies())
        REQUIRE_MESSAGE(bit_equal(copy.values, sim.nodes[copy.rank]->model()),
                        "round " << t << ": node " << i << "'s replica of " << copy.rank << " differs");
  }
  CHECK(sim.nodes[0]->copies_kind() == "replica");
}

TEST_CASE("DCD-PSGD with an unbiased quantizer converges near the optimum") {
  // Fixed seeds. After 3000 rounds exact D-PSGD sits at ~0.62 (its O(lr) heterogeneity bias) from a
  // start of ~8.5; DCD with 16 levels lands within 1e-5 of that, ECD with 64 levels at ~0.64.
  simulation sim("dcd", 8, 16.0f), exact("dpsgd", 8, 0.0f);
  for (std::uint64_t t = 1; t <= 3000; ++t) {
    sim.round(t, decaying(t));
    exact.round(t, decaying(t));
  }
  CHECK(sim.max_distance_to_optimum() < 1.05 * exact.max_distance_to_optimum());
}

TEST_CASE("ECD-PSGD: every node's own estimate equals its neighbours' estimate of it") {
  simulation sim("ecd", 6, 8.0f);
  for (std::uint64_t t = 1; t <= 300; ++t) {
    sim.round(t, decaying(t));
    for (int i = 0; i < sim.n; ++i) {
      auto own = sim.nodes[i]->held_copies().front();
      REQUIRE(own.rank == i);
      for (int j = 0; j < sim.n; ++j)
        for (const auto& copy : sim.nodes[j]->held_copies())
          if (j != i && copy.rank == i) REQUIRE(bit_equal(copy.values, own.values));
    }
  }
}

TEST_CASE("ECD-PSGD with exact messages is D-PSGD after the first rounds") {
  // With C = identity, x~_{t+1} = (1-2/t) x~_t + (2/t) z_t reproduces x_{t+1} exactly in exact
  // arithmetic (induction on t), so ECD and D-PSGD follow the same trajectory up to rounding.
  simulation ecd("ecd", 5, 0.0f), d("dpsgd", 5, 0.0f);
  for (std::uint64_t t = 1; t <= 200; ++t) {
    ecd.round(t, decaying(t));
    d.round(t, decaying(t));
  }
  for (int i = 0; i < 5; ++i) {
    auto a = ecd.nodes[i]->model();
    auto b = d.nodes[i]->model();
    for (int k = 0; k < kDim; ++k) CHECK(a[k] == doctest::Approx(b[k]).epsilon(1e-3));
  }
}

TEST_CASE("ECD-PSGD with an unbiased quantizer converges near the optimum") {
  simulation sim("ecd", 8, 64.0f), exact("dpsgd", 8, 0.0f);
  for (std::uint64_t t = 1; t <= 3000; ++t) {
    sim.round(t, decaying(t));
    exact.round(t, decaying(t));
  }
  CHECK(sim.max_distance_to_optimum() < 1.2 * exact.max_distance_to_optimum());
}

TEST_CASE("naive compression stalls above DCD-PSGD (Tang et al. Fig. 1)") {
  // 8 levels: naive mixes C(x_j), whose error scales with ||x|| and never shrinks, while DCD
  // compresses differences that go to zero. Measured: naive ~2.8, DCD ~0.62 (fixed seeds).
  simulation naive("naive", 8, 8.0f), dcd("dcd", 8, 8.0f);
  for (std::uint64_t t = 1; t <= 3000; ++t) {
    naive.round(t, decaying(t));
    dcd.round(t, decaying(t));
  }
  CHECK(naive.max_distance_to_optimum() > 2.0 * dcd.max_distance_to_optimum());
}

TEST_CASE("make_algorithm rejects unknown names and absorb rejects strangers") {
  std::vector<float> x0(4, 0.0f);
  CHECK_THROWS_AS(make_algorithm("adam", ring_row(0, 4), x0), config_error);
  CHECK_THROWS_AS(make_algorithm("choco", ring_row(0, 4), x0, {0.0}), config_error);
  auto a = make_algorithm("dcd", ring_row(0, 4), x0);
  std::vector<float> g(4, 0.0f);
  (void)a->outgoing(g, 0.1f, 1);
  CHECK_THROWS_AS(a->absorb(2, g, 1), invariant_error);  // 2 is not a neighbour of 0 on a ring of 4
  a->absorb(1, g, 1);
  CHECK_THROWS_AS(a->absorb(1, g, 1), invariant_error);  // twice in one round
  CHECK_THROWS_AS(a->finish(1), invariant_error);        // rank 3 never arrived
}

// Which algorithm has which capability (the table at the top of algorithms/capabilities.hpp): the
// decentralized ones gossip asynchronously and rejoin, and clip with robust mixing on, the centralized
// ones do none of these; only CHOCO-SGD built asynchronous with per_edge_copies sends a message per edge.
TEST_CASE("capabilities: each algorithm kind has the ones it implements, and no other") {
  const std::vector<float> x0(kDim, 0.0f);
  const algorithm_options synchronous{0.8, false}, asynchronous{0.8, true};
  algorithm_options per_edge{0.8, true};
  per_edge.per_edge_copies = true;
  for (const auto& [kind, name] : kAlgorithmNames) {
    const std::string algorithm_name(name);
    CAPTURE(algorithm_name);
    const bool centralized = is_centralized(kind);
    const mixing_row row = centralized ? complete_mixing_row(0, 4) : ring_row(0, 4);
    for (const algorithm_options& options : {synchronous, asynchronous, per_edge}) {
      auto alg = make_algorithm(kind, row, x0, options);
      CHECK((async_mixing_of(*alg) != nullptr) == !centralized);
      CHECK((rejoinable_of(*alg) != nullptr) == !centralized);
      const bool edges = kind == algorithm_kind::choco && options.asynchronous && options.per_edge_copies;
      CHECK((per_edge_messages_of(*alg) != nullptr) == edges);
    }
    // Robust mixing's rule: the decentralized ones hold one when built with robust on.
    for (const bool robust : {false, true}) {
      algorithm_options options = synchronous;
      options.robust.on = robust;
      auto alg = make_algorithm(kind, row, x0, options);
      const clip_rule* rule = clip_rule_of(*alg);
      CHECK((rule != nullptr) == (robust && !centralized));
      CHECK(clip_stats_of(*alg) == (rule != nullptr ? &rule->last() : nullptr));
    }
  }
  // D-PSGD and naive rejoin with no public state (x goes afresh every round); DCD with x itself.
  auto dpsgd = make_algorithm("dpsgd", ring_row(0, 4), x0);
  CHECK(rejoinable_of(*dpsgd)->public_state().empty());
  auto dcd = make_algorithm("dcd", ring_row(0, 4), x0);
  CHECK(rejoinable_of(*dcd)->public_state().data() == dcd->model().data());
}

TEST_CASE("CHOCO-SGD: every node's public copy equals its neighbours' copy of it, every round") {
  simulation sim("choco", 6, -1.0f, 0.3);
  for (std::uint64_t t = 1; t <= 300; ++t) {
    sim.round(t, decaying(t));
    for (int i = 0; i < sim.n; ++i) {
      auto own = sim.nodes[i]->held_copies().front();
      REQUIRE(own.rank == i);
      for (int j = 0; j < sim.n; ++j)
        for (const auto& copy : sim.nodes[j]->held_copies())
          if (j != i && copy.rank == i) REQUIRE(bit_equal(copy.values, own.values));
    }
  }
}

TEST_CASE("CHOCO-SGD converges with the biased top-10% compressor") {
  // Deterministic (top-k has no randomness). Measured after 3000 rounds from a start of ~8.5: exact
  // D-PSGD ~0.62; CHOCO with gamma_c = 0.3 ~1.73 and still falling (gamma_c 0.2: 2.5; 0.5 diverges on
  // this strongly heterogeneous problem: gamma_c must shrink with the compressor's delta).
  simulation choco("choco", 8, -1.0f, 0.3);
  const double start = choco.max_distance_to_optimum();
  double at_1000 = 0;
  for (std::uint64_t t = 1; t <= 3000; ++t) {
    choco.round(t, decaying(t));
    if (t == 1000) at_1000 = choco.max_distance_to_optimum();
  }
  CHECK(choco.max_distance_to_optimum() < 0.25 * start);
  CHECK(choco.max_distance_to_optimum() < at_1000);
}

TEST_CASE("all-gather SGD: every node holds the same bits every round and reaches the optimum") {
  const int n = 5;
  simulation sim("dpsgd", n, 0.0f);  // for its targets and optimum; the nodes are replaced below
  sim.nodes.clear();
  std::vector<float> x0(kDim, 0.0f);
  for (int i = 0; i < n; ++i) sim.nodes.push_back(make_algorithm("allgather", complete_mixing_row(i, n), x0));
  CHECK(sim.nodes[0]->pattern() == communication::all_to_all);
  const double start = sim.max_distance_to_optimum();
  for (std::uint64_t t = 1; t <= 2000; ++t) {
    std::vector<std::vector<float>> sent(n);
    for (int i = 0; i < n; ++i) {
      auto x = sim.nodes[i]->model();
      std::vector<float> grad(kDim);
      for (int k = 0; k < kDim; ++k) grad[k] = x[k] - sim.targets[i][k];
      auto v = sim.nodes[i]->outgoing(grad, decaying(t), t);
      sent[i] = round_to_grid(v, 16.0f, i, t);  // every node decodes node i's message to the same vector
      sim.nodes[i]->absorb_own(sent[i], t);
    }
    for (int i = 0; i < n; ++i) {
      for (int j : complete_mixing_row(i, n).neighbours) sim.nodes[i]->absorb(j, sent[j], t);
      sim.nodes[i]->finish(t);
    }
    for (int i = 1; i < n; ++i) REQUIRE(bit_equal(sim.nodes[i]->model(), sim.nodes[0]->model()));
  }
  // Stochastic rounding noise with a decaying rate: seeded, so deterministic; the bound has a
  // margin of several times what this configuration reaches.
  CHECK(sim.max_distance_to_optimum() < 0.05 * start);
}

TEST_CASE("all-reduce SGD steps with the mean of the summed gradients and refuses messages") {
  const int n = 4;
  std::vector<float> x0(kDim, 1.0f);
  auto node = make_algorithm("allreduce", complete_mixing_row(2, n), x0);
  CHECK(node->pattern() == communication::ring_allreduce);
  CHECK_FALSE(node->compresses());
  std::vector<float> grad(kDim, 0.5f), sum(kDim, 8.0f);  // as if the four gradients summed to 8
  (void)node->outgoing(grad, 0.25f, 1);
  CHECK_THROWS_AS(node->finish(1), invariant_error);  // no sum yet
  node->absorb_own(sum, 1);
  node->finish(1);
  for (float x : node->model()) CHECK(x == 1.0f - 0.25f * 8.0f / 4.0f);
  CHECK_THROWS_AS(node->absorb(1, sum, 1), invariant_error);
  CHECK_THROWS_AS(make_algorithm("allgather", ring_row(0, 8), x0), invariant_error);  // must list every rank
  CHECK(is_centralized(algorithm_kind::allreduce));
  CHECK_FALSE(is_centralized(algorithm_kind::dcd));
}

TEST_CASE("asynchronous algorithms take any number of a neighbour's messages per round, and may finish without one") {
  const std::vector<float> x0(6, 0.25f), g(6, 0.5f), m(6, 0.01f);
  for (const char* name : {"dpsgd", "naive", "dcd", "ecd", "choco"}) {
    CAPTURE(name);
    auto sync = make_algorithm(name, ring_row(0, 4), x0, {0.5, false});
    (void)sync->outgoing(g, 0.1f, 1);
    sync->absorb(1, m, 1);
    CHECK_THROWS_AS(sync->absorb(1, m, 1), invariant_error);  // two in one round
    CHECK_THROWS_AS(sync->finish(1), invariant_error);       // rank 3 never sent

    auto async = make_algorithm(name, ring_row(0, 4), x0, {0.5, true});
    (void)async->outgoing(g, 0.1f, 1);
    async->absorb_own(m, 1);
    async->absorb(1, m, 1);
    async->absorb(1, m, 2);  // rank 1 is a round ahead
    CHECK_NOTHROW(async->finish(1));  // rank 3's newest copy is still its start
    for (float v : async->model()) CHECK(std::isfinite(v));
  }
}

namespace {

void check_near(std::span<const float> got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-6));
}

// a*x + b*y + c*z elementwise (vectors of one length; an empty one counts as zero).
std::vector<float> combine(float a, const std::vector<float>& x, float b, const std::vector<float>& y, float c = 0,
                           const std::vector<float>& z = {}) {
  std::vector<float> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = a * x[i] + b * y[i] + (z.empty() ? 0.0f : c * z[i]);
  return out;
}

}  // namespace

// Asynchronous mixing (algorithms/receipts.hpp): neighbour j's term enters the mix once per batch of
// messages it sent since the node last mixed; a neighbour that sent nothing leaves its weight W_ij
// with the node (so a stalled neighbour's old copy does not pull the node back round after round).
// Node 0 of a ring of 4 (neighbours 1 and 3, every weight 1/3); hand-computed expectations.
TEST_CASE("asynchronous mixing: a neighbour counts once per batch of new messages, a silent one's weight stays home") {
  const float lr = 0.1f;
  const std::vector<float> x0{1.0f, -2.0f, 0.5f}, g{0.5f, 1.0f, -1.0f}, m{0.2f, 0.1f, -0.3f}, a{1.0f, 2.0f, 3.0f},
      b{-1.0f, 0.5f, 2.0f}, c{0.3f, -0.7f, 0.9f};
  const std::vector<float> step = combine(lr, g, 0, g);

  SUBCASE("choco: x += γ Σ_fresh W_ij (x̂_j − x̂_i)") {
    const float gamma = 0.5f;
    auto node = make_algorithm("choco", ring_row(0, 4), x0, {gamma, true});
    (void)node->outgoing(g, lr, 1);
    node->absorb_own(m, 1);  // x̂_0 = x0 + m
    node->absorb(1, m, 1);   // x̂_1 = x0 + m
    node->absorb(3, m, 1);   // x̂_3 = x0 + m: every difference is zero
    node->finish(1);
    const std::vector<float> x1 = combine(1, x0, -lr, g);
    check_near(node->model(), x1);
    (void)node->outgoing(g, lr, 2);
    node->absorb_own(m, 2);  // x̂_0 = x0 + 2m
    node->absorb(1, combine(3, m, 0, m), 2);  // x̂_1 = x0 + 4m; rank 3 silent (x̂_3 = x0 + m)
    node->finish(2);
    const std::vector<float> x2 = combine(1, x1, -lr, g, gamma / 3.0f * 2.0f, m);  // only (x̂_1 − x̂_0) = 2m
    check_near(node->model(), x2);
    (void)node->outgoing(g, lr, 3);
    node->absorb_own(m, 3);
    node->finish(3);  // nobody sent: no mixing at all
    check_near(node->model(), combine(1, x2, -lr, g));
  }
  SUBCASE("dpsgd: x = (W_ii + Σ_silent W_ij) x + Σ_fresh W_ij x_j − γg") {
    auto node = make_algorithm("dpsgd", ring_row(0, 4), x0, {1.0, true});
    (void)node->outgoing(g, lr, 1);
    node->absorb(1, a, 1);
    node->absorb(3, b, 1);
    node->finish(1);
    std::vector<float> x1(3);
    for (int i = 0; i < 3; ++i) x1[i] = (x0[i] + a[i] + b[i]) / 3.0f - lr * g[i];
    check_near(node->model(), x1);
    (void)node->outgoing(g, lr, 2);
    node->absorb(1, c, 2);  // rank 3 silent: its 1/3 stays with the node
    node->finish(2);
    const std::vector<float> x2 = combine(2.0f / 3.0f, x1, 1.0f / 3.0f, c, -lr, g);
    check_near(node->model(), x2);
    (void)node->outgoing(g, lr, 3);
    node->finish(3);
    check_near(node->model(), combine(1, x2, -lr, g));
  }
  SUBCASE("dcd: z = (W_ii + Σ_silent W_ij) x + Σ_fresh W_ij x̂_j − γg − x") {
    auto node = make_algorithm("dcd", ring_row(0, 4), x0, {1.0, true});
    check_near(node->outgoing(g, lr, 1), combine(-lr, g, 0, g));  // no messages yet: the node alone
    node->absorb_own(m, 1);  // x = x0 + m
    node->absorb(1, a, 1);   // x̂_1 = x0 + a
    node->absorb(3, b, 1);   // x̂_3 = x0 + b
    node->finish(1);
    const std::vector<float> x = combine(1, x0, 1, m), r1 = combine(1, x0, 1, a), r3 = combine(1, x0, 1, b);
    std::vector<float> z2(3);
    for (int i = 0; i < 3; ++i) z2[i] = (x[i] + r1[i] + r3[i]) / 3.0f - lr * g[i] - x[i];
    check_near(node->outgoing(g, lr, 2), z2);
    const std::vector<float> x2 = combine(1, x, 1, m);
    node->absorb_own(m, 2);
    node->absorb(1, c, 2);  // x̂_1 = x0 + a + c; rank 3 silent
    node->finish(2);
    const std::vector<float> r1b = combine(1, r1, 1, c);
    std::vector<float> z3(3);
    for (int i = 0; i < 3; ++i) z3[i] = (2.0f * x2[i] + r1b[i]) / 3.0f - lr * g[i] - x2[i];
    check_near(node->outgoing(g, lr, 3), z3);
    node->absorb_own(m, 3);
    node->finish(3);
    check_near(node->outgoing(g, lr, 4), combine(-lr, g, 0, g));  // nobody sent since: the node alone
  }
  SUBCASE("ecd: x_{t+1} = (W_ii + Σ_silent W_ij) x̃_i + Σ_fresh W_ij x̃_j − γg") {
    auto node = make_algorithm("ecd", ring_row(0, 4), x0, {1.0, true});
    (void)node->outgoing(g, lr, 1);
    check_near(node->model(), combine(1, x0, -lr, g));  // no messages yet: the node's own estimate x0
    node->absorb_own(a, 1);  // t = 1: estimates become the decoded message itself (blend 1 − 2/1 = −1, 2)
    node->absorb(1, b, 1);
    node->finish(1);  // rank 3 silent
    const std::vector<held_copy> held = node->held_copies();  // own estimate, then rank 1's, rank 3's
    REQUIRE(held[1].rank == 1);
    const std::vector<float> own(held[0].values.begin(), held[0].values.end()),
        est1(held[1].values.begin(), held[1].values.end());
    (void)node->outgoing(g, lr, 2);
    std::vector<float> want(3);
    for (int i = 0; i < 3; ++i) want[i] = 2.0f / 3.0f * own[i] + est1[i] / 3.0f - lr * g[i];
    check_near(node->model(), want);
  }
}

// A busy uplink (docs/algorithms.md): a round of CHOCO that sends nothing skips absorb_own, so its
// public copy x̂_i stays behind x, and the mix takes x in its place. Node 0 of a ring of 4, γ = 0.5,
// W_0j = 1/3: round 1 sends and mixes as usual; rounds 2 and 3 send nothing; in round 2 rank 1 sends
// (x̂_1 moves), in round 3 nobody does. The old rule, x += γ W (x̂_1 − x̂_0) with x̂_0 stale, would push
// x by the same difference in every such round; this one moves x part of the way to x̂_1, once.
TEST_CASE("asynchronous mixing: a CHOCO round that sent nothing mixes with x, not its stale public copy") {
  const float lr = 0.1f, gamma = 0.5f;
  const std::vector<float> x0{1.0f, -2.0f, 0.5f}, g{0.5f, 1.0f, -1.0f}, m{0.2f, 0.1f, -0.3f};
  const std::vector<float> a{1.0f, 2.0f, 3.0f};
  auto node = make_algorithm("choco", ring_row(0, 4), x0, {gamma, true});
  REQUIRE(async_mixing_of(*node)->may_skip_message());
  (void)node->outgoing(g, lr, 1);
  node->absorb_own(m, 1);
  node->absorb(1, m, 1);
  node->absorb(3, m, 1);
  node->finish(1);
  const std::vector<float> x1 = combine(1, x0, -lr, g);
  check_near(node->model(), x1);
  (void)node->outgoing(g, lr, 2);  // sends nothing
  node->absorb(1, a, 2);           // x̂_1 = x0 + m + a
  node->finish(2);
  const std::vector<float> half2 = combine(1, x1, -lr, g), copy1 = combine(1, combine(1, x0, 1, m), 1, a);
  const float w = gamma / 3.0f;
  const std::vector<float> x2 = combine(1.0f - w, half2, w, copy1);
  check_near(node->model(), x2);
  (void)node->outgoing(g, lr, 3);  // sends nothing; nobody sent either: no mixing
  node->finish(3);
  check_near(node->model(), combine(1, x2, -lr, g));
  // Its public copy never moved after round 1: what its neighbours hold of it is still exact.
  check_near(node->held_copies()[0].values, combine(1, x0, 1, m));
  for (const char* name : {"dpsgd", "naive"})
    CHECK(async_mixing_of(*make_algorithm(name, ring_row(0, 4), x0, {1.0, true}))->may_skip_message());
  for (const char* name : {"dcd", "ecd"})
    CHECK_FALSE(async_mixing_of(*make_algorithm(name, ring_row(0, 4), x0, {1.0, true}))->may_skip_message());
}

// A public copy per edge (algorithm_options::per_edge_copies; docs/algorithms.md, "A busy uplink"):
// node 0 of a ring of 4, γ = 0.5, W_0j = 1/3. Round 1 sends on both edges, each its own message;
// round 2 only to rank 1 (the link to 3 is busy), while both neighbours send: edge 1 mixes against
// its copy x̂_{0->1}, edge 3 against x itself, and x̂_{0->3} stays where round 1 left it.
TEST_CASE("asynchronous mixing: CHOCO with a public copy per edge mixes each edge against that edge's copy") {
  const float lr = 0.1f, gamma = 0.5f, w = gamma / 3.0f;
  const std::vector<float> x0{1.0f, -2.0f, 0.5f}, g{0.5f, 1.0f, -1.0f}, m1{0.2f, 0.1f, -0.3f},
      m3{-0.1f, 0.4f, 0.2f}, a{1.0f, 2.0f, 3.0f}, b{-1.0f, 0.5f, 0.0f};
  algorithm_options per_edge{gamma, true};
  per_edge.per_edge_copies = true;
  auto node = make_algorithm("choco", ring_row(0, 4), x0, per_edge);
  per_edge_messages* edges = per_edge_messages_of(*node);
  REQUIRE(edges != nullptr);
  const std::vector<float> half1 = combine(1, x0, -lr, g);
  check_near(node->outgoing(g, lr, 1), half1);  // the model: the messages are per edge
  check_near(edges->outgoing_to(1), combine(1, half1, -1, x0));
  edges->absorb_own_to(1, m1);
  check_near(edges->outgoing_to(3), combine(1, half1, -1, x0));
  edges->absorb_own_to(3, m3);
  node->absorb(1, a, 1);
  node->absorb(3, b, 1);
  node->finish(1);
  std::vector<float> e1 = combine(1, x0, 1, m1), e3 = combine(1, x0, 1, m3), c1 = combine(1, x0, 1, a),
                     c3 = combine(1, x0, 1, b);
  const std::vector<float> x1 = combine(1, combine(1, half1, w, c1, -w, e1), w, c3, -w, e3);
  check_near(node->model(), x1);
  const std::vector<float> half2 = combine(1, x1, -lr, g);
  (void)node->outgoing(g, lr, 2);
  check_near(edges->outgoing_to(1), combine(1, half2, -1, e1));
  edges->absorb_own_to(1, m3);  // edge 3 sends nothing
  node->absorb(1, b, 2);
  node->absorb(3, a, 2);
  node->finish(2);
  e1 = combine(1, e1, 1, m3);
  c1 = combine(1, c1, 1, b);
  c3 = combine(1, c3, 1, a);
  check_near(node->model(), combine(1, combine(1.0f - w, half2, w, c1, -w, e1), w, c3));
  const std::vector<held_copy> held = node->held_copies();  // its copy for 1, for 3, then 1's and 3's
  REQUIRE(held.size() == 4);
  CHECK((held[0].rank == 0 && held[0].holder == 1 && held[1].rank == 0 && held[1].holder == 3));
  check_near(held[0].values, e1);
  check_near(held[1].values, e3);
  const std::span<const float> x = node->model();
  check_near(rejoinable_of(*node)->public_state(), std::vector<float>(x.begin(), x.end()));
  std::vector<float> zero(3, 0.0f);
  CHECK_THROWS_AS(node->absorb_own(zero, 2), invariant_error);
  // One public copy (synchronous, or per_edge_copies off) and the other algorithms: one message.
  auto shared = make_algorithm("choco", ring_row(0, 4), x0, {gamma, true});
  CHECK(per_edge_messages_of(*shared) == nullptr);
  (void)shared->outgoing(g, lr, 1);
  CHECK_THROWS_AS(dynamic_cast<per_edge_messages&>(*shared).outgoing_to(1), invariant_error);
  algorithm_options synchronous{gamma, false};
  synchronous.per_edge_copies = true;
  CHECK(per_edge_messages_of(*make_algorithm("choco", ring_row(0, 4), x0, synchronous)) == nullptr);
  CHECK(per_edge_messages_of(*make_algorithm("dpsgd", ring_row(0, 4), x0, per_edge)) == nullptr);
}

// Property: with a public copy per edge and links skipped at random (each edge of each round with
// probability 0.4; a fixed seed, so the run is one deterministic sequence), every neighbour's copy
// of a node equals that node's copy for their edge bit for bit after every round, and the ring still
// approaches the consensus optimum. Exact messages, γ_c = 0.8, lr_t = 0.5/sqrt(t), 3000 rounds. A
// skipped edge mixes against x (not antisymmetric), so the mean drifts and the end is not the
// optimum exactly: measured 11.1 → 1.47 here (no skipping: 0.38; one public copy skipping whole
// rounds with the same probability, on another seed: 1.31). Deterministic; the bound leaves 1.9x.
TEST_CASE("CHOCO-SGD with a public copy per edge: copies stay exact and it converges with links skipped") {
  const int n = 6;
  simulation sim("dpsgd", n, 0.0f);  // for its targets and optimum; the nodes are rebuilt below
  algorithm_options o{0.8, true};
  o.per_edge_copies = true;
  std::vector<float> x0(kDim, 0.0f);
  for (int i = 0; i < n; ++i) sim.nodes[i] = make_algorithm("choco", ring_row(i, n), x0, o);
  const double start = sim.max_distance_to_optimum();
  std::mt19937_64 rng(7);
  std::bernoulli_distribution skip(0.4);
  for (std::uint64_t t = 1; t <= 3000; ++t) {
    std::vector<std::vector<std::pair<int, std::vector<float>>>> sent(n);  // per sender: (to, message)
    for (int i = 0; i < n; ++i) {
      std::vector<float> grad(kDim);
      for (int k = 0; k < kDim; ++k) grad[k] = sim.nodes[i]->model()[k] - sim.targets[i][k];
      (void)sim.nodes[i]->outgoing(grad, decaying(t), t);
      for (int j : ring_row(i, n).neighbours) {
        if (t > 1 && skip(rng)) continue;
        per_edge_messages& edges = *per_edge_messages_of(*sim.nodes[i]);
        const auto v = edges.outgoing_to(j);
        sent[i].emplace_back(j, std::vector<float>(v.begin(), v.end()));
        edges.absorb_own_to(j, sent[i].back().second);
      }
    }
    for (int i = 0; i < n; ++i)
      for (const auto& [to, message] : sent[i]) sim.nodes[to]->absorb(i, message, t);
    for (int i = 0; i < n; ++i) sim.nodes[i]->finish(t);
    for (int i = 0; i < n; ++i)
      for (const held_copy& own : sim.nodes[i]->held_copies()) {
        if (own.rank != i) continue;
        for (const held_copy& theirs : sim.nodes[own.holder]->held_copies())
          if (theirs.rank == i)
            REQUIRE_MESSAGE(bit_equal(theirs.values, own.values),
                            "round " << t << ": node " << own.holder << "'s copy of " << i << " differs");
      }
  }
  const double end = sim.max_distance_to_optimum();
  CHECK_MESSAGE(end < 0.25 * start, "from " << start << " to " << end);
}

// A neighbour that has finished (neighbour_finished, asynchronous gossip) sends nothing more; its
// copy is final and counts in every mix from then on, as if it had just sent. Node 0 of a ring of 4:
// ranks 1 and 3 sent in round 1; in rounds 2 and 3 nobody sends, and rank 3 has finished.
TEST_CASE("asynchronous mixing: a finished neighbour's final copy counts in every later mix") {
  const float lr = 0.1f, gamma = 0.5f;
  const std::vector<float> x0{1.0f, -2.0f, 0.5f}, g{0.5f, 1.0f, -1.0f}, m{0.2f, 0.1f, -0.3f},
      a{1.0f, 2.0f, 3.0f};
  SUBCASE("choco: x += γ W_03 (x̂_3 − x̂_0) each round, rank 1 silent") {
    auto node = make_algorithm("choco", ring_row(0, 4), x0, {gamma, true});
    (void)node->outgoing(g, lr, 1);
    node->absorb_own(m, 1);
    node->absorb(1, m, 1);
    node->absorb(3, a, 1);  // x̂_3 = x0 + a
    node->finish(1);
    std::vector<float> x(node->model().begin(), node->model().end());
    std::vector<float> own = combine(1, x0, 1, m), copy3 = combine(1, x0, 1, a);
    async_mixing_of(*node)->neighbour_finished(3);
    for (std::uint64_t t = 2; t <= 3; ++t) {
      const std::vector<float> q = combine(1, x, -1, own);  // x − x̂_0 at a zero gradient
      check_near(node->outgoing(std::vector<float>(3, 0.0f), 0.0f, t), q);
      node->absorb_own(q, t);
      own = combine(1, own, 1, q);
      node->finish(t);
      x = combine(1, x, gamma / 3.0f, copy3, -gamma / 3.0f, own);
      check_near(node->model(), x);
    }
  }
  SUBCASE("dpsgd, dcd, ecd: the finished neighbour's term is in the mix; without it, none") {
    // D-PSGD mixes in finish(t), DCD and ECD in outgoing(t + 1): by round 3's outgoing both have
    // mixed once more with nobody's new message.
    for (const std::string name : {"dpsgd", "dcd", "ecd"}) {
      CAPTURE(name);
      auto told = make_algorithm(name, ring_row(0, 4), x0, {1.0, true});
      auto silent = make_algorithm(name, ring_row(0, 4), x0, {1.0, true});
      const std::vector<float> zero(3, 0.0f);
      std::vector<float> out[2];
      for (algorithm* node : {told.get(), silent.get()}) {
        (void)node->outgoing(g, lr, 1);
        node->absorb_own(m, 1);
        node->absorb(1, m, 1);
        node->absorb(3, a, 1);
        node->finish(1);
        if (node == told.get()) async_mixing_of(*node)->neighbour_finished(3);
        (void)node->outgoing(zero, 0.0f, 2);
        node->finish(2);
        const std::span<const float> o = node->outgoing(zero, 0.0f, 3);
        out[node == told.get() ? 0 : 1].assign(o.begin(), o.end());
      }
      CHECK(out[0] != out[1]);
    }
  }
}
