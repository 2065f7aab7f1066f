#pragma once
// A Transport moves opaque two-frame messages (header, payload) between ranks. It knows nothing of
// training, of the header's contents or of rounds: validation, ordering and deadlines per round live
// in the Exchange (gossip/exchange.hpp), shared by every backend. Backends: gossip/zmq/ (ZeroMQ over
// tcp:// or ipc://) and gossip/inproc/ (threads of one process, for tests and simulation);
// gossip/faulty_transport.hpp wraps any of them to inject faults.
//
// Delivery is best effort, as with ZeroMQ: a sent message may be lost (a peer that crashed), and
// nothing here retries. Frames arrive whole or not at all.
// Thread safety: one transport object is used by one thread at a time.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.hpp"

namespace qgossip {

using transport_clock = std::chrono::steady_clock;

// One received message. The buffers are reused across receive() calls (they keep their capacity),
// so a steady stream of equal-sized messages allocates nothing.
struct inbound_frames {
  int peer = -1;  // who sent it, as the transport identifies the link (-1: unknown)
  std::vector<std::byte> header;
  std::vector<std::byte> payload;
};

// Connections and messages a transport refused itself, so that they never reached receive()
// (cumulative since it was made). The exchange adds them to its rejected counts (reasons auth,
// handshake, identity). Only the ZeroMQ transport refuses anything; see docs/security.md.
struct transport_refusals {
  std::uint64_t auth = 0;       // connections whose key is not one of the allowed peers' (CURVE, ZAP)
  std::uint64_t handshake = 0;  // connections that failed the handshake: not ZeroMQ, another security
                                // mechanism, a client without this node's public key
  std::uint64_t identity = 0;   // messages whose claimed identity (routing id) is not the rank their
                                // connection authenticated as
};

class transport {
 public:
  virtual ~transport() = default;

  // Queues header + payload for peer. Returns errc::invalid for a peer this transport has no link
  // to, errc::timeout when the peer's queue stays full past the transport's send timeout, errc::io
  // when the link failed. The spans may be reused as soon as send returns.
  virtual status send(int peer, std::span<const std::byte> header, std::span<const std::byte> payload) = 0;

  // The same message to each of peers (the exchange's fan-out). Backends override it to share one
  // copy of the payload between peers; the default calls send() for each, stopping at the first error.
  virtual status send_all(std::span<const int> peers, std::span<const std::byte> header,
                          std::span<const std::byte> payload);

  // Waits until a message arrives or deadline passes. ok: out holds it. errc::timeout: deadline
  // passed with nothing received. errc::corrupt: a message arrived malformed (e.g. wrong number of
  // frames) and was dropped; out.peer names the sender when known; the caller may continue.
  // errc::cancelled: interrupted (a signal). errc::io: the transport failed. errc::peer_lost: a
  // link was found dead (see take_lost_peers, which names the peers): returned while a loss is
  // pending, i.e. until take_lost_peers takes it, and only after every message already received
  // from that peer was returned, so a peer's last messages are never overtaken by its end.
  virtual status receive(transport_clock::time_point deadline, inbound_frames& out) = 0;

  // Where peer is reached, for error messages ("tcp://10.0.0.3:29500"); empty when there is nothing
  // more useful to say than the rank.
  virtual std::string peer_address(int peer) const { return {}; }

  // What this transport refused so far (see transport_refusals). Callable from the thread using it.
  virtual transport_refusals refusals() const { return {}; }
  // Appends the log lines describing refusals since the last call: the transport keeps a few per
  // reason and window and summarizes the rest ("... 93 more ... not logged one by one").
  virtual void take_refusal_log(std::vector<std::string>& lines) {}

  // Liveness. Appends the peers whose link was found dead since the last call, ascending, each once
  // per loss: the connection closed (the peer's process ended or its host dropped it) or it answered
  // no heartbeat within the transport's heartbeat timeout (a stopped or hung process). A link that
  // never came up is not lost (the exchange's first deadline covers a neighbour that never
  // starts); one that comes back (reconnects) can be lost again. receive() returns
  // errc::peer_lost while one is pending, after delivering every message already received from
  // that peer. The ZeroMQ transport notices losses while receive() runs. Default: none (backends
  // without liveness, or the ZeroMQ transport with heartbeats off).
  virtual void take_lost_peers(std::vector<int>& out) {}
  // Why the latest loss of peer was reported ("its link closed", "it answered no heartbeat", ...),
  // for error messages; empty when the transport cannot say.
  virtual std::string loss_cause(int peer) const { return {}; }
  // Stop watching peer (it has been dropped from the run): no more loss reports for it (a pending
  // one is withdrawn), and its queued outgoing messages are discarded when its link closes
  // (watch_peer, or the transport's end) instead of lingering, those in the operating system's
  // send buffer too: none arrives late, after the peer was admitted again on a new link.
  virtual void forget_peer(int peer) {}
  // Watch peer afresh (it rejoined the run, docs/failures.md "Rejoining"): what forget_peer did is
  // undone on a new link to it, whose connection starts at once (no reconnection back-off), and whose
  // loss is reported again once it has come up. Default: nothing (backends without liveness).
  virtual void watch_peer(int peer) {}

  // Peers whose node refused this node's key at the handshake (CURVE: not among the keys it allows):
  // they will not hear this node. Default: none (backends without authentication).
  [[nodiscard]] virtual std::vector<int> peers_refusing_this_node() const { return {}; }

  // Flow control (asynchronous gossip, exchange::gather): how many bytes of this node's messages to
  // peer are still on this host: not yet transmitted, or transmitted and still in this host's
  // queues (a shaper's, the device's). Bytes that left the host and wait only for their
  // acknowledgement are not counted: the acknowledgements may be slow for the peer's reasons, such
  // as its own slow uplink. nullopt when the backend cannot tell (then nothing waits on it).
  // Default: nullopt.
  [[nodiscard]] virtual std::optional<std::size_t> queued_bytes(int peer) const { return std::nullopt; }
  // A busy uplink (exchange::uplink_busy): how many bytes of this node's messages to peer the
  // operating system has taken on the current connection, ever (a new connection starts it over).
  // What the messaging library still holds, beyond queued_bytes' view, is what a message sent since
  // a reading has not yet added to it. nullopt when the backend cannot tell. Default: nullopt.
  [[nodiscard]] virtual std::optional<std::uint64_t> bytes_taken(int /*peer*/) const { return std::nullopt; }
  // Flow control's progress: how many bytes of this node's messages to peer the peer's host has
  // acknowledged on the current connection, ever. It grows while the link drains, however slowly
  // (a new connection starts it over); a flow-control wait whose links still drain is not a stall.
  // nullopt when the backend cannot tell (then such a wait ends at its deadline). Default: nullopt.
  [[nodiscard]] virtual std::optional<std::uint64_t> bytes_acknowledged(int peer) const {
    return std::nullopt;
  }
  // How many bytes have come back from peer on this node's link to it (its answers to heartbeats),
  // on the current connection, ever: it grows while the peer's process is alive, whatever it sends
  // or not. A finished node waits for a neighbour still running its rounds as long as it grows
  // (exchange::finish). nullopt when the backend cannot tell. Default: nullopt.
  [[nodiscard]] virtual std::optional<std::uint64_t> bytes_heard(int peer) const { return std::nullopt; }
};

}  // namespace qgossip
