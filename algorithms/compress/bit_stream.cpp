#include "algorithms/compress/bit_stream.hpp"

#include "core/errors.hpp"

namespace qgossip {

void bit_stream_writer::put_bit(bool bit) {
  const std::size_t byte = start_ + bits_ / 8;
  if (byte == out_.size()) out_.push_back(std::byte{0});
  if (bit) out_[byte] |= std::byte{static_cast<unsigned char>(1u << (bits_ % 8))};
  ++bits_;
}

void bit_stream_writer::put_bits(std::uint64_t value, unsigned n) {
  QG_ENFORCE(n <= 64, "n=" << n);
  for (unsigned i = n; i-- > 0;) put_bit((value >> i) & 1u);
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
  value = 0;
  for (unsigned i = 0; i < n; ++i) {
    bool b = false;
    (void)get_bit(b);
    value = (value << 1) | (b ? 1u : 0u);
  }
  return true;
}

bool bit_stream_reader::at_padding() const {
  if (bits_left() >= 8) return false;
  for (std::size_t p = pos_; p < in_.size() * 8; ++p)
    if ((std::to_integer<unsigned>(in_[p / 8]) >> (p % 8)) & 1u) return false;
  return true;
}

}  // namespace qgossip
