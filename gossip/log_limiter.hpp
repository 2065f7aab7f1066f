#pragma once
// Rate limiting for log lines that an outsider can provoke (rejected messages, refused
// connections): per key (a reason), at most `burst` lines per `window`; the rest are counted and
// reported as one summary line once the window has passed. A flood of garbage then costs a few
// lines every window instead of one line per frame.
//
// Not thread-safe: callers that log from several threads hold their own lock.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>

namespace qgossip {

class log_limiter {
 public:
  using clock = std::chrono::steady_clock;

  explicit log_limiter(std::size_t burst = 10, clock::duration window = std::chrono::seconds(10))
      : burst_(burst), window_(window) {}

  // True: log this line now. False: it is counted and summarized later (see flush).
  bool allow(std::size_t key, clock::time_point now = clock::now()) {
    entry& e = entries_[key];
    if (e.logged == 0 && e.suppressed == 0) e.start = now;
    if (e.logged < burst_) {
      ++e.logged;
      return true;
    }
    ++e.suppressed;
    return false;
  }

  // For each key whose window has passed: calls report(key, suppressed) when lines were held back,
  // and starts a new window for it.
  void flush(const std::function<void(std::size_t, std::uint64_t)>& report, clock::time_point now = clock::now()) {
    for (auto& [key, e] : entries_) {
      if ((e.logged == 0 && e.suppressed == 0) || now - e.start < window_) continue;
      if (e.suppressed > 0) report(key, e.suppressed);
      e = entry{};
    }
  }

  [[nodiscard]] clock::duration window() const { return window_; }
  // True while some key has lines held back that flush() has yet to report.
  [[nodiscard]] bool holding() const {
    for (const auto& [key, e] : entries_)
      if (e.suppressed > 0) return true;
    return false;
  }

 private:
  struct entry {
    clock::time_point start{};
    std::size_t logged = 0;
    std::uint64_t suppressed = 0;
  };
  std::size_t burst_;
  clock::duration window_;
  std::map<std::size_t, entry> entries_;
};

}  // namespace qgossip
