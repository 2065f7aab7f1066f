// The hostile list of a scenario file (node/config/hostile_file.hpp), as `qgossip launch --scenario`
// and `qgossip run --scenario` read it.
#include <doctest/doctest.h>

#include <string>

#include "core/errors.hpp"
#include "node/config/hostile_file.hpp"
#include "tests/scratch_dir.hpp"

using namespace qgossip;
using qgossip::testing::scratch;

namespace {
std::string error_of(const std::string& file, int n) {
  try {
    (void)read_hostile(file, n);
  } catch (const config_error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("hostile: entries with their defaults and parameters; the scenario's other keys are others'") {
  scratch s("hostile");
  const std::string f = s.write("h.yaml",
                                "churn: [{rank: 1, at_s: 3, down_s: 1}]\n"
                                "hostile:\n"
                                "  - {rank: 5, attack: flip}\n"
                                "  - {rank: 6, attack: alie, z: 1.5, from_round: 200}\n"
                                "  - {rank: 2, attack: equivocate}\n"
                                "  - {rank: 3, attack: dissensus}\n");
  const auto list = read_hostile(f, 8);
  REQUIRE(list.size() == 4);
  CHECK(list[0].attack == attack_kind::flip);
  CHECK(list[0].from_round == 1);
  CHECK(list[1].z == 1.5);
  CHECK(list[1].from_round == 200);
  CHECK(describe(list[1]) == "alie (z 1.5) from round 200");
  CHECK(list[2].lambda == 1.0);   // equivocate's default
  CHECK(list[3].epsilon == 1.0);  // dissensus's default
  CHECK(hostile_entry(list, 6)->attack == attack_kind::alie);
  CHECK(hostile_entry(list, 6)->colluders == std::vector<int>{5, 2, 3});  // the list's other ranks
  CHECK(list[1].colluders.empty());
  CHECK_FALSE(hostile_entry(list, 0));
  CHECK(read_hostile(s.write("none.yaml", "churn: []\n"), 8).empty());
}

TEST_CASE("hostile: bad entries are refused with the file, line and what was expected") {
  scratch s("hostile_bad");
  CHECK(error_of(s.write("b.yaml", "hostile:\n  - {rank: 8, attack: flip}\n"), 8).find("b.yaml:2") !=
        std::string::npos);
  CHECK(error_of(s.write("c.yaml", "hostile:\n  - {rank: 1, attack: flipp}\n"), 8)
            .find("expected one of flip") != std::string::npos);
  CHECK(error_of(s.write("d.yaml", "hostile:\n  - {rank: 1, attack: flip, lambda: 3}\n"), 8)
            .find("takes no lambda") != std::string::npos);
  CHECK(error_of(s.write("e.yaml", "hostile:\n  - {rank: 1, attack: scale, lambda: -1}\n"), 8)
            .find("number > 0") != std::string::npos);
  CHECK(error_of(s.write("f.yaml", "hostile:\n  - {rank: 1, attack: flip, from_round: 0}\n"), 8)
            .find("round >= 1") != std::string::npos);
  CHECK(error_of(s.write("g.yaml", "hostile:\n  - {rank: 1, attack: flip}\n  - {rank: 1, attack: nan}\n"), 8)
            .find("listed twice") != std::string::npos);
  CHECK(error_of(s.write("h2.yaml", "hostile:\n  - {rank: 1, attack: flip, colour: red}\n"), 8)
            .find("unknown key") != std::string::npos);
  CHECK(error_of(s.write("i.yaml", "hostile:\n  - {rank: 1}\n"), 8).find("attack") != std::string::npos);
  CHECK(error_of(s.write("j.yaml", "hostile: {rank: 1}\n"), 8).find("expected a list") != std::string::npos);
}
