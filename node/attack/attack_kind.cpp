#include "node/attack/attack_kind.hpp"

#include <array>
#include <sstream>
#include <utility>

namespace qgossip {

namespace {

constexpr std::array<std::pair<attack_kind, std::string_view>, 10> kNames{{
    {attack_kind::flip, "flip"},
    {attack_kind::scale, "scale"},
    {attack_kind::noise, "noise"},
    {attack_kind::nan, "nan"},
    {attack_kind::label_flip, "label_flip"},
    {attack_kind::alie, "alie"},
    {attack_kind::ipm, "ipm"},
    {attack_kind::dissensus, "dissensus"},
    {attack_kind::equivocate, "equivocate"},
    {attack_kind::adaptive, "adaptive"},
}};

}  // namespace

std::string_view to_text(attack_kind a) {
  for (const auto& [kind, name] : kNames)
    if (kind == a) return name;
  return "?";
}

std::optional<attack_kind> parse_attack(std::string_view word) {
  for (const auto& [kind, name] : kNames)
    if (name == word) return kind;
  return std::nullopt;
}

std::string describe(const attack_spec& a) {
  std::ostringstream out;
  out << to_text(a.attack);
  switch (a.attack) {
    case attack_kind::scale:
    case attack_kind::equivocate:
      out << " (lambda " << a.lambda << ")";
      break;
    case attack_kind::noise:
      out << " (sigma " << a.sigma << ")";
      break;
    case attack_kind::alie:
      out << " (z " << a.z << ")";
      break;
    case attack_kind::ipm:
    case attack_kind::dissensus:
      out << " (epsilon " << a.epsilon << ")";
      break;
    default:
      break;
  }
  if (a.from_round > 1) out << " from round " << a.from_round;
  return out.str();
}

bool needs_copies(attack_kind a) {
  return a == attack_kind::alie || a == attack_kind::ipm || a == attack_kind::dissensus ||
         a == attack_kind::adaptive;
}

bool per_neighbour(attack_kind a) {
  return a == attack_kind::dissensus || a == attack_kind::equivocate || a == attack_kind::adaptive;
}

}  // namespace qgossip
