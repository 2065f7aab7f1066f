#pragma once
// The ZeroMQ transport: each node binds ONE inbound ROUTER socket at its endpoint and connects one
// outbound DEALER per neighbour; the receiver learns who sent a message from the link itself (the
// exchange checks it against the header's sender). A message is two frames, header then payload;
// the payload is copied once per send_all() into a ZeroMQ message that every neighbour's copy shares
// (send_all_kept: not copied at all).
//
// Security (docs/security.md), chosen by zmq_options::curve:
//  - CURVE (set; network.security: curve, the default): every connection is authenticated and
//    encrypted (CurveZMQ). The ROUTER is the CURVE server with this node's secret key; each DEALER
//    is a CURVE client with this node's keypair that expects its neighbour's public key. A ZAP
//    handler (gossip/zmq/connection_guard.hpp) admits only the peers' public keys and names each
//    connection by the rank its key belongs to; every inbound message is attributed to that
//    authenticated rank (its "User-Id"), never to the routing id the client picked. DEALERs set no
//    routing id (ZeroMQ generates one), so no routing id can be squatted; a client that claims a
//    rank as routing id other than the one its key proves has each message refused (identity).
//  - none (unset): ZeroMQ's NULL mechanism, plain text, nothing authenticated. Each DEALER's
//    ZMQ_ROUTING_ID is its rank (decimal text), which is all the receiver knows of the sender.
// In both modes ZMQ_ROUTER_HANDOVER stays off: a second connection presenting a routing id that a
// connected peer holds never takes over that peer's link: ZeroMQ (4.3) leaves the newcomer unnamed
// and delivers nothing it sends (tests/gossip/zmq_security_test.cpp). The price, without CURVE: a
// neighbour whose DEALER reconnects while its old connection still looks alive to this node is not
// heard on the new one (rare: both ends of a TCP connection normally see it end, and a reconnect
// loses the messages in flight anyway, so the round would time out either way). Under CURVE the
// routing ids are ZeroMQ's own and unique, so neither a squatter nor a reconnect can collide.
// Connections refused (not ZeroMQ, another mechanism, a key not listed) and messages refused
// (identity) are counted and logged, rate-limited: refusals() and take_refusal_log().
//
// Flow control blocks rather than drops: a DEALER whose queue (send_hwm) is full blocks send()
// for up to send_timeout (then errc::timeout), and the ROUTER stops reading a connection whose
// queue is full (TCP pushes back). Messages to a neighbour that has not started yet wait in its
// queue and leave when it binds. On destruction, queued messages get up to `linger` to leave
// (the inbound socket closes only after that).
//
// Liveness (zmq_options::heartbeat_interval > 0; off by default): each DEALER sends ZMTP 3.1 PINGs
// (ZMQ_HEARTBEAT_IVL) that the neighbour's ZeroMQ I/O thread answers with a PONG, whatever its own
// threads are doing. Over tcp this node judges each link by its progress (link_liveness.hpp): it
// reads the connection's TCP counters while receive() runs, and a neighbour whose PONGs stop, while
// none of our data to it is draining either, for heartbeat_timeout + the connection's retransmission
// timeout after our PING reached its host is lost: a process that is stopped (SIGSTOP) or hung; a
// host that takes none of our bytes (vanished) is lost after send_timeout. Data queued at a slow
// link's rate, our PINGs waiting behind it or dropped by our own shaper, never makes a live
// neighbour look dead, and ZeroMQ itself drops no connection for a late PONG
// (timeout and TTL off). Over ipc (no queue between the processes) ZeroMQ's own heartbeat timeout
// and TTL drop the connection instead. A process that ends (crash, SIGKILL, a normal exit) closes its
// sockets and the kernel tells us at once. A socket monitor on each DEALER (read by receive(), never
// by another thread) sees the connection end: a link whose handshake had succeeded and that
// disconnects, or that is judged lost, is reported once by take_lost_peers() (receive() returns
// errc::peer_lost) until it has reconnected (handshake succeeded again). A neighbour that never came
// up is never "lost".
// A loss is reported only after loss_grace (a closed connection; a judged one at once, its limit was
// longer), and only once the inbound socket has nothing queued: the loss is seen on OUR DEALER's
// connection to the peer's ROUTER, but the peer's messages come on ITS DEALER's connection to OUR
// ROUTER, another TCP connection whose last bytes are not ordered with the first one's end: a peer
// that sends its last messages and exits could end the one we watch before its final messages have
// been read from the other. Two measures: the destructor lets the DEALERs' queues leave (up to
// linger; they live in a ZeroMQ context of their own, terminated first) before it closes the
// ROUTER, which meanwhile still answers PINGs, so a neighbour learns of this node's end only after
// its last messages were written; and the receiver holds a loss for loss_grace, restarted by each
// message from that peer, so the bytes already on their way (in flight, in kernel buffers, being
// read and decrypted by our I/O thread) are delivered first. What it cannot cover: more than the
// grace's worth of those bytes still in the sender's kernel buffer behind a slow link (a few MB at
// 100 Mbit/s), or a neighbour that kept a queue past its linger (abandon_queued, forget_peer: those
// messages are given up anyway). The exchange's end of a run (exchange::finish) leaves nothing in
// flight by then.
// Caveat: the neighbour's I/O thread reads our PINGs only while it reads the connection, so a
// neighbour whose inbound queue from us is full (receive_hwm messages it has not received) for
// longer than the limit is reported lost (the exchange's rounds keep a couple of messages in
// flight, far below it).
//
// Endpoints: "tcp://host:port" (for bind, host may be 0.0.0.0 or *, and port * picks a free one:
// see bound_endpoint()) and "ipc://path". Nothing here reads environment variables or files (keys
// come in zmq_options; gossip/zmq/curve_keys.hpp reads and writes key files).
// Thread safety: one thread at a time (ZeroMQ sockets are not thread-safe; moving the object to
// another thread between calls is fine). The connection guard runs a thread of its own.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "gossip/transport.hpp"
#include "gossip/zmq/link_liveness.hpp"

