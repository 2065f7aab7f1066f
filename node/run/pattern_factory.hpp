#pragma once
// Which round pattern a node runs (node/run/round_pattern.hpp), chosen from its shape: the ring
// all-reduce, asynchronous gossip, or synchronous gossip; and, for a pattern that wraps another
// (node/run/hostile_round.hpp), the gossip pattern's own message. Apart from round_pattern.hpp so
// that the interface includes none of its implementations.
#include <memory>

#include "node/run/gossip_round.hpp"
#include "node/run/round_pattern.hpp"

namespace qgossip {

// The pattern of `shape` (gossip: parts.inbox set). Asynchronous gossip needs the algorithm's
// async_mixing (algorithms/capabilities.hpp): invariant_error without it (the config refuses
// max_staleness for the centralized algorithms, which have none).
[[nodiscard]] std::unique_ptr<round_pattern> make_round_pattern(const pattern_shape& shape,
                                                                const round_pattern_parts& parts);

// The message a gossip pattern sends each round (gossip_round, async_gossip_round), or nullptr for
// a pattern that sends none of its own (the ring all-reduce, whose hops carry partial sums).
[[nodiscard]] own_message* own_message_of(round_pattern& pattern);

}  // namespace qgossip
