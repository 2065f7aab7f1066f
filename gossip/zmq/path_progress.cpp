#include "gossip/zmq/path_progress.hpp"

#include <algorithm>

#include "core/errors.hpp"

namespace qgossip {

path_progress::path_progress(std::chrono::milliseconds window, std::chrono::milliseconds cap)
    : window_(window), cap_(cap) {
  QG_ENFORCE(window.count() > 0 && cap >= window, "window=" << window.count() << "ms cap=" << cap.count() << "ms");
}

void path_progress::begin_pass() { ++pass_; }

void path_progress::moved(path& p, clock::time_point now, std::chrono::microseconds rto) {
  p.moved = now;
  p.rto = rto;
}

void path_progress::observe(clock::time_point now, int fd, const std::string& host, const tcp_progress& s) {
  auto [pi, new_host] = paths_.try_emplace(host);
  path& p = pi->second;
  if (new_host) moved(p, now, s.rto);
  p.pass = pass_;
  auto [ci, fresh] = connections_.try_emplace(fd);
  connection& c = ci->second;
  // A counter that grew is movement; one that shrank, or another host, is a new connection (also
  // movement: its handshake crossed).
  if (fresh || c.host != host || s.bytes_received != c.last.bytes_received || s.bytes_acked != c.last.bytes_acked ||
      s.delivered != c.last.delivered)
    moved(p, now, s.rto);
  c.host = host;
  c.last = s;
  c.pass = pass_;
}

void path_progress::end_pass() {
  std::erase_if(connections_, [&](const auto& kv) { return kv.second.pass != pass_; });
  std::erase_if(paths_, [&](const auto& kv) { return kv.second.pass != pass_; });
}

path_progress::clock::duration path_progress::limit(const std::string& host) const {
  const auto it = paths_.find(host);
  const clock::duration rto = it == paths_.end() ? clock::duration{} : clock::duration(it->second.rto);
  return std::min<clock::duration>(window_ + 2 * rto, cap_);
}

bool path_progress::stuck(clock::time_point now, const std::string& host) const {
  const auto it = paths_.find(host);
  return it != paths_.end() && it->second.pass == pass_ && now - it->second.moved >= limit(host);
}

}  // namespace qgossip
