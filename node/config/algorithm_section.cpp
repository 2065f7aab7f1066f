// The algorithm:, compressor: and device: keys (node/config/sections.hpp): what a node runs, what
// its messages are made of, and where a libtorch model computes.
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

}  // namespace

void read_algorithm(yaml_reader& r, run_config& c) {
  if (auto a = r.child("algorithm"); a && a->IsMap()) {
    yaml_reader ar(*a, r, "algorithm");
    c.algorithm = get_choice(ar, "name", c.algorithm);
    c.algorithm_params.consensus_step = get_positive_double(ar, "consensus_step", c.algorithm_params.consensus_step,
                                                            1e-9, 1.0, "the consensus step size");
    if (c.algorithm != algorithm_kind::choco && ar.has("consensus_step"))
      throw ar.error("algorithm.consensus_step is only read by choco");
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
  y << YAML::EndMap;
  y << YAML::Key << "compressor" << YAML::Value;
  emit_codec(y, c.compressor);
  y << YAML::Key << "device" << YAML::Value << std::string(name_of(c.device));
}

}  // namespace qgossip
