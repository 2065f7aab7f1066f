#include "algorithms/algorithm.hpp"

#include <algorithm>
#include <string>

#include "algorithms/dcd_psgd.hpp"
#include "algorithms/dpsgd.hpp"
#include "algorithms/ecd_psgd.hpp"
#include "core/errors.hpp"

namespace qgossip {

std::unique_ptr<algorithm> make_algorithm(std::string_view name, const mixing_row& row, std::span<const float> x0) {
  QG_ENFORCE(row.neighbours.size() == row.weights.size());
  QG_ENFORCE(std::is_sorted(row.neighbours.begin(), row.neighbours.end()), "neighbours must be ascending");
  if (name == "dpsgd") return std::make_unique<dpsgd>(row, x0, false);
  if (name == "naive") return std::make_unique<dpsgd>(row, x0, true);
  if (name == "dcd") return std::make_unique<dcd_psgd>(row, x0);
  if (name == "ecd") return std::make_unique<ecd_psgd>(row, x0);
  throw config_error("unknown algorithm '" + std::string(name) + "'; expected one of dpsgd, naive, dcd, ecd");
}

}  // namespace qgossip
