#pragma once
// JSON as qgossip writes and reads it: nlohmann::json (Debian nlohmann-json3-dev, 3.11), with the
// few choices every file and line makes the same way kept here. Writers build an
// nlohmann::ordered_json (keys stay in the order they are set: people and `jq` read these files, and
// some checks read by position) and print it with json_text(); readers parse with
// parse_json_object() and read fields with json_number() / json_string(), which never throw.
//
// What json_text() prints (nlohmann's serializer; pinned by tests/core/json_test.cpp):
//  - doubles in the shortest form that reads back as the same double (Grisu2), e.g. 0.1, 1e-05,
//    0.3333333333333333; a double with an integral value keeps a ".0" (11.0), so a reader can tell
//    it from an integer; integers (int, std::uint64_t) print as integers, all 64 bits exact;
//  - NaN and +-Inf as null (JSON has no NaN: a diverged loss reads as null, as does json_or_null()'s
//    absent value);
//  - strings as UTF-8, with " \ and control characters escaped; bytes that are not valid UTF-8 (a
//    log line cut in the middle of a character) become U+FFFD instead of failing the whole file.
// Thread-safety: plain functions, no shared state.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace qgossip {

// j as text: one line (pretty = false: the progress protocol, `--json` outputs) or indented by two
// spaces, one member per line (pretty = true: node-<r>.json, run.json, shards.json). No trailing
// newline.
[[nodiscard]] std::string json_text(const nlohmann::ordered_json& j, bool pretty = false);

// v's value, or null when v is empty (a metric not measured).
[[nodiscard]] nlohmann::ordered_json json_or_null(const std::optional<double>& v);

// Parses `text` as exactly one JSON object (surrounding whitespace allowed; nested values allowed).
// Returns nullopt when it is anything else; *error (when given) then says what was wrong and where,
// e.g. "parse error at line 1, column 23: syntax error while parsing value - unexpected end of
// input; expected '[', '{', or a literal", or "expected a JSON object, got JSON array".
// A key given twice keeps its last value (nlohmann's rule).
[[nodiscard]] std::optional<nlohmann::ordered_json> parse_json_object(std::string_view text,
                                                                      std::string* error = nullptr);

// The number at obj[key] (any JSON number, as a double); nullopt when obj is not an object, the key
// is absent, or its value is not a number (null included).
[[nodiscard]] std::optional<double> json_number(const nlohmann::ordered_json& obj, std::string_view key);

// The string at obj[key]; nullptr when obj is not an object, the key is absent, or its value is not
// a string. The pointer is valid while obj is unchanged.
[[nodiscard]] const std::string* json_string(const nlohmann::ordered_json& obj, std::string_view key);

}  // namespace qgossip
