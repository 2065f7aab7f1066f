#pragma once
// A Transport moves opaque two-frame messages (header, payload) between ranks. It knows nothing of
// training, of the header's contents or of rounds: validation, ordering and deadlines per round live
// in the Exchange (gossip/exchange.hpp), shared by every backend. Backends: gossip/zmq/ (ZeroMQ over
// tcp:// or ipc://) and gossip/inproc/ (threads of one process, for tests and simulation);
// decorators derive from transport_wrapper (gossip/transport_wrapper.hpp), which forwards every call
// to an inner transport: gossip/faulty_transport.hpp injects faults, gossip/link_emulation.hpp
// emulates a slow egress link.
//
// The transport itself is four methods: send, send_all, receive, peer_address. What only some
// backends can do are three small interfaces beside it, each handed out by an accessor that returns
// nullptr where the backend has none (as algorithms/capabilities.hpp beside an algorithm: a
// capability, not a wider base):
//   liveness()   transport_liveness   which links died and why; forgetting and watching a peer;
//                                     whether a peer is still heard from
//   queues()     transport_queues     how much of this node's traffic to a peer is still on this
//                                     host, taken by the operating system, acknowledged (flow control)
//   admission()  transport_admission  what the transport refused itself, and who refuses this node
// Which backend has which:
//                       liveness    queues      admission
//   zmq_transport       yes         yes         yes
//   inproc_transport    no          yes         no          (nothing is held: a send is delivered)
//   faulty_transport    yes         yes         the inner transport's
//   emulated_link_transport   the inner transport's, all three
// A backend without one loses nothing silently: the exchange looks each up once, when it is built,
// and refuses there what it cannot do without one (asynchronous gossip needs queues()). REQUIRES of
// every backend: each accessor returns the same pointer for the transport's whole life, and the
// interface lives as long as the transport.
//
// Delivery is best effort, as with ZeroMQ: a sent message may be lost (a peer that crashed), and
// nothing here retries. Frames arrive whole or not at all.
// Thread safety: one transport object, its interfaces included, is used by one thread at a time.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "gossip/received_bytes.hpp"

namespace qgossip {

using transport_clock = std::chrono::steady_clock;

// The slowest a large message is taken to move between two nodes of one host (written, CURVE-
// encrypted, read and decrypted), for waits that must outlast one: about half of what was measured
// with 3 nodes and their programs on 2 cores (a 0.8 GB state in 37 s, 22 MB/s; 100 M parameters).
inline constexpr std::uint64_t kSlowestMessageBytesPerS = 10u << 20;

// The time bytes take at kSlowestMessageBytesPerS.
[[nodiscard]] inline std::chrono::milliseconds slowest_message_time(std::uint64_t bytes) {
  return std::chrono::milliseconds(bytes * 1000 / kSlowestMessageBytesPerS);
}

// One received message. The header's buffer is reused across receive() calls (it keeps its
// capacity); the payload is handed over (received_bytes: the ZeroMQ transport's own buffer, no
// copy), to be moved on by whoever keeps it.
struct inbound_frames {
  int peer = -1;  // who sent it, as the transport identifies the link (-1: unknown)
  std::vector<std::byte> header;
  received_bytes payload;
};

// Liveness: which links were found dead, and why. A backend has it when it watches its links (the
// ZeroMQ transport: its connections' ends, and heartbeats when they are on). bytes_heard is here,
// not among the queue figures, although the ZeroMQ transport reads it from the same TCP counters:
// what it tells is whether the peer's process is alive (its answers to heartbeats), which only a
// backend that heartbeats can know, and only the wait for a neighbour still running its rounds
// reads it (exchange::finish), never flow control.
// Thread safety: as its transport's: from the thread using the transport, one at a time.
class transport_liveness {
 public:
  virtual ~transport_liveness() = default;

