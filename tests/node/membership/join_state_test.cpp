#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <span>
#include <vector>

#include "node/membership/join_state.hpp"

using namespace qgossip;

namespace {
std::span<const std::byte> bytes_of(const std::vector<float>& v) { return std::as_bytes(std::span(v)); }
}  // namespace

TEST_CASE("join_state: a model alone, or a model and its public state, of the run's size") {
  const std::vector<float> model{1.0f, -2.0f, 0.5f, 0.0f};
  join_state out;
  REQUIRE(parse_join_state(4, bytes_of(model), 4, out).is_ok());
  CHECK(out.model == model);
  CHECK(out.public_state.empty());
  std::vector<float> both = model;
  both.insert(both.end(), {3.0f, 4.0f, 5.0f, 6.0f});
  REQUIRE(parse_join_state(4, bytes_of(both), 4, out).is_ok());
  CHECK(out.model == model);
  CHECK(out.public_state == std::vector<float>{3.0f, 4.0f, 5.0f, 6.0f});
}

TEST_CASE("join_state: another model size, another payload size or a value that is not finite is refused whole") {
  const std::vector<float> model{1.0f, -2.0f, 0.5f, 0.0f};
  join_state out;
  status s = parse_join_state(5, bytes_of(model), 4, out);
  CHECK(s.code() == errc::corrupt);
  CHECK(s.message() == "a state for a model of 5 values, this run's has 4");
  s = parse_join_state(4, bytes_of(std::vector<float>(6, 1.0f)), 4, out);
  CHECK(s.message() == "a state of 24 bytes, expected 16 or 32");
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    std::vector<float> v = model;
    v[2] = bad;
    s = parse_join_state(4, bytes_of(v), 4, out);
    CHECK(s.code() == errc::corrupt);
    CHECK(s.message() == "value 2 of the state is not finite");
    CHECK(out.model.empty());
    // In the public state: counted from the state's start, and nothing of the model kept either.
    std::vector<float> both = model;
    both.insert(both.end(), {3.0f, 4.0f, bad, 6.0f});
    s = parse_join_state(4, bytes_of(both), 4, out);
    CHECK(s.message() == "value 6 of the state is not finite");
    CHECK(out.model.empty());
    CHECK(out.public_state.empty());
  }
}
