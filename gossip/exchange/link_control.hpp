#pragma once
// What a node's membership parts may do to its links (node/run/departures.hpp, returns.hpp,
// start_check.hpp, halt_agreement.hpp): send a notice or a join message, drop a neighbour, take one
// back. The exchange (gossip/exchange.hpp) is one; it hands itself to every callback of
// exchange_events (gossip/exchange/events.hpp) as this interface, so a part that answers a message
// is given the links it answers on instead of holding them, and nothing is attached to a part after
// it is built. None of these waits or receives: a part cannot start a round inside a callback.
// Tests pass a recording double (tests/node/run/recording_links.hpp).
// Thread safety: as the exchange's: its one thread, inside and between its calls.
#include <cstdint>
#include <optional>
#include <span>

#include "core/status.hpp"

namespace qgossip {

class link_control {
 public:
  virtual ~link_control() = default;

  // A notice (message_kind::notice) to each of peers, stamped with iteration (the sender's round).
  // Errors: the transport's (the parts say them and go on).
  virtual status send_notice(std::span<const int> peers, std::span<const std::byte> payload,
                             std::uint64_t iteration) = 0;
  // A join message (message_kind::join, count = model_size) to peer, dropped or not; stamped with
  // run_id when given (an answer to a joiner of another run), else this run's.
  virtual status send_join(int peer, std::uint64_t model_size, std::span<const std::byte> payload,
                           std::optional<std::uint64_t> run_id = std::nullopt) = 0;
  // Drops peer for good (exchange::drop); dropping an unknown or dropped rank does nothing.
  virtual void drop(int peer) = 0;
  [[nodiscard]] virtual bool dropped(int peer) const = 0;
  // Takes peer back from round `iteration` on (exchange::readmit).
  virtual void readmit(int peer, std::uint64_t iteration) = 0;
  // A fresh link to peer, with no reconnection back-off (exchange::refresh_link).
  virtual void refresh_link(int peer) = 0;
  // True once a train message of peer was delivered (it took part in the run).
  [[nodiscard]] virtual bool heard_from(int peer) const = 0;
  // This run's id (the resolved config's hash), for answers to a joiner of another run.
  [[nodiscard]] virtual std::uint64_t run_id() const = 0;
};

}  // namespace qgossip
