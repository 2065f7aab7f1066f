#pragma once
// The Exchange runs one synchronous gossip round over any Transport: it sends this node's message
// to every neighbour, then gathers exactly one valid message per neighbour for (kind, iteration),
// within a deadline. It is the one place where the rules of docs/wire.md and docs/wire.md
// are applied, so every backend gets them:
//  - Nothing is used before it is validated (gossip/wire.hpp parse_header): a message from a
//    non-neighbour, of another run or wire version, with a codec/tag/count other than ours for that
//    kind, a bad checksum, a payload of the wrong size, or whose link (transport peer) is not the
//    sender its header names, is rejected, counted per reason and logged, never returned.
//  - The iteration is the per-edge sequence number. In a synchronous gossip protocol a neighbour is
//    at most one round ahead, so a message for iteration t+1 is buffered (per sender and kind) until
//    its round; a repeat of a delivered (sender, kind, iteration) or anything older is dropped as a
//    duplicate; anything for t+2 or later is a gap, a protocol violation: rejected. Patterns where a
//    peer may run further ahead (a ring all-reduce, probes from nodes several hops away) raise
//    `lookahead`. Messages of different kinds (train, probe) may interleave within an iteration.
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
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/state_io.hpp"
#include "core/status.hpp"
#include "gossip/log_limiter.hpp"
#include "gossip/transport.hpp"
#include "gossip/wire.hpp"

namespace qgossip {

struct exchange_options {
  int rank = -1;
  std::vector<int> neighbours;  // sorted ascending, unique, without rank
  std::uint64_t run_id = 0;     // hash of the resolved config
  // Deadline of the first round, which also waits for the neighbours to start.
  std::chrono::milliseconds first_deadline{60000};
  // Deadline of every later round, counted from the start of round().
  std::chrono::milliseconds round_deadline{30000};
  // How many iterations ahead of the current one a peer's message is buffered (1: plain gossip).
  std::uint64_t lookahead = 1;
  // Largest payload sent or accepted (match zmq_options::max_payload_bytes).
  std::uint32_t max_payload_bytes = 256u << 20;
  // Called with one line per rejected, duplicate or expired message, and with the transport's lines
  // about refused connections; may be empty. Rejections are rate-limited per reason (a few lines per
  // 10 s, then one line counting the rest), so a flood of garbage cannot flood the log.
  std::function<void(const std::string&)> log;
  // When set, polled while a round waits (every kStopCheckInterval); returning true ends the round
  // with errc::cancelled. The node loop passes its SIGINT/SIGTERM flag here.
  std::function<bool()> should_stop;

