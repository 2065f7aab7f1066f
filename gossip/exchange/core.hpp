#pragma once
// The exchange's receiving core (gossip/exchange.hpp): it receives, parses and checks every message
// against the run (docs/wire.md), counts, rejects, keeps each neighbour's link state, and owns the
// one wait loop of the exchange. What a message means is a protocol's: each protocol (the
// synchronous round, the asynchronous gather, leaving, rejoining; gossip/exchange/*.hpp) registers
// with the core for the message kinds it handles, and the core hands each valid message of those
// kinds to it. Notices the core hands to the node itself (exchange_events::notice).
//
// A new message kind: add it to gossip/wire.hpp (and docs/wire.md), then register the protocol that
// handles it (handle_kind) where gossip/exchange.cpp builds the protocols.
// Not thread-safe: one thread at a time, as the exchange.
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/function_ref.hpp"
#include "core/status.hpp"
#include "gossip/exchange/events.hpp"
#include "gossip/exchange/round_clock.hpp"
#include "gossip/exchange/stats.hpp"
#include "gossip/exchange/types.hpp"
#include "gossip/log_limiter.hpp"
#include "gossip/transport.hpp"
#include "gossip/wire.hpp"

namespace qgossip {

// A protocol of the exchange: handed the valid messages of the kinds it registered for.
class exchange_protocol {
 public:
  virtual ~exchange_protocol() = default;
  // A message from neighbour k that passed parse_header (not yet its codec): the protocol may take
  // the payload (move it out: the core's comes back empty).
  virtual void on_message(std::size_t k, const wire_header& h, received_bytes& payload) = 0;
  // Neighbour k was dropped (no round waits for it any more), finished its run (its last round:
  // link(k).finished), or was taken back from round `iteration`.
  virtual void on_drop(std::size_t k) {}
  virtual void on_finished(std::size_t k) {}
  virtual void on_readmit(std::size_t k, std::uint64_t iteration) {}
};

// What the core keeps per neighbour, read by every protocol.
struct neighbour_link {
  bool dropped = false;
  std::optional<std::uint64_t> finished;  // its last iteration, once its finished message arrived
  bool closed = false;                    // its link closed after it finished: it exited
  std::uint64_t joins_at = 0;             // its first round (readmit); 0: from the start
  // The last iteration delivered, per kind (train, probe).
  std::array<std::optional<std::uint64_t>, 2> delivered;
  int rejected_this_round = 0;
  std::uint64_t rejected_on_link = 0;  // the whole run
};

// How long a wait may last and how often it looks around (exchange_core::wait). The deadline may
// be moved by the wait's own callbacks.
struct wait_plan {
  transport_clock::time_point deadline;
  std::chrono::milliseconds poll{0};  // the longest one receive may wait; 0: until the deadline
  // errc::cancelled's message: "stopped while ...", and " <round>" after it when round > 0 (built
  // only when the wait is stopped: a round's wait allocates nothing).
  std::string_view stopping;
  std::uint64_t round = 0;
};

class exchange_core {
 public:
  // `t` and `events` must outlive the core. Throws invariant_error for options that break their
  // REQUIRES (gossip/exchange.hpp). Looks up t's interfaces here, once (gossip/transport.hpp).
  exchange_core(transport& t, exchange_options options, exchange_events& events, link_control& links);

  // Hands every valid message of `kind` to p; `even_dropped`: also from a dropped neighbour (a join
  // message is how one comes back). Unregistered kinds are dropped, counted as expired.
  void handle_kind(message_kind kind, exchange_protocol& p, bool even_dropped = false);

  // The one wait loop. Until `before` sets done (or fails): receives one message at a time until
  // the end of a slice (the deadline, kStopCheckInterval or plan.poll, whichever comes first),
  // handling it, then calls `after` (got: something arrived or a link was lost; slice_end: when the
  // slice ended), which may fail the wait or move plan.deadline (a wait times out in `after`, as it
  // decides). A stop request ends it with errc::cancelled (plan.stopping), a failed peer the node did
  // not drop with its errc::peer_lost. Every error is returned as it is; the caller decides whether
  // it spends the exchange (fail).
  status wait(wait_plan& plan, function_ref<status(bool& done)> before,
              function_ref<status(bool got, transport_clock::time_point slice_end)> after);
  // Handles what has already arrived, without waiting, at most `most` messages (the rest stays
  // queued for the next call): a receive error, or a failed peer's pending failure, or ok.
  status drain(std::size_t most = std::numeric_limits<std::size_t>::max());

  // Neighbours, by index k (ascending rank).
  [[nodiscard]] std::size_t size() const { return links_.size(); }
  [[nodiscard]] int peer(std::size_t k) const { return options_.neighbours[k]; }
  [[nodiscard]] std::optional<std::size_t> index_of(int peer) const;
  [[nodiscard]] neighbour_link& link(std::size_t k) { return links_[k]; }
  [[nodiscard]] const neighbour_link& link(std::size_t k) const { return links_[k]; }
  // Neither dropped nor its link closed: a message sent to it goes out.
  [[nodiscard]] bool link_open(std::size_t k) const { return !links_[k].dropped && !links_[k].closed; }
  // Takes part in round `iteration`: neither dropped nor finished before it, and joined by then.
  [[nodiscard]] bool in_round(std::size_t k, std::uint64_t iteration) const;

