// The codec registry: name -> factory. To add a codec, add one row to kRegistry.
#include <algorithm>

#include "algorithms/compress/codec_params.hpp"
#include "algorithms/compress/compressor.hpp"
#include "algorithms/compress/dither.hpp"
#include "algorithms/compress/identity.hpp"
#include "algorithms/compress/mcgq.hpp"
#include "algorithms/compress/nuqsgd.hpp"
#include "algorithms/compress/qsgd.hpp"
#include "algorithms/compress/half.hpp"
#include "algorithms/compress/sign.hpp"
#include "algorithms/compress/sparsify.hpp"
#include "algorithms/compress/topk.hpp"
#include "core/errors.hpp"

namespace qgossip {
namespace {

using factory = std::unique_ptr<compressor> (*)(const codec_spec&, const layer_bounds&);

struct registry_entry {
  std::string_view name;
  factory make;
};

// One row per codec, each on its own line.
constexpr registry_entry kRegistry[] = {
    {"identity", &make_identity},
    {"qsgd", &make_qsgd},
    {"randsparse", &make_randsparse},
    {"randk", &make_randk},
    {"topk", &make_topk},
    {"sign", &make_sign},
    {"fp16", &make_fp16},
    {"bf16", &make_bf16},
    {"mcgq", &make_mcgq},
    {"dither", &make_dither},
    {"nuqsgd", &make_nuqsgd},
};

}  // namespace

std::vector<std::string> codec_names() {
  std::vector<std::string> names;
  for (const registry_entry& e : kRegistry) names.emplace_back(e.name);
  return names;
}

std::unique_ptr<compressor> make_compressor(const codec_spec& spec, const layer_bounds& layers) {
  for (const registry_entry& e : kRegistry)
    if (e.name == spec.name) return e.make(spec, layers);
  const std::vector<std::string> names = codec_names();
  std::string what = "unknown codec '" + spec.name + "'";
  const std::string hint = closest_match(spec.name, names);
  if (!hint.empty()) what += " (did you mean '" + hint + "'?)";
  what += "; valid codecs:";
  for (std::size_t i = 0; i < names.size(); ++i) what += (i == 0 ? " " : ", ") + names[i];
  throw config_error(what);
}

}  // namespace qgossip