  // A failed or misbehaving neighbour (docs/failures.md): its link was lost (the transport's
  // heartbeats or a closed connection: transport::take_lost_peers), a train message of it failed
  // `validate` (it cannot send that round's message again), or max_rejected of the messages on its
  // link were rejected. Called with its rank and why ("its link closed ..."). Returning true drops
  // it (as drop() does) and the round goes on without it; false, or no callback, ends the round with
  // errc::peer_lost naming it (network.on_peer_failure: stop).
  std::function<bool(int peer, const std::string& why)> on_peer_failure;
  // Called for each valid notice (message_kind::notice) as it arrives during a round, with its
  // sender; a non-ok status ends the round with it. Without a callback notices are dropped (counted
  // as delivered).
  std::function<status(int from, std::span<const std::byte> payload)> on_notice;
  // Rejoining (docs/failures.md, "Rejoining"): called for each valid join message
  // (message_kind::join) as it arrives, also from a neighbour this node dropped, with its sender,
  // header (count: the sender's model size) and payload (notice-format items). errc::corrupt
  // rejects it (reason notice); another non-ok status ends the round with it. Without a callback
  // join messages are dropped (counted as delivered).
  std::function<status(int from, const wire_header& header, std::span<const std::byte> payload)> on_join;
  // A neighbour's join message of another run (run id `run_id`; the message itself is rejected,
  // reason run_id): the node may answer it with send_join(..., run_id), which the joiner can read.
  std::function<void(int from, std::uint64_t run_id)> on_foreign_join;
  // Checks a train message's payload before it is delivered (the node decodes it); a failure
  // rejects it (reason payload) and is a failure of its sender (on_peer_failure).
  std::function<status(const wire_header& header, std::span<const std::byte> payload)> validate;
  // A neighbour whose link brought this many rejected messages misbehaves (on_peer_failure); 0: never.
  std::uint32_t max_rejected = 16;
  // A neighbour silent at a round's deadline is a failure (on_peer_failure: continue drops it and
  // the round goes on) rather than the round's time-out, unless every peer of the round was silent
  // (then this node is the one cut off). Off: the round fails with errc::timeout.
  bool drop_silent = false;
  // Asynchronous gossip (train.max_staleness > 0): train messages are delivered by gather(), each
  // peer's in its order (iteration = the previous one + 1; a gap is rejected), as they arrive, never
  // held for a round; round() is then for probes only.
  bool asynchronous = false;
};

inline constexpr std::chrono::milliseconds kStopCheckInterval{100};
// How often an asynchronous round waiting on flow control looks at its links' queues again.
inline constexpr std::chrono::milliseconds kBacklogPoll{2};
// How often exchange::finish looks whether a neighbour still running its rounds was heard from.
inline constexpr std::chrono::milliseconds kHeardPoll{500};

// What this node sends in a round. The payload must stay valid during round().
struct outgoing_message {
  std::uint16_t codec = 0;
  std::uint32_t codec_tag = 0;
  std::uint32_t count = 0;
  std::span<const std::byte> payload;
};

// Asynchronous gossip (exchange::gather): what a round sends on one link, to neighbour `peer`. The
// payload must stay valid during gather().
struct link_message {
  int peer = -1;
  std::span<const std::byte> payload;
};

// Who a directed round talks to: sorted, unique subsets of the exchange's neighbours.
struct round_peers {
  std::span<const int> send_to;
  std::span<const int> receive_from;
};

// A validated message from one neighbour.
struct inbound_message {
  wire_header header;
  std::vector<std::byte> payload;  // reused across rounds: pass the same vector to round() each time
};

// Why a received message was rejected.
enum class reject_reason : std::uint8_t {
  malformed,  // the transport could not split it into header and payload
  truncated,
  magic,
  version,
  payload_size,
  crc,
  skipped,  // not 0 on a message other than train (before wire version 6: `reserved` not 0)
  kind,
  run_id,
  sender,  // not a neighbour
  codec,
  codec_tag,
  count,
  peer_mismatch,  // the header's sender is not who the transport says sent it
  gap,            // an iteration two or more rounds ahead
  // Refused by the transport before receive() (transport_refusals; docs/security.md):
  auth,       // a connection whose CURVE key is not a neighbour's
  handshake,  // a connection that failed the handshake (not ZeroMQ, another mechanism, wrong key)
  identity,   // a message whose claimed routing id is not the rank its key proves
  payload,    // a train message whose payload fails exchange_options::validate (does not decode)
  departed,   // from a neighbour this node dropped (drop(), on_peer_failure)
  notice,     // a notice the node's on_notice could not parse
};
inline constexpr std::size_t kRejectReasons = 21;
std::string_view to_string(reject_reason reason);

struct exchange_stats {
  std::uint64_t rounds = 0;                              // rounds completed
  std::uint64_t messages_sent = 0;                       // one per neighbour per round
  std::uint64_t bytes_sent = 0;                          // header + payload, every copy to every neighbour
  std::uint64_t probe_bytes_sent = 0;                    // the part of bytes_sent in probe messages
  std::uint64_t probe_bytes_received = 0;                // valid probe messages received (header + payload)
  std::uint64_t notice_bytes_sent = 0;                   // the part of bytes_sent in notices
  std::uint64_t notice_bytes_received = 0;               // valid notices received (header + payload)
  std::uint64_t messages_received = 0;                   // everything the transport delivered, valid or not
  std::uint64_t bytes_received = 0;                      // header + payload of those
  std::uint64_t messages_delivered = 0;                  // returned by round()
  std::uint64_t duplicates = 0;                          // repeats of delivered messages, or older iterations
  std::uint64_t expired = 0;                             // buffered for a round this node never ran
  std::array<std::uint64_t, kRejectReasons> rejected{};  // indexed by reject_reason; auth, handshake
                                                         // and identity are the transport's refusals
  std::chrono::nanoseconds wait_time{0};                 // inside transport receive()
  std::chrono::nanoseconds send_time{0};                 // inside transport send

