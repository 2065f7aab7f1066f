#include "algorithms/compress/codec_params.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "core/errors.hpp"
#include "core/hash.hpp"

namespace qgossip {
namespace {

std::string join(std::initializer_list<std::string_view> words) {
  std::string s;
  for (std::string_view w : words) {
    if (!s.empty()) s += ", ";
    s += w;
  }
  return s;
}

}  // namespace

codec_params::codec_params(const codec_spec& spec, std::initializer_list<std::string_view> valid)
    : spec_(spec) {
  for (const auto& [key, value] : spec.params) {
    if (std::find(valid.begin(), valid.end(), key) != valid.end()) continue;
    std::string what = "unknown parameter '" + key + "'";
    if (valid.size() == 0) fail(what + "; it takes no parameters");
    const std::vector<std::string> names(valid.begin(), valid.end());
    const std::string hint = closest_match(key, names);
    if (!hint.empty()) what += " (did you mean '" + hint + "'?)";
    fail(what + "; valid parameters: " + join(valid));
  }
}

const std::string* codec_params::find(std::string_view key) const {
  for (const auto& [k, v] : spec_.params)
    if (k == key) return &v;
  return nullptr;
}

void codec_params::fail(const std::string& what) const {
  throw config_error("codec '" + spec_.name + "': " + what);
}

std::uint64_t codec_params::get_uint(std::string_view key, std::uint64_t fallback, std::uint64_t min,
                                     std::uint64_t max) const {
  const std::string* text = find(key);
  if (text == nullptr) return fallback;
  std::uint64_t value = 0;
  const char* end = text->data() + text->size();
  const auto [ptr, ec] = std::from_chars(text->data(), end, value);
  if (ec != std::errc() || ptr != end || value < min || value > max)
    fail("parameter '" + std::string(key) + "' = '" + *text + "': expected an integer in [" +
         std::to_string(min) + ", " + std::to_string(max) + "]");
  return value;
}

double codec_params::get_real(std::string_view key, double fallback, double lo, double hi, bool open_low) const {
  const std::string* text = find(key);
  if (text == nullptr) return fallback;
  double value = 0;
  const char* end = text->data() + text->size();
  const auto [ptr, ec] = std::from_chars(text->data(), end, value);
  const bool above = open_low ? value > lo : value >= lo;
  if (ec != std::errc() || ptr != end || !std::isfinite(value) || !above || value > hi)
    fail("parameter '" + std::string(key) + "' = '" + *text + "': expected a number in " + (open_low ? "(" : "[") +
         format_real(lo) + ", " + format_real(hi) + "]");
  return value;
}

std::uint32_t params_tag_of(std::string_view canonical) {
  const std::uint64_t h = hash64(canonical);
  return static_cast<std::uint32_t>(h ^ (h >> 32));
}

std::string format_real(double x) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x);  // shortest round-trip form
  QG_ENFORCE(ec == std::errc(), "to_chars(" << x << ")");
  return std::string(buf, end);
}

std::string codec_params::get_choice(std::string_view key, std::string_view fallback,
                                     std::initializer_list<std::string_view> choices) const {
  const std::string* text = find(key);
  if (text == nullptr) return std::string(fallback);
  if (std::find(choices.begin(), choices.end(), *text) == choices.end())
    fail("parameter '" + std::string(key) + "' = '" + *text + "': expected one of " + join(choices));
  return *text;
}

}  // namespace qgossip
