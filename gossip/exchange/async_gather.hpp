#pragma once
// The exchange's asynchronous gather (exchange::gather, gossip/exchange.hpp; train.max_staleness >
// 0): send on the links that are not busy, take every neighbour's train messages in its order as
// they arrive (iteration = the previous one + 1 + the rounds its header says it skipped; a gap is
// rejected), wait only for the stale neighbours, and hold back while a link's backlog grows (flow
// control): a node never runs further ahead of a slow link than the message it just sent and the
// one before. Train messages go to exchange_events::train_message as they arrive, between rounds
// too (a slower peer's last ones while this node finishes).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gossip/exchange/core.hpp"

namespace qgossip {

class async_gather final : public exchange_protocol {
 public:
  // The most rounds a link may skip: what the wire header's `skipped` counts.
  static constexpr std::uint64_t kMaxSkipped = 0xFFFF;

  // Registers for train messages. REQUIRES: the exchange is asynchronous. Throws invariant_error
  // when the core's transport has no queue figures (transport::queues()): flow control needs them.
  explicit async_gather(exchange_core& core);

  // exchange::gather. out (may be null) also collects the round's messages.
  status gather(std::uint64_t iteration, const outgoing_message& msg, std::uint64_t need,
                std::vector<inbound_message>* out, std::span<const link_message> sends);
  // The same, to every live peer.
  status gather(std::uint64_t iteration, const outgoing_message& msg, std::uint64_t need,
                std::vector<inbound_message>* out);
  [[nodiscard]] bool link_busy(int peer, std::uint64_t iteration) const;  // exchange::link_busy
  [[nodiscard]] std::uint64_t newest(int peer) const;                     // exchange::newest
  // How many train messages were delivered since the last call (exchange::finish's late ones).
  std::size_t take_delivered();

  void on_message(std::size_t k, const wire_header& h, received_bytes& payload) override;
  void on_readmit(std::size_t k, std::uint64_t iteration) override;

 private:
  [[nodiscard]] status check_sends(std::uint64_t iteration, std::span<const link_message> sends) const;
  [[nodiscard]] status send_train(std::uint64_t iteration, const outgoing_message& msg,
                                  std::span<const link_message> sends, transport_clock::time_point start);
  // Before each wait: what has arrived taken in, then whether the round may end.
  status look(std::uint64_t need, wait_plan& plan, std::chrono::milliseconds waited, bool& done);
  [[nodiscard]] bool waiting_for(std::size_t k, std::uint64_t need) const;
  [[nodiscard]] bool may_skip(std::size_t k, std::uint64_t iteration) const;
  // Flow control: the bytes neighbour k's link may hold, the last two messages' worth, and whether
  // it holds more (transport_queues::queued_bytes).
  [[nodiscard]] std::size_t backlog_limit(std::size_t k) const;
  [[nodiscard]] bool link_backlogged(std::size_t k) const;
  // Whether a backlogged link had more of its bytes acknowledged since the last look: a slow link
  // still draining, whose wait goes on.
  [[nodiscard]] bool backlog_progressed();
  // A live neighbour not heard from at all by first_deadline after the first round began: the
  // timeout it is (it never came up), else ok.
  [[nodiscard]] status unheard_neighbours() const;
  [[nodiscard]] std::string backlog_message(std::chrono::milliseconds waited) const;
  [[nodiscard]] std::string stale_message(std::uint64_t need, std::chrono::milliseconds waited) const;
  // At the deadline with live_wait on: true when every peer the round waits on (for a message, or
  // for its link to drain) is alive: plan.deadline moved, exchange_events::waiting told.
  bool wait_for_live(std::uint64_t need, bool for_message, transport_clock::time_point start, wait_plan& plan);

  exchange_core& core_;
  const transport_queues& queues_;  // the transport's queue figures (core_.queues())
  codec_expectation codec_{};  // the train codec of our own messages
  std::vector<inbound_message>* out_ = nullptr;
  std::size_t delivered_ = 0;        // entries of *out_ filled by this gather
  std::size_t delivered_since_ = 0;  // for take_delivered
  transport_clock::time_point first_gather_{};
  // Per neighbour: the iteration of our last train message to it, its size on the wire, the link's
  // bytes_taken just before it was sent, and bytes_acknowledged at flow control's last look.
  std::vector<std::optional<std::uint64_t>> last_sent_;
  std::vector<std::size_t> last_sent_bytes_;
  std::vector<std::optional<std::uint64_t>> taken_at_send_;
  std::vector<std::optional<std::uint64_t>> backlog_acked_;
  std::vector<link_message> all_sends_;  // scratch: the message to every live peer
  std::vector<int> alive_;               // scratch: the live peers a round waits on past its deadline
  std::array<std::byte, kWireHeaderBytes> header_{};
};

}  // namespace qgossip
