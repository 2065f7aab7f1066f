#include "gossip/zmq/transport.hpp"

#include <zmq.hpp>

#include <arpa/inet.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "core/errors.hpp"
#include "gossip/wire.hpp"
#include "gossip/zmq/connection_guard.hpp"
#include "gossip/zmq/curve_keys.hpp"
#include "gossip/zmq/link_liveness.hpp"
#include "gossip/zmq/path_progress.hpp"
#include "gossip/zmq/send_buffers.hpp"
#include "gossip/zmq/tcp_progress.hpp"

namespace qgossip {
namespace {

// "tcp://host:port" or "ipc://path"; for bind, host may be * or 0.0.0.0 and port * (or 0).
// ZeroMQ accepts more (interface names, epgm://, ...); the topology only needs these, and a clear
// error at start-up beats a surprise later.
void check_endpoint(const std::string& ep, bool for_bind) {
  auto bad = [&](const std::string& why) { return config_error("endpoint \"" + ep + "\": " + why); };
  std::string_view s(ep);
  if (s.starts_with("ipc://")) {
    if (s.size() == 6) throw bad("expected ipc://path, the path is empty");
    return;
  }
  if (!s.starts_with("tcp://")) throw bad("expected tcp://host:port or ipc://path");
  s.remove_prefix(6);
  const auto colon = s.rfind(':');
  if (colon == std::string_view::npos || colon == 0) throw bad("expected tcp://host:port");
  const std::string_view host = s.substr(0, colon), port = s.substr(colon + 1);
  if (host == "*" && !for_bind) throw bad("cannot connect to host * (only a bind address may be *)");
  if (port == "*") {
    if (!for_bind) throw bad("cannot connect to port * (only a bind address may pick its port)");
    return;
  }
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value > 65535 || (value == 0 && !for_bind))
    throw bad("port \"" + std::string(port) + "\" is not a number in 1..65535");
}

std::string bind_hint(int err) {
  switch (err) {
    case EADDRINUSE:
      return " (is another qgossip node or program using this port?)";
    case EADDRNOTAVAIL:
      return " (is the host one of this machine's addresses?)";
    default:
      return "";
  }
}

// Routing ids are the rank in decimal: never empty and never starting with a zero byte, which
// ZeroMQ reserves.
int parse_rank(const zmq::message_t& id) {
  int rank = -1;
  const char* b = static_cast<const char*>(id.data());
  auto [end, ec] = std::from_chars(b, b + id.size(), rank);
  if (ec != std::errc() || end != b + id.size() || rank < 0) return -1;
  return rank;
}

// The rank in a ZAP user id ("User-Id" message property): decimal text, as the guard writes it.
int parse_rank(const char* text) {
  if (!text) return -1;
  int rank = -1;
  const char* end = text + std::strlen(text);
  auto [p, ec] = std::from_chars(text, end, rank);
  if (ec != std::errc() || p != end || rank < 0) return -1;
  return rank;
}

// Checks the CURVE keys (config_error naming what is wrong) and returns public key -> rank.
std::map<std::string, int> check_curve_keys(int rank, const zmq_curve_keys& k) {
  if (!curve_available())
    throw config_error("network.security curve: this libzmq has no CURVE (it was built without libsodium); "
                       "install one with CURVE, or set network.security: none");
  if (!is_curve_key(k.secret_key) || !is_curve_key(k.public_key))
    throw config_error("rank " + std::to_string(rank) + "'s CURVE keypair is malformed (expected 40 Z85 characters each)");
  if (curve_public_key(k.secret_key) != k.public_key)
    throw config_error("rank " + std::to_string(rank) + "'s CURVE public key does not belong to its secret key");
  std::map<std::string, int> allowed;
  for (const auto& [peer, key] : k.peers) {
    if (!is_curve_key(key))
      throw config_error("rank " + std::to_string(peer) + "'s CURVE public key is malformed (expected 40 Z85 characters)");
    if (key == k.public_key || !allowed.emplace(key, peer).second)
      throw config_error("rank " + std::to_string(peer) + " has the same CURVE public key as rank " +
                         std::to_string(key == k.public_key ? rank : allowed.at(key)) +
                         ": every rank needs a keypair of its own");
  }
  return allowed;
}

int ms(std::chrono::milliseconds d) { return static_cast<int>(std::min<std::int64_t>(d.count(), INT32_MAX)); }

// Our PING waits behind the message being written, and the neighbour answers only once it has read
// (and, under CURVE, decrypted) that message, and what its one I/O thread reads from its other links
// meanwhile: the timeout is heartbeat_timeout plus the largest message's time at
// kSlowestMessageBytesPerS. Over ipc 40 MB messages of a 100 M-parameter model closed every link at
// 1 s on a 2-core host; over tcp a joiner taking two neighbours' 64 MiB state chunks at once shut its
// window to one of them past 1 s, and that neighbour dropped it.
std::chrono::milliseconds heartbeat_timeout_for(const zmq_options& o) {
  return o.heartbeat_timeout + slowest_message_time(o.max_payload_bytes);
}

// The port of a "tcp://host:port" endpoint (check_endpoint() has vetted it); -1 otherwise.
int endpoint_port(const std::string& ep) {
  const auto colon = ep.rfind(':');
  int port = -1;
  if (colon == std::string::npos) return -1;
  auto [end, ec] = std::from_chars(ep.data() + colon + 1, ep.data() + ep.size(), port);
  return ec == std::errc() && end == ep.data() + ep.size() ? port : -1;
}

// True when fd is a TCP socket connected to `port` on its peer: the connection a monitor event
// announced, not a descriptor the kernel has handed to something else since.
bool is_tcp_to_port(int fd, int port) {
  int type = 0;
  socklen_t len = sizeof type;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) return false;
  sockaddr_storage peer{};
  len = sizeof peer;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) return false;
  if (peer.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(peer).sin_port) == port;
  if (peer.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(peer).sin6_port) == port;
  return false;
}

