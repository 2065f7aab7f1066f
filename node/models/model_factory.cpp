#include "node/models/model_factory.hpp"

#include <string>

#include "core/errors.hpp"
#include "node/models/mlp.hpp"
#include "node/models/softmax_regression.hpp"

namespace qgossip {

bool have_torch() { return false; }

std::unique_ptr<model> make_model(const model_spec& spec, std::size_t dim, std::size_t classes,
                                  const image_shape& shape) {
  if (spec.kind == "softmax") {
    if (!spec.hidden.empty()) {
      throw config_error("model: softmax has no hidden layers, got " + std::to_string(spec.hidden.size()) +
                         " (use kind mlp)");
    }
    return std::make_unique<softmax_regression>(dim, classes);
  }
  if (spec.kind == "mlp") return std::make_unique<mlp>(dim, spec.hidden, classes);
  throw config_error("model: unknown kind '" + spec.kind + "' (expected softmax or mlp)");
}

}  // namespace qgossip
