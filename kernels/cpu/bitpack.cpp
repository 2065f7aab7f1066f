#include "kernels/cpu/bitpack.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "core/errors.hpp"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace qgossip::kernels {
namespace {

inline std::uint8_t byte_at(std::span<const std::byte> in, std::size_t i) {
  return std::to_integer<std::uint8_t>(in[i]);
}

// Eight codes of b < 8 bits, packed LSB first in the low 8b bits of v, spread one to a byte (code j
// in byte j), and back, in three steps each way: in every block of 2L bits, the field of w bits at
// its bottom stays and the one above it moves to (or from) bit L of the block. Spreading, (w, L)
// is (4b, 32), (2b, 16), (b, 8); gathering, the reverse. Six shifts and masks in place of eight
// shifts, masks and byte stores a group; plain integer arithmetic, the same on every CPU (BMI2's
// pdep and pext do it in one instruction, but slowly on AMD's CPUs before Zen 3).
inline std::uint64_t low_fields(unsigned w, std::uint64_t every) {
  return ((std::uint64_t{1} << w) - 1) * every;
}

inline std::uint64_t spread_step(std::uint64_t v, unsigned w, unsigned l, std::uint64_t every) {
  const std::uint64_t low = low_fields(w, every);
  return (v & low) | ((v << (l - w)) & (low << l));
}

inline std::uint64_t gather_step(std::uint64_t v, unsigned w, unsigned l, std::uint64_t every) {
  const std::uint64_t low = low_fields(w, every);
  return (v & low) | ((v >> (l - w)) & (low << w));
}

constexpr std::uint64_t kEvery64 = 1, kEvery32 = 0x0000000100000001ull, kEvery16 = 0x0001000100010001ull;

inline std::uint64_t spread_codes(std::uint64_t v, unsigned b) {
  v = spread_step(v & low_fields(8 * b, kEvery64), 4 * b, 32, kEvery64);
  v = spread_step(v, 2 * b, 16, kEvery32);
  return spread_step(v, b, 8, kEvery16);
}

// The inverse: v holds code j < 2^b in byte j; returns them packed in its low 8b bits.
inline std::uint64_t gather_codes(std::uint64_t v, unsigned b) {
  v = gather_step(v, b, 8, kEvery16);
  v = gather_step(v, 2 * b, 16, kEvery32);
  return gather_step(v, 4 * b, 32, kEvery64);
}

#if defined(__AVX2__)
// The byte shuffle of spread_groups_avx2 for b = 1 .. 3 (4 bits have their own path): in each
// 128-bit half, lane 0 takes the half's bytes 0 .. 7 and lane 1 its bytes b .. b + 7.
constexpr auto kFourGroupOrder = [] {
  std::array<std::array<std::int8_t, 32>, 4> order{};
  for (unsigned b = 1; b <= 3; ++b)
    for (unsigned half = 0; half < 2; ++half)
      for (unsigned lane = 0; lane < 2; ++lane)
        for (unsigned k = 0; k < 8; ++k)
          order[b][16 * half + 8 * lane + k] = static_cast<std::int8_t>(lane * b + k);
  return order;
}();

inline __m256i spread_step4(__m256i v, unsigned w, unsigned l, std::uint64_t every) {
  const __m256i low = _mm256_set1_epi64x(static_cast<long long>(low_fields(w, every)));
  const __m256i high = _mm256_set1_epi64x(static_cast<long long>(low_fields(w, every) << l));
  const __m256i moved = _mm256_sll_epi64(v, _mm_cvtsi32_si128(static_cast<int>(l - w)));
  return _mm256_or_si256(_mm256_and_si256(v, low), _mm256_and_si256(moved, high));
}

// spread_codes on up to `groups` groups of b <= 3 bits, four at a time (32 codes from 4b bytes):
// each 128-bit half loads 16 bytes, from the first group's first byte and from the third's, a byte
// shuffle puts each group's 8 bytes in a 64-bit lane, and spread_codes' three steps run on the four
// lanes. Stops where a load would pass in[size); returns the groups done (a multiple of four).
inline std::size_t spread_groups_avx2(const unsigned char* in, std::size_t size, unsigned b,
                                      std::size_t groups, std::uint8_t* codes) {
  const __m256i order = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kFourGroupOrder[b].data()));
  const __m256i all = _mm256_set1_epi64x(static_cast<long long>(low_fields(8 * b, kEvery64)));
  std::size_t g = 0;
  for (; g + 4 <= groups && b * g + 2 * b + 16 <= size; g += 4) {
    const unsigned char* at = in + b * g;
    const __m256i bytes = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(at + 2 * b),
                                              reinterpret_cast<const __m128i*>(at));
    __m256i v = _mm256_and_si256(_mm256_shuffle_epi8(bytes, order), all);
    v = spread_step4(v, 4 * b, 32, kEvery64);
    v = spread_step4(v, 2 * b, 16, kEvery32);
    v = spread_step4(v, b, 8, kEvery16);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + 8 * g), v);
  }
  return g;
}
#endif

}  // namespace

