#include "algorithms/capabilities.hpp"

namespace qgossip {

async_mixing* async_mixing_of(algorithm& alg) { return dynamic_cast<async_mixing*>(&alg); }

per_edge_messages* per_edge_messages_of(algorithm& alg) {
  auto* edges = dynamic_cast<per_edge_messages*>(&alg);
  return edges != nullptr && edges->sends_per_edge() ? edges : nullptr;
}

rejoinable* rejoinable_of(algorithm& alg) { return dynamic_cast<rejoinable*>(&alg); }

additive_messages* additive_messages_of(algorithm& alg) { return dynamic_cast<additive_messages*>(&alg); }

difference_message* difference_message_of(algorithm& alg) {
  auto* d = dynamic_cast<difference_message*>(&alg);
  return d != nullptr && d->sends_difference() ? d : nullptr;
}

}  // namespace qgossip
