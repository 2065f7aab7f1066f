#pragma once
// The ZeroMQ transport: each node binds ONE inbound ROUTER socket at its endpoint and connects one
// outbound DEALER per neighbour, whose ZMQ_ROUTING_ID is the sender's rank (decimal text), so the
// receiver learns who sent a message from the link itself (the exchange checks it against the
// header's sender). A message is two frames, header then payload; the payload is copied once per
// send_all() into a ZeroMQ message that every neighbour's copy shares.
//
// Flow control blocks rather than drops: a DEALER whose queue (send_hwm) is full blocks send()
// for up to send_timeout (then errc::timeout), and the ROUTER stops reading a connection whose
// queue is full (TCP pushes back). Messages to a neighbour that has not started yet wait in its
// queue and leave when it binds. On destruction, queued messages get up to `linger` to leave.
//
// Endpoints: "tcp://host:port" (for bind, host may be 0.0.0.0 or *, and port * picks a free one:
// see bound_endpoint()) and "ipc://path". Nothing here reads environment variables or files.
// Thread safety: one thread at a time (ZeroMQ sockets are not thread-safe; moving the object to
// another thread between calls is fine).
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "gossip/transport.hpp"

namespace qgossip {

struct zmq_options {
  // Largest payload frame accepted. The inbound socket's ZMQ_MAXMSGSIZE is set to it: ZeroMQ drops
  // the connection of a peer that sends a larger frame. Use the exchange's max_payload_bytes.
  std::uint32_t max_payload_bytes = 256u << 20;  // 256 MiB
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
  // ZeroMQ I/O threads of this node's context.
  int io_threads = 1;
};

class zmq_transport final : public transport {
 public:
  // Binds bind_endpoint, then connects to each neighbour (rank -> endpoint). Throws config_error
  // for a malformed endpoint, a neighbour equal to rank, or a failed bind, e.g. "cannot bind
  // tcp://127.0.0.1:29500: Address already in use (is another qgossip node or program using this
  // port?)". A neighbour need not be running yet.
  zmq_transport(int rank, const std::string& bind_endpoint, const std::map<int, std::string>& neighbours,
                zmq_options options = {});
  // Binds only; add neighbours with connect() (e.g. after every node bound a wildcard port).
  zmq_transport(int rank, const std::string& bind_endpoint, zmq_options options = {});
  // Waits up to options.linger for queued messages to leave.
  ~zmq_transport() override;
  zmq_transport(const zmq_transport&) = delete;
  zmq_transport& operator=(const zmq_transport&) = delete;

  // Gives up on messages still queued: the destructor then returns at once instead of lingering.
  // For a run that failed, where the neighbours that would receive them are gone or stopping.
  void abandon_queued();

  // Adds a neighbour. Throws config_error as the constructor does (or when peer is already known).
  void connect(int peer, const std::string& endpoint);

  int rank() const { return rank_; }
  // The endpoint actually bound, wildcards resolved ("tcp://127.0.0.1:41873").
  const std::string& bound_endpoint() const;

  status send(int peer, std::span<const std::byte> header, std::span<const std::byte> payload) override;
  status send_all(std::span<const int> peers, std::span<const std::byte> header,
                  std::span<const std::byte> payload) override;
  status receive(transport_clock::time_point deadline, inbound_frames& out) override;
  std::string peer_address(int peer) const override;

 private:
  struct impl;
  int rank_;
  std::unique_ptr<impl> impl_;
};

}  // namespace qgossip
