#pragma once
// An enum's spellings, written once: each choice of the run YAML (a graph kind, an algorithm, a data
// set...) is an `enum class` with one table of names beside it, and the config parser
// (parse_name), the canonical YAML and the logs (name_of), the error messages (name_list) and the
// docs check (tests/node/config/names_doc_test.cpp) all read that table.
//
//   enum class partition_kind { iid, label };
//   constexpr named<partition_kind> kPartitionNames[] = {{partition_kind::iid, "iid"}, {partition_kind::label, "label"}};
//   constexpr std::span<const named<partition_kind>> names_of(partition_kind) { return kPartitionNames; }
//
// names_of(E) is found by argument-dependent lookup, so each table lives in its enum's header.
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace qgossip {

template <class E>
struct named {
  E value;
  std::string_view name;
};

// The name of v; "unknown" for a value outside its table (an enum cast from an integer).
template <class E>
[[nodiscard]] constexpr std::string_view name_of(E v) {
  for (const auto& n : names_of(E{}))
    if (n.value == v) return n.name;
  return "unknown";
}

// The value named s, or nullopt.
template <class E>
[[nodiscard]] constexpr std::optional<E> parse_name(std::string_view s) {
  for (const auto& n : names_of(E{}))
    if (n.name == s) return n.value;
  return std::nullopt;
}

// Every name, in table order.
template <class E>
[[nodiscard]] std::vector<std::string> all_names() {
  std::vector<std::string> out;
  for (const auto& n : names_of(E{})) out.emplace_back(n.name);
  return out;
}

// An enum that has a name table.
template <class E>
concept named_enum = std::is_enum_v<E> && requires(E e) { names_of(e); };

// Its name as text, for messages built by concatenation.
template <named_enum E>
[[nodiscard]] std::string to_text(E v) {
  return std::string(name_of(v));
}

// Writes its name (logs, start-up lines).
template <named_enum E>
std::ostream& operator<<(std::ostream& os, E v) {
  return os << name_of(v);
}

// "ring, torus, complete": the names for an error message.
template <class E>
[[nodiscard]] std::string name_list() {
  std::string out;
  for (const auto& n : names_of(E{})) out += (out.empty() ? "" : ", ") + std::string(n.name);
  return out;
}

}  // namespace qgossip
