#pragma once
// Builds a model from its configuration: the one place that knows every model kind.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "node/model.hpp"

namespace qgossip {

struct model_spec {
  std::string kind = "mlp";              // "softmax" or "mlp"
  std::vector<std::size_t> hidden{128};  // hidden widths: mlp needs >= 1 layer, softmax none
};

// Throws config_error naming the problem for an unknown kind, hidden layers given to softmax,
// none to mlp, a zero width, dim == 0 or classes outside 2..256.
[[nodiscard]] std::unique_ptr<model> make_model(const model_spec& spec, std::size_t dim, std::size_t classes);

}  // namespace qgossip
