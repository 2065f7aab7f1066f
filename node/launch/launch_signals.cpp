#include "node/launch/launch_signals.hpp"

#include <atomic>

#include "core/errors.hpp"
#include "node/launch/unique_fd.hpp"

namespace qgossip {
namespace {

std::atomic<bool> g_active{false};

// Adds SA_RESTART (and SA_NOCLDSTOP for SIGCHLD) to the action now installed for `sig`.
void add_flags(int sig) {
  struct sigaction sa {};
  if (::sigaction(sig, nullptr, &sa) != 0) throw_errno("sigaction");
  sa.sa_flags |= SA_RESTART | (sig == SIGCHLD ? SA_NOCLDSTOP : 0);
  if (::sigaction(sig, &sa, nullptr) != 0) throw_errno("sigaction");
}

// Marks the one launch_signals alive; released by the destructor, or here when the constructor
// fails after taking it.
struct active_guard {
  active_guard() { QG_ENFORCE(!g_active.exchange(true), "launch() is already running in this process"); }
  void release() { g_active.store(false); }
};

}  // namespace

launch_signals::launch_signals(asio::io_context& io) : set_(io) {
  active_guard guard;
  try {
    for (std::size_t i = 0; i < kCaught.size(); ++i) {
      ::sigaction(kCaught[i], nullptr, &previous_[i]);
      set_.add(kCaught[i]);
      add_flags(kCaught[i]);
    }
  } catch (...) {
    set_.clear();
    for (std::size_t i = 0; i < kCaught.size(); ++i) ::sigaction(kCaught[i], &previous_[i], nullptr);
    guard.release();
    throw;
  }
}

launch_signals::~launch_signals() {
  sigset_t caught, old;
  sigemptyset(&caught);
  for (int sig : kCaught) sigaddset(&caught, sig);
  ::pthread_sigmask(SIG_BLOCK, &caught, &old);
  asio::error_code ignored;
  set_.clear(ignored);  // Asio sets SIG_DFL here ...
  for (std::size_t i = 0; i < kCaught.size(); ++i)
    ::sigaction(kCaught[i], &previous_[i], nullptr);  // ... undone
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  g_active.store(false);
}

void launch_signals::listen(std::function<void(int)> on_signal) {
  on_signal_ = std::move(on_signal);
  wait();
}

void launch_signals::wait() {
  set_.async_wait([this](const asio::error_code& ec, int sig) {
    if (ec) return;  // operation_aborted: the set is being destroyed
    wait();          // armed again first: a signal that arrives in on_signal_ waits in Asio's queue
    on_signal_(sig);
  });
}

}  // namespace qgossip