  std::uint64_t rejected_for(reject_reason r) const { return rejected[static_cast<std::size_t>(r)]; }
  std::uint64_t rejected_total() const;
  // Every counter added (a resumed node's counters continue those of its checkpoint).
  exchange_stats& operator+=(const exchange_stats& o);
  // Checkpoints: every counter by its name. load_state also reads the positional form checkpoints
  // written before it had names ("exchange_counts", 10 or 12 counts, then "rejected", "wait_ns",
  // "send_ns"). Throws state_error for counts it cannot place.
  void save_state(state_writer& out) const;
  void load_state(state_reader& in);
};

class exchange {
 public:
  // `t` must outlive the exchange. Throws invariant_error for options that break their REQUIRES.
  exchange(transport& t, exchange_options options);

  // Sends msg as (kind, iteration) to every neighbour not dropped, then gathers one valid message
  // per such neighbour: on ok, out[k] came from the k-th of them (ascending); a neighbour dropped
  // during the round has no entry (out[k].header.sender says who sent each).
  // Errors: errc::timeout (silent neighbours, named), errc::invalid (a REQUIRES broken, e.g. a
  // repeated iteration or a payload above max_payload_bytes), or the transport's error.
  status round(message_kind kind, std::uint64_t iteration, const outgoing_message& msg,
               std::vector<inbound_message>& out);
  // A directed round: sends msg to peers.send_to, gathers one message from each of
  // peers.receive_from (out[k] from receive_from[k], less any dropped during the round). Either may
  // be empty; dropped peers in them are skipped. Errors as round(), errc::peer_lost (a failed
  // neighbour, on_peer_failure said stop), and errc::invalid when a peer is not a neighbour or a
  // list is not sorted and unique.
  status round(message_kind kind, std::uint64_t iteration, const outgoing_message& msg,
               std::vector<inbound_message>& out, const round_peers& peers);

  // Asynchronous gossip: sends msg as (kind train, iteration) to every live peer not finished
  // before it, then delivers into out every train message that has arrived (any number per peer,
  // each peer's in ascending iteration, each validated and passed to `validate` in that order),
  // waiting only while a live peer that has not finished below `need` has delivered less than
  // `need` (0: never waits; but a live peer not heard from at all by options().first_deadline after
  // the first call is errc::timeout, as a synchronous round 1 would report it), and, flow control,
  // while the transport's link to a live unfinished peer still holds more than two messages of this
  // size of ours that have not left this host (transport::queued_bytes; looked at every
  // kBacklogPoll): a node never runs further ahead of a slow link than the message it just sent and
  // the one before. Notices, finished messages and losses are handled as in round().
  // Errors as round(). REQUIRES: options().asynchronous; iterations ascending.
  status gather(std::uint64_t iteration, const outgoing_message& msg, std::uint64_t need,
                std::vector<inbound_message>& out);
  // The same round, sending on each link its own message or none (docs/algorithms.md, "A busy
  // uplink"): sends[i].payload to sends[i].peer, nothing to a live peer not listed; msg gives only
  // the codec fields (of every payload, and of what the neighbours send). A link's next message
  // counts in its header the rounds that sent it nothing. errc::invalid, before anything is sent,
  // for a peer that is not a neighbour, a payload over max_payload_bytes, or a live peer left out
  // that may not be (may_skip: before any message to it, or kMaxSkipped rounds without one).
  status gather(std::uint64_t iteration, const outgoing_message& msg, std::uint64_t need,
                std::vector<inbound_message>& out, std::span<const link_message> sends);
  // Asynchronous gossip on a busy uplink (docs/algorithms.md, "A busy uplink"): whether round
  // `iteration` may send nothing to peer because its live link (to a finished peer too) still
  // holds more than a quarter of our last message to it on this host
  // (transport::queued_bytes), or has not yet taken all of it from the messaging library
  // (transport::bytes_taken). False before the first message to peer, when the rounds skipped
  // would not fit the wire header's `skipped` (kMaxSkipped), and for a rank that is not a neighbour.
  [[nodiscard]] bool link_busy(int peer, std::uint64_t iteration) const;
  // Whether a train message sent to peer now would go out: a neighbour neither dropped nor whose
  // link closed (it finished and left).
  [[nodiscard]] bool takes_messages(int peer) const;
  static constexpr std::uint64_t kMaxSkipped = 0xFFFF;
  // The newest train iteration delivered from peer (0: none yet, or not a neighbour).
  [[nodiscard]] std::uint64_t newest(int peer) const;
  // True when every neighbour not dropped has finished (its finished message arrived) and every
  // train message it sent before has been delivered: nothing more will come from anyone.
  [[nodiscard]] bool all_finished() const;

