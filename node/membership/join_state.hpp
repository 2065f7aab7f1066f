#pragma once
// The payload of a join_state message (gossip/wire.hpp message_kind::join_state; docs/failures.md,
// "Rejoining"): the sender's model, model_size float32 values, then its public state (what its
// neighbours hold a copy of) when it has one, as many again; little-endian, as the train messages.
// It comes from an authenticated neighbour, yet is parsed as hostile input: the wrong count, a
// payload of another size, or a value that is not finite is errc::corrupt and nothing is kept
// (fuzz/join_state_fuzz.cpp).
#include <cstdint>
#include <span>
#include <vector>

#include "core/status.hpp"

namespace qgossip {

struct join_state {
  std::vector<float> model;
  std::vector<float> public_state;  // empty: the sender holds none apart from its model
};

// Parses a join_state payload (count: its header's) of a run whose models have model_size values into out.
[[nodiscard]] status parse_join_state(std::uint64_t count, std::span<const std::byte> payload,
                                      std::uint64_t model_size, join_state& out);

}  // namespace qgossip
