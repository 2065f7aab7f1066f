#pragma once
// A move-only owner of one file descriptor, and pipe2() returning two of them.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>
#include <utility>

namespace qgossip {

class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) : fd_(fd) {}
  unique_fd(unique_fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  unique_fd& operator=(unique_fd&& o) noexcept {
    if (this != &o) reset(std::exchange(o.fd_, -1));
    return *this;
  }
  ~unique_fd() { reset(); }
  [[nodiscard]] int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  // Gives up ownership (e.g. to an asio descriptor) and returns the descriptor.
  [[nodiscard]] int release() { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

[[noreturn]] inline void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

struct fd_pair {
  unique_fd read, write;
};

// pipe2(flags); throws std::system_error when the OS refuses.
inline fd_pair make_pipe(int flags) {
  int fds[2];
  if (::pipe2(fds, flags) != 0) throw_errno("pipe2");
  return {unique_fd(fds[0]), unique_fd(fds[1])};
}

}  // namespace qgossip
