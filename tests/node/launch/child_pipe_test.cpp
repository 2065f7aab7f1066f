// child_pipe: a pipe's bytes as lines on an io_context, and drain()/close() in order.
#include "node/launch/child_pipe.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <string>
#include <thread>
#include <vector>

#include "node/launch/unique_fd.hpp"

using namespace qgossip;

namespace {

void write_all(int fd, const std::string& bytes) {
  REQUIRE(::write(fd, bytes.data(), bytes.size()) == ssize_t(bytes.size()));
}

struct piped {
  asio::io_context io;
  fd_pair fds = make_pipe(O_CLOEXEC);
  std::vector<std::string> lines;
  child_pipe pipe{io, fds.read.release(), [this](std::string line) { lines.push_back(std::move(line)); }};
};

}  // namespace

TEST_CASE("lines arrive on the io_context; the unterminated rest at EOF is the last line") {
  piped p;
  p.pipe.start();
  write_all(p.fds.write.get(), "one\ntwo\r\n\nthree");
  p.fds.write.reset();
  p.io.run();  // returns once EOF closed the pipe: nothing is left to wait for
  CHECK(p.lines == std::vector<std::string>{"one", "two\r", "", "three"});
  CHECK_FALSE(p.pipe.is_open());
}

TEST_CASE("drain reads what is there now without blocking, in order; close hands on the rest") {
  piped p;
  write_all(p.fds.write.get(), "a\nb\npart");
  p.pipe.drain();  // no io_context run: read here, synchronously
  CHECK(p.lines == std::vector<std::string>{"a", "b"});
  CHECK(p.pipe.is_open());  // the write end is still open: no EOF yet
  write_all(p.fds.write.get(), "ial");
  p.pipe.drain();
  p.pipe.close();  // a grandchild may still hold the write end: the launcher stops reading anyway
  CHECK(p.lines == std::vector<std::string>{"a", "b", "partial"});
  CHECK_FALSE(p.pipe.is_open());
}

TEST_CASE("a line longer than kMaxLine is handed on in pieces") {
  piped p;
  p.pipe.start();
  const std::string huge(3 * child_pipe::kMaxLine, 'x');
  std::thread writer([&] {
    write_all(p.fds.write.get(), huge + "\nend\n");
    p.fds.write.reset();
  });
  p.io.run();
  writer.join();
  REQUIRE(p.lines.size() >= 4);  // at least 3 pieces, then "end"
  CHECK(p.lines.back() == "end");
  std::string joined;
  for (std::size_t i = 0; i + 1 < p.lines.size(); ++i) {
    CHECK(p.lines[i].size() <= child_pipe::kMaxLine + 16384);  // bounded by the limit and one read
    joined += p.lines[i];
  }
  CHECK(joined == huge);
}
