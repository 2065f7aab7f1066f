#include "gossip/exchange/round_clock.hpp"

#include <string>

#include "gossip/exchange/core.hpp"

namespace qgossip {

status round_clock::check(message_kind kind, std::uint64_t iteration, bool against_base) const {
  const std::optional<std::uint64_t>& last = last_[index(kind)];
  const bool behind = against_base && started_ && iteration < base_;
  if (!behind && !(last && iteration <= *last)) return status::ok();
  const std::uint64_t after = !against_base || (last && *last > base_) ? *last : base_;
  return status::error(errc::invalid, exchange_core::describe(kind, iteration) + " after iteration " +
                                          std::to_string(after) + ": rounds must not repeat or go back");
}

std::chrono::milliseconds round_clock::begin(message_kind kind, std::uint64_t iteration,
                                             std::chrono::milliseconds first, std::chrono::milliseconds later) {
  const std::chrono::milliseconds deadline = started_ ? later : first;
  started_ = true;
  base_ = iteration;
  last_[index(kind)] = iteration;
  return deadline;
}

void round_clock::restart_at(std::uint64_t iteration) {
  base_ = iteration - 1;
  for (auto& last : last_) last = iteration - 1;
  started_ = true;
}

}  // namespace qgossip
