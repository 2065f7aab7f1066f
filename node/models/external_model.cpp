#include "node/models/external_model.hpp"

#include "core/errors.hpp"

namespace qgossip {

external_model::external_model(std::size_t params) : bounds_{0, params} {}

void external_model::init(std::span<float>, std::uint64_t) const {
  QG_ENFORCE(false, "an external model starts from the program's parameters, not from init");
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
