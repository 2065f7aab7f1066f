#pragma once
// ISGQ's base-(2K+1) packing (algorithms/compress/isgq.hpp, "Payload"): g indices in 0..2K per word
// of at most 32 bits, g chosen per K for the fewest bits per index; a last, shorter word for the
// rest; words little-endian bit by bit, padded with zero bits to a whole byte. Part of isgq.cpp,
// apart so that the codec reads as what it sends.
#include <cstddef>
#include <cstdint>
#include <span>

namespace qgossip::isgq_parts {

struct packing {
  std::uint32_t base = 3;   // 2K + 1
  unsigned group = 1;       // indices per full word
  unsigned bits = 2;        // bits of a full word
  std::uint64_t limit = 3;  // base^group: every full word is below it
};

// The packing of indices in 0..2·levels.
[[nodiscard]] packing packing_for(std::uint32_t levels);
// The bytes `count` indices take.
[[nodiscard]] std::size_t packed_bytes(std::size_t count, const packing& p);
// Packs codes into exactly packed_bytes(codes.size(), p) bytes (QG_ENFORCE).
void pack_codes(std::span<const std::uint16_t> codes, const packing& p, std::span<std::byte> out);

enum class unpack_fault { none, word, padding };

struct unpack_result {
  unpack_fault fault = unpack_fault::none;
  std::size_t index = 0;  // the first index of the bad word
};

// Unpacks codes.size() indices from in (its size checked by the caller): a word at or above
// base^digits, or nonzero padding bits, is a fault, reported with where it is.
[[nodiscard]] unpack_result unpack_codes(std::span<const std::byte> in, const packing& p,
                                         std::span<std::uint16_t> codes);

}  // namespace qgossip::isgq_parts
