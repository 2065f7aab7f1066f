#include "node/run/async_gossip_round.hpp"

#include <algorithm>

#include "algorithms/algorithm.hpp"
#include "node/config/config.hpp"
#include "node/run/message_inbox.hpp"

namespace qgossip {

async_gossip_round::async_gossip_round(const round_pattern_parts& p, async_mixing& mixing,
                                       per_edge_messages* per_edge, std::uint64_t max_staleness)
    : own_(p),
      alg_(p.alg),
      mixing_(mixing),
      ex_(p.ex),
      inbox_(*p.inbox),
      peers_(p.train_peers),
      max_staleness_(max_staleness),
      last_round_(p.rounds),
      may_skip_(max_staleness == kUnboundedStaleness && mixing.may_skip_message()) {
  if (per_edge != nullptr) edges_.emplace(p, *per_edge);
  inbox_.hold_at_most(kHeldPerPeer * std::max<std::size_t>(peers_.size(), 1), [this] { absorb_inbox(alg_, inbox_); });
}

async_gossip_round::~async_gossip_round() { inbox_.hold_at_most(0, {}); }

// A bounded τ makes neighbours wait for this node's messages: skipping them would hold them back.
// The last round sends on every link: a neighbour still running mixes with this node's final copy
// from then on (neighbour_finished), which should be its final model, not one many rounds old.
void async_gossip_round::encode(std::span<const float> outgoing, std::uint64_t t) {
  if (!may_skip_) return own_.encode(outgoing, t);  // on every link (exchange's gather)
  open_.clear();
  const std::vector<int>& neighbours = alg_.row().neighbours;
  // A link that takes no more messages (a peer dropped, or gone) gets none, and is not counted as
  // skipped: its edge copy must not move.
  std::size_t live = 0;
  for (int j : neighbours) {
    if (!ex_.takes_messages(j)) continue;
    ++live;
    if ((last_round_ > 0 && t >= last_round_) || !ex_.link_busy(j, t)) open_.push_back(j);
  }
  messages_unsent_ += live - open_.size();
  if (open_.empty() && live > 0) ++unsent_;
  if (edges_) return edges_->encode(open_, t, sends_);
  sends_.clear();
  if (open_.empty()) return;
  own_.encode(outgoing, t);
  for (int j : open_) sends_.push_back({j, own_.wire().payload});
}

std::uint64_t async_gossip_round::need(std::uint64_t t) const {
  if (max_staleness_ == kUnboundedStaleness || t <= max_staleness_) return 0;  // nothing yet: no wait
  return t - max_staleness_;
}

status async_gossip_round::exchange(std::uint64_t t) {
  inbox_.clear();
  round_ = t;
  // The messages go to the inbox (link_events), decoded as they arrive.
  const status st = may_skip_ ? ex_.gather(t, own_.wire(), need(t), sends_) : ex_.gather(t, own_.wire(), need(t));
  staleness_ = 0;
  for (int j : alg_.row().neighbours) {
    const std::uint64_t newest = ex_.newest(j);
    if (!ex_.finished(j)) staleness_ = std::max(staleness_, t > newest ? t - newest : 0);
  }
  return st;
}

// After a neighbour's finish notice, which comes after its last message, every message of its has
// been absorbed: its copy is final from this round's mix on.
void async_gossip_round::absorb(std::uint64_t t) {
  absorb_inbox(alg_, inbox_);
  for (int j : alg_.row().neighbours) {
    const bool told = std::find(told_finished_.begin(), told_finished_.end(), j) != told_finished_.end();
    if (ex_.finished(j) && !told) {
      mixing_.neighbour_finished(j);
      told_finished_.push_back(j);
    }
  }
  if (caught_up_from_ == 0 && !told_finished_.empty() && ex_.all_finished()) caught_up_from_ = t;
}

bool async_gossip_round::peers_done() const {
  if (!ex_.all_finished()) return false;
  // No neighbour finished (all left): no model to catch up with.
  return told_finished_.empty() || (caught_up_from_ > 0 && round_ >= caught_up_from_ + kCatchUpRounds);
}

status async_gossip_round::leave(std::uint64_t t, transport_clock::time_point deadline) {
  inbox_.clear();
  return ex_.finish(t, deadline, [this] { absorb_inbox(alg_, inbox_); });
}

std::string async_gossip_round::describe() const {
  return own_.describe(peers_) + " asynchronously (at most " +
         (max_staleness_ == kUnboundedStaleness ? std::string("any number of") : std::to_string(max_staleness_)) +
         " rounds ahead of a neighbour)";
}

}  // namespace qgossip
