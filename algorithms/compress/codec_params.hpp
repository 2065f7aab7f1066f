#pragma once
// Reading a codec_spec's parameters inside a codec factory: every key must be one the codec knows,
// every value must parse and lie in range, and each failure is a config_error that names the codec,
// the parameter, what was given and what was expected (with a closest-match hint for typos).
// Internal to algorithms/compress.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/compress/compressor.hpp"
#include "core/closest_match.hpp"

namespace qgossip {

// The 32-bit wire tag of a codec's canonical description (hash64 folded to 32 bits): nodes agree on
// the bytes iff their tags agree. Never change it: the tag is part of the wire format.
std::uint32_t params_tag_of(std::string_view canonical);

// The shortest text that parses back to x ("1", "0.01"): how describe() writes real parameters.
std::string format_real(double x);

class codec_params {
 public:
  // Throws config_error if spec holds a parameter not in valid.
  codec_params(const codec_spec& spec, std::initializer_list<std::string_view> valid);

  bool has(std::string_view key) const { return find(key) != nullptr; }
  // A decimal integer in [min, max]; fallback when the key is absent.
  std::uint64_t get_uint(std::string_view key, std::uint64_t fallback, std::uint64_t min,
                         std::uint64_t max) const;
  // A finite decimal number in [lo, hi] ((lo, hi] when open_low); fallback when the key is absent.
  double get_real(std::string_view key, double fallback, double lo, double hi, bool open_low = false) const;
  // One of choices; fallback when the key is absent.
  std::string get_choice(std::string_view key, std::string_view fallback,
                         std::initializer_list<std::string_view> choices) const;
  // Throws config_error "codec 'name': <what>".
  [[noreturn]] void fail(const std::string& what) const;

 private:
  const std::string* find(std::string_view key) const;

  const codec_spec& spec_;
};

}  // namespace qgossip
