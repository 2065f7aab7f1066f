#pragma once
// CRC32C (Castagnoli, reflected polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF): the
// checksum of every wire message (docs/wire.md). Check value: crc32c("123456789") == 0xE3069283.
//
// crc32c() picks the fastest implementation this CPU has (SSE4.2's crc32 instruction when present,
// else software slicing-by-8); both compute the same function, which tests/gossip checks on random
// buffers. `crc` continues a checksum: crc32c(b, crc32c(a)) == crc32c(a ++ b), so a header and its
// payload can be checked without concatenating them.
// Thread safety: pure functions.
#include <cstddef>
#include <cstdint>
#include <span>

namespace qgossip {

std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t crc = 0);

// The software implementation (always available; the oracle the hardware path is tested against).
std::uint32_t crc32c_portable(std::span<const std::byte> data, std::uint32_t crc = 0);

// True when this build and this CPU can run crc32c_hardware().
bool crc32c_hardware_available();
// REQUIRES: crc32c_hardware_available().
std::uint32_t crc32c_hardware(std::span<const std::byte> data, std::uint32_t crc = 0);

}  // namespace qgossip
