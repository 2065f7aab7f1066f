#pragma once
// Every node must start from the same model, one part of a node's membership (docs/design.md,
// "Notices"): the algorithms' replicas and estimates begin as copies of their owner's start, so a
// program's model initialized from another seed, or another model file on one host, would break
// every copy at once. A node that starts the run afresh (not resumed, not rejoining) tells its
// neighbours the size and hash of the model it starts from (a `start` notice,
// node/membership/notice.hpp); a neighbour that started from another one ends this node's wait with
// errc::refused naming it and both hashes. A node that did not start afresh compares nothing.
// Not thread-safe (the node loop's thread).
#include <optional>
#include <span>

#include "gossip/exchange/link_control.hpp"
#include "node/membership/notice_board.hpp"
#include "node/run/departures.hpp"

namespace qgossip {

class start_check final : public notice_part {
 public:
  // news: how notices reach the live peers. Registers for start notices.
  start_check(departures& news, notice_board& board);

  status on_items(const notice_source& source, std::span<const notice_item> items, link_control& links) override;

  // This node starts afresh from `model`: its neighbours are told, and theirs compared from now on.
  void announce(std::span<const float> model, link_control& links);

 private:
  departures& news_;
  std::optional<notice_item> start_;  // announce()'s: this node's starting model (size, hash)
};

}  // namespace qgossip
