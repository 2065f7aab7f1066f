#pragma once
// A transport decorator that emulates this node's EGRESS link, like `tc tbf` + `netem delay` on the
// node's network interface, for kernels or hosts where neither can be used (no netem module, no root).
//
//   emulated_link_transport link(zmq, {.rate_bits_per_s = 10e6, .delay = 50ms});
//   exchange ex(link, ...);              // the node sends and receives through `link`
//   ...
//   (void)link.flush(now + linger);      // before shutting down: the last round's messages leave
//
// The model: one FIFO egress link shared by all peers, as one network interface is. A message of
// b = header + payload + per_message_overhead_bytes bytes sent at `now` finishes leaving the
// interface at departure_done = max(now, link_free) + 8·b / rate (and the link is busy until then),
// and reaches the peer at due = departure_done + delay. send()/send_all() never block: they copy the
// message into an outbox, and the message is handed to the inner transport once due, by whichever
// call of this object comes first at or after `due` (send, send_all, receive, flush). send_all() to
// k peers puts k messages through the link (each copy costs bandwidth, as on a real NIC).
//
// Error of the emulation. The wrapper has no thread of its own: a message due while the node is
// computing (outside any call on this transport) leaves at the node's next transport call, so a
// message arrives at most one compute phase late. A node waits for its neighbours inside receive(),
// which wakes up for every due message, so in a synchronous round the messages of the round leave on
// time and only those still queued when the last neighbour message arrived can be late. On top of
// the emulated delay come the inner transport's own latency and the scheduler's wake-up latency
// (typically tens of microseconds, up to milliseconds on a loaded machine). The emulated delay is
// one-way, per message: a round trip costs twice `delay`.
//
// Errors: a failure of the inner send surfaces from the call that hands the message over, which may
// be a later call than the send() that queued it (with another peer); that message is dropped, the
// rest stay queued. With rate 0 and delay 0 the wrapper is a pass-through (no copy, no outbox).
//
// Thread safety: as the wrapped transport: one thread at a time. `inner` must outlive the wrapper.
// Messages still queued when the wrapper is destroyed are lost, as on a link that went down.
#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <vector>

#include "gossip/transport_wrapper.hpp"

namespace qgossip {

// Bytes each message costs on the wire beyond its header and payload frames, as `tc` counts them
// (skb->len: link-layer header included, preamble/FCS/inter-frame gap not): Ethernet header 14 +
// IPv4 20 + TCP with the timestamp option Linux sets by default 32 + the ZMTP frame headers of our
// two frames (2 for the 56-byte header frame, 9 for the payload's long frame) 11 = 77. That is exact
// for a message that fits one TCP segment. Not modelled: a larger message pays another 66 bytes of
// headers per 1448-byte segment (4.6 %), and on a real link the node's egress also carries the ACKs
// of what it receives (about 2 % more in a symmetric exchange). Measured on a ring of 2 exchanging
// 273 kB messages (docs/cluster.md): 0.222 s per round here at 10 Mbit/s, 0.233 s under tc tbf
// 10mbit, whose bytes on the wire were 6.7 % above the messages'.
inline constexpr std::size_t kDefaultMessageOverheadBytes = 77;

struct link_emulation {
  // Egress bandwidth in bits per second (tc's "10mbit" = 10e6). 0: unlimited (no pacing).
  double rate_bits_per_s = 0;
  // One-way delay added to every message after it has left the link. 0: none.
  std::chrono::microseconds delay{0};
  // Added to header + payload when pacing (see kDefaultMessageOverheadBytes). Ignored at rate 0.
  std::size_t per_message_overhead_bytes = kDefaultMessageOverheadBytes;

  // True when the wrapper does nothing: no pacing and no delay.
  [[nodiscard]] bool pass_through() const { return rate_bits_per_s == 0 && delay.count() == 0; }
};

class emulated_link_transport final : public transport_wrapper {
 public:
  // REQUIRES: link.rate_bits_per_s >= 0 and finite, link.delay >= 0 (QG_ENFORCE: the config loader
  // validates user input before it gets here).
  emulated_link_transport(transport& inner, link_emulation link);

  // Queues the message (copied) and returns at once; ok unless handing over an earlier message that
  // became due failed (see "Errors" above).
  status send(int peer, std::span<const std::byte> header, std::span<const std::byte> payload) override;
  // k messages through the link, one per peer in the order given; the payload is stored once.
  status send_all(std::span<const int> peers, std::span<const std::byte> header,
                  std::span<const std::byte> payload) override;
  // Hands over every due message, then waits on the inner transport until deadline or the next
  // message's due time, whichever is first, and loops: the wrapper sends on time while the node waits.
  status receive(transport_clock::time_point deadline, inbound_frames& out) override;
  // Queue figures, offered when the inner transport has them (the emulated link is a queue in
  // front of the inner one, whose figures it adds to): the bytes for peer still leaving the
  // emulated link (their departure not done; those only waiting out the delay are on the wire),
  // plus what the inner transport holds. bytes_taken and bytes_acknowledged are the inner
  // transport's: bytes leaving the emulated link reach it, and then its connection. Liveness and
  // admission are the inner transport's too.
  [[nodiscard]] std::optional<std::size_t> queued_bytes(int peer) const override;

  // Hands over everything still queued, sleeping until each message is due. ok when the outbox is
  // empty; errc::timeout when a message would only be due after deadline (it and those behind it
  // stay queued); the inner send's error otherwise.
  status flush(transport_clock::time_point deadline);

  // Messages sent but not yet handed to the inner transport.
  [[nodiscard]] std::size_t queued() const { return outbox_.size(); }
  [[nodiscard]] const link_emulation& link() const { return link_; }

 private:
  // The frames of one send() or send_all(), shared by its k messages so fan-out stores one copy.
  struct frames {
    std::vector<std::byte> header, payload;
  };
  struct message {
    transport_clock::time_point due;
    transport_clock::time_point departed;  // when its last bit has left the link
    int peer;
    std::shared_ptr<frames> data;
  };

  std::shared_ptr<frames> copy(std::span<const std::byte> header, std::span<const std::byte> payload);
  void enqueue(int peer, const std::shared_ptr<frames>& data, transport_clock::time_point now);
  // Hands over the messages due at or before now, oldest first; stops at the first inner failure.
  status release_due();

  link_emulation link_;
  // When the link finishes sending what is already queued (in the past when idle).
  transport_clock::time_point link_free_{};
  // FIFO; `due` never decreases along it because departures are serialized and delay is constant.
  std::deque<message> outbox_;
  // Frame buffers whose messages all left, reused (with their capacity) by the next send.
  std::vector<std::shared_ptr<frames>> spare_;
};

}  // namespace qgossip
