#pragma once
// A transport that forwards every call to another transport, its inner one (as leveldb's EnvWrapper
// "forwards all calls to another Env"). A decorator derives from it and overrides only what it
// changes; gossip/faulty_transport.hpp and gossip/link_emulation.hpp are two.
//
//   class slow_send final : public transport_wrapper {   // delays every send, changes nothing else
//    public:
//     using transport_wrapper::transport_wrapper;
//     status send(int peer, std::span<const std::byte> h, std::span<const std::byte> p) override {
//       std::this_thread::sleep_for(1ms);
//       return transport_wrapper::send(peer, h, p);
//     }
//   };
//
// The wrapper is also each of the three interfaces of gossip/transport.hpp, forwarding them, and
// offers each exactly when the inner transport does (liveness(), queues() and admission() return
// this wrapper or nullptr), so a decorator changes a figure by overriding that method alone. A
// decorator may offer an interface the inner transport lacks (faulty_transport offers liveness and
// queue figures over any backend, for its injected losses and figures set by hand): it overrides the
// accessor, and the methods it leaves to the wrapper then answer as a backend that has nothing to
// report: no lost peers, an empty cause, no refusals, nullopt for every figure; forget_peer and
// watch_peer do nothing.
//
// A decorator calls the inner transport through the wrapper's own methods (transport_wrapper::send,
// ...). One that overrides send() overrides send_all() too when each copy must go through its
// send(): the wrapper hands send_all() to the inner transport whole.
// Thread safety: as the inner transport: one thread at a time. `inner` must outlive the wrapper.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gossip/transport.hpp"

namespace qgossip {

class transport_wrapper : public transport,
                          public transport_liveness,
                          public transport_queues,
                          public transport_admission {
 public:
  explicit transport_wrapper(transport& inner)
      : inner_(inner),
        inner_liveness_(inner.liveness()),
        inner_queues_(inner.queues()),
        inner_admission_(inner.admission()) {}
  // Not copied: a copy would be a second decorator of the same link. (Deleted rather than left out,
  // so that wrapping a wrapper, transport_wrapper w(other), is an error instead of a copy of other:
  // write transport_wrapper w(static_cast<transport&>(other)).)
  transport_wrapper(const transport_wrapper&) = delete;
  transport_wrapper& operator=(const transport_wrapper&) = delete;

  // transport
  status send(int peer, std::span<const std::byte> header, std::span<const std::byte> payload) override {
    return inner_.send(peer, header, payload);
  }
  status send_all(std::span<const int> peers, std::span<const std::byte> header,
                  std::span<const std::byte> payload) override {
    return inner_.send_all(peers, header, payload);
  }
  status receive(transport_clock::time_point deadline, inbound_frames& out) override {
    return inner_.receive(deadline, out);
  }
  [[nodiscard]] std::string peer_address(int peer) const override { return inner_.peer_address(peer); }
  [[nodiscard]] transport_liveness* liveness() override { return inner_liveness_ ? this : nullptr; }
  [[nodiscard]] transport_queues* queues() override { return inner_queues_ ? this : nullptr; }
  [[nodiscard]] transport_admission* admission() override { return inner_admission_ ? this : nullptr; }

  // transport_liveness
  void take_lost_peers(std::vector<int>& out) override {
    if (inner_liveness_) inner_liveness_->take_lost_peers(out);
  }
  [[nodiscard]] std::string loss_cause(int peer) const override {
    return inner_liveness_ ? inner_liveness_->loss_cause(peer) : std::string();
  }
  void forget_peer(int peer) override {
    if (inner_liveness_) inner_liveness_->forget_peer(peer);
  }
  void watch_peer(int peer) override {
    if (inner_liveness_) inner_liveness_->watch_peer(peer);
  }
  [[nodiscard]] std::optional<std::uint64_t> bytes_heard(int peer) const override {
    return inner_liveness_ ? inner_liveness_->bytes_heard(peer) : std::nullopt;
  }
  [[nodiscard]] bool alive(int peer) const override { return inner_liveness_ && inner_liveness_->alive(peer); }

  // transport_queues
  [[nodiscard]] std::optional<std::size_t> queued_bytes(int peer) const override {
    return inner_queues_ ? inner_queues_->queued_bytes(peer) : std::nullopt;
  }
  [[nodiscard]] std::optional<std::uint64_t> bytes_taken(int peer) const override {
    return inner_queues_ ? inner_queues_->bytes_taken(peer) : std::nullopt;
  }
  [[nodiscard]] std::optional<std::uint64_t> bytes_acknowledged(int peer) const override {
    return inner_queues_ ? inner_queues_->bytes_acknowledged(peer) : std::nullopt;
  }
  [[nodiscard]] std::uint64_t held_bytes() const override { return inner_queues_ ? inner_queues_->held_bytes() : 0; }
  [[nodiscard]] bool wait_held_at_most(std::uint64_t bytes, transport_clock::time_point deadline) override {
    return !inner_queues_ || inner_queues_->wait_held_at_most(bytes, deadline);
  }

  // transport_admission
  [[nodiscard]] transport_refusals refusals() const override {
    return inner_admission_ ? inner_admission_->refusals() : transport_refusals{};
  }
  void take_refusal_log(std::vector<std::string>& lines) override {
    if (inner_admission_) inner_admission_->take_refusal_log(lines);
  }
  [[nodiscard]] std::vector<int> peers_refusing_this_node() const override {
    return inner_admission_ ? inner_admission_->peers_refusing_this_node() : std::vector<int>();
  }

 private:
  transport& inner_;
  // The inner transport's interfaces, looked up once (gossip/transport.hpp: they never change).
  transport_liveness* const inner_liveness_;
  transport_queues* const inner_queues_;
  transport_admission* const inner_admission_;
};

}  // namespace qgossip
