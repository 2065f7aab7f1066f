#include "node/attack/label_flip.hpp"

namespace qgossip {

void flip_labels(dataset& d) {
  for (std::uint8_t& y : d.labels) y = static_cast<std::uint8_t>(d.classes - 1 - y);
}

}  // namespace qgossip