  // Sends a notice (message_kind::notice, no codec) to each of peers at once, stamped with
  // iteration (the sender's round, for the log). Usable between rounds, from the callbacks during
  // one, and after a failed round (a stopping node tells its neighbours why). Errors: the transport's.
  status send_notice(std::span<const int> peers, std::span<const std::byte> payload, std::uint64_t iteration);
  // Ends this node's part of the run after its last round, `iteration`: sends a finished message
  // (message_kind::finished) to every live peer, then receives until every live peer has finished
  // too and acknowledged this node's finished message (message_kind::finished_ack, which every
  // exchange sends as a peer's finished message arrives), or its link closed after it finished, or
  // deadline passes. Only then may the node close its links: the acknowledgement says the peer holds
  // every message this node sent it (links are ordered), the last asynchronous rounds included;
  // a link closing after the peer finished says the peer left holding them. Meanwhile notices
  // go to on_notice and a peer whose link is lost before it finished to on_peer_failure (as in a
  // round); train and probe messages (for rounds this node will not run) are counted as expired.
  // Returns ok; errc::timeout naming the peers that had not finished by deadline; errc::peer_lost
  // when on_peer_failure did not drop a failed peer; errc::cancelled on a stop request.
  // REQUIRES: no round after it.
  // Asynchronous gossip: train messages that arrive meanwhile (a slower peer's last rounds) are
  // delivered, in order, to `late` (each validated first), so that copies of the peers stay exact;
  // each such arrival moves the deadline as far past it as deadline was past the call, and so does
  // hearing from a peer not yet done (transport::bytes_heard: its answers to heartbeats, looked at
  // every kHeardPoll): a peer still running its rounds is waited for as long as it keeps sending or
  // is alive (its link's liveness, not a fixed time, bounds the wait; it ends its run by itself).
  status finish(std::uint64_t iteration, transport_clock::time_point deadline,
                const std::function<void(std::vector<inbound_message>&)>& late = {});
  // True once peer's finished message arrived (its last round, and that it sends nothing more but
  // notices): its link closing afterwards is no failure, and no round after its last waits for it.
  [[nodiscard]] bool finished(int peer) const;

  // Drops a neighbour for good: no round waits for it (a round under way goes on without it, and
  // its entry leaves `out`, even when its message had arrived: the node mixes without it from this
  // round on), its buffered and later messages are rejected (reason departed), and
  // the transport stops watching its link. Dropping an unknown or dropped rank does nothing.
  void drop(int peer);
  [[nodiscard]] bool dropped(int peer) const;

