#include "node/run/message_inbox.hpp"

#include <algorithm>
#include <utility>

#include "core/errors.hpp"

namespace qgossip {

message_inbox::message_inbox(const message_codec& codec, std::uint64_t seed, std::vector<int> peers,
                             std::size_t values, bool adding)
    : codec_(codec), seed_(seed), peers_(std::move(peers)), values_(values), adding_(adding) {
  QG_ENFORCE(!adding || codec.adds_decoded(), codec.describe() << " does not decode into a sum");
  entries_.resize(peers_.size());  // a synchronous round's worth, allocated once
  for (entry& e : entries_) grow(e);
}

void message_inbox::grow(entry& e) const {
  if (!adding_) e.values.resize(values_);
}

status message_inbox::train_peer(int from) const {
  if (std::binary_search(peers_.begin(), peers_.end(), from)) return status::ok();
  return status::error(errc::invalid, "rank " + std::to_string(from) + " is not a train peer");
}

codec_context message_inbox::context(std::uint32_t from, std::uint64_t iteration) const {
  return {.seed = seed_, .rank = from, .iteration = iteration, .stream = 0};
}

void message_inbox::clear() {
  for (std::size_t i = 0; i < count_; ++i) entries_[i].payload.clear();
  count_ = 0;
}

status message_inbox::check(const wire_header& h, std::span<const std::byte> payload) {
  const int from = static_cast<int>(h.sender);
  if (status st = train_peer(from); !st) return st;
  if (!adding_) return status::ok();
  if (status st = codec_.validate(payload, context(h.sender, h.iteration), values_); !st) return st;
  // A round holds a message or two per peer ahead (the exchange's lookahead): the oldest go first.
  if (checked_.size() >= 4 * peers_.size() + 4) checked_.erase(checked_.begin());
  checked_.emplace_back(from, h.iteration);
  return status::ok();
}

// Whether check() passed (from, iteration); forgets it, and any older one of from's.
bool message_inbox::take_checked(int from, std::uint64_t iteration) {
  bool found = false;
  std::erase_if(checked_, [&](const std::pair<int, std::uint64_t>& c) {
    if (c.first != from || c.second > iteration) return false;
    found = found || c.second == iteration;
    return true;
  });
  return found;
}

status message_inbox::accept(const wire_header& h, received_bytes& payload) {
  const int from = static_cast<int>(h.sender);
  if (status st = train_peer(from); !st) return st;
  if (capacity_ > 0 && count_ == capacity_) {
    flush_();
    QG_ENFORCE(count_ == 0, "the inbox's flush left " << count_ << " messages in it");
  }
  if (count_ == entries_.size()) grow(entries_.emplace_back());
  entry& e = entries_[count_];
  const codec_context ctx = context(h.sender, h.iteration);
  if (adding_) {
    if (!take_checked(from, h.iteration))
      if (status st = codec_.validate(payload.bytes(), ctx, values_); !st) return st;
    e.payload = std::move(payload);
  } else if (status st = codec_.decode(payload.bytes(), ctx, e.values); !st) {
    return st;
  }
  e.from = from;
  e.iteration = h.iteration;
  ++count_;
  return status::ok();
}

void message_inbox::hold_at_most(std::size_t capacity, std::function<void()> flush) {
  QG_ENFORCE((capacity > 0) == static_cast<bool>(flush), "hold_at_most needs both a capacity and a flush, or neither");
  capacity_ = capacity;
  flush_ = std::move(flush);
}

message_inbox::message message_inbox::at(std::size_t i) const {
  QG_ENFORCE(i < count_, "message " << i << " of " << count_);
  const entry& e = entries_[i];
  return {e.from, e.iteration, adding_ ? std::span<const float>() : std::span<const float>(e.values)};
}

void message_inbox::add_to(std::size_t i, std::span<float> sum) const {
  QG_ENFORCE(adding_ && i < count_, "add_to message " << i << " of " << count_ << (adding_ ? "" : ", not adding"));
  const entry& e = entries_[i];
  codec_.decode_add(e.payload.bytes(), context(static_cast<std::uint32_t>(e.from), e.iteration), sum);
}

}  // namespace qgossip
