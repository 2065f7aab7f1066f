#pragma once
// The inbound socket's gatekeeper (docs/security.md), a part of zmq_transport:
//  - a ZAP handler (ZeroMQ's authentication protocol, RFC 27): a REP socket bound at
//    inproc://zeromq.zap.01 in the transport's context, which libzmq asks about every CURVE client
//    after the client proved that it holds the secret key of the public key it presents. It admits
//    the keys of the allowed peers only, answering with the peer's rank as the ZAP user id (which
//    every message of that connection then carries as its "User-Id" property), and refuses
//    everything else (status 400);
//  - a monitor of the inbound socket (zmq_socket_monitor), which sees connections that never get as
//    far as ZAP: a failed handshake (another security mechanism, a client without this node's public
//    key, a protocol error) or one closed before a ZeroMQ greeting (raw TCP garbage).
// Every refusal is counted and described in a refusal_log, read by the transport's owner.
//
// One thread serves both sockets; it starts in the constructor and stops in the destructor. The
// sockets stay bound until the destructor: were the thread to stop early, ZAP requests would go
// unanswered and handshakes time out (fail closed), never be admitted unchecked.
#include <zmq.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gossip/log_limiter.hpp"
#include "gossip/transport.hpp"

namespace qgossip {

// Counts refusals and keeps a rate-limited list of lines about them. Thread-safe.
class refusal_log {
 public:
  enum class kind : std::size_t { auth, handshake, identity };

  // Counts one refusal; when the limiter lets its line through, keeps describe()'s text.
  template <class Describe>
  void refuse(kind k, Describe&& describe) {
    counts_[static_cast<std::size_t>(k)].fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(mu_);
    flush_locked();
    if (limiter_.allow(static_cast<std::size_t>(k))) {
      lines_.push_back(describe());
      pending_.store(true, std::memory_order_release);
    }
  }
  [[nodiscard]] transport_refusals counts() const;
  // Appends the kept lines (and summaries of the suppressed ones whose window passed) to out.
  void take(std::vector<std::string>& out);

 private:
  void flush_locked();

  std::atomic<std::uint64_t> counts_[3]{};
  std::atomic<bool> pending_{false};
  std::mutex mu_;
  log_limiter limiter_;
  std::vector<std::string> lines_;
};

class connection_guard {
 public:
  // Call before `router` binds. allowed: Z85 public key -> rank; nullopt: no ZAP handler (security
  // none: only the monitor runs). Throws config_error when the ZAP endpoint cannot be bound.
  connection_guard(zmq::context_t& context, zmq::socket_t& router, std::optional<std::map<std::string, int>> allowed,
                   refusal_log& log);
  ~connection_guard();
  connection_guard(const connection_guard&) = delete;
  connection_guard& operator=(const connection_guard&) = delete;

  // Appends the descriptors of the inbound connections open now, as the monitor last saw them (one
  // may have closed since; the caller checks what it reads). Thread-safe.
  void open_connections(std::vector<int>& out) const;

 private:
  void serve();
  void answer_zap();
  void read_monitor();

  std::optional<std::map<std::string, int>> allowed_;
  refusal_log& log_;
  bool curve_;
  zmq::socket_t zap_;      // REP at inproc://zeromq.zap.01 (curve only)
  zmq::socket_t monitor_;  // PAIR connected to the router's monitor
  zmq::socket_t stop_rx_, stop_tx_;
  // Per accepted connection still open (by file descriptor): when it was accepted (a sequence
  // number) and whether a handshake result was seen for it.
  struct connection {
    std::uint64_t accepted = 0;
    bool result = false;
  };
  mutable std::mutex open_mu_;  // open_ is read by open_connections() on the transport's thread
  std::map<std::uint32_t, connection> open_;
  std::uint64_t accepted_ = 0;
  bool failed_just_now_ = false;  // a handshake failure, whose disconnect comes next
  std::thread thread_;
};

}  // namespace qgossip
