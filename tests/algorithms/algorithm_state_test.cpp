// save_state / load_state of every algorithm: n nodes run k rounds, every node's state is saved,
// then (A) the same objects continue m rounds, and (B) FRESH objects, built from a different x0,
// load the saved state and run the same m rounds. A and B must end with the same models and the
// same held copies, bit for bit. A control run of fresh objects WITHOUT the load must differ, so
// the comparison can fail.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "core/hash.hpp"
#include "core/state_io.hpp"
#include "tests/algorithms/test_rows.hpp"

using namespace qgossip;
using qgossip::testing::ring_row;
using qgossip::testing::round_to_grid;

namespace {

constexpr int kNodes = 4;
constexpr std::size_t kDim = 40;

mixing_row row_for(const std::string& name, int rank) {
  return is_centralized(*parse_name<algorithm_kind>(name)) ? complete_mixing_row(rank, kNodes) : ring_row(rank, kNodes);
}

// Stochastic rounding to 8 levels of max|v|, seeded by (rank, t): a deterministic lossy "codec", so
// replicas and estimates differ from the models they stand for.
std::vector<float> quantize(std::span<const float> v, int rank, std::uint64_t t) {
  float top = 0.0f;
  for (float x : v) top = std::max(top, std::fabs(x));
  std::vector<float> out(v.size(), 0.0f);
  if (top == 0.0f) return out;
  const float step = top / 8.0f;
  std::mt19937_64 rng(static_cast<std::uint64_t>(rank) * 1000003ull + t);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const float q = v[i] / step, lo = std::floor(q);
    out[i] = step * (lo + (static_cast<float>(rng() >> 40) / 16777216.0f < q - lo ? 1.0f : 0.0f));
  }
  return out;
}

struct network {
  std::string name;
  std::vector<std::unique_ptr<algorithm>> nodes;
  std::vector<std::vector<float>> targets;

  network(const std::string& algorithm_name, float x0_value) : name(algorithm_name) {
    std::mt19937_64 rng(7);
    std::normal_distribution<float> g(0.0f, 2.0f);
    const std::vector<float> x0(kDim, x0_value);
    for (int i = 0; i < kNodes; ++i) {
      std::vector<float> b(kDim);
      for (float& x : b) x = g(rng);
      targets.push_back(b);
      nodes.push_back(make_algorithm(name, row_for(name, i), x0, {0.5}));
    }
  }

  void round(std::uint64_t t) {
    const float lr = 0.3f / std::sqrt(static_cast<float>(t));
    std::vector<std::vector<float>> sent(kNodes);
    for (int i = 0; i < kNodes; ++i) {
      const auto x = nodes[i]->model();
      std::vector<float> grad(kDim);
      for (std::size_t k = 0; k < kDim; ++k) grad[k] = x[k] - targets[i][k];
      const auto v = nodes[i]->outgoing(grad, lr, t);
      sent[i] = nodes[i]->compresses() ? quantize(v, i, t) : std::vector<float>(v.begin(), v.end());
    }
    if (nodes[0]->pattern() == communication::ring_allreduce) {
      std::vector<float> sum(kDim, 0.0f);
      for (int i = 0; i < kNodes; ++i)
        for (std::size_t k = 0; k < kDim; ++k) sum[k] += sent[i][k];
      for (int i = 0; i < kNodes; ++i) nodes[i]->absorb_own(sum, t);
    } else {
      for (int i = 0; i < kNodes; ++i) nodes[i]->absorb_own(sent[i], t);
      for (int i = 0; i < kNodes; ++i)
        for (int j : row_for(name, i).neighbours) nodes[i]->absorb(j, sent[j], t);
    }
    for (int i = 0; i < kNodes; ++i) nodes[i]->finish(t);
  }

  // One hash over every node's model and every copy it holds, in order.
  std::uint64_t hash() const {
    std::uint64_t h = 0;
    for (const auto& node : nodes) {
      h = hash64(node->model(), h);
      for (const held_copy& c : node->held_copies()) h = hash64(c.values, h + static_cast<std::uint64_t>(c.rank));
    }
    return h;
  }

