#include "core/hash.hpp"

#include <cstdio>
#include <cstring>

namespace qgossip {
namespace {

// A 64-bit multiply-xorshift hash over 8-byte words (the mixing of splitmix64 / MurmurHash3's
// finalizer). Fast enough to fingerprint a model of millions of floats in a few milliseconds.
constexpr std::uint64_t kMul = 0x9E3779B97F4A7C15ull;

inline std::uint64_t mix(std::uint64_t z) {
  z ^= z >> 30;
  z *= 0xBF58476D1CE4E5B9ull;
  z ^= z >> 27;
  z *= 0x94D049BB133111EBull;
  z ^= z >> 31;
  return z;
}

}  // namespace

std::uint64_t hash64(std::span<const std::byte> bytes, std::uint64_t seed) {
  std::uint64_t h = mix(seed ^ (bytes.size() * kMul));
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    h = mix(h ^ (w + kMul));
  }
  std::uint64_t tail = 0;
  for (std::size_t k = 0; i + k < bytes.size(); ++k)
    tail |= std::uint64_t(std::to_integer<unsigned char>(bytes[i + k])) << (8 * k);
  return mix(h ^ tail ^ kMul);
}

std::uint64_t hash64(std::string_view text, std::uint64_t seed) {
  return hash64(std::as_bytes(std::span<const char>(text.data(), text.size())), seed);
}

std::uint64_t hash64(std::span<const float> values, std::uint64_t seed) {
  return hash64(std::as_bytes(values), seed);
}

std::string hex64(std::uint64_t value) {
  char buf[19];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(value));
  return buf;
}

}  // namespace qgossip
