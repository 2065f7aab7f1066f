// launch_signals: SIGINT/SIGTERM/SIGCHLD as handlers on an io_context for its lifetime, with
// SA_RESTART, and the previous actions back afterwards.
#include "node/launch/launch_signals.hpp"

#include <signal.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <chrono>
#include <vector>

#include "core/errors.hpp"

using namespace qgossip;

namespace {

struct sigaction action_of(int sig) {
  struct sigaction sa {};
  ::sigaction(sig, nullptr, &sa);
  return sa;
}

extern "C" void test_handler(int) {}

// Runs io's handlers until done() (at most 5 s: a lost signal fails the check after the call).
template <class F>
void run_until(asio::io_context& io, F done) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!done() && std::chrono::steady_clock::now() < end) io.run_one_for(std::chrono::milliseconds(100));
}

}  // namespace

TEST_CASE("signals reach the listener, also one that arrived before listen(); handlers restored after") {
  struct sigaction mine {};
  mine.sa_handler = test_handler;
  sigemptyset(&mine.sa_mask);
  struct sigaction saved {};
  ::sigaction(SIGTERM, &mine, &saved);
  {
    asio::io_context io;
    launch_signals signals(io);
    for (int sig : launch_signals::kCaught) {
      CAPTURE(sig);
      const struct sigaction now = action_of(sig);
      const bool replaced = now.sa_handler != test_handler && now.sa_handler != SIG_DFL;
      CHECK(replaced);
      CHECK((now.sa_flags & SA_RESTART) != 0);
      CHECK(((now.sa_flags & SA_NOCLDSTOP) != 0) == (sig == SIGCHLD));
    }
    ::kill(::getpid(), SIGTERM);  // before anyone listens: kept by Asio
    std::vector<int> got;
    signals.listen([&](int sig) { got.push_back(sig); });
    run_until(io, [&] { return got.size() == 1; });
    ::kill(::getpid(), SIGCHLD);
    run_until(io, [&] { return got.size() == 2; });
    CHECK(got == std::vector<int>{SIGTERM, SIGCHLD});
    CHECK_THROWS_AS(launch_signals{io}, invariant_error);  // one at a time
  }
  const bool term_restored = action_of(SIGTERM).sa_handler == test_handler;
  CHECK(term_restored);
  const bool chld_restored = action_of(SIGCHLD).sa_handler == SIG_DFL;
  CHECK(chld_restored);
  ::sigaction(SIGTERM, &saved, nullptr);

  asio::io_context io;  // free again once the first is gone
  CHECK_NOTHROW(launch_signals{io});
}