  // Appends the peers whose link was found dead since the last call, ascending, each once per loss:
  // the connection closed (the peer's process ended or its host dropped it) or it answered no
  // heartbeat within the transport's heartbeat timeout (a stopped or hung process). A link that
  // never came up is not lost (the exchange's first deadline covers a neighbour that never
  // starts); one that comes back (reconnects) can be lost again. receive() returns
  // errc::peer_lost while one is pending, after delivering every message already received from
  // that peer. The ZeroMQ transport notices losses while receive() runs; with heartbeats off
  // (zmq_options::heartbeat_interval 0) it reports none.
  virtual void take_lost_peers(std::vector<int>& out) = 0;
  // Why the latest loss of peer was reported ("its link closed", "it answered no heartbeat", ...),
  // for error messages; empty when the transport cannot say.
  [[nodiscard]] virtual std::string loss_cause(int peer) const = 0;
  // Stop watching peer (it has been dropped from the run): no more loss reports for it (a pending
  // one is withdrawn), and its queued outgoing messages are discarded when its link closes
  // (watch_peer, or the transport's end) instead of lingering, those in the operating system's
  // send buffer too: none arrives late, after the peer was admitted again on a new link.
  virtual void forget_peer(int peer) = 0;
  // Watch peer afresh (it rejoined the run, docs/failures.md "Rejoining"): what forget_peer did is
  // undone on a new link to it, whose connection starts at once (no reconnection back-off), and whose
  // loss is reported again once it has come up.
  virtual void watch_peer(int peer) = 0;
  // How many bytes have come back from peer on this node's link to it (its answers to heartbeats),
  // on the current connection, ever: it grows while the peer's process is alive, whatever it sends
  // or not. A finished node waits for a neighbour still running its rounds as long as it grows
  // (exchange::finish). nullopt when the transport cannot tell now (no connection up, ipc://): then
  // that wait ends at its deadline.
  [[nodiscard]] virtual std::optional<std::uint64_t> bytes_heard(int peer) const = 0;
  // Whether peer's process is alive now, as far as the links show: its link is up, watched, and
  // neither lost nor suspected (its heartbeats answered within the heartbeat timeout). A process
  // whose program is busy elsewhere (an evaluation, a checkpoint, a sleep) is alive: its messaging
  // library answers heartbeats on threads of its own. False when the transport cannot tell
  // (heartbeats off, a link never up): then a silent peer is judged by the round's deadline alone
  // (exchange_options::live_wait).
  [[nodiscard]] virtual bool alive(int peer) const = 0;
};

// Queue figures: where this node's messages to a peer are, for flow control (asynchronous gossip,
// exchange::gather) and a busy uplink (exchange::link_busy). Asynchronous gossip needs them: without
// them a node would run ahead of a slow link unthrottled, so the exchange refuses it. Each figure is
// nullopt when the transport cannot tell for that peer now (no connection up yet, ipc://); what a
// nullopt then means for the exchange is said with each, and differs from 0.
// Thread safety: as its transport's: from the thread using the transport, one at a time.
class transport_queues {
 public:
  virtual ~transport_queues() = default;