// The numeric address of the peer of TCP socket fd ("10.1.2.3", "fd00::3"); empty when fd is not a
// connected inet socket.
std::string peer_host(int fd) {
  sockaddr_storage peer{};
  socklen_t len = sizeof peer;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) return {};
  char text[INET6_ADDRSTRLEN] = {};
  const void* addr = nullptr;
  if (peer.ss_family == AF_INET) addr = &reinterpret_cast<const sockaddr_in&>(peer).sin_addr;
  if (peer.ss_family == AF_INET6) addr = &reinterpret_cast<const sockaddr_in6&>(peer).sin6_addr;
  return addr && inet_ntop(peer.ss_family, addr, text, sizeof text) ? std::string(text) : std::string();
}

// A loopback address (127.0.0.0/8, ::1, or 127.x mapped into IPv6): this host itself, whose path
// no cable can cut. Every connection to it falls silent at once only when the whole host stalls.
bool is_loopback(const std::string& host) {
  return host.starts_with("127.") || host == "::1" || host.starts_with("::ffff:127.");
}

}  // namespace

struct zmq_transport::impl {
  struct link {
    std::string endpoint;
    zmq::socket_t socket;
    // PAIR connected to the socket's monitor (heartbeats on, or pacing over tcp; the peer not
    // forgotten); closed before `socket` (declared after it).
    zmq::socket_t monitor;
    bool up = false;  // the handshake succeeded and the connection has not ended since
    bool refused_us = false;  // the peer's handshake failed ours on authentication (our key)
    bool forgotten = false;
    // The current TCP connection's descriptor (-1: none known; tcp with pacing or heartbeats).
    // Pacing: the rate this link should have (bytes/s; 0: not set yet) and the rate last set on
    // fd (0: none).
    int fd = -1;
    std::string host{};  // fd's peer address (peer_host), for paths
    std::uint64_t want = 0;
    std::uint64_t applied = 0;
    // Heartbeats over tcp: the connection's progress, judged while it is up and its counters
    // readable (`watching`); see link_liveness.hpp.
    std::optional<link_liveness> liveness;
    bool watching = false;
    bool judged_silent = false;  // suspected by judge_links, its connection still open
    tcp_progress sample{};  // judge_links' reading of fd in the current pass
  };

  zmq_options options;
  // The buffers sends copy into (declared before the contexts: it outlives every frame that points
  // into it, which the contexts' termination frees).
  send_buffers send_pool;
  // The inbound socket's context: declared first, destroyed last, after every socket is closed.
  zmq::context_t context;
  refusal_log refusals;
  // Destroyed after the inbound socket: the ZAP handler outlives every connection it vouches for.
  std::unique_ptr<connection_guard> guard;
  zmq::socket_t inbound;
  std::string bound;
  // The outbound sockets' context (DEALERs and their monitors). Destroyed before the inbound
  // socket: its termination waits (up to linger) for the queued messages to leave, and only then
  // does the inbound socket close. A neighbour sees this node's end (its link to our ROUTER
  // closing, or our PONGs stopping) only after our last messages went out on our DEALERs'
  // connections, so they reach it before the news (see the top of transport.hpp).
  zmq::context_t out_context;
  std::map<int, link> links;
  // Receive scratch, kept to reuse ZeroMQ's message objects.
  zmq::message_t id, header, payload;
  // Liveness: links that disconnected, by peer, with the time their loss_grace ends; then the
  // losses confirmed and not yet taken (ascending, unique).
  std::map<int, transport_clock::time_point> suspected;
  std::vector<int> lost;
  std::map<int, std::string> causes;  // why each peer was last suspected (loss_cause)
  // What receive() polls: the inbound socket, then each watched link's monitor (peer in watched).
  std::vector<zmq::pollitem_t> items;
  std::vector<int> watched;
  bool items_stale = true;
  // Links made so far: each link's monitor gets an endpoint of its own (a link made again for a
  // peer, watch_peer, cannot reuse the old one's, which ZeroMQ releases later).
  std::uint64_t links_made = 0;
  // When receive() next reads the watched links' TCP counters (judge_links).
  transport_clock::time_point next_judgement{};
  // Heartbeats over tcp: whether anything moves between this host and each neighbour's, on our
  // links and on the inbound connections (path_progress.hpp); inbound_fds is scratch.
  std::optional<path_progress> paths;
  std::vector<int> inbound_fds;

  explicit impl(const zmq_options& o) : options(o), context(o.io_threads), out_context(o.io_threads) {}

