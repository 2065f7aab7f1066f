// The algorithm:, compressor: and device: keys (node/config/sections.hpp): what a node runs, what
// its messages are made of, and where a libtorch model computes.
#include <cmath>

#include "algorithms/compress/isgq.hpp"
#include "node/config/config_fields.hpp"
#include "node/config/sections.hpp"

namespace qgossip {

namespace {

codec_spec read_compressor(yaml_reader& root) {
  auto node = root.child("compressor");
  if (!node) return codec_spec{"identity", {}};
  codec_spec spec;
  try {
    if (node->IsScalar()) {
      spec = parse_codec_spec(node->Scalar());
    } else {
      yaml_reader r(*node, root, "compressor");
      spec.name = r.require_string("name");
      for (auto it = node->begin(); it != node->end(); ++it) {
        const std::string& k = it->first.Scalar();
        if (k == "name") continue;
        if (!it->second.IsScalar()) throw r.error_at(it->second, "compressor." + k + ": expected a scalar");
        spec.params.emplace_back(k, it->second.Scalar());
      }
    }
    if (spec.name == "isgq")
      (void)make_isgq(spec);  // not a vector codec: it encodes a layer's factors (all-gather only)
    else
      (void)make_compressor(spec);  // validates name, parameters and values now, with a position
  } catch (const config_error& e) {
    if (e.has_position()) throw;
    throw root.error_at(*node, "compressor: " + e.message());
  }
  return spec;
}

void emit_codec(YAML::Emitter& y, const codec_spec& c) {
  y << YAML::BeginMap << YAML::Key << "name" << YAML::Value << c.name;
  for (const auto& [k, v] : c.params) y << YAML::Key << k << YAML::Value << v;
  y << YAML::EndMap;
}

// algorithm.robust: {clip: auto | τ, tolerate: b, screen: margin} (algorithms/robust_mixing.hpp).
robust_options read_robust(yaml_reader& rr, algorithm_kind algorithm) {
  if (is_centralized(algorithm))
    throw rr.error("algorithm.robust: " + std::string(name_of(algorithm)) +
                   " mixes no neighbours' models (every node sums every gradient): clipping is for the "
                   "decentralized algorithms, dpsgd, naive, dcd, ecd and choco (docs/security.md)");
  robust_options o{.on = true};
  if (rr.has("clip") && rr.get_string("clip", "auto") != "auto") {
    const double tau = rr.get_double("clip", 0);
    if (!(tau > 0) || !std::isfinite(tau))
      throw rr.error_at(rr.key_node("clip"), "algorithm.robust.clip: expected auto or a radius > 0, got " +
                                                 std::to_string(tau));
    o.tau = tau;
  }
  const std::int64_t b = rr.get_int("tolerate", o.tolerate);
  if (b < 0 || b > 1024)
    throw rr.error_at(rr.key_node("tolerate"), "algorithm.robust.tolerate: expected the number of hostile "
                                                   "neighbours to tolerate, 0 to 1024, got " + std::to_string(b));
  o.tolerate = static_cast<int>(b);
  if (rr.has("screen")) {
    const double margin = rr.get_double("screen", 0);
    if (!(margin > 0) || !std::isfinite(margin))
      throw rr.error_at(
          rr.key_node("screen"),
          "algorithm.robust.screen: expected a loss margin > 0 (nats), got " + std::to_string(margin));
    if (algorithm == algorithm_kind::ecd)
      throw rr.error_at(rr.key_node("screen"),
                        "algorithm.robust.screen: ecd mixes extrapolated estimates, not "
                        "models, whose loss says nothing; use clipping alone, or choco, "
                        "dcd, dpsgd or naive");
    o.screen = margin;
  }
  rr.finish();
  return o;
}

}  // namespace

void read_algorithm(yaml_reader& r, run_config& c) {
  if (auto a = r.child("algorithm"); a && a->IsMap()) {
    yaml_reader ar(*a, r, "algorithm");
    c.algorithm = get_choice(ar, "name", c.algorithm);
    c.algorithm_params.consensus_step = get_positive_double(ar, "consensus_step", c.algorithm_params.consensus_step,
                                                            1e-9, 1.0, "the consensus step size");
    if (c.algorithm != algorithm_kind::choco && ar.has("consensus_step"))
      throw ar.error("algorithm.consensus_step is only read by choco");
    if (auto rr = ar.map("robust")) c.algorithm_params.robust = read_robust(*rr, c.algorithm);
    ar.finish();
  } else {
    c.algorithm = get_choice(r, "algorithm", c.algorithm);
  }
  c.compressor = read_compressor(r);
  c.device = get_choice(r, "device", c.device);
}

void emit_algorithm(YAML::Emitter& y, const run_config& c) {
  y << YAML::Key << "algorithm" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value
    << std::string(name_of(c.algorithm));
  if (c.algorithm == algorithm_kind::choco)
    y << YAML::Key << "consensus_step" << YAML::Value << c.algorithm_params.consensus_step;
  if (const robust_options& r = c.algorithm_params.robust; r.on) {
    y << YAML::Key << "robust" << YAML::Value << YAML::BeginMap << YAML::Key << "clip" << YAML::Value;
    if (r.tau)
      y << *r.tau;
    else
      y << "auto";
    y << YAML::Key << "tolerate" << YAML::Value << r.tolerate;
    if (r.screen) y << YAML::Key << "screen" << YAML::Value << *r.screen;
    y << YAML::EndMap;
  }
  y << YAML::EndMap;
  y << YAML::Key << "compressor" << YAML::Value;
  emit_codec(y, c.compressor);
  y << YAML::Key << "device" << YAML::Value << std::string(name_of(c.device));
}

}  // namespace qgossip