  // Where this node's rounds are (gossip/exchange/round_clock.hpp): moved by the protocols that run
  // rounds and by a restart, read by everything else.
  [[nodiscard]] round_clock& clock() { return clock_; }
  [[nodiscard]] const round_clock& clock() const { return clock_; }
  static std::size_t kind_index(message_kind k) { return static_cast<std::size_t>(k) - 1; }
  // errc::invalid when a round failed before: the exchange is spent.
  [[nodiscard]] status usable() const;

  // Failures. A rejected message (counted, logged rate-limited; max_rejected on a link is its
  // sender's failure); a failed neighbour (dropped when the node says so, else pending); dropping.
  void reject(reject_reason reason, int peer, const std::string& detail);
  void peer_failed(std::size_t k, const std::string& why);
  // A train message the node refused (why: its reason): rejected, reason payload, and its sender's failure.
  void refused_train(std::size_t k, const wire_header& h, const status& why);
  void drop(std::size_t k);
  void mark_finished(std::size_t k, std::uint64_t last_iteration);
  void readmit(std::size_t k, std::uint64_t iteration);
  [[nodiscard]] const status& pending() const { return pending_failure_; }
  void set_pending(const status& s);
  // Ends the exchange's usefulness with s (later rounds: errc::invalid), unless s is errc::rejoin.
  status fail(status s);
  [[nodiscard]] const status& failed() const { return failed_; }

  // The codec check and the node's train_message of a message to deliver: false when it was
  // rejected (counted; its sender's failure when the node refused it, or when a train message
  // counts other than this node's values: its model differs, and it will never send one that fits).
  [[nodiscard]] bool accept(std::size_t k, const wire_header& h, received_bytes& payload,
                            const codec_expectation& codec);
  // The node's check of a train message of a later round as it arrives (exchange_events::
  // early_train_message), when its codec fields are `codec`'s (else accept judges them in its
  // round): false when the node refused it, which is then rejected and its sender's failure as in
  // accept.
  [[nodiscard]] bool check_early(std::size_t k, const wire_header& h, std::span<const std::byte> payload,
                                 const codec_expectation& codec);

  // Sending: the header of this node's message; a message outside the rounds (notices, join
  // messages, states, finished), counted in send_time, messages_sent, bytes_sent, notice_bytes_sent.
  [[nodiscard]] wire_header header_for(message_kind kind, std::uint64_t iteration,
                                       const outgoing_message& msg) const;
  status send_outside_rounds(std::span<const int> peers, std::span<const std::byte> header,
                             std::span<const std::byte> payload);

  void note(const std::string& line);
  void flush_log_limits();
  // exchange_options::live_wait, for both protocols: the transport's liveness when a round begun at
  // `start` may still wait on past its deadline for live peers (live_wait on, its bound not passed),
  // else nullptr. wait_on_live: the round waits on for `peers`, told to the node (exchange_events::
  // waiting), plan.deadline moved one round_deadline on (at most to the bound).
  [[nodiscard]] const transport_liveness* live_wait_open(transport_clock::time_point start) const;
  void wait_on_live(std::span<const int> peers, transport_clock::time_point start, wait_plan& plan);
  // "train message for iteration 7", for messages and notes.
  static std::string describe(message_kind kind, std::uint64_t iteration);

  // The transport, and the interfaces it has (nullptr: it has none; gossip/transport.hpp). Without
  // liveness no loss is taken and dropping or readmitting a peer tells the transport nothing;
  // without admission nothing was refused. Queue figures are async_gather's (it refuses a transport
  // without them).
  transport& net() { return transport_; }
  [[nodiscard]] const transport& net() const { return transport_; }
  [[nodiscard]] transport_liveness* liveness() { return liveness_; }
  [[nodiscard]] const transport_liveness* liveness() const { return liveness_; }
  [[nodiscard]] const transport_queues* queues() const { return queues_; }
  [[nodiscard]] transport_admission* admission() { return admission_; }
  [[nodiscard]] const transport_admission* admission() const { return admission_; }
  [[nodiscard]] const exchange_options& options() const { return options_; }
  exchange_events& events() { return events_; }
  // The exchange, as what a callback may do to the links (exchange_events' argument).
  link_control& links() { return control_; }
  exchange_stats& stats() { return stats_; }
  [[nodiscard]] const exchange_stats& stats() const { return stats_; }

 private:
  static constexpr std::size_t kKinds = 8;  // message_kind values 1..7
  status receive_one(transport_clock::time_point until, bool& got);
  void handle();
  void handle_notice(const wire_header& h);
  void take_lost_peers();
  void absorb_refusals();

  transport& transport_;
  transport_liveness* const liveness_;
  transport_queues* const queues_;
  transport_admission* const admission_;
  exchange_options options_;
  exchange_events& events_;
  link_control& control_;  // the exchange, handed to the callbacks
  wire_expectations expect_;  // codec fields left to the protocols: they come from each round's msg
  round_clock clock_;
  exchange_stats stats_;
  status failed_;           // set once a round failed
  status pending_failure_;  // a failed peer the node did not drop
  std::vector<neighbour_link> links_;
  std::array<exchange_protocol*, kKinds> handlers_{};
  std::array<bool, kKinds> even_dropped_{};
  std::vector<exchange_protocol*> protocols_;  // each once, for on_drop and on_readmit
  inbound_frames rx_;
  std::vector<int> lost_;                   // scratch for take_lost_peers
  log_limiter reject_log_;                  // per reject_reason
  std::vector<std::string> refusal_lines_;  // scratch for absorb_refusals
};

}  // namespace qgossip