  bool heartbeats() const { return options.heartbeat_interval.count() > 0; }
  // How often receive() reads the links' TCP counters: twice per heartbeat interval.
  [[nodiscard]] transport_clock::duration judgement_interval() const { return options.heartbeat_interval / 2; }
  [[nodiscard]] bool pacing() const { return options.pace_bytes_per_s > 0; }

  // Makes l's connection end with a reset when it closes (forget_peer).
  static void abort_on_close(const link& l);
  // Stops watching peer's link l: no monitor, no pending loss, its queue discarded at close.
  void unwatch(int peer, link& l);
  // Sets l.want on its connection (SO_MAX_PACING_RATE), once per change of rate or connection.
  static void apply_pacing(link& l) {
    if (l.fd < 0 || l.want == 0 || l.want == l.applied) return;
    // The 32-bit form every kernel since 3.13 takes; ~0U means unlimited (above 34 Gbit/s).
    const unsigned int rate = static_cast<unsigned int>(std::min<std::uint64_t>(l.want, ~0u));
    if (setsockopt(l.fd, SOL_SOCKET, SO_MAX_PACING_RATE, &rate, sizeof rate) == 0)
      l.applied = l.want;
    else
      l.fd = -1;  // closed under us: the next connected event names the new one
  }
  // Reads every pending monitor event of every watched link.
  void drain_monitors() {
    for (auto& [peer, l] : links)
      if (l.monitor) read_monitor(peer, l);
  }
  void rebuild_items();
  void read_monitor(int peer, link& l);
  // Reads one message from the inbound socket without waiting: nullopt when none was queued (or
  // the one queued was refused, identity); otherwise what receive() returns.
  std::optional<status> read_message(inbound_frames& out);
  // Moves suspects whose grace ended to `lost`; returns the earliest grace end still running.
  std::optional<transport_clock::time_point> confirm_losses(transport_clock::time_point now);
  // A link's connection is up: its liveness starts from the counters read now.
  static void start_watching(link& l, transport_clock::time_point now);
  // Reads the counters of every watched link; a link judged lost becomes a suspect at once (its
  // messages already received still go first: confirm_losses).
  void judge_links(transport_clock::time_point now);
  // A message from peer arrived (on its own connection to us): proof of life for our link to it.
  // A suspect judged silent is cleared and watched afresh.
  void heard_from(int peer, transport_clock::time_point now);
};

void zmq_transport::impl::rebuild_items() {
  items.assign(1, zmq::pollitem_t{inbound.handle(), 0, ZMQ_POLLIN, 0});
  watched.clear();
  for (auto& [peer, l] : links)
    if (l.monitor) {
      items.push_back({l.monitor.handle(), 0, ZMQ_POLLIN, 0});
      watched.push_back(peer);
    }
  items_stale = false;
}

void zmq_transport::impl::read_monitor(int peer, link& l) {
  // Each event: two frames, 6 bytes (uint16 event, uint32 value) then the endpoint. Events of one
  // socket come in order (its one I/O thread emits them).
  zmq::message_t head, rest;
  while (l.monitor.recv(head, zmq::recv_flags::dontwait)) {
    bool more = head.more();
    while (more) {
      (void)l.monitor.recv(rest, zmq::recv_flags::none);
      more = rest.more();
    }
    if (head.size() < 6) continue;
    std::uint16_t event = 0;
    std::uint32_t value = 0;
    std::memcpy(&event, head.data(), 2);
    std::memcpy(&value, static_cast<const char*>(head.data()) + 2, sizeof value);
    // The value of CONNECTED and DISCONNECTED is the connection's descriptor.
    const int fd = static_cast<int>(value);
    if (event == ZMQ_EVENT_CONNECTED && is_tcp_to_port(fd, endpoint_port(l.endpoint))) {
      l.fd = fd;
      l.host = peer_host(fd);
      l.applied = 0;
      if (pacing()) {
        if (l.want == 0) l.want = static_cast<std::uint64_t>(options.pace_bytes_per_s / static_cast<double>(links.size()));
        apply_pacing(l);
      }
    } else if (event == ZMQ_EVENT_DISCONNECTED && fd == l.fd) {
      l.fd = -1;
    }
    if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
      if (!l.refused_us)
        refusals.refuse(refusal_log::kind::auth, [&] {
          return "rank " + std::to_string(peer) + " (" + l.endpoint + ") refused this node's key (CURVE status " +
                 std::to_string(value) + "): it does not allow it (another run's keys, or a node not in its topology)";
        });
      l.refused_us = true;
    }
    if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED || event == ZMQ_EVENT_DISCONNECTED) l.judged_silent = false;
    if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
      l.refused_us = false;
      l.up = true;
      start_watching(l, transport_clock::now());
    } else if (event == ZMQ_EVENT_DISCONNECTED && l.up && heartbeats()) {
      // A loss (the end of a connection that never completed its handshake is not: a neighbour
      // not up yet, or one that stays stopped while we reconnect). Reported once, even if the
      // link comes back within the grace: messages in flight were lost with the connection.
      l.up = false;
      l.watching = false;
      suspected.emplace(peer, transport_clock::now() + options.loss_grace);
      causes[peer] = "its link closed";
    }
  }
}