  // How many bytes of this node's messages to peer are still on this host: not yet transmitted, or
  // transmitted and still in this host's queues (a shaper's, the device's). Bytes that left the
  // host and wait only for their acknowledgement are not counted: the acknowledgements may be slow
  // for the peer's reasons, such as its own slow uplink. nullopt: nothing waits on this link (as 0).
  [[nodiscard]] virtual std::optional<std::size_t> queued_bytes(int peer) const = 0;
  // How many bytes of this node's messages to peer the operating system has taken on the current
  // connection, ever (a new connection starts it over). What the messaging library still holds,
  // beyond queued_bytes' view, is what a message sent since a reading has not yet added to it.
  // nullopt: the busy-uplink test reads queued_bytes alone (0 is a connection that took nothing).
  [[nodiscard]] virtual std::optional<std::uint64_t> bytes_taken(int peer) const = 0;
  // How many bytes of this node's messages to peer the peer's host has acknowledged on the current
  // connection, ever. It grows while the link drains, however slowly (a new connection starts it
  // over); a flow-control wait whose links still drain is not a stall. nullopt: such a wait ends at
  // its deadline (a change from nullopt to 0 is progress).
  [[nodiscard]] virtual std::optional<std::uint64_t> bytes_acknowledged(int peer) const = 0;
  // Bytes of this node's messages, to every peer, that the transport itself still holds (not yet
  // handed to the operating system), and a wait until they are at most `bytes` (false: the deadline
  // came first): a sender of many large messages (a rejoining state's chunks) keeps a few in flight
  // so rather than all of them. Default: a transport that holds none (0, at once).
  [[nodiscard]] virtual std::uint64_t held_bytes() const { return 0; }
  [[nodiscard]] virtual bool wait_held_at_most(std::uint64_t /*bytes*/, transport_clock::time_point /*deadline*/) {
    return true;
  }
};

// Connections and messages a transport refused itself, so that they never reached receive()
// (cumulative since it was made). The exchange adds them to its rejected counts (reasons auth,
// handshake, identity). See docs/security.md.
struct transport_refusals {
  std::uint64_t auth = 0;       // connections whose key is not one of the allowed peers' (CURVE, ZAP)
  std::uint64_t handshake = 0;  // connections that failed the handshake: not ZeroMQ, another security
                                // mechanism, a client without this node's public key
  std::uint64_t identity = 0;   // messages whose claimed identity (routing id) is not the rank their
                                // connection authenticated as
};

// Admission: what a transport that screens its connections refused, and who refused it (the ZeroMQ
// transport: docs/security.md). Nothing here is optional: a backend that refuses nothing has no
// admission at all.
// Thread safety: as its transport's: from the thread using the transport, one at a time.
class transport_admission {
 public:
  virtual ~transport_admission() = default;

  // What this transport refused so far (see transport_refusals).
  [[nodiscard]] virtual transport_refusals refusals() const = 0;
  // Appends the log lines describing refusals since the last call: the transport keeps a few per
  // reason and window and summarizes the rest ("... 93 more ... not logged one by one").
  virtual void take_refusal_log(std::vector<std::string>& lines) = 0;
  // Peers whose node refused this node's key at the handshake (CURVE: not among the keys it allows):
  // they will not hear this node. Ascending.
  [[nodiscard]] virtual std::vector<int> peers_refusing_this_node() const = 0;
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
  // send_all of a payload that `owner` keeps valid past the call, so that a backend may send it
  // without a copy and let go of owner once it is done (the ZeroMQ transport); a null owner is
  // send_all. The default, and every wrapper that does not override it, copies as send_all does
  // (this->send_all: a wrapper's own).
  virtual status send_all_kept(std::span<const int> peers, std::span<const std::byte> header,
                               std::span<const std::byte> payload, std::shared_ptr<const void> owner) {
    return send_all(peers, header, payload);
  }

  // Waits until a message arrives or deadline passes. ok: out holds it. errc::timeout: deadline
  // passed with nothing received. errc::corrupt: a message arrived malformed (e.g. wrong number of
  // frames) and was dropped; out.peer names the sender when known; the caller may continue.
  // errc::cancelled: interrupted (a signal). errc::io: the transport failed. errc::peer_lost: a
  // link was found dead (transport_liveness::take_lost_peers names the peers; only a backend with
  // liveness returns it): returned while a loss is pending, i.e. until take_lost_peers takes it, and
  // only after every message already received from that peer was returned, so a peer's last
  // messages are never overtaken by its end.
  virtual status receive(transport_clock::time_point deadline, inbound_frames& out) = 0;

  // Where peer is reached, for error messages ("tcp://10.0.0.3:29500"); empty when there is nothing
  // more useful to say than the rank.
  [[nodiscard]] virtual std::string peer_address(int peer) const = 0;

  // The interfaces this backend has (see the top of this file), or nullptr.
  [[nodiscard]] virtual transport_liveness* liveness() = 0;
  [[nodiscard]] virtual transport_queues* queues() = 0;
  [[nodiscard]] virtual transport_admission* admission() = 0;
};

}  // namespace qgossip
