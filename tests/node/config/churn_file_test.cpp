// The churn list of a scenario file (node/config/churn_file.hpp), as qgossip launch --churn reads it.
#include <doctest/doctest.h>

#include <string>

#include "core/errors.hpp"
#include "node/config/churn_file.hpp"
#include "tests/scratch_dir.hpp"

using namespace qgossip;
using qgossip::testing::scratch;

namespace {
std::string error_of(const std::string& file, int n) {
  try {
    (void)read_churn(file, n);
  } catch (const config_error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("churn: events sorted by time; the scenario's other keys are cluster.sh's") {
  scratch s("churn");
  const std::string f = s.write("c.yaml",
                                "nodes: {3: {cpu_share: 0.2}}\n"
                                "churn:\n"
                                "  - {rank: 5, at_s: 20, down_s: 4, how: stop}\n"
                                "  - {rank: 3, at_s: 10, down_s: 2.5}\n");
  const auto events = read_churn(f, 8);
  REQUIRE(events.size() == 2);
  CHECK(events[0].rank == 3);
  CHECK(events[0].at_s == 10.0);
  CHECK(events[0].down_s == 2.5);
  CHECK(events[0].how == churn_event::kind::kill);  // the default
  CHECK(events[1].rank == 5);
  CHECK(events[1].how == churn_event::kind::stop);
  CHECK(read_churn(s.write("none.yaml", "nodes: {1: {rate: 1mbit}}\n"), 8).empty());
}

TEST_CASE("churn: bad events are refused with FILE:LINE:COL and what was expected") {
  scratch s("churn");
  auto check = [&](const std::string& text, const std::string& want) {
    const std::string f = s.write("bad.yaml", text);
    const std::string got = error_of(f, 4);
    CHECK_MESSAGE(got.find(want) != std::string::npos, got);
    CHECK(got.rfind(f + ":", 0) == 0);
  };
  check("churn: {rank: 1}\n", ":1:8: churn: expected a list of {rank, at_s, down_s, how}");
  check("churn:\n  - {rank: 7, at_s: 1, down_s: 1}\n", ":2:12: churn[0].rank: expected a rank of the run, 0..3, received 7");
  check("churn:\n  - {rank: 1, at_s: -1, down_s: 1}\n", "churn[0].at_s: expected seconds >= 0 from the launch");
  check("churn:\n  - {rank: 1, at_s: 1, down_s: 0}\n", "churn[0].down_s: expected seconds > 0");
  check("churn:\n  - {rank: 1, at_s: 1, down_s: 1, how: pause}\n", "churn[0].how: expected kill or stop, received 'pause'");
  check("churn:\n  - {rank: 1, at_s: 1, down_s: 1, when: 2}\n", "when");
  check("churn:\n  - {rank: 1, down_s: 1}\n", "at_s");
  check("churn:\n  - {rank: 1, at_s: 1, down_s: 5}\n  - {rank: 1, at_s: 3, down_s: 1}\n",
        "churn[1]: rank 1 is already down then (churn[0])");
  CHECK(error_of(s.dir.string() + "/missing.yaml", 4).find("cannot open") != std::string::npos);
}
