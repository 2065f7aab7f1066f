#include "gossip/faulty_transport.hpp"

#include <algorithm>
#include <string>
#include <thread>

namespace qgossip {

std::string_view to_string(fault f) {
  switch (f) {
    case fault::drop:
      return "drop";
    case fault::delay:
      return "delay";
    case fault::duplicate:
      return "duplicate";
    case fault::corrupt_header:
      return "corrupt_header";
    case fault::corrupt_payload:
      return "corrupt_payload";
  }
  return "unknown";
}

faulty_transport::faulty_transport(transport& inner, std::vector<fault_rule> rules, std::uint64_t seed)
    : transport_wrapper(inner), rules_(std::move(rules)), matched_(rules_.size(), 0), rng_(seed) {}

const fault_rule* faulty_transport::pick(int peer) {
  const fault_rule* hit = nullptr;
  // Every rule counts and draws for every send it matches, even after an earlier rule hit, so
  // adding a rule never shifts which sends the others hit.
  for (std::size_t i = 0; i < rules_.size(); ++i) {
    const fault_rule& r = rules_[i];
    if (r.peer != -1 && r.peer != peer) continue;
    const std::uint64_t index = matched_[i]++;
    bool fires;
    if (r.nth) {
      fires = index == *r.nth;
    } else {
      // 53 random bits as a double in [0, 1): the same on every platform, unlike the std distributions.
      fires = static_cast<double>(rng_() >> 11) * 0x1p-53 < r.probability;
    }
    if (fires && !hit) hit = &r;
  }
  return hit;
}

status faulty_transport::release_due() {
  const auto now = transport_clock::now();
  // Oldest due first, so two delays release in the order they were due.
  std::stable_sort(held_.begin(), held_.end(), [](const auto& a, const auto& b) { return a.due < b.due; });
  std::size_t n = 0;
  while (n < held_.size() && held_[n].due <= now) ++n;
  status result = status::ok();
  for (std::size_t i = 0; i < n && result; ++i)
    result = transport_wrapper::send(held_[i].peer, held_[i].header, held_[i].payload);
  held_.erase(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(n));
  return result;
}

status faulty_transport::send(int peer, std::span<const std::byte> header,
                              std::span<const std::byte> payload) {
  if (status s = release_due(); !s) return s;
  const fault_rule* r = pick(peer);
  if (!r) return transport_wrapper::send(peer, header, payload);
  ++injected_[static_cast<std::size_t>(r->action)];
  switch (r->action) {
    case fault::drop:
      return status::ok();
    case fault::delay:
      held_.push_back({transport_clock::now() + r->delay,
                       peer,
                       {header.begin(), header.end()},
                       {payload.begin(), payload.end()}});
      return status::ok();
    case fault::duplicate: {
      status s = transport_wrapper::send(peer, header, payload);
      return s ? transport_wrapper::send(peer, header, payload) : s;
    }
    case fault::corrupt_header:
    case fault::corrupt_payload: {
      const bool in_payload = r->action == fault::corrupt_payload && !payload.empty();
      std::span<const std::byte> frame = in_payload ? payload : header;
      if (frame.empty()) return transport_wrapper::send(peer, header, payload);  // nothing to flip
      scratch_.assign(frame.begin(), frame.end());
      const std::uint64_t bit = (r->bit ? *r->bit : rng_()) % (scratch_.size() * 8);
      scratch_[bit / 8] ^= std::byte(1u << (bit % 8));
      status s = in_payload ? transport_wrapper::send(peer, header, scratch_)
                            : transport_wrapper::send(peer, scratch_, payload);
      if (s && r->then_intact) s = transport_wrapper::send(peer, header, payload);
      return s;
    }
  }
  return status::ok();
}

status faulty_transport::drain() {
  while (!held_.empty()) {
    auto due = held_.front().due;
    for (const auto& h : held_) due = std::min(due, h.due);
    std::this_thread::sleep_until(due);
    if (status s = release_due(); !s) return s;
  }
  return status::ok();
}

void faulty_transport::lose(int peer) {
  auto at = std::lower_bound(lost_.begin(), lost_.end(), peer);
  if (at == lost_.end() || *at != peer) lost_.insert(at, peer);
}

void faulty_transport::take_lost_peers(std::vector<int>& out) {
  std::vector<int> all = std::move(lost_);
  lost_.clear();
  transport_wrapper::take_lost_peers(all);
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  out.insert(out.end(), all.begin(), all.end());
}

void faulty_transport::forget_peer(int peer) {
  lost_.erase(std::remove(lost_.begin(), lost_.end(), peer), lost_.end());
  transport_wrapper::forget_peer(peer);
}

std::optional<std::size_t> faulty_transport::queued_bytes(int peer) const {
  if (auto it = queued_.find(peer); it != queued_.end()) return it->second;
  return transport_wrapper::queued_bytes(peer);
}

namespace {

// map[peer] = value, or no entry for peer when value is nullopt.
template <class T>
void set_or_erase(std::map<int, T>& map, int peer, std::optional<T> value) {
  if (value)
    map[peer] = *value;
  else
    map.erase(peer);
}

}  // namespace

void faulty_transport::set_queued(int peer, std::optional<std::size_t> bytes) {
  set_or_erase(queued_, peer, bytes);
}

std::optional<std::uint64_t> faulty_transport::bytes_acknowledged(int peer) const {
  std::lock_guard<std::mutex> lock(acknowledged_mutex_);
  if (auto it = acknowledged_.find(peer); it != acknowledged_.end()) return it->second;
  return transport_wrapper::bytes_acknowledged(peer);
}

std::optional<std::uint64_t> faulty_transport::bytes_heard(int peer) const {
  std::lock_guard<std::mutex> lock(acknowledged_mutex_);
  if (auto it = heard_.find(peer); it != heard_.end()) return it->second;
  return transport_wrapper::bytes_heard(peer);
}

bool faulty_transport::alive(int peer) const {
  if (std::binary_search(lost_.begin(), lost_.end(), peer)) return false;
  {
    std::lock_guard<std::mutex> lock(acknowledged_mutex_);
    if (auto it = alive_.find(peer); it != alive_.end()) return it->second;
  }
  return transport_wrapper::alive(peer);
}

void faulty_transport::set_alive(int peer, std::optional<bool> yes) {
  std::lock_guard<std::mutex> lock(acknowledged_mutex_);
  set_or_erase(alive_, peer, yes);
}

void faulty_transport::set_heard(int peer, std::optional<std::uint64_t> bytes) {
  std::lock_guard<std::mutex> lock(acknowledged_mutex_);
  set_or_erase(heard_, peer, bytes);
}

void faulty_transport::set_acknowledged(int peer, std::optional<std::uint64_t> bytes) {
  std::lock_guard<std::mutex> lock(acknowledged_mutex_);
  set_or_erase(acknowledged_, peer, bytes);
}

status faulty_transport::receive(transport_clock::time_point deadline, inbound_frames& out) {
  if (!lost_.empty()) {
    std::string names;
    for (int p : lost_) names += (names.empty() ? "rank " : ", rank ") + std::to_string(p);
    return status::error(errc::peer_lost, "lost the link to " + names + " (injected)");
  }
  for (;;) {
    if (status s = release_due(); !s) return s;
    auto until = deadline;
    for (const auto& h : held_) until = std::min(until, h.due);
    status s = transport_wrapper::receive(until, out);
    // Woken only to release a held message: keep waiting for the caller's deadline.
    if (s.code() == errc::timeout && until < deadline) continue;
    return s;
  }
}

}  // namespace qgossip
