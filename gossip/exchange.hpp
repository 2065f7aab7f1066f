#pragma once
// The Exchange runs the gossip protocols over any Transport: the synchronous round (send this
// node's message to every neighbour, then gather exactly one valid message per neighbour for (kind,
// iteration), within a deadline), the asynchronous gather, leaving and rejoining. It is the one
// place where the rules of docs/wire.md are applied, so every backend gets them. Its rooms
// (gossip/exchange/): a receiving core (core.hpp: parse, check, count, reject, the one wait loop)
// and one object per protocol, registered with the core by message kind (sync_round, async_gather,
// leaving, rejoin); this class is their one front door. The node hears from it through one typed
// interface, exchange_events (events.hpp), given at construction.
//  - Nothing is used before it is validated (gossip/wire.hpp parse_header): a message from a
//    non-neighbour, of another run or wire version, with a codec/tag/count other than ours for that
//    kind, a bad checksum, a payload of the wrong size, or whose link (transport peer) is not the
//    sender its header names, is rejected, counted per reason and logged, never returned.
//  - The iteration is the per-edge sequence number (gossip/exchange/sync_round.hpp): a message one
//    round early is buffered (a train message checked first: exchange_events::early_train_message),
//    a repeat is a duplicate, one further ahead is a gap. Patterns where a
//    peer may run further ahead (a ring all-reduce, probes from nodes several hops away) raise
//    `lookahead`. Messages of different kinds (train, probe) may interleave within an iteration.
//  - A train message has one way out: exchange_events::train_message (the node decodes it into
//    its inbox there). A caller that collects a round's messages (a ring all-reduce's chunks,
//    probes, tests) passes `out` and gets them there too.
//  - A round normally sends to and gathers from every neighbour; a directed round (round_peers)
//    sends to some and gathers from some (a ring all-reduce step: to the right, from the left).
//    A message for the current round from a peer not expected to send in it is rejected.
//  - A round that does not complete by its deadline fails with errc::timeout naming every silent
//    neighbour: "no message from rank 3 (tcp://10.0.0.3:29500?) for iteration 17 within 30000 ms".
//  - The end of a run (finish): a node tells its peers it finished and waits until they have too, so
//    that it never leaves while one of its messages may still be needed. A finished peer's link
//    closing is no failure and leaves its messages in place; no round after its last waits for it.
//
// Every node of a run sends, for a given kind, the same codec, codec tag and element count: a
// message is checked against this node's own outgoing message of the same round.
//
// REQUIRES of the caller: rounds come in non-decreasing iteration order, each (kind, iteration)
// at most once. After a round fails (timeout, send failure, transport error) the exchange is
// spent: later rounds return errc::invalid (the run should stop; stats() stay readable). A round
// ended by errc::rejoin (a callback's: this node was dropped and is offered a way back) is no
// failure: the node rejoins (readmit) and its rounds go on from the join round.
// Thread safety: one thread at a time; the transport is used only from inside round().
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/status.hpp"
#include "gossip/exchange/async_gather.hpp"
#include "gossip/exchange/core.hpp"
#include "gossip/exchange/events.hpp"
#include "gossip/exchange/link_control.hpp"
#include "gossip/exchange/leaving.hpp"
#include "gossip/exchange/rejoin.hpp"
#include "gossip/exchange/stats.hpp"
#include "gossip/exchange/sync_round.hpp"
#include "gossip/exchange/types.hpp"
#include "gossip/transport.hpp"
#include "gossip/wire.hpp"

namespace qgossip {

class exchange final : public link_control {
 public:
  // `t` and `events` must outlive the exchange (no events: a default exchange_events, which logs
  // nothing, never stops, drops a failed peer never and accepts every train message). Throws
  // invariant_error for options that break their REQUIRES, and for asynchronous gossip over a
  // transport without queue figures (transport::queues() null; gossip/transport.hpp): its flow
  // control needs them. t's interfaces are looked up here, once.
  exchange(transport& t, exchange_options options, exchange_events* events = nullptr);
  exchange(const exchange&) = delete;
  exchange& operator=(const exchange&) = delete;