void bit_writer::reserve(std::size_t count, unsigned bits) const {
  QG_ENFORCE(bits >= 1 && bits <= kMaxCodeBits, "bits=" << bits);
  QG_ENFORCE((pos_ * 8 + pending_ + count * bits + 7) / 8 <= out_.size(),
             "bit_writer overflow: " << count << " codes of " << bits << " bits at byte " << pos_ << " of "
                                     << out_.size());
}

template <typename Code>
void bit_writer::put_general(std::span<const Code> codes, unsigned bits) {
  std::uint64_t acc = acc_;
  unsigned pending = pending_;
  std::byte* out = out_.data() + pos_;
  for (const Code c : codes) {
    acc |= std::uint64_t{c} << pending;
    pending += bits;
    if (pending >= 32) {
      for (int k = 0; k < 4; ++k) out[k] = static_cast<std::byte>(acc >> (8 * k));
      out += 4;
      acc >>= 32;
      pending -= 32;
    }
  }
  while (pending >= 8) {
    *out++ = static_cast<std::byte>(acc);
    acc >>= 8;
    pending -= 8;
  }
  acc_ = acc;
  pending_ = pending;
  pos_ = static_cast<std::size_t>(out - out_.data());
}

void bit_writer::put(std::span<const std::uint8_t> codes, unsigned bits) {
  QG_ENFORCE(bits <= 8, "bits=" << bits << " needs 16-bit codes");
  reserve(codes.size(), bits);
  if (pending_ == 0 && bits == 8) {
    std::memcpy(out_.data() + pos_, codes.data(), codes.size());
    pos_ += codes.size();
    return;
  }
  if (pending_ == 0 && bits == 4) {
    const std::size_t pairs = codes.size() / 2;
    auto* out = reinterpret_cast<std::uint8_t*>(out_.data() + pos_);
    const std::uint8_t* c = codes.data();
    for (std::size_t k = 0; k < pairs; ++k)
      out[k] = static_cast<std::uint8_t>(c[2 * k] | (c[2 * k + 1] << 4));
    pos_ += pairs;
    codes = codes.subspan(2 * pairs);
  }
  if (pending_ == 0 && bits < 8) {
    // Whole groups of 8 codes fill exactly `bits` bytes: the groups of a batch gathered together
    // (a loop the compiler vectorizes), each written as 8 bytes, the next group's write covering
    // the 8 - bits bytes too many, or byte by byte at the end of the buffer.
    auto* out = reinterpret_cast<unsigned char*>(out_.data());
    constexpr std::size_t kBatch = 32;
    alignas(64) std::uint64_t words[kBatch];
    const std::size_t groups = codes.size() / 8;
    std::size_t pos = pos_;
    for (std::size_t g0 = 0; g0 < groups; g0 += kBatch) {
      const std::size_t n = std::min(kBatch, groups - g0);
      std::memcpy(words, codes.data() + 8 * g0, 8 * n);  // little-endian host (static_assert in the codecs)
      for (std::size_t j = 0; j < n; ++j) words[j] = gather_codes(words[j], bits);
      for (std::size_t j = 0; j < n; ++j, pos += bits) {
        if (pos + 8 <= out_.size()) {
          std::memcpy(out + pos, &words[j], 8);
        } else {
          for (unsigned b = 0; b < bits; ++b) out[pos + b] = static_cast<unsigned char>(words[j] >> (8 * b));
        }
      }
    }
    pos_ = pos;
    codes = codes.subspan(groups * 8);
  }
  put_general(codes, bits);
}

void bit_writer::put(std::span<const std::uint16_t> codes, unsigned bits) {
  reserve(codes.size(), bits);
  put_general(codes, bits);
}

