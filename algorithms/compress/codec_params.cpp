#include "algorithms/compress/codec_params.hpp"

#include <algorithm>
#include <charconv>

#include "core/errors.hpp"

namespace qgossip {
namespace {

// Optimal string alignment distance: insertions, deletions, substitutions and transpositions of
// adjacent characters ("qsdg" is one edit from "qsgd").
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string join(std::initializer_list<std::string_view> words) {
  std::string s;
  for (std::string_view w : words) {
    if (!s.empty()) s += ", ";
    s += w;
  }
  return s;
}

}  // namespace

std::string closest_match(std::string_view word, std::span<const std::string> candidates) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(1, word.size() / 3) + 1;
  for (const std::string& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

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

std::string codec_params::get_choice(std::string_view key, std::string_view fallback,
                                     std::initializer_list<std::string_view> choices) const {
  const std::string* text = find(key);
  if (text == nullptr) return std::string(fallback);
  if (std::find(choices.begin(), choices.end(), *text) == choices.end())
    fail("parameter '" + std::string(key) + "' = '" + *text + "': expected one of " + join(choices));
  return *text;
}

}  // namespace qgossip
