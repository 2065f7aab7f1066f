#pragma once
// 64-bit non-cryptographic hashing for identities that must agree across processes:
// the run id (hash of the resolved config) and model/replica fingerprints in summaries.
// Stable across builds and platforms (little-endian word reads); never change the constants.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace qgossip {

std::uint64_t hash64(std::span<const std::byte> bytes, std::uint64_t seed = 0);
std::uint64_t hash64(std::string_view text, std::uint64_t seed = 0);
// Hash of the exact bit patterns of a float vector (so -0.0f != 0.0f and NaN payloads count).
std::uint64_t hash64(std::span<const float> values, std::uint64_t seed = 0);
// "0x" followed by 16 lower-case hex digits.
std::string hex64(std::uint64_t value);

}  // namespace qgossip
