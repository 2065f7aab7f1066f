#include "core/crc32c.hpp"

#include <array>
#include <bit>
#include <cstring>

#include "core/errors.hpp"

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
#define QGOSSIP_CRC32C_X86 1
#include <immintrin.h>
#endif

namespace qgossip {
namespace {

constexpr std::uint32_t kPolynomial = 0x82F63B78u;  // reflected Castagnoli

// kTables[0] is the classic byte-at-a-time table; kTables[k][b] is the CRC of byte b followed by k
// zero bytes, which lets the loop fold eight input bytes per step with independent lookups.
constexpr std::array<std::array<std::uint32_t, 256>, 8> make_tables() {
  std::array<std::array<std::uint32_t, 256>, 8> t{};
  for (std::uint32_t b = 0; b < 256; ++b) {
    std::uint32_t c = b;
    for (int i = 0; i < 8; ++i) c = (c >> 1) ^ ((c & 1u) ? kPolynomial : 0u);
    t[0][b] = c;
  }
  for (std::size_t k = 1; k < 8; ++k)
    for (std::uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFFu];
  return t;
}
constexpr auto kTables = make_tables();

std::uint64_t load_le64(const unsigned char* p) {
  std::uint64_t v = 0;
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(&v, p, 8);  // one unaligned load
  } else {
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  }
  return v;
}

#if QGOSSIP_CRC32C_X86
__attribute__((target("sse4.2"))) std::uint32_t crc32c_sse42(const unsigned char* p, std::size_t n,
                                                             std::uint32_t crc) {
  std::uint64_t c = ~crc;
  for (; n >= 8; p += 8, n -= 8) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);  // x86 is little-endian; memcpy is the defined way to load unaligned
    c = _mm_crc32_u64(c, v);
  }
  auto c32 = static_cast<std::uint32_t>(c);
  for (; n > 0; ++p, --n) c32 = _mm_crc32_u8(c32, *p);
  return ~c32;
}

bool cpu_has_sse42() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2");
}
#endif

using crc_fn = std::uint32_t (*)(std::span<const std::byte>, std::uint32_t);

crc_fn pick() {
#if QGOSSIP_CRC32C_X86
  if (cpu_has_sse42()) {
    return [](std::span<const std::byte> d, std::uint32_t crc) {
      return crc32c_sse42(reinterpret_cast<const unsigned char*>(d.data()), d.size(), crc);
    };
  }
#endif
  return &crc32c_portable;
}

}  // namespace

std::uint32_t crc32c_portable(std::span<const std::byte> data, std::uint32_t crc) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  std::size_t n = data.size();
  std::uint32_t c = ~crc;
  for (; n >= 8; p += 8, n -= 8) {
    const std::uint64_t v = load_le64(p) ^ c;
    c = kTables[7][v & 0xFF] ^ kTables[6][(v >> 8) & 0xFF] ^ kTables[5][(v >> 16) & 0xFF] ^
        kTables[4][(v >> 24) & 0xFF] ^ kTables[3][(v >> 32) & 0xFF] ^ kTables[2][(v >> 40) & 0xFF] ^
        kTables[1][(v >> 48) & 0xFF] ^ kTables[0][v >> 56];
  }
  for (; n > 0; ++p, --n) c = (c >> 8) ^ kTables[0][(c ^ *p) & 0xFF];
  return ~c;
}

bool crc32c_hardware_available() {
#if QGOSSIP_CRC32C_X86
  static const bool available = cpu_has_sse42();
  return available;
#else
  return false;
#endif
}

std::uint32_t crc32c_hardware(std::span<const std::byte> data, std::uint32_t crc) {
  QG_ENFORCE(crc32c_hardware_available(), "this CPU has no SSE4.2 crc32 instruction");
#if QGOSSIP_CRC32C_X86
  return crc32c_sse42(reinterpret_cast<const unsigned char*>(data.data()), data.size(), crc);
#else
  return crc;
#endif
}

std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t crc) {
  static const crc_fn fn = pick();
  return fn(data, crc);
}

}  // namespace qgossip
