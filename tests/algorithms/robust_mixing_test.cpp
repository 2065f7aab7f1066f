// Robust mixing (algorithms/robust_mixing.hpp): the radius rule, and its bound as a property of
// CHOCO-SGD's mix under hostile payloads. Fixed seeds and exact reference arithmetic (double): the
// checks are deterministic, so they cannot flake; the only tolerance is float rounding of the mix.
#include "algorithms/robust_mixing.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "algorithms/clipped_mix.hpp"

using namespace qgossip;

TEST_CASE("clip_rule: auto takes the (tolerate+1)-th largest distance as the radius") {
  clip_rule one(robust_options{.on = true, .tolerate = 1});
  const std::vector<double> d{1.0, 5.0, 2.0};
  std::vector<float> s(3);
  one.scales(d, s);
  CHECK(one.last().tau == 2.0);
  CHECK(s == std::vector<float>{1.0f, 0.4f, 1.0f});
  CHECK(one.last().clipped_fraction == doctest::Approx(1.0 / 3.0));
  CHECK(one.last().largest_distance == 5.0);

  clip_rule none(robust_options{.on = true, .tolerate = 0});  // the largest: nothing is clipped
  none.scales(d, s);
  CHECK(none.last().tau == 5.0);
  CHECK(s == std::vector<float>{1.0f, 1.0f, 1.0f});

  clip_rule all(robust_options{.on = true, .tolerate = 3});  // more tolerated than neighbours: none trusted
  all.scales(d, s);
  CHECK(all.last().tau == 0.0);
  CHECK(s == std::vector<float>{0.0f, 0.0f, 0.0f});
  CHECK(all.last().clipped_fraction == 1.0);
}

TEST_CASE("clip_rule: a fixed radius, a zero distance, and distances that are not finite") {
  clip_rule fixed(robust_options{.on = true, .tau = 1.5});
  std::vector<float> s(4);
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  fixed.scales(std::vector<double>{0.0, 3.0, inf, nan}, s);
  CHECK(s == std::vector<float>{1.0f, 0.5f, 0.0f, 0.0f});
  CHECK(fixed.last().largest_distance == inf);
  // auto: a non-finite distance is never the radius; two of them with tolerate 1 leave none trusted.
  clip_rule a(robust_options{.on = true, .tolerate = 1});
  std::vector<float> t(3);
  a.scales(std::vector<double>{2.0, inf, 1.0}, t);
  CHECK(a.last().tau == 2.0);
  CHECK(t == std::vector<float>{1.0f, 0.0f, 1.0f});
  a.scales(std::vector<double>{2.0, inf, nan}, t);
  CHECK(a.last().tau == 0.0);
}

TEST_CASE("clip_rule: neighbours removed as proven hostile are tolerated no more") {
  clip_rule r(robust_options{.on = true, .tolerate = 1});
  std::vector<float> s(2);
  r.scales(std::vector<double>{1.0, 3.0}, s);
  CHECK(r.last().tau == 1.0);  // the second largest
  std::vector<float> one(1);
  r.scales(std::vector<double>{2.0}, one);
  CHECK(r.last().tau == 0.0);  // one neighbour, one tolerated: none trusted
  r.set_removed_hostile(1);    // the hostile one was dropped: none of the others is
  CHECK(r.tolerated() == 0);
  r.scales(std::vector<double>{2.0}, one);
  CHECK(r.last().tau == 2.0);
  CHECK(one[0] == 1.0f);
  r.scales(std::vector<double>{1.0, 3.0}, s);
  CHECK(r.last().tau == 3.0);
  r.set_removed_hostile(5);  // never below 0
  CHECK(r.tolerated() == 0);
  r.set_removed_hostile(0);  // it came back
  CHECK(r.tolerated() == 1);
}