  // Rejoining (docs/failures.md, "Rejoining"; gossip/exchange_rejoin.cpp). A join message
  // (message_kind::join, payload notice-format items, count = model_size) to peer, dropped or not;
  // stamped with run_id when given (an answer to a joiner of another run), else this run's.
  status send_join(int peer, std::uint32_t model_size, std::span<const std::byte> payload,
                   std::optional<std::uint64_t> run_id = std::nullopt);
  // This node's state for its edge to peer, restarting at round `iteration`: values = its model,
  // then its public state when it has one (message_kind::join_state, count = model_size).
  status send_state(int peer, std::uint64_t iteration, std::uint32_t model_size, std::span<const float> values);
  // Moves peer's join_state for `iteration` into out, if it has arrived (older ones are discarded).
  [[nodiscard]] bool take_state(int peer, std::uint64_t iteration, inbound_message& out);
  // Receives (every message handled as between rounds: buffered, join_states held for take_state,
  // notices and join messages to their callbacks, losses to on_peer_failure) until done() is true
  // (ok) or deadline passes (errc::timeout); errc::cancelled on a stop request; a failure
  // on_peer_failure did not drop ends it with that failure.
  status wait_until(transport_clock::time_point deadline, const std::function<bool()>& done);
  // Handles what has already arrived, without waiting (as wait_until does): a node whose rounds
  // wait for no one (every neighbour gone) still hears join messages and notices.
  status poll();
  // True once a train message of peer was delivered (it took part in the run).
  [[nodiscard]] bool heard_from(int peer) const;
  // A fresh link to peer (transport::watch_peer), e.g. to answer a node that restarted at once.
  void refresh_link(int peer);
  // Takes peer back from round `iteration` on: it is no longer dropped, its train messages are
  // expected from `iteration` (older ones are duplicates; rounds before it do not wait for it), it
  // has not finished, and the transport watches its link afresh (transport::watch_peer). A joiner
  // calls it for each neighbour that admitted it, after restart_at. REQUIRES: between rounds,
  // iteration > the current round.
  void readmit(int peer, std::uint64_t iteration);
  // This node starts over at round `iteration` (it rejoins): its next round is `iteration`, and the
  // neighbours' messages for it are buffered until then. REQUIRES: iteration > the current round.
  void restart_at(std::uint64_t iteration);

  const exchange_stats& stats() const { return stats_; }
  const exchange_options& options() const { return options_; }

 private:
  struct slot {  // a message buffered for a later round
    bool used = false;
    wire_header header;
    std::vector<std::byte> payload;
  };
  static constexpr std::size_t kKinds = 2;
  static std::size_t kind_index(message_kind k) { return static_cast<std::size_t>(k) - 1; }
  // "train message for iteration 7", for messages and notes.
  static std::string describe(message_kind kind, std::uint64_t iteration);
  // The reason a message is refused for, from the check it failed.
  static reject_reason reason_of(wire_check c);

