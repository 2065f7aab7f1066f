#include "gossip/zmq/connection_guard.hpp"

#include <pthread.h>
#include <signal.h>
#include <zmq.h>

#include <algorithm>
#include <cerrno>
#include <array>
#include <cstdio>
#include <cstring>

#include "core/errors.hpp"

namespace qgossip {
namespace {

constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";  // fixed by ZeroMQ (RFC 27)
constexpr const char* kMonitorEndpoint = "inproc://qgossip.guard.monitor";
constexpr const char* kStopEndpoint = "inproc://qgossip.guard.stop";

std::string_view kind_name(refusal_log::kind k) {
  switch (k) {
    case refusal_log::kind::auth:
      return "auth";
    case refusal_log::kind::handshake:
      return "handshake";
    case refusal_log::kind::identity:
      return "identity";
  }
  return "?";
}

std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

std::string describe_protocol_error(std::uint32_t code, bool curve) {
  switch (code) {
    case ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH:
      return curve ? "the client does not use CURVE (a node with network.security: none, or not qgossip)"
                   : "the client uses a security mechanism (a node with network.security: curve?)";
    case ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC:
      return "the CURVE handshake failed cryptographically: the client does not have this node's public key "
             "(a stale node-<rank>.pub on its host?) or is not a qgossip node";
    default:
      return "a ZeroMQ protocol error during the handshake (" + hex(code) + ")";
  }
}

}  // namespace

transport_refusals refusal_log::counts() const {
  transport_refusals r;
  r.auth = counts_[static_cast<std::size_t>(kind::auth)].load(std::memory_order_relaxed);
  r.handshake = counts_[static_cast<std::size_t>(kind::handshake)].load(std::memory_order_relaxed);
  r.identity = counts_[static_cast<std::size_t>(kind::identity)].load(std::memory_order_relaxed);
  return r;
}

void refusal_log::flush_locked() {
  limiter_.flush([this](std::size_t k, std::uint64_t suppressed) {
    const auto what = static_cast<kind>(k);
    lines_.push_back("... and " + std::to_string(suppressed) + " more " +
                     (what == kind::identity ? "messages" : "connections") + " refused (" +
                     std::string(kind_name(what)) + ") within " +
                     std::to_string(std::chrono::duration_cast<std::chrono::seconds>(limiter_.window()).count()) +
                     " s, not logged one by one");
  });
}

void refusal_log::take(std::vector<std::string>& out) {
  if (!pending_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(mu_);
  flush_locked();
  for (auto& line : lines_) out.push_back(std::move(line));
  lines_.clear();
  // Lines held back still need their summary once their window has passed.
  pending_.store(limiter_.holding(), std::memory_order_release);
}

connection_guard::connection_guard(zmq::context_t& context, zmq::socket_t& router,
                                   std::optional<std::map<std::string, int>> allowed, refusal_log& log)
    : allowed_(std::move(allowed)),
      log_(log),
      curve_(allowed_.has_value()),
      monitor_(context, zmq::socket_type::pair),
      stop_rx_(context, zmq::socket_type::pair),
      stop_tx_(context, zmq::socket_type::pair) {
  for (zmq::socket_t* s : {&monitor_, &stop_rx_, &stop_tx_}) s->set(zmq::sockopt::linger, 0);
  try {
    if (curve_) {
      // Bound before the router binds: no client can connect before the handler is there (with no
      // handler bound, libzmq would admit every CURVE client).
      zap_ = zmq::socket_t(context, zmq::socket_type::rep);
      zap_.set(zmq::sockopt::linger, 0);
      zap_.bind(kZapEndpoint);
    }
    constexpr int kEvents = ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED |
                            ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                            ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
    if (zmq_socket_monitor(router.handle(), kMonitorEndpoint, kEvents) != 0) throw zmq::error_t();
    monitor_.connect(kMonitorEndpoint);
    stop_rx_.bind(kStopEndpoint);
    stop_tx_.connect(kStopEndpoint);
  } catch (const zmq::error_t& e) {
    throw config_error(std::string("cannot start the transport's connection guard (ZAP handler, monitor): ") +
                       e.what());
  }
  // The thread takes no signals: they stay with the node's own threads (its SIGINT/SIGTERM handling).
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  try {
    thread_ = std::thread([this] { serve(); });
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    throw;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

connection_guard::~connection_guard() {
  try {
    (void)stop_tx_.send(zmq::str_buffer("stop"), zmq::send_flags::dontwait);
  } catch (const zmq::error_t&) {
  }
  if (thread_.joinable()) thread_.join();
}

void connection_guard::serve() {
  std::vector<zmq::pollitem_t> items{{stop_rx_.handle(), 0, ZMQ_POLLIN, 0}, {monitor_.handle(), 0, ZMQ_POLLIN, 0}};
  if (curve_) items.push_back({zap_.handle(), 0, ZMQ_POLLIN, 0});
  for (;;) {
    try {
      (void)zmq::poll(items.data(), items.size(), std::chrono::milliseconds(-1));
      if (items[0].revents & ZMQ_POLLIN) return;
      if (items[1].revents & ZMQ_POLLIN) read_monitor();
      if (items.size() > 2 && (items[2].revents & ZMQ_POLLIN)) answer_zap();
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;
      // The context is terminating. The ZAP socket stays bound until the destructor, so no
      // connection is admitted unchecked meanwhile: its handshake times out instead.
      return;
    }
  }
}

void connection_guard::answer_zap() {
  // Request (RFC 27): version, request id, domain, address, identity, mechanism, credentials...
  std::vector<zmq::message_t> request;
  do {
    request.emplace_back();
    (void)zap_.recv(request.back(), zmq::recv_flags::none);
  } while (request.back().more());
  auto frame = [&](std::size_t i) { return i < request.size() ? request[i].to_string() : std::string(); };
  const std::string address = frame(3), mechanism = frame(5);
  std::string key;
  if (mechanism == "CURVE" && request.size() >= 7 && request[6].size() == 32) {
    char z85[41] = {};
    if (zmq_z85_encode(z85, static_cast<const std::uint8_t*>(request[6].data()), 32)) key = z85;
  }
  std::string status = "400", text = "not an allowed key", user;
  if (frame(0) != "1.0" || request.size() < 6) {
    status = "500";
    text = "malformed ZAP request";
  } else if (auto it = key.empty() ? allowed_->end() : allowed_->find(key); it != allowed_->end()) {
    status = "200";
    text = "OK";
    user = std::to_string(it->second);
  }
  if (status != "200") {
    log_.refuse(refusal_log::kind::auth, [&] {
      std::string ranks;
      std::vector<int> sorted;
      for (const auto& [k, r] : *allowed_) sorted.push_back(r);
      std::sort(sorted.begin(), sorted.end());
      for (int r : sorted) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
      const std::string who = "refused a connection from " + (address.empty() ? std::string("an unknown address") : address);
      if (key.empty()) return who + ": mechanism " + mechanism + " without a CURVE key (auth)";
      return who + ": its CURVE public key " + key + " is not one of this node's peers' (ranks " + ranks + ") (auth)";
    });
  }
  // Reply: version, request id, status code, status text, user id, metadata.
  (void)zap_.send(zmq::str_buffer("1.0"), zmq::send_flags::sndmore);
  zmq::message_t request_id;
  if (request.size() > 1) request_id.copy(request[1]);
  (void)zap_.send(request_id, zmq::send_flags::sndmore);
  (void)zap_.send(zmq::buffer(status), zmq::send_flags::sndmore);
  (void)zap_.send(zmq::buffer(text), zmq::send_flags::sndmore);
  (void)zap_.send(zmq::buffer(user), zmq::send_flags::sndmore);
  (void)zap_.send(zmq::message_t(), zmq::send_flags::none);
}

void connection_guard::open_connections(std::vector<int>& out) const {
  std::lock_guard<std::mutex> lock(open_mu_);
  for (const auto& [fd, c] : open_) out.push_back(static_cast<int>(fd));
}

void connection_guard::read_monitor() {
  // Two frames: 6 bytes (uint16 event, uint32 value), then the socket's endpoint.
  zmq::message_t head, endpoint;
  (void)monitor_.recv(head, zmq::recv_flags::none);
  if (head.more()) (void)monitor_.recv(endpoint, zmq::recv_flags::none);
  while (endpoint.more()) (void)monitor_.recv(endpoint, zmq::recv_flags::none);
  if (head.size() < 6) return;
  std::uint16_t event = 0;
  std::uint32_t value = 0;
  std::memcpy(&event, head.data(), 2);
  std::memcpy(&value, static_cast<const char*>(head.data()) + 2, 4);
  // The handshake failure of a connection and its disconnect come one after the other (the
  // socket's one I/O thread emits both), so the disconnect right after a failure is that
  // connection's, already counted.
  const bool after_failure = std::exchange(failed_just_now_, false);
  std::lock_guard<std::mutex> lock(open_mu_);
  switch (event) {
    case ZMQ_EVENT_ACCEPTED:
      open_[value] = connection{++accepted_, false};
      break;
    case ZMQ_EVENT_HANDSHAKE_SUCCEEDED: {
      // The event names no connection: credit the newest one still handshaking (a genuine peer
      // completes its handshake within a few round trips of being accepted).
      auto newest = open_.end();
      for (auto it = open_.begin(); it != open_.end(); ++it)
        if (!it->second.result && (newest == open_.end() || it->second.accepted > newest->second.accepted)) newest = it;
      if (newest != open_.end()) newest->second.result = true;
      break;
    }
    case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
      failed_just_now_ = true;
      log_.refuse(refusal_log::kind::handshake, [&] {
        return "refused a connection: " + describe_protocol_error(value, curve_) + " (handshake)";
      });
      break;
    case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
      failed_just_now_ = true;
      log_.refuse(refusal_log::kind::handshake, [&] {
        return std::string("refused a connection that ended during the handshake (") + std::strerror(static_cast<int>(value)) +
               ") (handshake)";
      });
      break;
    case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
      failed_just_now_ = true;  // counted and described by answer_zap()
      break;
    case ZMQ_EVENT_DISCONNECTED: {
      auto it = open_.find(value);
      const bool no_result = it != open_.end() && !it->second.result;
      if (it != open_.end()) open_.erase(it);
      if (no_result && !after_failure)
        log_.refuse(refusal_log::kind::handshake, [&] {
          return std::string("refused a connection that closed before completing a ZeroMQ handshake (not ZeroMQ") +
                 (curve_ ? ", or the unauthenticated ZMTP 1.0, which a CURVE node refuses" : "") + ") (handshake)";
        });
      break;
    }
    default:
      break;
  }
}

}  // namespace qgossip
