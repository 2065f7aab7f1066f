#include "node/run/gossip_round.hpp"

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "algorithms/algorithm.hpp"
#include "algorithms/capabilities.hpp"
#include "core/errors.hpp"
#include "node/run/message_codec.hpp"
#include "node/run/message_inbox.hpp"

namespace qgossip {

namespace {

// The algorithm's own message adds into its own_sum, and the codec decodes into a sum.
additive_messages* own_adding(algorithm& alg, const message_codec& codec) {
  additive_messages* add = additive_messages_of(alg);
  return add && add->own_adds() && codec.adds_decoded() ? add : nullptr;
}

}  // namespace

own_message::own_message(const round_pattern_parts& p)
    : alg_(p.alg), codec_(p.codec), rank_(p.rank), seed_(p.seed), values_(p.alg.model().size()),
      adding_(own_adding(p.alg, p.codec)), own_decoded_(adding_ ? 0 : values_) {}

std::vector<std::byte>& own_message::free_buffer() {
  // The latest message's buffer if the transport let go of it (a synchronous round: only ever one),
  // else another it let go of; else a new one in an empty place or in the oldest's.
  std::optional<std::size_t> pick, empty;
  for (std::size_t k = 0; k < kBuffers && !pick; ++k) {
    const std::size_t i = (current_ + k) % kBuffers;
    if (!buffers_[i])
      empty = empty.value_or(i);
    else if (buffers_[i].use_count() == 1)
      pick = i;
  }
  if (!pick) {
    pick = empty.value_or((current_ + 1) % kBuffers);
    buffers_[*pick] = std::make_shared<std::vector<std::byte>>();
    buffers_[*pick]->reserve(codec_.max_encoded_bytes());
  }
  // The transport's last read of a reused message happens before this round's writes: its release
  // of the buffer (an acq_rel decrement of the count read above) synchronizes with this fence.
  std::atomic_thread_fence(std::memory_order_acquire);
  current_ = *pick;
  return *buffers_[current_];
}

void own_message::encode(std::span<const float> outgoing, std::uint64_t t) {
  std::vector<std::byte>& encoded = free_buffer();
  if (difference_message* d = difference_message_of(alg_); d && outgoing.empty()) {
    // x_{t+1/2} - x^_i encoded as it is read, and added into x^_i (learner.cpp sets both up together).
    QG_ENFORCE(adding_, "a difference message whose codec does not decode into a sum");
    encode_own_difference_adding(codec_, d->minuend(), d->subtrahend(), seed_, rank_, t, encoded,
                                 adding_->own_sum());
    adding_->absorbed_own(t);
  } else if (adding_) {
    encode_own_message_adding(codec_, outgoing, seed_, rank_, t, encoded, adding_->own_sum());
    adding_->absorbed_own(t);
  } else {
    encode_own_message(codec_, outgoing, seed_, rank_, t, encoded, own_decoded_);
    alg_.absorb_own(own_decoded_, t);
  }
  payload_ = encoded;
  per_link_ = {};
}

void own_message::send_instead(std::span<const std::byte> payload, std::span<const link_message> per_link) {
  payload_ = payload;
  per_link_ = per_link;
}

outgoing_message own_message::wire() const {
  return {.codec = codec_.id(),
          .codec_tag = codec_.tag(),
          .count = values_,
          .payload = payload_,
          .payload_owner = buffers_[current_] && payload_.data() == buffers_[current_]->data() ? buffers_[current_] : nullptr,
          .per_link = per_link_};
}

std::string own_message::describe(const std::vector<int>& peers) const {
  std::string out = "sends to";
  for (int j : peers) out += " " + std::to_string(j);
  return out;
}

void absorb_inbox(algorithm& alg, message_inbox& inbox) {
  // The exchange delivered only messages that decoded, each peer's in its order. A peer dropped
  // since (its departure learnt later in the round) is no longer in the row: the node mixes without
  // it from this round on, as the exchange's drop() says.
  // Kept encoded (the inbox adding), a message is decoded straight into the copy it adds to.
  const std::vector<int>& live = alg.row().neighbours;
  additive_messages* add = inbox.adding() ? additive_messages_of(alg) : nullptr;
  QG_ENFORCE(!inbox.adding() || add, "an inbox that keeps messages encoded for an algorithm whose messages do not add");
  for (std::size_t i = 0; i < inbox.size(); ++i) {
    const message_inbox::message m = inbox.at(i);
    if (!std::binary_search(live.begin(), live.end(), m.from)) continue;
    if (add) {
      inbox.add_to(i, add->sum_of(m.from));
      add->absorbed(m.from, m.iteration);
    } else {
      alg.absorb(m.from, m.values, m.iteration);
    }
  }
  inbox.clear();
}

gossip_round::gossip_round(const round_pattern_parts& p)
    : own_(p), alg_(p.alg), ex_(p.ex), inbox_(*p.inbox), peers_(p.train_peers) {}

status gossip_round::exchange(std::uint64_t t) {
  inbox_.clear();
  if (status st = ex_.round(message_kind::train, t, own_.wire(), round_peers{peers_, peers_}); !st) return st;
  return finished_early(t);
}

// A neighbour still in the row that finished before round t sent nothing of it, and never will: the
// exchange does not wait for it, but the algorithm mixes with every neighbour of its row. In a
// synchronous run every node runs the same rounds, so this is a program's node that stopped
// calling step() sooner (or whose program died and closed its node on the way out).
status gossip_round::finished_early(std::uint64_t t) const {
  for (int peer : alg_.row().neighbours) {
    if (!ex_.finished(peer)) continue;
    bool heard = false;
    for (std::size_t i = 0; i < inbox_.size() && !heard; ++i) heard = inbox_.at(i).from == peer;
    if (!heard)
      return status::error(errc::invalid, "rank " + std::to_string(peer) + " ended its run before round " +
                                              std::to_string(t) + ": in a synchronous run every node runs the same "
                                              "rounds (a program's nodes call step() as often: docs/python.md, "
                                              "\"Rules\"; train.max_staleness lets nodes end apart)");
  }
  return status::ok();
}

void gossip_round::absorb(std::uint64_t) { absorb_inbox(alg_, inbox_); }

}  // namespace qgossip