  // Sends header + payload to peers outside the rounds (notices, join messages and states), counted
  // in send_time, messages_sent, bytes_sent and notice_bytes_sent.
  status send_outside_rounds(std::span<const int> peers, std::span<const std::byte> header,
                             std::span<const std::byte> payload);
  // The header of a message this node sends: its rank and run, and msg's codec fields and size.
  [[nodiscard]] wire_header header_for(message_kind kind, std::uint64_t iteration, const outgoing_message& msg) const;
  void handle(message_kind kind, const codec_expectation& codec, std::vector<inbound_message>& out);
  // handle(), a synchronous round's message (train or probe) from neighbour k: delivered to `out`
  // when it is this round's, buffered when it is early, refused or dropped otherwise.
  void handle_round_message(std::size_t k, const wire_header& h, message_kind kind, const codec_expectation& codec,
                            std::vector<inbound_message>& out);
  // round(): its arguments checked (the kind, the order of rounds, the payload's size, the peers).
  [[nodiscard]] status check_round(message_kind kind, std::uint64_t iteration, const outgoing_message& msg,
                                   const round_peers& peers) const;
  // round(): the round's message to each peer of send_to still in the round.
  [[nodiscard]] status send_round(message_kind kind, std::uint64_t iteration, const outgoing_message& msg,
                                  std::span<const int> send_to, transport_clock::time_point start);
  // round(): out's slots for the peers of receive_from in the round, the messages buffered for it
  // delivered into them; returns how many the round expects.
  std::size_t expect_round(message_kind kind, std::uint64_t iteration, const codec_expectation& codec,
                           std::span<const int> receive_from, std::vector<inbound_message>& out);
  void handle_notice(const wire_header& h);
  void handle_finished(std::size_t k, const wire_header& h);  // and acknowledges it
  void handle_finished_ack(std::size_t k);
  void handle_join(const wire_header& h);
  void hold_state(std::size_t k, const wire_header& h);  // a join_state, kept for take_state
  // The index of neighbour peer, or nullopt.
  [[nodiscard]] std::optional<std::size_t> index_of(int peer) const;
  // Asynchronous: a train message from neighbour k, delivered in its order or rejected.
  void deliver_in_order(std::size_t k, const wire_header& h, const codec_expectation& codec,
                        std::vector<inbound_message>& out);
  // Receives one message (or a loss, a refusal) until `until`; false when the wait timed out.
  [[nodiscard]] status receive_one(transport_clock::time_point until, message_kind kind,
                                   const codec_expectation& codec, std::vector<inbound_message>& out, bool& got);
  [[nodiscard]] bool waiting_for(std::size_t k, std::uint64_t need) const;
  // Asynchronous flow control: neighbour k takes messages and its link holds more than `limit`
  // bytes of ours still on this host (transport::queued_bytes).
  [[nodiscard]] bool link_backlogged(std::size_t k, std::size_t limit) const;
  // Whether round `iteration` may send nothing to neighbour k: a message went to it before, and
  // the rounds without one since still fit the header's `skipped`.
  [[nodiscard]] bool may_skip(std::size_t k, std::uint64_t iteration) const;
  // Neighbour k neither dropped nor its link closed: a message sent to it goes out (takes_messages).
  [[nodiscard]] bool link_open(std::size_t k) const;
  // gather(): what is wrong with `sends` (a peer not a neighbour, a payload too large, a live peer
  // left out that may not be), or ok.
  [[nodiscard]] status check_sends(std::uint64_t iteration, std::span<const link_message> sends) const;
  // Asynchronous: sends each of `sends` that goes to a peer still taking messages as this node's
  // train message of `iteration` on that link, its header counting the rounds the link skipped.
  [[nodiscard]] status send_train(std::uint64_t iteration, const outgoing_message& msg,
                                  std::span<const link_message> sends, transport_clock::time_point start);
  // Asynchronous flow control: the bytes neighbour k's link may hold, the last two messages' worth.
  [[nodiscard]] std::size_t backlog_limit(std::size_t k) const;
  // Whether a link backlogged past its limit had more of its bytes acknowledged (transport::
  // bytes_acknowledged) since the last look: a slow link still draining, whose wait goes on.
  [[nodiscard]] bool backlog_progressed();
  // finish(): whether neighbour k is done with this node (finished, and holding all it sent us).
  [[nodiscard]] bool done_with(std::size_t k) const;
  // finish(): whether a neighbour not yet done with this node was heard from (transport::
  // bytes_heard) since the last look: alive, still running its rounds.
  [[nodiscard]] bool unfinished_heard();
  // Asynchronous rounds: the timeout a live neighbour not heard from at all by first_deadline
  // after the first round began is (it never came up), else ok.
  [[nodiscard]] status unheard_neighbours() const;
  std::string backlog_message(std::chrono::milliseconds waited) const;
  // A peer that takes part in round `iteration`: neither dropped nor finished before it.
  [[nodiscard]] bool in_round(std::size_t k, std::uint64_t iteration) const;
  // A neighbour failed (lost or misbehaving): drops it or sets pending_failure_ (on_peer_failure).
  void peer_failed(std::size_t k, const std::string& why);
  void take_lost_peers();
  void drop_index(std::size_t k);
  // Removes the entries of peers dropped during the round from out.
  void compact(std::vector<inbound_message>& out);
  bool deliver(std::size_t k, const wire_header& h, std::vector<std::byte>& payload,
               const codec_expectation& codec, std::vector<inbound_message>& out);
  void expire_before(std::uint64_t iteration);
  void reject(reject_reason reason, int peer, const std::string& detail);
  // Copies the transport's refusal counts into stats_ and logs its lines.
  void absorb_refusals();
  void flush_log_limits();
  void note(const std::string& line);
  status fail(status s);
  // errc::refused when every peer the round still waits for refused this node's key (their
  // handshake said so: transport::peers_refusing_this_node), else ok.
  [[nodiscard]] status refused_by_all() const;
  std::string silent_message(message_kind kind, std::uint64_t iteration,
                             std::chrono::milliseconds waited) const;
  std::string stale_message(std::uint64_t need, std::chrono::milliseconds waited) const;