void zmq_transport::impl::start_watching(link& l, transport_clock::time_point now) {
  l.watching = false;
  if (!l.liveness || l.fd < 0) return;
  if (const auto p = read_tcp_progress(l.fd)) {
    l.liveness->start(now, *p);
    l.watching = true;
  }
}

void zmq_transport::impl::judge_links(transport_clock::time_point now) {
  // One pass over every connection to or from a neighbour's host: ours, then the inbound ones.
  if (paths) paths->begin_pass();
  for (auto& [peer, l] : links) {
    if (!l.watching || l.forgotten || !l.up) continue;
    const auto p = l.fd >= 0 ? read_tcp_progress(l.fd) : std::nullopt;
    if (!p) {  // the connection ended under us: its DISCONNECTED event will say so
      l.watching = false;
      continue;
    }
    l.sample = *p;
    if (paths && !l.host.empty() && !is_loopback(l.host)) paths->observe(now, l.fd, l.host, *p);
  }
  if (paths) {
    inbound_fds.clear();
    guard->open_connections(inbound_fds);
    for (int fd : inbound_fds) {
      const std::string host = peer_host(fd);
      const auto p = host.empty() || is_loopback(host) ? std::nullopt : read_tcp_progress(fd);
      if (p) paths->observe(now, fd, host, *p);
    }
    paths->end_pass();
  }
  for (auto& [peer, l] : links) {
    if (!l.watching || l.forgotten || !l.up) continue;
    // Lost: no answer from the neighbour within its connection's limit, or nothing at all moved
    // between the two hosts (a cut path) within the path's.
    if (l.liveness->judge(now, l.sample)) {
      causes[peer] = "it answered no heartbeat";
    } else if (paths && paths->stuck(now, l.host)) {
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%.1f", std::chrono::duration<double>(paths->limit(l.host)).count());
      causes[peer] = "nothing moved to or from its host " + l.host + " for " + seconds + " s (the path is cut)";
    } else {
      continue;
    }
    // No answer within the limit: lost, as a closed connection is, without the grace (the limit
    // was longer). Reported once; a later handshake on a new connection watches it again.
    l.up = false;
    l.watching = false;
    l.judged_silent = true;
    suspected.emplace(peer, now);
  }
  next_judgement = now + judgement_interval();
}

void zmq_transport::impl::heard_from(int peer, transport_clock::time_point now) {
  auto it = links.find(peer);
  if (it == links.end() || it->second.forgotten) return;
  link& l = it->second;
  if (l.judged_silent) {
    l.judged_silent = false;
    l.up = true;
    suspected.erase(peer);
    start_watching(l, now);
  } else if (l.watching) {
    l.liveness->heard(now);
  }
}

std::optional<transport_clock::time_point> zmq_transport::impl::confirm_losses(transport_clock::time_point now) {
  std::optional<transport_clock::time_point> next;
  for (auto it = suspected.begin(); it != suspected.end();) {
    if (it->second <= now) {
      if (auto l = links.find(it->first); l != links.end()) l->second.judged_silent = false;
      auto at = std::lower_bound(lost.begin(), lost.end(), it->first);
      if (at == lost.end() || *at != it->first) lost.insert(at, it->first);
      it = suspected.erase(it);
    } else {
      if (!next || it->second < *next) next = it->second;
      ++it;
    }
  }
  return next;
}

zmq_transport::zmq_transport(int rank, const std::string& bind_endpoint, zmq_options options)
    : rank_(rank), impl_(std::make_unique<impl>(options)) {
  QG_ENFORCE(rank >= 0, "rank=" << rank);
  QG_ENFORCE((options.heartbeat_interval.count() == 0 && options.heartbeat_timeout.count() == 0) ||
                 (options.heartbeat_interval.count() > 0 && options.heartbeat_timeout > options.heartbeat_interval),
             "heartbeat_interval=" << options.heartbeat_interval.count()
                                   << "ms heartbeat_timeout=" << options.heartbeat_timeout.count() << "ms");
  QG_ENFORCE(options.loss_grace.count() >= 0, "loss_grace=" << options.loss_grace.count() << "ms");
  QG_ENFORCE(options.send_timeout.count() > 0 && options.linger.count() >= 0 && options.send_hwm > 0 &&
                 options.receive_hwm > 0 && options.pace_bytes_per_s >= 0 && std::isfinite(options.pace_bytes_per_s),
             "send_timeout=" << options.send_timeout.count() << "ms linger=" << options.linger.count()
                             << "ms send_hwm=" << options.send_hwm << " receive_hwm=" << options.receive_hwm
                             << " pace_bytes_per_s=" << options.pace_bytes_per_s);
  check_endpoint(bind_endpoint, /*for_bind=*/true);
  std::optional<std::map<std::string, int>> allowed;
  if (options.curve) allowed = check_curve_keys(rank, *options.curve);
  auto& in = impl_->inbound;
  in = zmq::socket_t(impl_->context, zmq::socket_type::router);
  in.set(zmq::sockopt::linger, 0);  // the ROUTER never sends
  in.set(zmq::sockopt::rcvhwm, options.receive_hwm);
  // ZeroMQ checks the size of each frame as it travels, handshake commands included. Under CURVE a
  // frame travels inside a MESSAGE command (name, nonce, authenticator, flags: 33 bytes more), and
  // the handshake's HELLO (200 bytes) and INITIATE (about 300) must fit too, whatever the payloads.
  constexpr std::uint64_t kCurveFrameOverhead = 64, kCurveHandshakeBytes = 4096;
  const std::uint64_t largest = std::max<std::uint64_t>(options.max_payload_bytes, kWireHeaderBytes);
  in.set(zmq::sockopt::maxmsgsize,
         static_cast<std::int64_t>(options.curve ? std::max(largest + kCurveFrameOverhead, kCurveHandshakeBytes)
                                                 : largest));
  // Never hand a connected peer's routing id to a newcomer (see the top of transport.hpp).
  in.set(zmq::sockopt::router_handover, 0);
  if (options.curve) {
    in.set(zmq::sockopt::curve_server, 1);
    in.set(zmq::sockopt::curve_secretkey, options.curve->secret_key);
    in.set(zmq::sockopt::zap_domain, "qgossip");
  }
  if (bind_endpoint.find('[') != std::string::npos) in.set(zmq::sockopt::ipv6, 1);
  // Before the bind: no connection may arrive before its gatekeeper does.
  impl_->guard = std::make_unique<connection_guard>(impl_->context, in, std::move(allowed), impl_->refusals);
  try {
    in.bind(bind_endpoint);
  } catch (const zmq::error_t& e) {
    throw config_error("cannot bind " + bind_endpoint + ": " + e.what() + bind_hint(e.num()));
  }
  impl_->bound = in.get(zmq::sockopt::last_endpoint);
}

