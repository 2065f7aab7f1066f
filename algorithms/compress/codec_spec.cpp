// parse_codec_spec: the inline form "name" or "name:key=value,key=value".
#include <algorithm>
#include <cctype>

#include "algorithms/compress/compressor.hpp"
#include "core/errors.hpp"

namespace qgossip {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool is_word(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

}  // namespace

codec_spec parse_codec_spec(std::string_view text) {
  const std::string original(text);
  auto fail = [&](const std::string& what) -> void {
    throw config_error("codec spec '" + original + "': " + what + " (expected name or name:key=value,...)");
  };
  text = trim(text);
  codec_spec spec;
  const std::size_t colon = text.find(':');
  spec.name = std::string(trim(text.substr(0, colon)));
  if (!is_word(spec.name))
    fail(spec.name.empty() ? "missing codec name" : "bad codec name '" + spec.name + "'");
  if (colon == std::string_view::npos) return spec;

  std::string_view rest = text.substr(colon + 1);
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) fail("'" + std::string(item) + "' is not key=value");
    const std::string key(trim(item.substr(0, eq)));
    const std::string value(trim(item.substr(eq + 1)));
    if (!is_word(key)) fail("bad parameter name '" + key + "'");
    if (!is_word(value)) fail("bad value '" + value + "' for parameter '" + key + "'");
    for (const auto& [k, v] : spec.params)
      if (k == key) fail("parameter '" + key + "' given twice");
    spec.params.emplace_back(key, value);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return spec;
}

}  // namespace qgossip