std::size_t bit_writer::finish() {
  if (pending_ > 0) {
    QG_ENFORCE(pos_ < out_.size());
    out_[pos_++] = static_cast<std::byte>(acc_ & 0xffu);
    acc_ = 0;
    pending_ = 0;
  }
  return pos_;
}

void bit_reader::require(std::size_t count, unsigned bits) const {
  QG_ENFORCE(bits >= 1 && bits <= kMaxCodeBits, "bits=" << bits);
  QG_ENFORCE(bit_ + count * bits <= in_.size() * 8, "bit_reader underflow: " << count << " codes of " << bits
                                                                             << " bits at bit " << bit_
                                                                             << " of " << in_.size() * 8);
}

template <typename Code>
void bit_reader::get_general(std::span<Code> codes, unsigned bits) {
  const std::uint32_t mask = (1u << bits) - 1;
  const std::size_t size = in_.size();
  std::size_t bit = bit_;
  for (Code& c : codes) {
    const std::size_t p = bit / 8;
    std::uint32_t window;
    if (p + 4 <= size) {
      std::memcpy(&window, in_.data() + p, 4);  // little-endian host (static_assert in the codecs)
    } else {
      window = 0;
      for (std::size_t k = 0; p + k < size && k < 4; ++k)
        window |= std::uint32_t{byte_at(in_, p + k)} << (8 * k);
    }
    c = static_cast<Code>((window >> (bit % 8)) & mask);
    bit += bits;
  }
  bit_ = bit;
}

void bit_reader::get(std::span<std::uint8_t> codes, unsigned bits) {
  QG_ENFORCE(bits <= 8, "bits=" << bits << " needs 16-bit codes");
  require(codes.size(), bits);
  if (bit_ % 8 == 0 && bits == 8) {
    std::memcpy(codes.data(), in_.data() + bit_ / 8, codes.size());
    bit_ += 8 * codes.size();
    return;
  }
  if (bit_ % 8 == 0 && bits == 4) {
    const std::size_t pairs = codes.size() / 2;
    const auto* in = reinterpret_cast<const std::uint8_t*>(in_.data() + bit_ / 8);
    std::uint8_t* c = codes.data();
    for (std::size_t k = 0; k < pairs; ++k) {
      c[2 * k] = in[k] & 0x0f;
      c[2 * k + 1] = in[k] >> 4;
    }
    bit_ += 8 * pairs;
    codes = codes.subspan(2 * pairs);
  }
  if (bit_ % 8 == 0 && bits < 8) {
    // Whole groups of 8 codes fill exactly `bits` bytes: one 64-bit load a group (while 8 bytes
    // remain from its first), its codes spread to a byte each.
    const auto* in = reinterpret_cast<const unsigned char*>(in_.data());
    std::size_t p = bit_ / 8, k = 0;
#if defined(__AVX2__)
    if (bits <= 3) {
      const std::size_t g = spread_groups_avx2(in + p, in_.size() - p, bits, codes.size() / 8, codes.data());
      k = 8 * g;
      p += bits * g;
    }
#endif
    for (; k + 8 <= codes.size() && p + 8 <= in_.size(); k += 8, p += bits) {
      std::uint64_t v;
      std::memcpy(&v, in + p, 8);  // little-endian host (static_assert in the codecs)
      v = spread_codes(v, bits);
      std::memcpy(codes.data() + k, &v, 8);
    }
    bit_ = 8 * p;
    codes = codes.subspan(k);
  }
  get_general(codes, bits);
}

void bit_reader::get(std::span<std::uint16_t> codes, unsigned bits) {
  require(codes.size(), bits);
  get_general(codes, bits);
}

bool bit_reader::rest_is_zero() const {
  std::size_t p = bit_ / 8;
  if (p >= in_.size()) return true;
  if (bit_ % 8 != 0) {
    if ((byte_at(in_, p) >> (bit_ % 8)) != 0) return false;
    ++p;
  }
  for (; p < in_.size(); ++p)
    if (byte_at(in_, p) != 0) return false;
  return true;
}

void pack_bits(std::span<const std::uint16_t> codes, unsigned bits, std::span<std::byte> out) {
  QG_ENFORCE(out.size() == packed_size(codes.size(), bits),
             "out=" << out.size() << " codes=" << codes.size());
  bit_writer w(out);
  w.put(codes, bits);
  w.finish();
}

void unpack_bits(std::span<const std::byte> in, unsigned bits, std::span<std::uint16_t> codes) {
  bit_reader r(in);
  r.get(codes, bits);
}

}  // namespace qgossip::kernels
