#include "algorithms/clipped_mix.hpp"

#include "algorithms/mixing.hpp"
#include "algorithms/receipts.hpp"
#include "core/errors.hpp"

namespace qgossip {

void mix_neighbours(std::span<float> out, std::span<const float> base, std::span<const float_vector> copies,
                    const mixing_row& row, const std::vector<bool>& fresh, clipped_mixing* clip) {
  QG_ENFORCE(copies.size() == row.neighbours.size() && fresh.size() == copies.size(),
             copies.size() << " copies, " << fresh.size() << " receipts, " << row.neighbours.size() << " neighbours");
  double own = own_weight(row, fresh);
  if (!clip) {
    mixing::scale(out, static_cast<float>(own), base);
    for (std::size_t k = 0; k < copies.size(); ++k)
      if (fresh[k]) mixing::axpy(out, static_cast<float>(row.weights[k]), copies[k]);
    return;
  }
  clip->distances.clear();
  for (std::size_t k = 0; k < copies.size(); ++k)
    if (fresh[k]) clip->distances.push_back(clip->rule.checked_distance(copies[k], base));
  clip->scales.resize(clip->distances.size());
  clip->rule.scales(clip->distances, clip->scales);
  clip->weights.assign(copies.size(), 0.0f);
  for (std::size_t k = 0, i = 0; k < copies.size(); ++k) {
    if (!fresh[k]) continue;
    clip->weights[k] = static_cast<float>(row.weights[k]) * clip->scales[i];
    own += row.weights[k] * (1.0 - static_cast<double>(clip->scales[i]));
    ++i;
  }
  mixing::scale(out, static_cast<float>(own), base);
  for (std::size_t k = 0; k < copies.size(); ++k)
    if (clip->weights[k] != 0.0f) mixing::axpy(out, clip->weights[k], copies[k]);
}

}  // namespace qgossip