zmq_transport::zmq_transport(int rank, const std::string& bind_endpoint,
                             const std::map<int, std::string>& neighbours, zmq_options options)
    : zmq_transport(rank, bind_endpoint, options) {
  for (const auto& [peer, endpoint] : neighbours) connect(peer, endpoint);
}

zmq_transport::~zmq_transport() = default;

void zmq_transport::abandon_queued(std::chrono::milliseconds grace) {
  for (auto& [peer, l] : impl_->links)
    l.socket.set(zmq::sockopt::linger, std::min(l.socket.get(zmq::sockopt::linger), ms(grace)));
}

void zmq_transport::connect(int peer, const std::string& endpoint) {
  if (peer < 0 || peer == rank_)
    throw config_error("rank " + std::to_string(rank_) + " cannot have neighbour " + std::to_string(peer));
  if (impl_->links.count(peer))
    throw config_error("rank " + std::to_string(rank_) + " already has neighbour " + std::to_string(peer) +
                       " at " + impl_->links.at(peer).endpoint);
  check_endpoint(endpoint, /*for_bind=*/false);
  const zmq_options& o = impl_->options;
  zmq::socket_t s(impl_->out_context, zmq::socket_type::dealer);
  if (o.curve) {
    auto key = o.curve->peers.find(peer);
    if (key == o.curve->peers.end())
      throw config_error("rank " + std::to_string(rank_) + " has no CURVE public key for its neighbour rank " +
                         std::to_string(peer));
    // The receiver names us by our key; a routing id would only be something to squat.
    s.set(zmq::sockopt::curve_serverkey, key->second);
    s.set(zmq::sockopt::curve_publickey, o.curve->public_key);
    s.set(zmq::sockopt::curve_secretkey, o.curve->secret_key);
  } else {
    s.set(zmq::sockopt::routing_id, std::to_string(rank_));
  }
  s.set(zmq::sockopt::sndhwm, o.send_hwm);
  s.set(zmq::sockopt::sndtimeo, ms(o.send_timeout));
  s.set(zmq::sockopt::linger, ms(o.linger));
  s.set(zmq::sockopt::reconnect_ivl, ms(o.reconnect_interval));
  s.set(zmq::sockopt::reconnect_ivl_max, ms(o.reconnect_interval_max));
  if (endpoint.find('[') != std::string::npos) s.set(zmq::sockopt::ipv6, 1);
  zmq::socket_t monitor;
  const bool tcp = endpoint.starts_with("tcp://");
  const bool pace_link = impl_->pacing() && tcp;
  std::optional<link_liveness> liveness;
  if (impl_->heartbeats()) {
    s.set(zmq::sockopt::heartbeat_ivl, ms(o.heartbeat_interval));
    const auto timeout = heartbeat_timeout_for(o);
    if (tcp) {
      // This node judges the link by its progress (link_liveness.hpp): ZeroMQ must not drop it for
      // a late PONG (timeout 0: none), nor ask the neighbour to drop it when our PINGs are late
      // behind our data (TTL 0: none).
      s.set(zmq::sockopt::heartbeat_timeout, 0);
      s.set(zmq::sockopt::heartbeat_ttl, 0);
      liveness.emplace(timeout, std::max(timeout, o.send_timeout));
      if (!impl_->paths) impl_->paths.emplace(o.heartbeat_timeout, std::max(o.heartbeat_timeout, o.send_timeout));
    } else {
      // ipc: ZeroMQ's own timeout serves (widened: heartbeat_timeout_for), and the TTL sent in each
      // PING (deciseconds, at most 6553.5 s) has the neighbour drop our connection when it hears
      // nothing from us that long.
      s.set(zmq::sockopt::heartbeat_timeout, ms(timeout));
      s.set(zmq::sockopt::heartbeat_ttl, std::min(ms(timeout), 6553500));
    }
  }
  if (impl_->heartbeats() || pace_link) {
    // Before connect, so that no event is missed; inproc endpoints are per context, and a peer
    // has one link. Liveness needs the handshakes and disconnections; pacing, each connection's
    // descriptor (CONNECTED).
    const std::string monitor_endpoint =
        "inproc://qgossip.link." + std::to_string(peer) + "." + std::to_string(impl_->links_made++);
    try {
      if (zmq_socket_monitor(s.handle(), monitor_endpoint.c_str(),
                             ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_CONNECTED |
                                 ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) != 0)
        throw zmq::error_t();
      monitor = zmq::socket_t(impl_->out_context, zmq::socket_type::pair);
      monitor.set(zmq::sockopt::linger, 0);
      monitor.connect(monitor_endpoint);
    } catch (const zmq::error_t& e) {
      throw config_error("cannot watch rank " + std::to_string(rank_) + "'s link to rank " + std::to_string(peer) +
                         " (socket monitor): " + e.what());
    }
  }
  try {
    s.connect(endpoint);
  } catch (const zmq::error_t& e) {
    throw config_error("cannot connect rank " + std::to_string(rank_) + " to rank " + std::to_string(peer) +
                       " at " + endpoint + ": " + e.what());
  }
  impl_->links.emplace(peer, impl::link{.endpoint = endpoint, .socket = std::move(s), .monitor = std::move(monitor),
                                        .liveness = liveness});
  impl_->items_stale = true;
}