  // Sends msg as (kind, iteration) to every neighbour not dropped (a train round: each of
  // msg.per_link its own payload), then gathers one valid message per such neighbour: on ok, out[k] came from the k-th of them (ascending); a neighbour dropped
  // during the round has no entry (out[k].header.sender says who sent each).
  // Errors: errc::timeout (silent neighbours, named), errc::invalid (a REQUIRES broken, e.g. a
  // repeated iteration or a payload above max_payload_bytes), or the transport's error.
  status round(message_kind kind, std::uint64_t iteration, const outgoing_message& msg,
               std::vector<inbound_message>& out);
  // A directed round: sends msg to peers.send_to, gathers one message from each of
  // peers.receive_from (out[k] from receive_from[k], less any dropped during the round). Either may
  // be empty; dropped peers in them are skipped. Errors as round(), errc::peer_lost (a failed
  // neighbour the node did not drop: exchange_events::peer_failed), and errc::invalid when a peer is not a
  // neighbour or a list is not sorted and unique.
  status round(message_kind kind, std::uint64_t iteration, const outgoing_message& msg,
               std::vector<inbound_message>& out, const round_peers& peers);
  // A directed train round that collects nothing: its messages go only to
  // exchange_events::train_message (the node's inbox). Errors as above.
  status round(message_kind kind, std::uint64_t iteration, const outgoing_message& msg,
               const round_peers& peers);

  // Asynchronous gossip: sends msg as (kind train, iteration) to every live peer not finished
  // before it (each of msg.per_link its own payload), then delivers the train messages that have
  // arrived (any number per peer, up to kMostTakenPerLink per link in all, the rest in the next
  // calls; each peer's in ascending iteration, each validated, to exchange_events::train_message in
  // that order, and into *out when given),
  // waiting only while a live peer that has not finished below `need` has delivered less than
  // `need` (0: never waits; but a live peer not heard from at all by options().first_deadline after
  // the first call is errc::timeout, as a synchronous round 1 would report it), and, flow control,
  // while the transport's link to a live unfinished peer still holds more than two messages of this
  // size of ours that have not left this host (transport_queues::queued_bytes; looked at every
  // kBacklogPoll): a node never runs further ahead of a slow link than the message it just sent and
  // the one before. Notices, finished messages and losses are handled as in round().
  // Errors as round(). REQUIRES: options().asynchronous; iterations ascending.
  status gather(std::uint64_t iteration, const outgoing_message& msg, std::uint64_t need,
                std::vector<inbound_message>* out = nullptr);
  // The same round, sending on each link its own message or none (docs/algorithms.md, "A busy
  // uplink"): sends[i].payload to sends[i].peer, nothing to a live peer not listed; msg gives only
  // the codec fields (of every payload, and of what the neighbours send; its per_link is not
  // used: sends says what each link gets). A link's next message
  // counts in its header the rounds that sent it nothing. errc::invalid, before anything is sent,
  // for a peer that is not a neighbour, a payload over max_payload_bytes, or a live peer left out
  // that may not be (may_skip: before any message to it, or kMaxSkipped rounds without one).
  status gather(std::uint64_t iteration, const outgoing_message& msg, std::uint64_t need,
                std::span<const link_message> sends, std::vector<inbound_message>* out = nullptr);
  // Asynchronous gossip on a busy uplink (docs/algorithms.md, "A busy uplink"): whether round
  // `iteration` may send nothing to peer because its live link (to a finished peer too) still
  // holds more than a quarter of our last message to it on this host
  // (transport_queues::queued_bytes), or has not yet taken all of it from the messaging library
  // (transport_queues::bytes_taken). False before the first message to peer, when the rounds
  // skipped would not fit the wire header's `skipped` (kMaxSkipped), and for a rank that is not a
  // neighbour.
  [[nodiscard]] bool link_busy(int peer, std::uint64_t iteration) const;
  // Whether a train message sent to peer now would go out: a neighbour neither dropped nor whose
  // link closed (it finished and left).
  [[nodiscard]] bool takes_messages(int peer) const;
  static constexpr std::uint64_t kMaxSkipped = async_gather::kMaxSkipped;
  // The newest train iteration delivered from peer (0: none yet, or not a neighbour).
  [[nodiscard]] std::uint64_t newest(int peer) const;
  // True when every neighbour not dropped has finished (its finished message arrived) and every
  // train message it sent before has been delivered: nothing more will come from anyone.
  [[nodiscard]] bool all_finished() const;

