// standby_process: a helper started early, told to go at the end (or never), as the launcher's
// plotter is. Real child processes (/bin/sh).
#include "node/launch/subprocess.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "tests/scratch_dir.hpp"

using namespace qgossip;

using qgossip::testing::read_text;
using qgossip::testing::scratch;

TEST_CASE("standby_process: told to go, it does its work and its exit code comes back") {
  scratch dir("standby");
  const auto marker = dir.dir / "done";
  standby_process p({"/bin/sh", "-c", "read line; [ \"$line\" = go ] && echo worked > " + marker.string() + " && exit 7"});
  p.go();
  CHECK(p.wait() == 7);
  CHECK(read_text(marker) == "worked\n");
}

TEST_CASE("standby_process: never told, it ends without doing its work when the object goes") {
  scratch dir("standby");
  const auto marker = dir.dir / "done";
  const auto start = std::chrono::steady_clock::now();
  {
    standby_process p({"/bin/sh", "-c", "read line; [ \"$line\" = go ] && echo worked > " + marker.string()});
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK_FALSE(std::filesystem::exists(marker));
}

TEST_CASE("standby_process: a program that cannot start, or already ended, reports it instead of blocking") {
  standby_process missing({"/nonexistent/program"});
  missing.go();
  CHECK(missing.wait() == 127);
  standby_process quick({"/bin/sh", "-c", "exit 3"});
  quick.go();  // its stdin is closed already: no SIGPIPE
  CHECK(quick.wait() == 3);
}
