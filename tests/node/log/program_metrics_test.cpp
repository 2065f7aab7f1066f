// A program's own metrics in the node's log (node.log(val_loss=…) in Python): the names it refuses,
// the means it writes, and the CSV and summary the real run_log writes with them.
#include "node/log/program_metrics.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/errors.hpp"
#include "core/json.hpp"
#include "node/log/run_log.hpp"
#include "tests/scratch_dir.hpp"

using namespace qgossip;

TEST_CASE("program metrics: a row holds each metric's mean since the last, empty when none was logged") {
  program_metrics m;
  m.add("val_loss", 2.0);
  m.add("ppl", 7.0);
  m.add("val_loss", 3.0);
  CHECK(m.names() == std::vector<std::string>{"val_loss", "ppl"});
  std::vector<std::optional<double>> first, second;
  m.take_means(first);
  REQUIRE(first.size() == 2);
  CHECK(*first[0] == 2.5);
  CHECK(*first[1] == 7.0);
  m.add("ppl", 5.0);
  m.take_means(second);
  CHECK_FALSE(second[0].has_value());
  CHECK(*second[1] == 5.0);
  CHECK(*m.last()[0] == 2.5);  // the summary keeps the latest value of each
  CHECK(*m.last()[1] == 5.0);
}

TEST_CASE("program metrics: refused names say why") {
  program_metrics m;
  CHECK_THROWS_WITH_AS(m.add("val loss", 1), doctest::Contains("letters, digits and _"), config_error);
  CHECK_THROWS_WITH_AS(m.add("1st", 1), doctest::Contains("letters, digits and _"), config_error);
  CHECK_THROWS_WITH_AS(m.add(std::string(65, 'a'), 1), doctest::Contains("at most 64"), config_error);
  CHECK_THROWS_WITH_AS(m.add("train_loss", 1), doctest::Contains("node's own columns"), config_error);
  CHECK_THROWS_WITH_AS(m.add("model_hash", 1), doctest::Contains("summary keys"), config_error);
  CHECK_THROWS_WITH_AS(m.add("copy_3", 1), doctest::Contains("summary keys"), config_error);
  m.add("acc5", 1);
  m.fix();
  m.add("acc5", 2);  // a known name goes on
  CHECK_THROWS_WITH_AS(m.add("late", 1), doctest::Contains("first logged after the node's CSV began"), config_error);
}

TEST_CASE("run log: a program's metrics are extra columns of the CSV and keys of the summary") {
  const qgossip::testing::scratch tmp("program_metrics");
  const std::filesystem::path& dir = tmp.dir;
  {
    run_log log(dir, 0, false);
    log.add_metric_columns({"val_loss", "ppl"});
    round_record r;
    r.iteration = 4;
    r.metrics = {2.5, std::nullopt};
    log.row(r);
    CHECK_THROWS_AS(log.add_metric_columns({"late"}), invariant_error);
    node_summary s;
    s.metrics = {{"val_loss", 2.5}, {"ppl", std::nullopt}};
    log.finish(s);
  }
  std::ifstream csv(dir / "node-0.csv");
  std::string header, row, more;
  std::getline(csv, header);
  std::getline(csv, row);
  CHECK_FALSE(std::getline(csv, more));  // the header was written again, not twice
  CHECK(header == std::string(kCsvColumns) + ",val_loss,ppl");
  CHECK(row.starts_with("4,"));
  CHECK(row.ends_with(",2.5,"));
  const nlohmann::json j = nlohmann::json::parse(qgossip::testing::read_text(dir / "node-0.json"));
  CHECK(j["val_loss"] == 2.5);
  CHECK(j["ppl"].is_null());
}
