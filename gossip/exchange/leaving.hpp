#pragma once
// The exchange's leaving (exchange::finish, gossip/exchange.hpp): finished messages and their
// acknowledgements, and the wait until every live neighbour has finished and holds everything this
// node sent. A peer is done with this node once it has finished (nothing more will come from it)
// and has acknowledged this node's finished message (it holds everything this node sent: links are
// ordered), or its link closed after it finished (it left holding everything: it too waited for
// this node's finished message).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gossip/exchange/async_gather.hpp"
#include "gossip/exchange/core.hpp"

namespace qgossip {

class leaving final : public exchange_protocol {
 public:
  // Registers for finished messages and their acknowledgements. async: the asynchronous gather,
  // whose late train messages a finishing node still takes (null when synchronous).
  leaving(exchange_core& core, async_gather* async);

  // exchange::finish.
  status finish(std::uint64_t iteration, transport_clock::time_point deadline,
                const std::function<void()>& late);
  [[nodiscard]] bool finished(int peer) const;  // exchange::finished
  [[nodiscard]] bool all_finished() const;      // exchange::all_finished

  void on_message(std::size_t k, const wire_header& h, received_bytes& payload) override;
  void on_readmit(std::size_t k, std::uint64_t iteration) override;

 private:
  void handle_finished(std::size_t k, const wire_header& h);  // and acknowledges it
  status send_finished(std::uint64_t iteration);
  [[nodiscard]] bool done_with(std::size_t k) const;
  // The neighbours not yet done with this node, named ("" when none).
  [[nodiscard]] std::string unfinished() const;
  // Whether a neighbour not yet done with this node was heard from (transport_liveness::bytes_heard)
  // since the last look: alive, still running its rounds. False over a transport without liveness.
  [[nodiscard]] bool unfinished_heard();

  exchange_core& core_;
  async_gather* async_;
  std::vector<bool> acked_;                          // its finished_ack of our finished message came
  std::vector<std::optional<std::uint64_t>> heard_;  // bytes_heard at the last look
  std::array<std::byte, kWireHeaderBytes> header_{};
};

}  // namespace qgossip
