#include "gossip/transport.hpp"

namespace qgossip {

status transport::send_all(std::span<const int> peers, std::span<const std::byte> header,
                           std::span<const std::byte> payload) {
  for (int peer : peers) {
    status s = send(peer, header, payload);
    if (!s) return s;
  }
  return status::ok();
}

}  // namespace qgossip