  // Sends a notice (message_kind::notice, no codec) to each of peers at once, stamped with
  // iteration (the sender's round, for the log). Usable between rounds, from the callbacks during
  // one, and after a failed round (a stopping node tells its neighbours why). Errors: the transport's.
  status send_notice(std::span<const int> peers, std::span<const std::byte> payload, std::uint64_t iteration) override;
  // Ends this node's part of the run after its last round, `iteration`: sends a finished message
  // (message_kind::finished) to every live peer, then receives until every live peer has finished
  // too and acknowledged this node's finished message (message_kind::finished_ack, which every
  // exchange sends as a peer's finished message arrives), or its link closed after it finished, or
  // deadline passes. Only then may the node close its links: the acknowledgement says the peer holds
  // every message this node sent it (links are ordered), the last asynchronous rounds included;
  // a link closing after the peer finished says the peer left holding them. Meanwhile notices
  // go to exchange_events::notice and a peer whose link is lost before it finished to peer_failed (as in a
  // round); train and probe messages (for rounds this node will not run) are counted as expired.
  // Returns ok; errc::timeout naming the peers that had not finished by deadline; errc::peer_lost
  // when the node did not drop a failed peer; errc::cancelled on a stop request.
  // REQUIRES: no round after it.
  // Asynchronous gossip: train messages that arrive meanwhile (a slower peer's last rounds) are
  // delivered, in order, to exchange_events::train_message, then `late` is called, so that copies
  // of the peers stay exact;
  // each such arrival moves the deadline as far past it as deadline was past the call, and so does
  // hearing from a peer not yet done (transport_liveness::bytes_heard: its answers to heartbeats,
  // looked at every kHeardPoll): a peer still running its rounds is waited for as long as it keeps
  // sending or is alive (its link's liveness, not a fixed time, bounds the wait; it ends its run by
  // itself). Over a transport without liveness it is waited for as long as it keeps sending.
  status finish(std::uint64_t iteration, transport_clock::time_point deadline,
                const std::function<void()>& late = {});
  // True once peer's finished message arrived (its last round, and that it sends nothing more but
  // notices): its link closing afterwards is no failure, and no round after its last waits for it.
  [[nodiscard]] bool finished(int peer) const;

  // Drops a neighbour for good: no round waits for it (a round under way goes on without it, and
  // its entry leaves `out`, even when its message had arrived: the node mixes without it from this
  // round on), its buffered and later messages are rejected (reason departed), and
  // the transport stops watching its link. Dropping an unknown or dropped rank does nothing.
  void drop(int peer) override;
  [[nodiscard]] bool dropped(int peer) const override;

  // Rejoining (docs/failures.md, "Rejoining"; gossip/exchange/rejoin.hpp). A join message
  // (message_kind::join, payload notice-format items, count = model_size) to peer, dropped or not;
  // stamped with run_id when given (an answer to a joiner of another run), else this run's.
  status send_join(int peer, std::uint64_t model_size, std::span<const std::byte> payload,
                   std::optional<std::uint64_t> run_id = std::nullopt) override;
  // This node's state for its edge to peer, restarting at round `iteration`: values = its model,
  // then its public state when it has one (message_kind::join_state, count = model_size).
  status send_state(int peer, std::uint64_t iteration, std::uint64_t model_size,
                    std::span<const float> values);
  // Moves peer's join_state for `iteration` into out, if it has arrived (older ones are discarded).
  [[nodiscard]] bool take_state(int peer, std::uint64_t iteration, inbound_message& out);
  // Bytes of states (join_state chunks) taken so far: a large state's transfer is alive while it grows.
  [[nodiscard]] std::uint64_t state_bytes_received() const;
  // Receives (every message handled as between rounds: buffered, join_states held for take_state,
  // notices and join messages to exchange_events, losses to peer_failed) until done() is true (ok)
  // or deadline passes (errc::timeout); errc::cancelled on a stop request; a failed peer the node
  // did not drop ends it with that failure.
  status wait_until(transport_clock::time_point deadline, const std::function<bool()>& done);
  // Handles what has already arrived, without waiting (as wait_until does): a node whose rounds
  // wait for no one (every neighbour gone) still hears join messages and notices.
  status poll();
  // True once a train message of peer was delivered (it took part in the run).
  [[nodiscard]] bool heard_from(int peer) const override;
  // A fresh link to peer (transport_liveness::watch_peer), e.g. to answer a node that restarted at
  // once. Nothing over a transport without liveness (its links do not die).
  void refresh_link(int peer) override;
  // Takes peer back from round `iteration` on: it is no longer dropped, its train messages are
  // expected from `iteration` (older ones are duplicates; rounds before it do not wait for it), it
  // has not finished, and the transport watches its link afresh (transport_liveness::watch_peer). A
  // joiner calls it for each neighbour that admitted it, after restart_at. REQUIRES: between rounds,
  // iteration > the current round.
  void readmit(int peer, std::uint64_t iteration) override;
  // This node starts over at round `iteration` (it rejoins): its next round is `iteration`, and the
  // neighbours' messages for it are buffered until then. A node that was cut off may have run ahead
  // of the run it rejoins: the round goes back. REQUIRES: between rounds, iteration >= 1.
  void restart_at(std::uint64_t iteration);

  const exchange_stats& stats() const { return core_.stats(); }
  const exchange_options& options() const { return core_.options(); }
  [[nodiscard]] std::uint64_t run_id() const override { return core_.options().run_id; }

 private:
  exchange_events default_events_;  // when none is given
  exchange_core core_;
  sync_round rounds_;
  std::unique_ptr<async_gather> async_;  // asynchronous gossip only
  leaving leaving_;
  rejoin_messages rejoin_;
};

}  // namespace qgossip
