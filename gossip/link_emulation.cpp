#include "gossip/link_emulation.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>

#include "core/errors.hpp"

namespace qgossip {

emulated_link_transport::emulated_link_transport(transport& inner, link_emulation link)
    : transport_wrapper(inner), link_(link) {
  QG_ENFORCE(std::isfinite(link_.rate_bits_per_s) && link_.rate_bits_per_s >= 0,
             "rate_bits_per_s=" << link_.rate_bits_per_s);
  QG_ENFORCE(link_.delay.count() >= 0, "delay_us=" << link_.delay.count());
}

std::shared_ptr<emulated_link_transport::frames> emulated_link_transport::copy(std::span<const std::byte> header,
                                                                               std::span<const std::byte> payload) {
  std::shared_ptr<frames> f;
  if (spare_.empty()) {
    f = std::make_shared<frames>();
  } else {
    f = std::move(spare_.back());
    spare_.pop_back();
  }
  f->header.assign(header.begin(), header.end());
  f->payload.assign(payload.begin(), payload.end());
  return f;
}

void emulated_link_transport::enqueue(int peer, const std::shared_ptr<frames>& data, transport_clock::time_point now) {
  auto departure_done = std::max(now, link_free_);
  if (link_.rate_bits_per_s > 0) {
    const double bytes =
        static_cast<double>(data->header.size() + data->payload.size() + link_.per_message_overhead_bytes);
    departure_done += std::chrono::duration_cast<transport_clock::duration>(
        std::chrono::duration<double>(bytes * 8.0 / link_.rate_bits_per_s));
  }
  link_free_ = departure_done;
  outbox_.push_back({departure_done + link_.delay, departure_done, peer, data});
}

status emulated_link_transport::release_due() {
  const auto now = transport_clock::now();
  while (!outbox_.empty() && outbox_.front().due <= now) {
    message m = std::move(outbox_.front());
    outbox_.pop_front();
    status s = transport_wrapper::send(m.peer, m.data->header, m.data->payload);
    // The last message of a send_all hands its buffers back for reuse.
    if (m.data.use_count() == 1) spare_.push_back(std::move(m.data));
    if (!s) return s;
  }
  return status::ok();
}

status emulated_link_transport::send(int peer, std::span<const std::byte> header,
                                     std::span<const std::byte> payload) {
  if (link_.pass_through()) return transport_wrapper::send(peer, header, payload);
  status s = release_due();
  enqueue(peer, copy(header, payload), transport_clock::now());
  return s;
}

status emulated_link_transport::send_all(std::span<const int> peers, std::span<const std::byte> header,
                                         std::span<const std::byte> payload) {
  if (link_.pass_through()) return transport_wrapper::send_all(peers, header, payload);
  status s = release_due();
  if (peers.empty()) return s;
  auto data = copy(header, payload);
  // One `now` for the fan-out: the copies are queued on the interface together, back to back.
  const auto now = transport_clock::now();
  for (int peer : peers) enqueue(peer, data, now);
  return s;
}

std::optional<std::size_t> emulated_link_transport::queued_bytes(int peer) const {
  const std::optional<std::size_t> inner = transport_wrapper::queued_bytes(peer);
  if (link_.rate_bits_per_s == 0) return inner;
  const auto now = transport_clock::now();
  std::size_t leaving = 0;
  for (const message& m : outbox_)
    if (m.peer == peer && m.departed > now) leaving += m.data->header.size() + m.data->payload.size();
  return leaving + inner.value_or(0);
}

status emulated_link_transport::receive(transport_clock::time_point deadline, inbound_frames& out) {
  for (;;) {
    if (status s = release_due(); !s) return s;
    const auto until = outbox_.empty() ? deadline : std::min(deadline, outbox_.front().due);
    status s = transport_wrapper::receive(until, out);
    // Woken only to hand over a due message: keep waiting for the caller's deadline.
    if (s.code() == errc::timeout && until < deadline) continue;
    return s;
  }
}

status emulated_link_transport::flush(transport_clock::time_point deadline) {
  for (;;) {
    if (status s = release_due(); !s) return s;
    if (outbox_.empty()) return status::ok();
    const auto due = outbox_.front().due;
    if (due > deadline)
      return status::error(errc::timeout, std::to_string(outbox_.size()) +
                                              " message(s) still queued on the emulated link at the flush deadline");
    std::this_thread::sleep_until(due);
  }
}

}  // namespace qgossip
