#include "node/models/external_model.hpp"

#include <algorithm>

#include "core/errors.hpp"

namespace qgossip {

external_model::external_model(std::span<const float> x1)
    : x1_(x1.begin(), x1.end()), bounds_{0, x1.size()} {}

void external_model::init(std::span<float> params, std::uint64_t) const {
  QG_ENFORCE(params.size() == x1_.size(),
             "init: " << params.size() << " parameters, the model has " << x1_.size());
  std::copy(x1_.begin(), x1_.end(), params.begin());
}

double external_model::loss_and_grad(std::span<const float>, const dataset&, std::span<const std::size_t>,
                                     std::span<float>) const {
  QG_ENFORCE(false, "an external model is trained by the program that drives the node, not by the node");
  return 0;
}

eval_result external_model::evaluate(std::span<const float>, const dataset&, std::size_t) const {
  QG_ENFORCE(false, "an external model is evaluated by the program that drives the node, not by the node");
  return {};
}

std::string external_model::describe() const {
  return "external (trained by the program that drives the node)";
}

}  // namespace qgossip
