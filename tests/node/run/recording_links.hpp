#pragma once
// A link_control (gossip/exchange/link_control.hpp) for tests of a node's membership parts: it sends
// nothing, and records what a part did to the links, so a test reads it back.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gossip/exchange/link_control.hpp"

namespace qgossip::testing {

struct recording_links final : link_control {
  struct sent {
    std::vector<int> to;
    std::string payload;
    std::uint64_t iteration = 0;
  };
  std::vector<sent> notices;
  std::vector<std::pair<int, std::string>> joins;  // (to, payload)
  std::vector<int> dropped_peers;
  std::vector<std::pair<int, std::uint64_t>> readmitted;
  std::vector<int> heard;  // peers heard_from() says took part

  status send_notice(std::span<const int> peers, std::span<const std::byte> payload, std::uint64_t iteration) override {
    notices.push_back({{peers.begin(), peers.end()}, text(payload), iteration});
    return status::ok();
  }
  status send_join(int peer, std::uint64_t, std::span<const std::byte> payload, std::optional<std::uint64_t>) override {
    joins.emplace_back(peer, text(payload));
    return status::ok();
  }
  void drop(int peer) override {
    if (!dropped(peer)) dropped_peers.push_back(peer);
  }
  [[nodiscard]] bool dropped(int peer) const override {
    return std::find(dropped_peers.begin(), dropped_peers.end(), peer) != dropped_peers.end();
  }
  void readmit(int peer, std::uint64_t iteration) override {
    std::erase(dropped_peers, peer);
    readmitted.emplace_back(peer, iteration);
  }
  void refresh_link(int) override {}
  [[nodiscard]] bool heard_from(int peer) const override {
    return std::find(heard.begin(), heard.end(), peer) != heard.end();
  }
  [[nodiscard]] std::uint64_t run_id() const override { return 0x1234; }

  static std::string text(std::span<const std::byte> bytes) {
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
  }
};

}  // namespace qgossip::testing