  transport& transport_;
  exchange_options options_;
  wire_expectations expect_;  // codec fields left to deliver(): they come from each round's msg
  exchange_stats stats_;
  status failed_;  // set once a round failed
  bool started_ = false;
  transport_clock::time_point first_gather_{};  // asynchronous: when the first round began
  std::uint64_t base_ = 0;                                       // iteration of the current (or last) round
  std::array<std::optional<std::uint64_t>, kKinds> last_round_;  // per kind
  // Per neighbour k and kind: the last iteration delivered, and up to lookahead + 1 buffered
  // messages (a message is buffered only for iterations base_ .. base_ + lookahead).
  std::vector<std::array<std::optional<std::uint64_t>, kKinds>> delivered_;
  std::vector<std::array<std::vector<slot>, kKinds>> buffered_;
  // The round in progress: per neighbour, its index in `out` (-1: not expected to send).
  std::vector<int> out_index_;
  std::vector<bool> filled_;
  std::size_t missing_ = 0;
  std::vector<int> rejected_this_round_;  // per neighbour
  std::vector<std::uint64_t> rejected_on_link_;  // per neighbour, the whole run
  std::vector<bool> dropped_;                    // per neighbour
  // Per neighbour: the last iteration of a neighbour that finished (its finished message arrived),
  // and whether its link has closed since (it exited: nothing more is sent to it).
  std::vector<std::optional<std::uint64_t>> finished_;
  std::vector<bool> acked_;  // its finished_ack of this node's finished message arrived
  std::vector<std::optional<std::uint64_t>> backlog_acked_;  // bytes_acknowledged at the last look
  std::vector<std::optional<std::uint64_t>> heard_;          // bytes_heard at finish's last look
  std::vector<std::optional<inbound_message>> states_;  // per neighbour: its latest join_state
  std::vector<std::uint64_t> joins_at_;  // per neighbour: its first round (readmit), 0 from the start
  std::vector<bool> closed_;
  bool draining_ = false;                        // inside finish()
  std::size_t delivered_count_ = 0;              // asynchronous: entries of out filled by this gather
  codec_expectation async_codec_{};              // asynchronous: the train codec of our own messages
  // Asynchronous, per neighbour: the iteration of our last train message to it, its size on the
  // wire, and the link's bytes_taken just before it was sent.
  std::vector<std::optional<std::uint64_t>> last_sent_;
  std::vector<std::size_t> last_sent_bytes_;
  std::vector<std::optional<std::uint64_t>> taken_at_send_;
  std::vector<bool> vacated_;                    // per entry of out: its peer was dropped mid-round
  status pending_failure_;                       // a failed peer on_peer_failure did not drop
  std::vector<int> lost_;                        // scratch for take_lost_peers
  std::vector<int> live_send_;                   // scratch: the round's send_to less dropped peers
  std::vector<link_message> all_sends_;          // scratch: gather()'s message to every live peer
  inbound_frames rx_;
  std::array<std::byte, kWireHeaderBytes> header_{};
  log_limiter reject_log_;                   // per reject_reason
  std::vector<std::string> refusal_lines_;  // scratch for absorb_refusals
};

}  // namespace qgossip
