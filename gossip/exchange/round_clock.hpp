#pragma once
// The exchange's round clock (gossip/exchange/core.hpp): where this node's rounds are. Only the
// protocols that run rounds move it (sync_round, async_gather: begin), a rejoining node sets it back
// (exchange::restart_at), and leaving stops it (drain); everything else reads it.
// Thread safety: the exchange's, one thread.
#include <array>
#include <chrono>
#include <cstdint>
#include <optional>

#include "core/status.hpp"
#include "gossip/wire.hpp"

namespace qgossip {

class round_clock {
 public:
  // The current (or last) round's iteration, of any kind; 0 before the first.
  [[nodiscard]] std::uint64_t base() const { return base_; }
  // Whether a round has begun (the first one's deadline is first_deadline, later ones' round_deadline).
  [[nodiscard]] bool started() const { return started_; }
  // The last round run of kind (train or probe), if any.
  [[nodiscard]] std::optional<std::uint64_t> last(message_kind kind) const { return last_[index(kind)]; }
  // After this node's last round (exchange::finish): a message for a round is one it will not run.
  [[nodiscard]] bool draining() const { return draining_; }

  // errc::invalid when round (kind, iteration) would repeat one of its kind or go back: before the
  // last of its kind, or, with against_base, before the current round of any kind (a synchronous
  // round; asynchronous gossip checks its train rounds against themselves alone).
  [[nodiscard]] status check(message_kind kind, std::uint64_t iteration, bool against_base) const;
  // Round (kind, iteration) begins (after check). Returns the deadline it waits under: `first` for
  // the first round, `later` after.
  std::chrono::milliseconds begin(message_kind kind, std::uint64_t iteration, std::chrono::milliseconds first,
                                  std::chrono::milliseconds later);
  // This node starts over at round `iteration` (it rejoins): the rounds before it count as run.
  void restart_at(std::uint64_t iteration);
  void drain() { draining_ = true; }

 private:
  static std::size_t index(message_kind k) { return static_cast<std::size_t>(k) - 1; }

  std::uint64_t base_ = 0;
  std::array<std::optional<std::uint64_t>, 2> last_;  // train, probe
  bool started_ = false;
  bool draining_ = false;
};

}  // namespace qgossip
