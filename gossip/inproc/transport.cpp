#include "gossip/inproc/transport.hpp"

#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.hpp"

namespace qgossip {
namespace inproc_detail {

struct queued {
  int from = -1;
  std::vector<std::byte> header;
  std::vector<std::byte> payload;
};

// One rank's inbox. Buffers circulate instead of being freed: a receiver swaps its previous
// buffers in for the ones it takes, and a sender reuses them, so equal-sized traffic stops
// allocating after the first few messages.
struct mailbox {
  std::mutex mu;
  std::condition_variable arrived;
  std::vector<queued> ring = std::vector<queued>(8);  // GUARDED_BY(mu); FIFO of `count` from `head`
  std::size_t head = 0;                               // GUARDED_BY(mu)
  std::size_t count = 0;                              // GUARDED_BY(mu)
  std::vector<queued> spare;                          // GUARDED_BY(mu); buffers to reuse
  bool taken = false;                                 // GUARDED_BY(mu); an endpoint exists

  void push(queued&& q) {  // REQUIRES: mu held
    if (count == ring.size()) {
      std::vector<queued> bigger(ring.size() * 2);
      for (std::size_t i = 0; i < count; ++i) bigger[i] = std::move(ring[(head + i) % ring.size()]);
      ring = std::move(bigger);
      head = 0;
    }
    ring[(head + count) % ring.size()] = std::move(q);
    ++count;
  }
};

struct network_state {
  explicit network_state(int n) : boxes(static_cast<std::size_t>(n)) {}
  std::vector<mailbox> boxes;
};

}  // namespace inproc_detail

using inproc_detail::mailbox;
using inproc_detail::queued;

inproc_network::inproc_network(int size) {
  QG_ENFORCE(size >= 1, "size=" << size);
  state_ = std::make_shared<inproc_detail::network_state>(size);
}

int inproc_network::size() const { return static_cast<int>(state_->boxes.size()); }

inproc_transport inproc_network::endpoint(int rank) {
  QG_ENFORCE(rank >= 0 && rank < size(), "rank=" << rank << " size=" << size());
  mailbox& box = state_->boxes[static_cast<std::size_t>(rank)];
  std::lock_guard lock(box.mu);
  QG_ENFORCE(!box.taken, "rank " << rank << " already has an endpoint");
  box.taken = true;
  return inproc_transport(state_, rank);
}

status inproc_transport::send(int peer, std::span<const std::byte> header,
                              std::span<const std::byte> payload) {
  const int n = static_cast<int>(net_->boxes.size());
  if (peer < 0 || peer >= n || peer == rank_)
    return status::error(errc::invalid, "rank " + std::to_string(rank_) + " cannot send to rank " +
                                            std::to_string(peer) + " (network of " + std::to_string(n) + ")");
  mailbox& box = net_->boxes[static_cast<std::size_t>(peer)];
  queued q;
  {
    std::lock_guard lock(box.mu);
    if (!box.spare.empty()) {
      q = std::move(box.spare.back());
      box.spare.pop_back();
    }
  }
  // Copy outside the lock: the receiver may be draining other messages meanwhile.
  q.from = rank_;
  q.header.assign(header.begin(), header.end());
  q.payload.assign(payload.begin(), payload.end());
  {
    std::lock_guard lock(box.mu);
    box.push(std::move(q));
  }
  box.arrived.notify_one();
  return status::ok();
}

status inproc_transport::receive(transport_clock::time_point deadline, inbound_frames& out) {
  mailbox& box = net_->boxes[static_cast<std::size_t>(rank_)];
  std::unique_lock lock(box.mu);
  if (!box.arrived.wait_until(lock, deadline, [&] { return box.count > 0; }))
    return status::error(errc::timeout, "nothing received");
  queued& q = box.ring[box.head];
  box.head = (box.head + 1) % box.ring.size();
  --box.count;
  out.peer = q.from;
  std::swap(out.header, q.header);
  out.payload = received_bytes(std::move(q.payload));
  box.spare.push_back(std::move(q));  // the caller's previous header buffer, for the next sender
  return status::ok();
}

}  // namespace qgossip
