// core/json.hpp: what every JSON file and line qgossip writes looks like (numbers, null for NaN,
// key order, strings), and how a file that is not one JSON object is reported.
#include "core/json.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>

using namespace qgossip;
using json = nlohmann::ordered_json;

TEST_CASE("json_text: doubles in the shortest form that reads back exactly; integers exact") {
  CHECK(json_text(json(0.1)) == "0.1");
  CHECK(json_text(json(1.0 / 3)) == "0.3333333333333333");
  CHECK(json_text(json(1e-5)) == "1e-05");
  CHECK(json_text(json(4.480600000000001e-05)) == "4.480600000000001e-05");
  CHECK(json_text(json(1.7976931348623157e308)) == "1.7976931348623157e+308");
  CHECK(json_text(json(11.0)) == "11.0");  // an integral double stays a double
  CHECK(json_text(json(std::uint64_t{18446744073709551615u})) == "18446744073709551615");
  CHECK(json_text(json(std::int64_t{-9007199254740993})) == "-9007199254740993");
  CHECK(json_text(json(true)) == "true");

  // Any finite double, printed and read back, is the same double.
  std::mt19937_64 bits(7);
  int checked = 0;
  for (int i = 0; i < 100000; ++i) {
    const std::uint64_t b = bits();
    double d;
    std::memcpy(&d, &b, sizeof d);
    if (!std::isfinite(d)) continue;
    ++checked;
    const auto back = parse_json_object("{\"x\":" + json_text(json(d)) + "}");
    REQUIRE(back);
    if (json_number(*back, "x") != d) FAIL("not read back: " << json_text(json(d)));
  }
  CHECK(checked > 99000);
}

TEST_CASE("json_text: NaN and infinities are null, as is an absent optional") {
  json j;
  j["nan"] = std::numeric_limits<double>::quiet_NaN();
  j["inf"] = std::numeric_limits<double>::infinity();
  j["-inf"] = -std::numeric_limits<double>::infinity();
  j["absent"] = json_or_null(std::nullopt);
  j["present"] = json_or_null(0.5);
  CHECK(json_text(j) == R"({"nan":null,"inf":null,"-inf":null,"absent":null,"present":0.5})");
}

TEST_CASE("json_text: keys in the order they were set; one line, or two-space indent") {
  json j;
  j["z"] = 1;
  j["a"] = json::array();
  j["m"] = json::array({1, 2});
  j["o"] = json::object();
  CHECK(json_text(j) == R"({"z":1,"a":[],"m":[1,2],"o":{}})");
  CHECK(json_text(j, true) == "{\n  \"z\": 1,\n  \"a\": [],\n  \"m\": [\n    1,\n    2\n  ],\n  \"o\": {}\n}");
}

TEST_CASE("json_text: strings escaped, UTF-8 kept, invalid bytes replaced instead of failing") {
  CHECK(json_text(json("a\"b\\c\n\t\x01/")) == R"("a\"b\\c\n\t\u0001/")");
  CHECK(json_text(json("\xC3\xA9")) == "\"\xC3\xA9\"");
  CHECK(json_text(json("cut \xE2\x80")) == "\"cut \xEF\xBF\xBD\"");  // half of a 3-byte character
}

TEST_CASE("parse_json_object: one object, or an error that says what and where") {
  std::string error;
  const auto obj = parse_json_object(" {\"s\":\"\\u00e9\", \"n\":-12, \"f\":1.5e3, \"nil\":null, \"t\":true,"
                                     " \"big\":9000000000, \"nested\":{\"a\":[1]}} \n",
                                     &error);
  REQUIRE_MESSAGE(obj, error);
  CHECK(obj->begin().key() == "s");  // file order kept
  CHECK(*json_string(*obj, "s") == "\xC3\xA9");
  CHECK(json_number(*obj, "n") == -12);
  CHECK(json_number(*obj, "f") == 1500);
  CHECK(json_number(*obj, "big") == 9e9);
  CHECK_FALSE(json_number(*obj, "nil"));
  CHECK_FALSE(json_number(*obj, "s"));
  CHECK_FALSE(json_number(*obj, "absent"));
  CHECK(json_string(*obj, "n") == nullptr);
  CHECK(json_string(*obj, "absent") == nullptr);
  CHECK(json_number(json::array(), "n") == std::nullopt);

  struct bad_case {
    const char* text;
    const char* error_mentions;
  };
  for (const bad_case& c : {bad_case{"", "line 1, column 1"},
                            bad_case{"{\"rank\": 1, \"status\": ", "unexpected end of input"},
                            bad_case{"{\n  \"a\": 1,\n  \"b\" 2\n}", "line 3"},
                            bad_case{"{\"a\":1} x", "expected end of input"},
                            bad_case{"{\"a\":NaN}", "invalid literal"},
                            bad_case{"{\"a\":1e999}", "number overflow"},
                            bad_case{"{\"a\":\"\\ud800\"}", "surrogate"},
                            bad_case{"[1,2]", "expected a JSON object, got JSON array"},
                            bad_case{"\"text\"", "expected a JSON object, got JSON string"}}) {
    const std::string text = c.text;
    CAPTURE(text);
    CHECK_FALSE(parse_json_object(c.text, &error));
    CHECK_MESSAGE(error.find(c.error_mentions) != std::string::npos, error);
    CHECK(error.find("[json.exception") == std::string::npos);
  }
}
