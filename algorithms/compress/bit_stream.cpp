#include "algorithms/compress/bit_stream.hpp"

#include <algorithm>

#include "core/errors.hpp"

namespace qgossip {

void bit_stream_writer::put_bit(bool bit) {
  const std::size_t byte = start_ + bits_ / 8;
  if (byte == out_.size()) out_.push_back(std::byte{0});
  if (bit) out_[byte] |= std::byte{static_cast<unsigned char>(1u << (bits_ % 8))};
  ++bits_;
}

namespace {

// The low n bits of v in reverse order (bit 0 <-> bit n-1). The stream stores the first bit of a
// value in its lowest free bit, so an MSB-first value is written bit-reversed. REQUIRES: 1 <= n <= 64.
std::uint64_t reverse_low(std::uint64_t v, unsigned n) {
  v = __builtin_bswap64(v);
  v = ((v >> 1) & 0x5555555555555555ull) | ((v & 0x5555555555555555ull) << 1);
  v = ((v >> 2) & 0x3333333333333333ull) | ((v & 0x3333333333333333ull) << 2);
  v = ((v >> 4) & 0x0F0F0F0F0F0F0F0Full) | ((v & 0x0F0F0F0F0F0F0F0Full) << 4);
  return v >> (64 - n);
}

}  // namespace

void bit_stream_writer::put_bits(std::uint64_t value, unsigned n) {
  QG_ENFORCE(n <= 64, "n=" << n);
  if (n == 0) return;
  if (n < 64) value &= (std::uint64_t{1} << n) - 1;
  std::uint64_t r = reverse_low(value, n);
  unsigned left = n;
  const unsigned used = static_cast<unsigned>(bits_ % 8);
  if (used != 0) {  // fill the partial last byte first
    const unsigned take = std::min(8u - used, left);
    out_.back() |= std::byte{static_cast<unsigned char>((r << used) & 0xFFu)};
    r = take == 64 ? 0 : r >> take;
    left -= take;
  }
  while (left > 0) {
    out_.push_back(std::byte{static_cast<unsigned char>(r & 0xFFu)});
    const unsigned take = std::min(8u, left);
    r >>= take;
    left -= take;
  }
  bits_ += n;
}

bool bit_stream_reader::get_bit(bool& bit) {
  if (pos_ >= in_.size() * 8) return false;
  bit = (std::to_integer<unsigned>(in_[pos_ / 8]) >> (pos_ % 8)) & 1u;
  ++pos_;
  return true;
}

bool bit_stream_reader::get_bits(unsigned n, std::uint64_t& value) {
  QG_ENFORCE(n <= 64, "n=" << n);
  if (n > bits_left()) return false;
  if (n == 0) {
    value = 0;
    return true;
  }
  std::uint64_t v = 0;  // first bit read in bit 0
  unsigned got = 0;
  while (got < n) {
    const unsigned offset = static_cast<unsigned>(pos_ % 8);
    const unsigned take = std::min(8u - offset, n - got);
    const std::uint64_t bits = (std::to_integer<unsigned>(in_[pos_ / 8]) >> offset) & ((1u << take) - 1u);
    v |= bits << got;
    got += take;
    pos_ += take;
  }
  value = reverse_low(v, n);
  return true;
}

bool bit_stream_reader::at_padding() const {
  if (bits_left() >= 8) return false;
  for (std::size_t p = pos_; p < in_.size() * 8; ++p)
    if ((std::to_integer<unsigned>(in_[p / 8]) >> (p % 8)) & 1u) return false;
  return true;
}

}  // namespace qgossip
