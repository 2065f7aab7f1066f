#include "node/run/loss_screen.hpp"

#include <algorithm>
#include <cmath>

#include "core/errors.hpp"

namespace qgossip {

namespace {

dataset spread(const dataset& shard, std::size_t count) {
  QG_ENFORCE(shard.size > 0, "the loss screen needs a shard with examples");
  const std::size_t n = std::min(count, shard.size);
  std::vector<std::size_t> at(n);
  for (std::size_t i = 0; i < n; ++i) at[i] = i * shard.size / n;
  return shard.subset(at);
}

}  // namespace

loss_screen::loss_screen(const model& m, const dataset& shard)
    : model_(m), check_(spread(shard, kExamples)) {}

double loss_screen::gap(std::span<const float> copy, std::span<const float> own) {
  if (own_.size() != own.size() || !std::equal(own.begin(), own.end(), own_.begin())) {
    own_.assign(own.begin(), own.end());
    own_loss_ = model_.evaluate(own, check_).loss;
  }
  const double loss = model_.evaluate(copy, check_).loss;
  return std::isfinite(loss) ? loss - own_loss_ : NAN;
}

}  // namespace qgossip
