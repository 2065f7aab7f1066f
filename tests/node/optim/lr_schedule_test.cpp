#include "node/optim/lr_schedule.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "core/errors.hpp"

using namespace qgossip;

TEST_CASE("constant") {
  const lr_schedule s({.kind = lr_kind::constant, .lr = 0.05});
  CHECK(s.lr_at(0) == 0.05);
  CHECK(s.lr_at(123.4) == 0.05);
}

TEST_CASE("step decays by gamma every step_epochs") {
  const lr_schedule s({.kind = lr_kind::step, .lr = 0.1, .gamma = 0.5, .step_epochs = 2});
  CHECK(s.lr_at(0) == 0.1);
  CHECK(s.lr_at(1.99) == 0.1);
  CHECK(s.lr_at(2) == 0.05);
  CHECK(s.lr_at(5.5) == doctest::Approx(0.025));
  CHECK(s.lr_at(6) == doctest::Approx(0.0125));
}

TEST_CASE("multistep decays at each milestone reached") {
  const lr_schedule s({.kind = lr_kind::multistep, .lr = 1.0, .gamma = 0.1, .milestones = {3, 4.5}});
  CHECK(s.lr_at(2.9) == 1.0);
  CHECK(s.lr_at(3) == doctest::Approx(0.1));
  CHECK(s.lr_at(4.4) == doctest::Approx(0.1));
  CHECK(s.lr_at(4.5) == doctest::Approx(0.01));
  CHECK(s.lr_at(100) == doctest::Approx(0.01));
}

TEST_CASE("warm-up ramps linearly from warmup_start to the schedule") {
  const lr_schedule s({.kind = lr_kind::step,
                       .lr = 0.2,
                       .gamma = 0.5,
                       .step_epochs = 10,
                       .warmup_epochs = 2,
                       .warmup_start = 0.0});
  CHECK(s.lr_at(0) == 0.0);
  CHECK(s.lr_at(0.5) == doctest::Approx(0.05));
  CHECK(s.lr_at(1) == doctest::Approx(0.1));
  CHECK(s.lr_at(2) == 0.2);
  CHECK(s.lr_at(10) == doctest::Approx(0.1));
  const lr_schedule t({.lr = 1.0, .warmup_epochs = 1, .warmup_start = 0.1});
  CHECK(t.lr_at(0) == doctest::Approx(0.1));
  CHECK(t.lr_at(0.5) == doctest::Approx(0.55));
}

TEST_CASE("kinds parse by name") {
  CHECK(parse_name<lr_kind>("step") == lr_kind::step);
  CHECK(parse_name<lr_kind>("multistep") == lr_kind::multistep);
  CHECK(name_of(*parse_name<lr_kind>("constant")) == "constant");
  CHECK(parse_name<lr_kind>("cosine") == lr_kind::cosine);
  CHECK_FALSE(parse_name<lr_kind>("cosin").has_value());
  CHECK(name_list<lr_kind>() == "constant, step, multistep, cosine");
}

TEST_CASE("cosine decays from lr to final_factor·lr over total_epochs, then stays") {
  const lr_schedule s({.kind = lr_kind::cosine, .lr = 2.0, .total_epochs = 10, .final_factor = 0.1});
  CHECK(s.lr_at(0) == doctest::Approx(2.0));
  CHECK(s.lr_at(5) == doctest::Approx(2.0 * (0.1 + 0.9 * 0.5)));  // halfway: cos = 0
  CHECK(s.lr_at(10) == doctest::Approx(0.2));
  CHECK(s.lr_at(30) == doctest::Approx(0.2));
  for (double e = 0; e < 10; e += 0.5) CHECK(s.lr_at(e + 0.5) < s.lr_at(e));  // strictly decreasing
  CHECK_THROWS_AS(lr_schedule({.kind = lr_kind::cosine, .total_epochs = 0}), config_error);
  CHECK_THROWS_AS(lr_schedule({.kind = lr_kind::cosine, .final_factor = 1.5}), config_error);
}

TEST_CASE("invalid specs name the field") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_WITH_AS(lr_schedule({.lr = 0}), "lr_schedule.lr must be > 0, got 0", config_error);
  CHECK_THROWS_AS(lr_schedule({.lr = nan}), config_error);
  CHECK_THROWS_AS(lr_schedule({.lr = INFINITY}), config_error);
  CHECK_THROWS_WITH_AS(lr_schedule({.kind = lr_kind::step, .gamma = 1.5}),
                       "lr_schedule.gamma must be in (0, 1], got 1.5", config_error);
  CHECK_THROWS_AS(lr_schedule({.kind = lr_kind::step, .step_epochs = 0}), config_error);
  CHECK_THROWS_AS(lr_schedule({.kind = lr_kind::multistep}), config_error);
  CHECK_THROWS_AS(lr_schedule({.kind = lr_kind::multistep, .milestones = {2, 2}}), config_error);
  CHECK_THROWS_AS(lr_schedule({.kind = lr_kind::multistep, .milestones = {-1}}), config_error);
  CHECK_THROWS_AS(lr_schedule({.warmup_epochs = -1}), config_error);
  CHECK_THROWS_AS(lr_schedule({.warmup_start = 2}), config_error);
  CHECK_NOTHROW(lr_schedule({.kind = lr_kind::constant, .gamma = 7}));  // unused by constant
}
