#pragma once
// What the gossip tests share to write and read payloads as text, and the wildcard endpoint the
// ZeroMQ tests bind (a free loopback port each time).
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qgossip::testing {

inline constexpr const char* kAnyPort = "tcp://127.0.0.1:*";

inline std::span<const std::byte> bytes(std::string_view s) { return std::as_bytes(std::span(s.data(), s.size())); }

inline std::string text(std::span<const std::byte> v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size());
}

}  // namespace qgossip::testing
