#pragma once
// Stopping for a time limit (SIGUSR1, node/run/run_control.hpp request_halt; docs/checkpoints.md,
// "Stopping for a time limit"), one part of a node's membership (docs/design.md, "Notices"): the
// lowest-ranked live node proposes to stop after round t + margin (margin: enough rounds for the
// news to reach every node first, twice the graph's diameter and more) and the proposal travels hop
// by hop as `halt` notices (node/membership/notice.hpp); every node stops after that round,
// checkpointed. The latest proposal wins; a node passes on only one that moves its halt round.
// Not thread-safe (the node loop's thread).
#include <cstdint>
#include <optional>
#include <span>

#include "gossip/exchange/link_control.hpp"
#include "node/membership/membership.hpp"
#include "node/membership/notice_board.hpp"
#include "node/run/departures.hpp"

namespace qgossip {

class halt_agreement final : public notice_part {
 public:
  // members: who is still in the run (the proposer is its lowest live rank); news: how notices
  // reach the live peers. Registers for halt notices.
  halt_agreement(int rank, const membership& members, departures& news, notice_board& board);

  status on_items(const notice_source& source, std::span<const notice_item> items, link_control& links) override;

  // Called at round t of a node that got the signal; only the proposer acts on it.
  void signal(std::uint64_t t, std::uint64_t margin, link_control& links);
  // The round to stop after, once proposed or heard of.
  [[nodiscard]] std::optional<std::uint64_t> round() const { return halt_round_; }

 private:
  // A halt round proposed or heard (from told_by; rank_: this node's own): taken when later than the
  // one known, then passed on.
  void take(std::uint64_t round, int told_by, link_control& links);

  int rank_;
  const membership& members_;
  departures& news_;
  std::optional<std::uint64_t> halt_round_;
};

}  // namespace qgossip
