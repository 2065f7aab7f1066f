#include "node/launch/child_pipe.hpp"

#include <asio/buffer.hpp>
#include <asio/error.hpp>
#include <utility>

namespace qgossip {

child_pipe::child_pipe(asio::io_context& io, int fd, std::function<void(std::string)> on_line)
    : pipe_(io, fd), on_line_(std::move(on_line)) {
  pipe_.non_blocking(true);
}

void child_pipe::start() { wait(); }

void child_pipe::wait() {
  if (!pipe_.is_open()) return;
  pipe_.async_wait(asio::posix::descriptor_base::wait_read, [this](const asio::error_code& ec) {
    if (ec) return;  // operation_aborted: closed
    drain();
    wait();
  });
}

void child_pipe::drain() {
  char buf[16384];
  while (pipe_.is_open()) {
    asio::error_code ec;
    const std::size_t n = pipe_.read_some(asio::buffer(buf), ec);
    if (n > 0) {
      partial_.append(buf, n);
      split_lines();
    }
    if (ec == asio::error::would_block || ec == asio::error::try_again) return;
    if (ec == asio::error::interrupted) continue;
    if (ec) {
      close();  // EOF, or an error (the child's exit is reaped anyway)
      return;
    }
  }
}

void child_pipe::split_lines() {
  std::size_t begin = 0;
  for (std::size_t nl; (nl = partial_.find('\n', begin)) != std::string::npos; begin = nl + 1)
    on_line_(partial_.substr(begin, nl - begin));
  partial_.erase(0, begin);
  if (partial_.size() > kMaxLine) on_line_(std::exchange(partial_, {}));
}

void child_pipe::flush_partial() {
  if (!partial_.empty()) on_line_(std::exchange(partial_, {}));
}

void child_pipe::close() {
  flush_partial();
  asio::error_code ignored;
  pipe_.close(ignored);
}

}  // namespace qgossip