void zmq_transport::take_lost_peers(std::vector<int>& out) {
  out.insert(out.end(), impl_->lost.begin(), impl_->lost.end());
  impl_->lost.clear();
}

std::optional<tcp_progress> zmq_transport::link_progress(int peer) const {
  auto it = impl_->links.find(peer);
  if (it == impl_->links.end() || it->second.fd < 0 || !it->second.up) return std::nullopt;
  return read_tcp_progress(it->second.fd);
}

std::optional<std::size_t> zmq_transport::queued_bytes(int peer) const {
  const auto p = link_progress(peer);
  return p ? std::optional<std::size_t>(static_cast<std::size_t>(p->unsent + p->local)) : std::nullopt;
}

std::optional<std::uint64_t> zmq_transport::bytes_taken(int peer) const {
  auto it = impl_->links.find(peer);
  if (it == impl_->links.end()) return std::nullopt;
  const impl::link& l = it->second;
  // A watched tcp link not (yet) connected: no connection has taken anything; ZeroMQ holds it all.
  if (!l.up && l.monitor && l.endpoint.starts_with("tcp://")) return 0;
  const auto p = link_progress(peer);
  return p ? std::optional<std::uint64_t>(p->bytes_acked + p->outstanding) : std::nullopt;
}

std::optional<std::uint64_t> zmq_transport::bytes_acknowledged(int peer) const {
  const auto p = link_progress(peer);
  return p ? std::optional<std::uint64_t>(p->bytes_acked) : std::nullopt;
}

std::uint64_t zmq_transport::held_bytes() const { return impl_->send_pool.busy_bytes(); }

bool zmq_transport::wait_held_at_most(std::uint64_t bytes, transport_clock::time_point deadline) {
  return impl_->send_pool.wait_held_at_most(bytes, deadline);
}

std::optional<std::uint64_t> zmq_transport::bytes_heard(int peer) const {
  const auto p = link_progress(peer);
  return p ? std::optional<std::uint64_t>(p->bytes_received) : std::nullopt;
}

bool zmq_transport::alive(int peer) const {
  const auto it = impl_->links.find(peer);
  if (!impl_->heartbeats() || it == impl_->links.end()) return false;
  const impl::link& l = it->second;
  return l.up && !l.forgotten && !l.judged_silent && !impl_->suspected.count(peer) &&
         !std::binary_search(impl_->lost.begin(), impl_->lost.end(), peer);
}

std::string zmq_transport::loss_cause(int peer) const {
  const auto it = impl_->causes.find(peer);
  return it == impl_->causes.end() ? std::string() : it->second;
}

