#pragma once
// A transport wrapper that injects faults into what is sent through it, for tests (like leveldb's
// fault-injecting Env): drop, delay, duplicate, or corrupt (flip one bit of the header or the
// payload) chosen sends, by position or at random under a seed, so a run is reproducible.
//
//   faulty_transport t(inner, {{.action = fault::drop, .peer = 0, .nth = 0}});  // loses the first
//                                                                               // message to rank 0
//
// Delayed messages are held here and handed to the inner transport once due, at the next send()
// or during receive(), so they really arrive late (and out of order). A rank that is done sending
// and receiving calls drain() so its last delayed messages still leave; held messages still
// pending when the wrapper is destroyed are lost, as on a link that went down.
// lose(peer) injects a lost link (errc::peer_lost, transport_liveness::take_lost_peers) for the
// exchange's tests of peers that stop; set_queued, set_acknowledged and set_heard set the figures a
// backend would report. So it offers liveness and queue figures over any backend, the in-process
// one too; everything else it does not change is forwarded (gossip/transport_wrapper.hpp).
// Thread safety: as the wrapped transport: one thread at a time. `inner` must outlive the wrapper.
#include <chrono>
#include <map>
#include <mutex>
#include <cstdint>
#include <optional>
#include <random>
#include <string_view>
#include <vector>

#include "gossip/transport_wrapper.hpp"

namespace qgossip {

enum class fault : std::uint8_t { drop, delay, duplicate, corrupt_header, corrupt_payload };
inline constexpr std::size_t kFaultKinds = 5;
std::string_view to_string(fault f);

struct fault_rule {
  fault action = fault::drop;
  int peer = -1;  // only sends to this rank; -1: sends to any rank
  // Which of the sends this rule's peer filter matches it hits: the nth (0-based), or, when nth is
  // unset, each one with `probability`, drawn from the wrapper's seeded generator.
  std::optional<std::uint64_t> nth = std::nullopt;
  double probability = 0.0;
  std::chrono::milliseconds delay{0};  // fault::delay: how long the message is held
  // corrupt_*: which bit of the frame to flip (taken modulo the frame's bit count); unset: drawn
  // from the seed. A corrupt_payload of an empty payload flips a header bit instead.
  std::optional<std::uint64_t> bit = std::nullopt;
  // corrupt_*: send the intact message right after the corrupt one, as a retransmission would.
  bool then_intact = false;
};

class faulty_transport final : public transport_wrapper {
 public:
  // The first rule (in order) that hits a send decides its fate; sends no rule hits pass through.
  faulty_transport(transport& inner, std::vector<fault_rule> rules, std::uint64_t seed = 1);

  status send(int peer, std::span<const std::byte> header, std::span<const std::byte> payload) override;
  // send() to each peer in turn, stopping at the first error (transport::send_all's default): the
  // rules see every copy.
  status send_all(std::span<const int> peers, std::span<const std::byte> header,
                  std::span<const std::byte> payload) override {
    return transport::send_all(peers, header, payload);
  }
  status receive(transport_clock::time_point deadline, inbound_frames& out) override;

  // Liveness and queue figures, over any inner transport: the injected losses and the figures set
  // by hand below, merged with the inner transport's where it has them (gossip/transport_wrapper.hpp:
  // what the inner one lacks answers "nothing"). Admission is the inner transport's, as it is.
  [[nodiscard]] transport_liveness* liveness() override { return this; }
  [[nodiscard]] transport_queues* queues() override { return this; }

  // The inner transport's losses and the injected ones, merged: ascending, each peer once.
  void take_lost_peers(std::vector<int>& out) override;
  // Withdraws an injected loss of peer not yet taken, and tells the inner transport.
  void forget_peer(int peer) override;
  // The value set by set_queued(peer), else the inner transport's.
  [[nodiscard]] std::optional<std::size_t> queued_bytes(int peer) const override;
  // Makes queued_bytes(peer) report `bytes` (nullopt: the inner transport's again): a link
  // whose queue a test fills and drains by hand.
  void set_queued(int peer, std::optional<std::size_t> bytes);
  // The value set by set_acknowledged(peer), else the inner transport's.
  [[nodiscard]] std::optional<std::uint64_t> bytes_acknowledged(int peer) const override;
  // Makes bytes_acknowledged(peer) report `bytes` (nullopt: the inner transport's again): a link
  // a test drains by hand, from another thread while a round waits (the one call that may).
  void set_acknowledged(int peer, std::optional<std::uint64_t> bytes);
  // The same pair for bytes_heard: a peer a test makes look alive, from another thread.
  [[nodiscard]] std::optional<std::uint64_t> bytes_heard(int peer) const override;
  void set_heard(int peer, std::optional<std::uint64_t> bytes);
  // The value set by set_alive(peer), else the inner transport's; a peer whose loss was injected
  // and not yet taken is not alive.
  [[nodiscard]] bool alive(int peer) const override;
  // Makes alive(peer) report `yes` (nullopt: the inner transport's again), from another thread: a
  // peer a test makes look alive while it sends nothing (a program that pauses).
  void set_alive(int peer, std::optional<bool> yes);

  // Injects the loss of the link to peer, as if the transport had found it dead: the next
  // receive() returns errc::peer_lost (before any message, until take_lost_peers takes it), and
  // take_lost_peers names peer. Nothing else changes: sends to peer and messages from it still
  // pass (a transport reports a loss after the peer's last messages; a test drops them with rules).
  void lose(int peer);

  // Waits until every held message is due and hands it on.
  status drain();

  // How many sends each fault hit so far.
  std::uint64_t injected(fault f) const { return injected_[static_cast<std::size_t>(f)]; }
  // Messages held for a delay and not yet handed on.
  std::size_t held() const { return held_.size(); }

 private:
  struct held_message {
    transport_clock::time_point due;
    int peer;
    std::vector<std::byte> header, payload;
  };
  status release_due();
  const fault_rule* pick(int peer);

  std::vector<fault_rule> rules_;
  std::vector<std::uint64_t> matched_;  // per rule: sends its peer filter matched so far
  std::mt19937_64 rng_;
  std::uint64_t injected_[kFaultKinds] = {};
  std::vector<held_message> held_;
  std::vector<std::byte> scratch_;  // the corrupted frame
  std::vector<int> lost_;           // injected losses not taken yet (ascending, unique)
  std::map<int, std::size_t> queued_;  // set_queued's values, by peer
  mutable std::mutex acknowledged_mutex_;
  std::map<int, std::uint64_t> acknowledged_;  // set_acknowledged's values, by peer
  std::map<int, std::uint64_t> heard_;         // set_heard's values, by peer (the same mutex)
  std::map<int, bool> alive_;                  // set_alive's values, by peer (the same mutex)
};

}  // namespace qgossip
