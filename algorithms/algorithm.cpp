#include "algorithms/algorithm.hpp"

#include <algorithm>
#include <string>

#include "algorithms/centralized_sgd.hpp"
#include "algorithms/choco_sgd.hpp"
#include "algorithms/dcd_psgd.hpp"
#include "algorithms/dpsgd.hpp"
#include "algorithms/ecd_psgd.hpp"
#include "core/errors.hpp"

namespace qgossip {

std::unique_ptr<algorithm> make_algorithm(algorithm_kind kind, const mixing_row& row, std::span<const float> x0,
                                          const algorithm_options& options) {
  QG_ENFORCE(row.neighbours.size() == row.weights.size());
  QG_ENFORCE(std::is_sorted(row.neighbours.begin(), row.neighbours.end()), "neighbours must be ascending");
  QG_ENFORCE(options.model_storage.empty() || kind == algorithm_kind::choco,
             "only CHOCO-SGD keeps its model in given storage (algorithm_options::model_storage)");
  switch (kind) {
    case algorithm_kind::dpsgd: return std::make_unique<dpsgd>(row, x0, false, options.asynchronous, options.robust);
    case algorithm_kind::naive: return std::make_unique<dpsgd>(row, x0, true, options.asynchronous, options.robust);
    case algorithm_kind::dcd: return std::make_unique<dcd_psgd>(row, x0, options.asynchronous, options.robust);
    case algorithm_kind::ecd: return std::make_unique<ecd_psgd>(row, x0, options.asynchronous, options.robust);
    case algorithm_kind::choco:
      if (!(options.consensus_step > 0 && options.consensus_step <= 1))
        throw config_error("algorithm.consensus_step must be in (0, 1], got " + std::to_string(options.consensus_step));
      return std::make_unique<choco_sgd>(row, x0, options);
    case algorithm_kind::allgather: return std::make_unique<allgather_sgd>(row, x0);
    case algorithm_kind::allreduce: return std::make_unique<allreduce_sgd>(row, x0);
  }
  throw invariant_error("algorithm_kind " + std::to_string(static_cast<int>(kind)));
}

std::unique_ptr<algorithm> make_algorithm(std::string_view name, const mixing_row& row, std::span<const float> x0,
                                          const algorithm_options& options) {
  const auto kind = parse_name<algorithm_kind>(name);
  if (!kind)
    throw config_error("unknown algorithm '" + std::string(name) + "'; expected one of " + name_list<algorithm_kind>());
  return make_algorithm(*kind, row, x0, options);
}

mixing_row complete_mixing_row(int rank, int n) {
  mixing_row row;
  row.rank = rank;
  row.self_weight = 1.0 / n;
  for (int j = 0; j < n; ++j)
    if (j != rank) {
      row.neighbours.push_back(j);
      row.weights.push_back(1.0 / n);
    }
  return row;
}

bool is_centralized(algorithm_kind kind) { return kind == algorithm_kind::allreduce || kind == algorithm_kind::allgather; }

}  // namespace qgossip
