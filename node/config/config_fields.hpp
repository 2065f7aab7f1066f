#pragma once
// How the config sections read their values (node/config/sections.hpp): ranges, quantities that
// must be positive, and choices read through their enum's name table (core/names.hpp), each error
// at the value's file:line:col, with a "did you mean" hint for a mistyped choice.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/closest_match.hpp"
#include "core/names.hpp"
#include "node/config/yaml_reader.hpp"

namespace qgossip {

// A number as a person would write it: 0, 1e-12, 0.999999, 1e+06 (the shortest text that reads back
// as the same double), not std::to_string's 0.000000.
[[nodiscard]] std::string number_text(double v);
[[nodiscard]] std::string number_text(std::int64_t v);

// The position of key's value, or of the mapping when the key is absent (a default out of range).
[[nodiscard]] YAML::Node value_node(yaml_reader& r, std::string_view key);

template <class T>
T in_range(yaml_reader& r, std::string_view key, T value, T lo, T hi) {
  if (value < lo || value > hi)
    throw r.error_at(value_node(r, key), r.key_path(key) + ": " + number_text(value) + " is out of range [" +
                                             number_text(lo) + ", " + number_text(hi) + "]");
  return value;
}

[[nodiscard]] int get_int_in(yaml_reader& r, std::string_view key, int def, int lo, int hi);
[[nodiscard]] double get_double_in(yaml_reader& r, std::string_view key, double def, double lo, double hi);

// A quantity that must be > 0 (a rate, a length of time): "train.lr: the learning rate must be > 0,
// got 0" rather than a range whose lower end is a tiny stand-in for zero. `smallest` is the least
// value accepted (a guard against underflow downstream), `what` names the quantity.
[[nodiscard]] double get_positive_double(yaml_reader& r, std::string_view key, double def, double smallest,
                                         double hi, const std::string& what);

// Reads key as one of E's names (its table), with a hint on a near miss.
template <class E>
[[nodiscard]] E get_choice(yaml_reader& r, std::string_view key, E def) {
  auto node = r.child(key);
  if (!node) return def;
  if (!node->IsScalar()) throw r.error_at(*node, r.key_path(key) + ": expected one of " + name_list<E>());
  const std::string v = node->Scalar();
  if (const auto e = parse_name<E>(v)) return *e;
  std::string msg = r.key_path(key) + ": unknown value '" + v + "'; expected one of " + name_list<E>();
  const std::vector<std::string> names = all_names<E>();
  if (const std::string hint = closest_match(v, names); !hint.empty()) msg += " (did you mean '" + hint + "'?)";
  throw r.error_at(*node, msg);
}

}  // namespace qgossip