namespace {

// Row 0 of a complete graph of 5 (Metropolis–Hastings: every weight 1/5).
mixing_row complete_row() {
  mixing_row r;
  r.rank = 0;
  r.self_weight = 0.2;
  r.neighbours = {1, 2, 3, 4};
  r.weights = {0.2, 0.2, 0.2, 0.2};
  return r;
}

double norm(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

// What a hostile neighbour sends as its decoded change (its public copy then moves by it).
std::vector<float> attack(int kind, std::span<const float> honest_delta, std::span<const float> its_copy,
                          std::mt19937_64& rng) {
  std::vector<float> out(honest_delta.size());
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (std::size_t i = 0; i < out.size(); ++i) {
    switch (kind) {
      case 0: out[i] = (rng() & 1 ? 1.0f : -1.0f) * 1e38f; break;           // ±1e38 (overflows the copy)
      case 1: out[i] = -2.0f * its_copy[i]; break;                          // flip: the copy becomes -copy
      case 2: out[i] = 100.0f * honest_delta[i]; break;                     // scale by 100
      case 3: out[i] = 50.0f * g(rng); break;                               // noise
      case 4: out[i] = honest_delta[i] + 0.3f * g(rng); break;              // a little off (ALIE-like)
      default: out[i] = -10.0f * honest_delta[i]; break;                    // inner-product manipulation
    }
  }
  return out;
}

}  // namespace

// The bound: every round, the hostile neighbour's term in the mix has norm at most
// γ · W_ij · τ_i, τ_i is at most the largest honest distance, and the node's model after the mix is
// x + Σ_j γ W_ij min(1, τ/‖z_j‖) z_j computed in double (float rounding of the mix: relative 1e-4).
TEST_CASE("robust CHOCO-SGD: a hostile neighbour's pull is bounded by the honest ones', whatever it sends") {
  const std::size_t d = 48;
  int violations = 0, rounds = 0, shortened = 0;  // shortened: rounds the hostile term was clipped
  for (int trial = 0; trial < 60; ++trial) {
    std::mt19937_64 rng(1000 + static_cast<std::uint64_t>(trial));
    std::normal_distribution<float> g(0.0f, 1.0f);
    std::vector<float> x0(d);
    for (float& v : x0) v = g(rng);
    algorithm_options o;
    o.consensus_step = 0.5;
    o.robust = {.on = true, .tolerate = 1};
    auto alg = make_algorithm(algorithm_kind::choco, complete_row(), x0, o);
    const int hostile = 1 + static_cast<int>(rng() % 4);
    const int kind = trial % 6;
    for (std::uint64_t t = 1; t <= 6; ++t, ++rounds) {
      std::vector<float> grad(d);
      for (float& v : grad) v = g(rng);
      const auto q = alg->outgoing(grad, 0.1f, t);
      std::vector<float> own_delta(q.begin(), q.end());  // an exact codec: decoded == q
      alg->absorb_own(own_delta, t);
      for (int j = 1; j <= 4; ++j) {
        std::vector<float> delta(d);
        for (float& v : delta) v = 0.05f * g(rng);
        if (j == hostile) {
          std::vector<float> copy(d);
          for (const held_copy& h : alg->held_copies())
            if (h.rank == j) std::copy(h.values.begin(), h.values.end(), copy.begin());
          delta = attack(kind, delta, copy, rng);
        }
        alg->absorb(j, delta, t);
      }
      // The reference, in double: z_j = x^_j - x^_i (every edge sent this round).
      std::vector<double> x(alg->model().begin(), alg->model().end()), own(d);
      std::vector<std::vector<double>> z(5);
      for (const held_copy& h : alg->held_copies())
        if (h.rank == 0) std::copy(h.values.begin(), h.values.end(), own.begin());
      std::vector<double> dist(5, 0.0);
      for (const held_copy& h : alg->held_copies()) {
        if (h.rank == 0) continue;
        z[static_cast<std::size_t>(h.rank)].resize(d);
        for (std::size_t i = 0; i < d; ++i)
          z[static_cast<std::size_t>(h.rank)][i] = static_cast<double>(h.values[i]) - own[i];
        dist[static_cast<std::size_t>(h.rank)] = norm(z[static_cast<std::size_t>(h.rank)]);
      }
      std::vector<double> finite;
      for (int j = 1; j <= 4; ++j) finite.push_back(std::isfinite(dist[j]) ? dist[j] : INFINITY);
      std::sort(finite.begin(), finite.end(), std::greater<>());
      const double tau = std::isfinite(finite[1]) ? finite[1] : 0.0;
      double largest_honest = 0;
      for (int j = 1; j <= 4; ++j)
        if (j != hostile) largest_honest = std::max(largest_honest, dist[j]);
      const double a = 0.5 * 0.2;
      const double dh = dist[static_cast<std::size_t>(hostile)];
      const double hostile_term = std::isfinite(dh) && dh > 0 ? a * std::min(1.0, tau / dh) * dh : 0.0;
      if (hostile_term > a * tau * (1 + 1e-9) || tau > largest_honest) ++violations;
      if (!(dh <= tau)) ++shortened;
      std::vector<double> expect = x;
      for (int j = 1; j <= 4; ++j) {
        const double dj = dist[static_cast<std::size_t>(j)];
        if (!std::isfinite(dj)) continue;
        const double c = dj <= tau ? 1.0 : tau / dj;
        for (std::size_t i = 0; i < d; ++i) expect[i] += a * c * z[static_cast<std::size_t>(j)][i];
      }
      alg->finish(t);
      REQUIRE(clip_stats_of(*alg) != nullptr);
      CHECK(clip_stats_of(*alg)->tau == doctest::Approx(tau).epsilon(1e-9));
      double err = 0, scale = 1;
      for (std::size_t i = 0; i < d; ++i) {
        err = std::max(err, std::fabs(static_cast<double>(alg->model()[i]) - expect[i]));
        scale = std::max(scale, std::fabs(expect[i]));
      }
      INFO("trial " << trial << " attack " << kind << " round " << t);
      CHECK(err <= 1e-4 * scale);
    }
  }
  CHECK(rounds == 360);
  CHECK(violations == 0);
  MESSAGE("hostile term clipped in " << shortened << " of " << rounds << " rounds");
  CHECK(shortened >= 300);  // the check has teeth: the attacks are mostly far outside the radius
}

TEST_CASE("mix_neighbours: the clipped mix keeps what it takes from a neighbour on the node's own term") {
  const mixing_row row = complete_row();
  const std::vector<float> base{0, 0, 0};
  const std::vector<float_vector> copies{{1, 0, 0}, {0, 3, 0}, {0, 0, 2}, {1e30f, 1e30f, 0}};
  std::vector<float> plain(3), clipped(3);
  mix_neighbours(plain, base, copies, row, std::vector<bool>(4, true), nullptr);
  CHECK(plain[0] > 1e28f);  // unclipped, the far copy carries the mix away
  clipped_mixing clip(robust_options{.on = true, .tolerate = 1});
  mix_neighbours(clipped, base, copies, row, std::vector<bool>(4, true), &clip);
  CHECK(clip.rule.last().tau == 3.0);  // distances 1, 3, 2, 1.4e30: the second largest
  // base + 0.2 (1, 0, 0) + 0.2 (0, 3, 0) + 0.2 (0, 0, 2) + 0.2 * 3 / 1.414e30 (1e30, 1e30, 0)
  CHECK(clipped[0] == doctest::Approx(0.2 + 0.6 / std::sqrt(2.0)));
  CHECK(clipped[1] == doctest::Approx(0.6 + 0.6 / std::sqrt(2.0)));
  CHECK(clipped[2] == doctest::Approx(0.4));
  // A silent neighbour (not fresh) leaves its weight on base, and is not in the radius.
  mix_neighbours(clipped, base, copies, row, std::vector<bool>{true, false, true, true}, &clip);
  CHECK(clip.rule.last().tau == 2.0);
  CHECK(clipped[1] == doctest::Approx(0.4 / std::sqrt(2.0)));
}

TEST_CASE(
    "the loss screen: a copy whose loss gap exceeds the margin is left out and takes a tolerated place") {
  // The gap here is the copy's first entry (a stand-in for the node's loss check, node/run/loss_screen.hpp):
  // the copy (0, 3, 0) lies as near as an honest one but does worse by 3 nats, more than the margin 1.
  const mixing_row row = complete_row();
  const std::vector<float> base{0, 0, 0};
  const std::vector<float_vector> copies{{0.5f, 0, 0}, {3, 0, 0}, {0, 0, 2}, {0, 2.5f, 0}};
  clipped_mixing clip(robust_options{.on = true, .tolerate = 1, .screen = 1.0});
  int checks = 0;
  clip.rule.set_screen([&](std::span<const float> copy, std::span<const float> own) {
    ++checks;
    CHECK(own.data() == base.data());  // against the node's own term
    return static_cast<double>(copy[0]);
  });
  std::vector<float> out(3);
  mix_neighbours(out, base, copies, row, std::vector<bool>(4, true), &clip);
  CHECK(checks == 4);
  const clip_stats& st = clip.rule.last();
  CHECK(st.screened_fraction == 0.25);
  CHECK(st.loss_gap == 3.0);
  // The one left out took the tolerated place: the radius is the largest of the others (2.5), none clipped.
  CHECK(st.tau == 2.5);
  CHECK(st.largest_distance == 2.5);            // the screened copy's distance is not measured
  CHECK(out[0] == doctest::Approx(0.2 * 0.5));  // its weight stays on base: nothing of (3, 0, 0)
  CHECK(out[1] == doctest::Approx(0.2 * 2.5));
  CHECK(out[2] == doctest::Approx(0.2 * 2.0));
  // A loss that is not finite is left out too; with none over the margin the mix is the clipped one.
  clip.rule.set_screen([](std::span<const float> copy, std::span<const float>) {
    return copy[0] == 3.0f ? std::numeric_limits<double>::quiet_NaN() : 0.0;
  });
  mix_neighbours(out, base, copies, row, std::vector<bool>(4, true), &clip);
  CHECK(clip.rule.last().screened_fraction == 0.25);
  clip.rule.set_screen([](std::span<const float>, std::span<const float>) { return 0.5; });
  mix_neighbours(out, base, copies, row, std::vector<bool>(4, true), &clip);
  CHECK(clip.rule.last().screened_fraction == 0.0);
  CHECK(clip.rule.last().tau == 2.5);  // distances 0.5, 3, 2, 2.5: the second largest
  // Without a margin in the options, a screen set does nothing (robust: {clip: auto} alone).
  clipped_mixing plain(robust_options{.on = true, .tolerate = 1});
  plain.rule.set_screen([&](std::span<const float>, std::span<const float>) {
    FAIL("not called");
    return 0.0;
  });
  mix_neighbours(out, base, copies, row, std::vector<bool>(4, true), &plain);
  CHECK(plain.rule.last().screened_fraction == 0.0);
}

// D-PSGD, DCD-PSGD and ECD-PSGD mix inside their round: with one neighbour sending a model 1e30
// away, the node's step away from its own (less its gradient step) is at most Σ_j W_ij τ, and τ is
// at most the largest honest distance, so a few units here.
TEST_CASE("robust D-PSGD, DCD-PSGD and ECD-PSGD: a hostile neighbour moves the node no further than an honest one") {
  const std::size_t d = 16;
  for (algorithm_kind kind : {algorithm_kind::dpsgd, algorithm_kind::dcd, algorithm_kind::ecd}) {
    CAPTURE(static_cast<int>(kind));
    for (const bool robust : {true, false}) {
      std::mt19937_64 rng(7);
      std::normal_distribution<float> g(0.0f, 1.0f);
      std::vector<float> x0(d);
      for (float& v : x0) v = g(rng);
      algorithm_options o;
      o.robust = {.on = robust, .tolerate = 1};
      auto alg = make_algorithm(kind, complete_row(), x0, o);
      const std::vector<float> zero(d, 0.0f);
      double largest_pull = 0;
      for (std::uint64_t t = 1; t <= 4; ++t) {
        const std::vector<float> before(alg->model().begin(), alg->model().end());
        const auto out = alg->outgoing(zero, 0.0f, t);  // no gradient: the change is the mix
        const std::vector<float> sent(out.begin(), out.end());
        alg->absorb_own(kind == algorithm_kind::dpsgd ? std::span<const float>(zero) : sent, t);
        for (int j = 1; j <= 4; ++j) {
          std::vector<float> m(d);
          for (std::size_t i = 0; i < d; ++i) m[i] = j == 3 ? 1e30f : (kind == algorithm_kind::dpsgd ? x0[i] : 0.0f) + 0.5f * g(rng);
          alg->absorb(j, m, t);
        }
        alg->finish(t);
        double pull = 0;
        for (std::size_t i = 0; i < d; ++i) {
          const double c = static_cast<double>(alg->model()[i]) - before[i];
          pull += c * c;
        }
        largest_pull = std::max(largest_pull, std::sqrt(pull));
      }
      if (robust) {
        REQUIRE(clip_stats_of(*alg) != nullptr);
        CHECK(largest_pull < 100.0);  // honest copies lie within a few units: 4 x 0.2 x tau
      } else {
        CHECK(clip_stats_of(*alg) == nullptr);
        CHECK(largest_pull > 1e20);  // the test has teeth: unclipped, the hostile model drags it away
      }
    }
  }
}

TEST_CASE("robust mixing off: CHOCO-SGD reports no clipping") {
  const std::vector<float> x0(8, 1.0f);
  auto alg = make_algorithm(algorithm_kind::choco, complete_row(), x0, algorithm_options{});
  CHECK(clip_stats_of(*alg) == nullptr);
}