// A forgotten peer's connection ends with a reset when ZeroMQ closes it (watch_peer, or this
// transport's end): what this host still holds for the peer in the connection's send buffer is
// discarded. Otherwise, after a cut path came back, the kernel would deliver it on its next
// retransmission, seconds later, after the peer had been admitted again over a new connection:
// news older than its return ("you left", departures it has seen come back since) would count
// as new (docs/failures.md, "A cut path"). The descriptor is checked to still be that connection.
void zmq_transport::impl::abort_on_close(const link& l) {
  if (l.fd < 0 || !is_tcp_to_port(l.fd, endpoint_port(l.endpoint)) || peer_host(l.fd) != l.host) return;
  const ::linger abort{.l_onoff = 1, .l_linger = 0};
  (void)setsockopt(l.fd, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
}

void zmq_transport::impl::unwatch(int peer, link& l) {
  l.forgotten = true;
  l.socket.set(zmq::sockopt::linger, 0);
  if (l.monitor) {
    (void)zmq_socket_monitor(l.socket.handle(), nullptr, 0);  // stops it
    l.monitor.close();
    items_stale = true;
  }
  suspected.erase(peer);
  lost.erase(std::remove(lost.begin(), lost.end(), peer), lost.end());
}

void zmq_transport::forget_peer(int peer) {
  auto it = impl_->links.find(peer);
  if (it == impl_->links.end() || it->second.forgotten) return;
  impl::link& l = it->second;
  if (l.monitor) impl_->read_monitor(peer, l);  // l.fd is the connection open now
  impl::abort_on_close(l);
  impl_->unwatch(peer, l);
}

std::vector<int> zmq_transport::peers_refusing_this_node() const {
  std::vector<int> out;
  for (const auto& [peer, l] : impl_->links)
    if (l.refused_us && !l.forgotten) out.push_back(peer);
  return out;
}

void zmq_transport::watch_peer(int peer) {
  auto it = impl_->links.find(peer);
  if (it == impl_->links.end()) return;
  const std::string endpoint = it->second.endpoint;
  impl_->unwatch(peer, it->second);  // stops its monitor and drops any pending loss
  impl_->links.erase(it);
  impl_->items_stale = true;
  connect(peer, endpoint);
}

const std::string& zmq_transport::bound_endpoint() const { return impl_->bound; }

bool zmq_transport::secure() const { return impl_->options.curve.has_value(); }

transport_refusals zmq_transport::refusals() const { return impl_->refusals.counts(); }

void zmq_transport::take_refusal_log(std::vector<std::string>& lines) { impl_->refusals.take(lines); }

std::string zmq_transport::peer_address(int peer) const {
  auto it = impl_->links.find(peer);
  return it == impl_->links.end() ? std::string() : it->second.endpoint;
}

std::optional<std::uint64_t> zmq_transport::pacing_rate(int peer) {
  if (!impl_->pacing()) return std::nullopt;
  impl_->drain_monitors();
  auto it = impl_->links.find(peer);
  if (it == impl_->links.end() || it->second.fd < 0) return std::nullopt;
  unsigned int rate = 0;
  socklen_t len = sizeof rate;
  if (getsockopt(it->second.fd, SOL_SOCKET, SO_MAX_PACING_RATE, &rate, &len) != 0) return std::nullopt;
  return rate;
}

status zmq_transport::send(int peer, std::span<const std::byte> header, std::span<const std::byte> payload) {
  const int peers[1] = {peer};
  return send_all(peers, header, payload);
}

status zmq_transport::send_all(std::span<const int> peers, std::span<const std::byte> header,
                               std::span<const std::byte> payload) {
  return send_frames(peers, header, payload, nullptr);
}

status zmq_transport::send_all_kept(std::span<const int> peers, std::span<const std::byte> header,
                                    std::span<const std::byte> payload, std::shared_ptr<const void> owner) {
  return send_frames(peers, header, payload, std::move(owner));
}

status zmq_transport::send_frames(std::span<const int> peers, std::span<const std::byte> header,
                                  std::span<const std::byte> payload, std::shared_ptr<const void> owner) {
  for (int peer : peers)
    if (!impl_->links.count(peer))
      return status::error(errc::invalid,
                           "rank " + std::to_string(rank_) + " has no link to rank " + std::to_string(peer));
  try {
    if (impl_->pacing() && !peers.empty()) {
      // The node's pace shared by the connections this message leaves on.
      impl_->drain_monitors();
      const bool burst = peers.size() * payload.size() <= impl_->options.unpaced_burst_bytes;
      const auto each = burst ? std::uint64_t{~0u}
                              : static_cast<std::uint64_t>(std::max(
                                    1.0, impl_->options.pace_bytes_per_s / static_cast<double>(peers.size())));
      for (int peer : peers) {
        impl::link& l = impl_->links.at(peer);
        l.want = each;
        impl::apply_pacing(l);
      }
    }
    // The one copy of header and payload, into a pooled buffer (gossip/zmq/send_buffers.hpp) that
    // each neighbour's frames share, or none (a payload its owner keeps); a header-only message is
    // copied as it is.
    send_buffers::frames shared;
    if (!payload.empty())
      shared = owner ? impl_->send_pool.adopt(header, payload, std::move(owner)) : impl_->send_pool.message(header, payload);
    for (int peer : peers) {
      impl::link& l = impl_->links.at(peer);
      zmq::message_t h, b;
      if (payload.empty()) {
        h.rebuild(header.data(), header.size());
      } else {
        h.copy(shared.header);
        b.copy(shared.payload);
      }
      // Parts after the first are never refused: a multipart message is queued whole or not at all.
      if (!l.socket.send(h, zmq::send_flags::sndmore))
        return status::error(errc::timeout, "cannot send to rank " + std::to_string(peer) + " (" +
                                                l.endpoint + "): its queue stayed full for " +
                                                std::to_string(impl_->options.send_timeout.count()) +
                                                " ms (is it running and receiving?)");
      (void)l.socket.send(b, zmq::send_flags::none);
    }
  } catch (const zmq::error_t& e) {
    if (e.num() == EINTR) return status::error(errc::cancelled, "send interrupted by a signal");
    return status::error(errc::io, std::string("send failed: ") + e.what());
  }
  return status::ok();
}

std::optional<status> zmq_transport::impl::read_message(inbound_frames& out) {
  impl& m = *this;
  if (!m.inbound.recv(m.id, zmq::recv_flags::dontwait)) return std::nullopt;
  const int claimed = parse_rank(m.id);  // -1 for a routing id ZeroMQ generated
  out.peer = claimed;
  // ROUTER delivers [routing id][header][payload]; anything else is drained and reported.
  int frames = 0;
  bool more = m.id.more();
  if (more) {
    (void)m.inbound.recv(m.header, zmq::recv_flags::none);
    ++frames;
    more = m.header.more();
  }
  if (more) {
    (void)m.inbound.recv(m.payload, zmq::recv_flags::none);
    ++frames;
    more = m.payload.more();
  }
  zmq::message_t rest;
  while (more) {
    (void)m.inbound.recv(rest, zmq::recv_flags::none);
    ++frames;
    more = rest.more();
  }
  if (m.options.curve) {
    // Who sent it is the rank its connection's key proved (the ZAP user id every message of an
    // authenticated connection carries), whatever routing id the client chose.
    const int proven = frames > 0 ? parse_rank(zmq_msg_gets(m.header.handle(), "User-Id")) : -1;
    if (proven < 0 || (claimed >= 0 && claimed != proven)) {
      m.refusals.refuse(refusal_log::kind::identity, [&] {
        const char* address = frames > 0 ? zmq_msg_gets(m.header.handle(), "Peer-Address") : nullptr;
        return "refused a message from " + std::string(address ? address : "an unknown address") +
               (proven < 0 ? std::string(" without an authenticated rank")
                           : " on a link authenticated as rank " + std::to_string(proven)) +
               " that claims routing id " + (claimed >= 0 ? std::to_string(claimed) : std::string("(generated)")) +
               " (identity)";
      });
      return std::nullopt;
    }
    out.peer = proven;
  }
  if (frames != 2) {
    return status::error(errc::corrupt,
                         "malformed message from transport peer " + std::to_string(out.peer) +
                             ": expected 2 frames (header, payload), received " + std::to_string(frames));
  }
  const auto* h = static_cast<const std::byte*>(m.header.data());
  out.header.assign(h, h + m.header.size());
  // The payload as ZeroMQ received it, adopted (no copy): it lives as long as its last holder. A small
  // one that ZeroMQ placed inside its shared receive buffer at an odd offset is copied instead.
  if (!received_bytes::aligned(m.payload.data())) {
    const auto* p = static_cast<const std::byte*>(m.payload.data());
    out.payload.assign(p, p + m.payload.size());
    m.payload.rebuild();
    return status::ok();
  }
  auto frame = std::make_shared<zmq::message_t>(std::move(m.payload));
  const std::span<const std::byte> bytes(static_cast<const std::byte*>(frame->data()), frame->size());
  out.payload = received_bytes(bytes, std::move(frame));
  return status::ok();
}

status zmq_transport::receive(transport_clock::time_point deadline, inbound_frames& out) {
  impl& m = *impl_;
  auto lost_status = [&] {
    std::string names;
    for (int p : m.lost) {
      names += (names.empty() ? "rank " : ", rank ") + std::to_string(p);
      const std::string& ep = m.links.at(p).endpoint;
      names += " (" + ep + ")";
    }
    return status::error(errc::peer_lost, "lost the link to " + names +
                                              ": the connection closed or heartbeats went unanswered");
  };
  try {
    for (;;) {
      // A loss confirmed earlier (and not taken yet) goes first: everything its peer had sent by
      // then was returned already.
      if (!m.lost.empty()) return lost_status();
      if (m.items_stale) m.rebuild_items();
      for (std::size_t i = 0; i < m.watched.size(); ++i) m.read_monitor(m.watched[i], m.links.at(m.watched[i]));
      if (m.heartbeats() && transport_clock::now() >= m.next_judgement) m.judge_links(transport_clock::now());
      if (auto got = m.read_message(out)) {
        // A message is proof of life: a peer whose PONGs wait behind its own data on a slow uplink
        // still gets its messages through (the two-slow-links race, r3).
        if (got->is_ok() && m.heartbeats()) m.heard_from(out.peer, transport_clock::now());
        // A suspect still talking: its grace starts again, so a peer that was still flushing a
        // stream of messages when its other connection ended gets each one through first.
        if (auto it = m.suspected.find(out.peer); it != m.suspected.end())
          it->second = transport_clock::now() + m.options.loss_grace;
        return *got;
      }
      auto wake = deadline;
      if (m.heartbeats()) wake = std::min(wake, m.next_judgement);
      if (!m.suspected.empty()) {
        // Nothing queued inbound: suspects whose grace ended are lost.
        if (auto next = m.confirm_losses(transport_clock::now())) wake = std::min(wake, *next);
        if (!m.lost.empty()) return lost_status();
      }
      const auto now = transport_clock::now();
      if (now >= deadline) return status::error(errc::timeout, "nothing received");
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(std::max(wake - now, transport_clock::duration(0)));
      (void)zmq::poll(m.items.data(), m.items.size(), left);
    }
  } catch (const zmq::error_t& e) {
    if (e.num() == EINTR) return status::error(errc::cancelled, "receive interrupted by a signal");
    return status::error(errc::io, std::string("receive failed: ") + e.what());
  }
}

}  // namespace qgossip
