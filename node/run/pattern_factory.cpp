#include "node/run/pattern_factory.hpp"

#include "algorithms/capabilities.hpp"
#include "core/errors.hpp"
#include "node/run/async_gossip_round.hpp"
#include "node/run/ring_round.hpp"

namespace qgossip {

std::unique_ptr<round_pattern> make_round_pattern(const pattern_shape& shape, const round_pattern_parts& parts) {
  if (!shape.gossip) return std::make_unique<ring_round>(parts);
  if (shape.max_staleness > 0) {
    async_mixing* mixing = async_mixing_of(parts.alg);
    QG_ENFORCE(mixing != nullptr, parts.alg.name() << " cannot gossip asynchronously (no async_mixing)");
    return std::make_unique<async_gossip_round>(parts, *mixing, per_edge_messages_of(parts.alg),
                                                shape.max_staleness);
  }
  return std::make_unique<gossip_round>(parts);
}

own_message* own_message_of(round_pattern& pattern) {
  if (auto* sync = dynamic_cast<gossip_round*>(&pattern)) return &sync->message();
  if (auto* async = dynamic_cast<async_gossip_round*>(&pattern)) return &async->message();
  return nullptr;
}

}  // namespace qgossip
