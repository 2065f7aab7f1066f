#include "node/attack/forger.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "core/errors.hpp"
#include "core/portable_random.hpp"

namespace qgossip {

namespace {

// The adaptive attack's line search: β over 1/4, 1/2, 1, ..., 1024 (docs/security.md).
constexpr double kFirstStep = 0.25;
constexpr int kSteps = 13;

}  // namespace

std::string attack_refusal(std::string_view algorithm, attack_kind a) {
  const std::string name(algorithm);
  if (a == attack_kind::label_flip) return "";
  if (name == "choco" || name == "dcd") return "";
  if (name == "dpsgd" || name == "naive")
    return needs_copies(a)
               ? "the " + std::string(to_text(a)) + " attack needs the neighbours' copies, which " + name +
                     " does not hold: use choco or dcd"
               : "";
  return "attacks are sent with the decentralized algorithms choco, dcd, dpsgd and naive; " + name +
         (name == "ecd" ? " mixes extrapolated estimates, which the forger does not model"
                        : " mixes no neighbours' models (every node takes part)");
}

message_form message_form_for(const algorithm& alg, attack_kind a) {
  if (const std::string why = attack_refusal(alg.name(), a); !why.empty())
    throw config_error("hostile: " + why);
  const std::string_view name = alg.name();
  return name == "choco" || name == "dcd" ? message_form::additive : message_form::replacing;
}

forger::forger(const attack_spec& spec, const robust_options& defence, message_form form, std::uint64_t seed)
    : spec_(spec), defence_(defence), form_(form), seed_(seed) {}

void forger::before_round(const algorithm& alg) {
  if (form_ != message_form::additive) return;
  std::span<const float> own = alg.model();  // DCD-PSGD: the replicas of this node are its model
  if (alg.name() == "choco")
    for (const held_copy& h : alg.held_copies())
      if (h.rank == alg.row().rank && h.holder < 0) own = h.values;
  published_.assign(own.begin(), own.end());
  for (int peer : alg.row().neighbours)
    if (held_.find(peer) == held_.end()) held_.emplace(peer, published_);
}

std::span<const float> forger::copy_of(const algorithm& alg, int peer) const {
  for (const held_copy& h : alg.held_copies())
    if (h.rank == peer) return h.values;
  QG_ENFORCE(false, "the forger holds no copy of neighbour " << peer);
  return {};
}

void forger::prepare_round(const algorithm& alg, std::uint64_t t) {
  if (prepared_ == t) return;
  prepared_ = t;
  const std::span<const float> x = alg.model();
  const std::size_t n = x.size();
  if (needs_copies(spec_.attack)) {
    const std::vector<int>& peers = alg.row().neighbours;
    mean_.assign(n, 0.0f);
    spread_.assign(n, 0.0f);
    centre_.assign(x.begin(), x.end());
    const double d = static_cast<double>(std::max<std::size_t>(peers.size(), 1));
    for (int p : peers) {
      const std::span<const float> c = copy_of(alg, p);
      for (std::size_t i = 0; i < n; ++i) {
        mean_[i] += static_cast<float>(c[i] / d);
        centre_[i] += c[i];
      }
    }
    for (std::size_t i = 0; i < n; ++i) centre_[i] = static_cast<float>(centre_[i] / (d + 1));
    for (int p : peers) {
      const std::span<const float> c = copy_of(alg, p);
      for (std::size_t i = 0; i < n; ++i)
        spread_[i] += static_cast<float>((c[i] - mean_[i]) * (c[i] - mean_[i]) / d);
    }
    for (float& v : spread_) v = std::sqrt(v);
  }
  if (spec_.attack == attack_kind::noise) {
    std::mt19937_64 rng(seed_ ^ (0x9E3779B97F4A7C15ULL * (static_cast<std::uint64_t>(spec_.rank) + 1)) ^
                        (0xBF58476D1CE4E5B9ULL * t));
    noise_.assign(n, 0.0f);
    fill_normal(noise_, spec_.sigma, rng);
  }
}

// The β of c_k + β·d·u_k that pulls neighbour k furthest along u_k through the run's defence, the
// smallest on a tie: k's other neighbours (as many as this node has, less one) taken to lie d away.
double forger::adaptive_step(double d) const {
  if (!defence_.on) return kFirstStep * std::pow(2.0, kSteps - 1);
  clip_rule rule(defence_);
  std::vector<double> distances;
  std::vector<float> scale;
  double best = kFirstStep, best_pull = -1;
  for (int i = 0; i < kSteps; ++i) {
    const double beta = kFirstStep * std::pow(2.0, i);
    distances.assign(std::max<std::size_t>(degree_, 1), d);
    distances[0] = beta * d;
    scale.assign(distances.size(), 0.0f);
    rule.scales(distances, scale);
    const double pull = static_cast<double>(scale[0]) * beta * d;
    if (pull > best_pull * (1 + 1e-9)) {
      best_pull = pull;
      best = beta;
    }
  }
  return best;
}

void forger::target_for(const algorithm& alg, std::size_t k, int peer, std::span<float> out) const {
  const std::span<const float> x = alg.model();
  const std::size_t n = x.size();
  // The attacks aimed at each neighbour's own copy send a colluding hostile rank the honest model.
  if ((spec_.attack == attack_kind::dissensus || spec_.attack == attack_kind::adaptive) && colluder(peer)) {
    std::copy(x.begin(), x.end(), out.begin());
    return;
  }
  switch (spec_.attack) {
    case attack_kind::flip:
      for (std::size_t i = 0; i < n; ++i) out[i] = -x[i];
      return;
    case attack_kind::scale:
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(spec_.lambda * x[i]);
      return;
    case attack_kind::noise:
      for (std::size_t i = 0; i < n; ++i) out[i] = x[i] + noise_[i];
      return;
    case attack_kind::alie:
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(mean_[i] - spec_.z * spread_[i]);
      return;
    case attack_kind::ipm:
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(-spec_.epsilon * mean_[i]);
      return;
    case attack_kind::dissensus: {
      const std::span<const float> c = copy_of(alg, peer);
      for (std::size_t i = 0; i < n; ++i)
        out[i] = static_cast<float>(c[i] - spec_.epsilon * (centre_[i] - c[i]));
      return;
    }
    case attack_kind::equivocate: {
      const double sign = k % 2 == 0 ? 1.0 : -spec_.lambda;
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(sign * x[i]);
      return;
    }
    case attack_kind::adaptive: {
      const std::span<const float> c = copy_of(alg, peer);
      double d2 = 0, u2 = 0;
      for (std::size_t i = 0; i < n; ++i) {
        d2 += static_cast<double>(x[i] - c[i]) * (x[i] - c[i]);
        u2 += static_cast<double>(-x[i] - c[i]) * (-x[i] - c[i]);
      }
      const double d = std::sqrt(d2), u = std::sqrt(u2);
      const double step = u > 0 ? adaptive_step(d) * d / u : 0.0;
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(c[i] + step * (-x[i] - c[i]));
      return;
    }
    case attack_kind::nan:
    case attack_kind::label_flip:
      break;
  }
  QG_ENFORCE(false, "the " << to_text(spec_.attack) << " attack has no target model");
}

bool forger::colluder(int peer) const {
  return std::find(spec_.colluders.begin(), spec_.colluders.end(), peer) != spec_.colluders.end();
}

std::span<const float> forger::message_for(const algorithm& alg, std::size_t k, int peer, std::uint64_t t) {
  degree_ = alg.row().neighbours.size();
  prepare_round(alg, t);
  message_.resize(alg.model().size());
  target_for(alg, k, peer, message_);
  if (form_ == message_form::additive) {
    const float_vector& held = held_.at(peer);
    for (std::size_t i = 0; i < message_.size(); ++i) message_[i] -= held[i];
  }
  return message_;
}

void forger::sent(int peer, std::span<const float> decoded) {
  if (form_ != message_form::additive) return;
  float_vector& held = held_.at(peer);
  for (std::size_t i = 0; i < held.size(); ++i) held[i] += decoded[i];
}

std::span<const float> forger::held_by(int peer) const { return held_.at(peer); }

}  // namespace qgossip
