#pragma once
// Fixed-width unsigned integers written and read little-endian at a byte offset, whatever the
// host's byte order: the wire header (gossip/wire.cpp) and a state's chunk header
// (gossip/exchange/state_chunks.cpp).
// Thread safety: pure functions.
#include <cstddef>

namespace qgossip {

template <class T>
void put_le(std::byte* out, std::size_t off, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out[off + i] = std::byte(static_cast<unsigned char>(v >> (8 * i)));
}

template <class T>
T get_le(const std::byte* in, std::size_t off) {
  T v = 0;
  for (std::size_t i = sizeof(T); i-- > 0;) v = static_cast<T>((v << 8) | std::to_integer<T>(in[off + i]));
  return v;
}

}  // namespace qgossip
