#include "node/run/message_inbox.hpp"

#include <algorithm>

#include "core/errors.hpp"

namespace qgossip {

message_inbox::message_inbox(const message_codec& codec, std::uint64_t seed, std::vector<int> peers,
                             std::size_t values)
    : codec_(codec), seed_(seed), peers_(std::move(peers)), decoded_(peers_.size(), float_vector(values)) {}

std::size_t message_inbox::slot(int peer) const {
  return static_cast<std::size_t>(std::lower_bound(peers_.begin(), peers_.end(), peer) - peers_.begin());
}

status message_inbox::accept(const wire_header& h, std::span<const std::byte> payload) {
  const int from = static_cast<int>(h.sender);
  const std::size_t k = slot(from);
  if (k == peers_.size() || peers_[k] != from)
    return status::error(errc::invalid, "rank " + std::to_string(from) + " is not a train peer");
  const codec_context ctx{.seed = seed_, .rank = h.sender, .iteration = h.iteration, .stream = 0};
  return codec_.decode(payload, ctx, decoded_[k]);
}

std::span<const float> message_inbox::from(int peer) const {
  const std::size_t k = slot(peer);
  QG_ENFORCE(k < peers_.size() && peers_[k] == peer, "rank " << peer << " is not a train peer");
  return decoded_[k];
}

}  // namespace qgossip