namespace qgossip {

// This node's CURVE keypair and its peers' public keys, all Z85 (gossip/zmq/curve_keys.hpp).
struct zmq_curve_keys {
  std::string public_key;
  std::string secret_key;
  // Rank -> public key of every peer: the only clients the inbound socket admits (named by that
  // rank), and the server key each outbound connection to that rank expects.
  std::map<int, std::string> peers;
};

struct zmq_options {
  // Largest payload frame accepted. The inbound socket's ZMQ_MAXMSGSIZE is set to it: ZeroMQ drops
  // the connection of a peer that sends a larger frame. Use the exchange's max_payload_bytes.
  std::uint64_t max_payload_bytes = 256u << 20;  // 256 MiB
  // Whole messages queued per neighbour before send() blocks (ZMQ_SNDHWM). The synchronous
  // protocol has at most a couple in flight per edge; the slack absorbs probe rounds.
  int send_hwm = 16;
  // Whole messages queued per inbound connection before ZeroMQ stops reading it (ZMQ_RCVHWM).
  int receive_hwm = 16;
  // How long send() may block on a full queue before returning errc::timeout (ZMQ_SNDTIMEO). > 0.
  std::chrono::milliseconds send_timeout{30000};
  // How long the destructor waits for queued messages to leave (ZMQ_LINGER), so the last round's
  // messages reach the neighbours after this node finished. >= 0.
  std::chrono::milliseconds linger{10000};
  // Delay before reconnecting to a neighbour that is not (or no longer) listening, doubling up to
  // the max (ZMQ_RECONNECT_IVL, ZMQ_RECONNECT_IVL_MAX).
  std::chrono::milliseconds reconnect_interval{100};
  std::chrono::milliseconds reconnect_interval_max{2000};
  // ZeroMQ I/O threads of each of this node's two contexts (inbound socket; outbound sockets).
  int io_threads = 1;
  // Set: CURVE on every socket (see the top of this file). Unset: no security (NULL mechanism).
  std::optional<zmq_curve_keys> curve;
  // Liveness (see the top of this file). heartbeat_interval: how often each DEALER PINGs its
  // neighbour; heartbeat_timeout: how long a neighbour may leave a PING unanswered, no data of ours
  // to it draining meanwhile, before it is lost (tcp: counted from the PING reaching its host, plus
  // the connection's retransmission timeout; a PING that never reaches it: send_timeout; ipc:
  // ZeroMQ's timeout, and the TTL the neighbour applies to
  // us, whole tenths of a second). Both 0 (the default): no heartbeats and no loss reports, the
  // behaviour before they existed. Otherwise both > 0, timeout > interval. A stopped neighbour is
  // reported within about interval + 2 · timeout over tcp; one that ended, within loss_grace.
  std::chrono::milliseconds heartbeat_interval{0};
  std::chrono::milliseconds heartbeat_timeout{0};
  // How long a loss is held, its peer's messages still delivered first, before it is reported
  // (restarted by each message from that peer). >= 0.
  std::chrono::milliseconds loss_grace{200};
  // Sender pacing (network.pace_mbit): the most bytes per second of payload this node's outbound TCP
  // connections may send together. 0 = unpaced (the kernel's congestion control alone). Each
  // send_all() to k peers caps each of those k connections at pace_bytes_per_s / k with the socket
  // option SO_MAX_PACING_RATE (the kernel paces a TCP socket itself when it is set, whatever the
  // qdisc), so the node's egress leaves at the pace instead of as a burst that a shaper (tc tbf, a
  // slow uplink) must queue: a queue that also holds back the ACKs of what the node receives, until
  // its neighbours' retransmission timers fire (docs/cluster.md, "Pacing under tc tbf"). The kernel
  // counts TCP payload, not the 66 bytes of headers per 1448-byte segment. Ignored for ipc://.
  double pace_bytes_per_s = 0;
  // With pacing: a send_all() whose copies together (k · payload) are at most this many bytes leaves
  // unpaced (SO_MAX_PACING_RATE lifted), as a burst the shaper absorbs: its queueing delay stays
  // below TCP's retransmission timer, and a token bucket lets its first bytes out at once.
  std::uint64_t unpaced_burst_bytes = 0;
};

// It has all three interfaces of gossip/transport.hpp: liveness (the monitors and heartbeats above),
// queue figures (the TCP connections' counters) and admission (the connection guard's refusals).
class zmq_transport final : public transport,
                            public transport_liveness,
                            public transport_queues,
                            public transport_admission {
 public:
  // Binds bind_endpoint, then connects to each neighbour (rank -> endpoint). Throws config_error
  // for a malformed endpoint, a neighbour equal to rank, or a failed bind, e.g. "cannot bind
  // tcp://127.0.0.1:29500: Address already in use (is another qgossip node or program using this
  // port?)"; with CURVE, also for malformed keys, a neighbour without a key, two ranks sharing a
  // key, or a libzmq without CURVE. A neighbour need not be running yet.
  zmq_transport(int rank, const std::string& bind_endpoint, const std::map<int, std::string>& neighbours,
                zmq_options options = {});
  // Binds only; add neighbours with connect() (e.g. after every node bound a wildcard port).
  zmq_transport(int rank, const std::string& bind_endpoint, zmq_options options = {});
  // Waits up to options.linger for queued messages to leave.
  ~zmq_transport() override;
  zmq_transport(const zmq_transport&) = delete;
  zmq_transport& operator=(const zmq_transport&) = delete;

  // Gives messages still queued at most `grace` more to leave (a forgotten peer's none): the
  // destructor then returns by then instead of lingering. For a run that failed, where the
  // neighbours that would receive them are gone or stopping, but the notice just sent saying why
  // should still reach the live ones (a few hundred bytes: it leaves in well under a millisecond
  // unless a model-sized message is queued ahead of it on a slow link).
  void abandon_queued(std::chrono::milliseconds grace = std::chrono::milliseconds{0});

  // Adds a neighbour. Throws config_error as the constructor does (or when peer is already known,
  // or, with CURVE, has no key in options.curve->peers).
  void connect(int peer, const std::string& endpoint);
  // True when the links are CURVE-authenticated and encrypted.
  [[nodiscard]] bool secure() const;

  int rank() const { return rank_; }
  // The endpoint actually bound, wildcards resolved ("tcp://127.0.0.1:41873").
  const std::string& bound_endpoint() const;

  status send(int peer, std::span<const std::byte> header, std::span<const std::byte> payload) override;
  status send_all(std::span<const int> peers, std::span<const std::byte> header,
                  std::span<const std::byte> payload) override;
  // The payload adopted, not copied (send_buffers::adopt); a null owner: send_all.
  status send_all_kept(std::span<const int> peers, std::span<const std::byte> header,
                       std::span<const std::byte> payload, std::shared_ptr<const void> owner) override;
  // With CURVE, out.peer is the rank the connection authenticated as.
  status receive(transport_clock::time_point deadline, inbound_frames& out) override;
  [[nodiscard]] std::string peer_address(int peer) const override;
  [[nodiscard]] transport_liveness* liveness() override { return this; }
  [[nodiscard]] transport_queues* queues() override { return this; }
  [[nodiscard]] transport_admission* admission() override { return this; }

  // transport_liveness (none reported with heartbeats off).
  void take_lost_peers(std::vector<int>& out) override;
  [[nodiscard]] std::string loss_cause(int peer) const override;
  // Also sets the link's linger to 0 and stops watching it.
  void forget_peer(int peer) override;
  // Closes the link to peer (its queue discarded) and connects a new one to the same endpoint.
  void watch_peer(int peer) override;
  // TCP_INFO's tcpi_bytes_received of the connection to peer (its PONGs); nullopt as for queued_bytes.
  [[nodiscard]] std::optional<std::uint64_t> bytes_heard(int peer) const override;
  // Heartbeats on, the link up (its handshake done, its connection not ended), not forgotten, not
  // suspected (judged silent, or closed and within its loss_grace), its loss not pending.
  [[nodiscard]] bool alive(int peer) const override;

  // transport_queues.
  // The kernel's count of bytes on the TCP connection to peer not yet transmitted (SIOCOUTQNSD),
  // plus the buffer bytes of its segments still in this host's queues (SO_MEMINFO's wmem_alloc: a
  // tc qdisc's, the device's; a little above their payload); nullopt while the connection is not
  // up, or when its descriptor is not known (heartbeats and pacing off: no monitor reports it), or
  // for ipc://.
  [[nodiscard]] std::optional<std::size_t> queued_bytes(int peer) const override;
  // The bytes written to the TCP connection to peer: TCP_INFO's tcpi_bytes_acked plus SIOCOUTQ (the
  // framing and encryption ZeroMQ adds included); 0 while a watched tcp link has no connection;
  // nullopt when its descriptor is not known or for ipc://.
  [[nodiscard]] std::optional<std::uint64_t> bytes_taken(int peer) const override;
  // TCP_INFO's tcpi_bytes_acked of the connection to peer; nullopt as for queued_bytes.
  [[nodiscard]] std::optional<std::uint64_t> bytes_acknowledged(int peer) const override;
  // The pooled send buffers ZeroMQ still holds (gossip/zmq/send_buffers.hpp).
  [[nodiscard]] std::uint64_t held_bytes() const override;
  [[nodiscard]] bool wait_held_at_most(std::uint64_t bytes, transport_clock::time_point deadline) override;

  // transport_admission: the connection guard's counts and log (gossip/zmq/connection_guard.hpp).
  [[nodiscard]] transport_refusals refusals() const override;
  void take_refusal_log(std::vector<std::string>& lines) override;
  // Links whose handshake the peer failed with an authentication error (ZAP: this node's key is not
  // one it allows), since their last successful handshake. Needs the links' monitors (heartbeats).
  [[nodiscard]] std::vector<int> peers_refusing_this_node() const override;

  // With pacing (zmq_options::pace_bytes_per_s): the SO_MAX_PACING_RATE, in bytes per second, of the
  // TCP connection to peer as the kernel reports it now; nullopt while that connection is not
  // (yet) known or pacing is off. Connections are learned from ZeroMQ's monitor events, read in
  // send_all() and receive().
  [[nodiscard]] std::optional<std::uint64_t> pacing_rate(int peer);

 private:
  // send_all and send_all_kept: the payload copied into the pool, or adopted (owner set).
  status send_frames(std::span<const int> peers, std::span<const std::byte> header,
                     std::span<const std::byte> payload, std::shared_ptr<const void> owner);
  // The counters of the current TCP connection to peer; nullopt as for queued_bytes.
  [[nodiscard]] std::optional<tcp_progress> link_progress(int peer) const;
  struct impl;
  int rank_;
  std::unique_ptr<impl> impl_;
};

}  // namespace qgossip