  std::vector<std::vector<std::byte>> save() const {
    std::vector<std::vector<std::byte>> out;
    for (const auto& node : nodes) {
      state_writer w;
      node->save_state(w);
      out.push_back(w.take());
    }
    return out;
  }

  void load(const std::vector<std::vector<std::byte>>& states) {
    for (int i = 0; i < kNodes; ++i) {
      state_reader r(states[static_cast<std::size_t>(i)], "node " + std::to_string(i));
      nodes[static_cast<std::size_t>(i)]->load_state(r);
      r.expect_end();
    }
  }
};

const char* const kAlgorithms[] = {"dpsgd", "naive", "dcd", "ecd", "choco", "allgather", "allreduce"};
constexpr std::uint64_t kBefore = 6, kAfter = 9;

}  // namespace

TEST_CASE("every algorithm continues bit for bit from its saved state, held copies included") {
  for (const char* name : kAlgorithms) {
    const std::string algorithm_name = name;
    CAPTURE(algorithm_name);
    network a(name, 0.0f);
    for (std::uint64_t t = 1; t <= kBefore; ++t) a.round(t);
    const auto saved = a.save();
    for (std::uint64_t t = kBefore + 1; t <= kBefore + kAfter; ++t) a.round(t);

    network b(name, 5.0f);  // another x0: everything must come from the state
    b.load(saved);
    for (std::uint64_t t = kBefore + 1; t <= kBefore + kAfter; ++t) b.round(t);
    CHECK(b.hash() == a.hash());
    for (int i = 0; i < kNodes; ++i) CHECK(b.nodes[i]->held_copies().size() == a.nodes[i]->held_copies().size());

    network control(name, 5.0f);  // the same rounds without the state: must not match
    for (std::uint64_t t = kBefore + 1; t <= kBefore + kAfter; ++t) control.round(t);
    CHECK(control.hash() != a.hash());
  }
}

TEST_CASE("the saved state of a DCD node holds a replica per neighbour, and the copies come back") {
  network a("dcd", 0.0f);
  for (std::uint64_t t = 1; t <= kBefore; ++t) a.round(t);
  const auto saved = a.save();
  network b("dcd", 5.0f);
  b.load(saved);
  for (int i = 0; i < kNodes; ++i) {
    const auto ca = a.nodes[i]->held_copies(), cb = b.nodes[i]->held_copies();
    REQUIRE(ca.size() == 2);
    for (std::size_t k = 0; k < ca.size(); ++k) {
      CHECK(cb[k].rank == ca[k].rank);
      CHECK(hash64(cb[k].values) == hash64(ca[k].values));
    }
  }
}

TEST_CASE("load_state refuses the state of another algorithm, rank, topology or model size") {
  network dcd("dcd", 0.0f);
  const auto saved = dcd.save();
  network ecd("ecd", 0.0f);
  state_reader other_algorithm(saved[0], "ckpt");
  CHECK_THROWS_WITH_AS(ecd.nodes[0]->load_state(other_algorithm),
                       doctest::Contains("field 'algorithm' is 'dcd', expected 'ecd'"), state_error);
  state_reader other_rank(saved[1], "ckpt");
  CHECK_THROWS_WITH_AS(dcd.nodes[0]->load_state(other_rank), doctest::Contains("field 'rank' is 1, expected 0"),
                       state_error);
  mixing_row wide = ring_row(0, 6);  // neighbours 1 and 5 instead of 1 and 3
  const auto other_graph = make_algorithm("dcd", wide, std::vector<float>(kDim), {});
  state_reader r3(saved[0], "ckpt");
  CHECK_THROWS_WITH_AS(other_graph->load_state(r3), doctest::Contains("neighbour list differs"), state_error);
  const auto smaller = make_algorithm("dcd", ring_row(0, kNodes), std::vector<float>(kDim - 1), {});
  state_reader r4(saved[0], "ckpt");
  CHECK_THROWS_WITH_AS(smaller->load_state(r4), doctest::Contains("holds 40 floats, expected 39"), state_error);
}
