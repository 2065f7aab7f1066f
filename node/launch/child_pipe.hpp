#pragma once
// A child's stdout as lines, on the launcher's io_context.
//
// The pipe is an asio::posix::stream_descriptor in non-blocking mode. Readiness comes from Asio
// (async_wait for wait_read); the bytes are read here (read_some until would_block), never inside
// Asio. So no bytes ever sit in a completed-but-not-yet-run Asio read: drain() can read "everything
// the child wrote so far" synchronously, in order — which is what the launcher needs when it reaps a
// child, before it judges the exit (an error event written just before the exit must count).
//
// Lines are split on '\n' (the '\n' dropped, nothing else); a line longer than kMaxLine is handed on in
// pieces (a node gone wrong must not make the launcher grow without bound). At EOF the unterminated
// rest, if any, is the last line, and the pipe closes itself.
// Not thread-safe: used on the io_context's one thread.
#include <cstddef>
#include <functional>
#include <string>

#include <asio/io_context.hpp>
#include <asio/posix/stream_descriptor.hpp>

namespace qgossip {

class child_pipe {
 public:
  static constexpr std::size_t kMaxLine = 64 * 1024;

  // Takes ownership of `fd` (the read end of the child's stdout). on_line gets each line without
  // its '\n'; it must not close this pipe.
  child_pipe(asio::io_context& io, int fd, std::function<void(std::string)> on_line);
  child_pipe(const child_pipe&) = delete;
  child_pipe& operator=(const child_pipe&) = delete;

  // Starts waiting for data on the io_context.
  void start();
  // Reads and hands on what is available now, without blocking (EOF closes the pipe).
  void drain();
  // Hands on the unterminated rest, if any, and closes the pipe (a grandchild of the node may still
  // hold its write end; we are done with it).
  void close();
  [[nodiscard]] bool is_open() const { return pipe_.is_open(); }

 private:
  void wait();
  void split_lines();
  void flush_partial();

  asio::posix::stream_descriptor pipe_;
  std::function<void(std::string)> on_line_;
  std::string partial_;  // bytes after the last '\n'
};

}  // namespace qgossip
