#pragma once
// Dense bit packing of fixed-width codes: code k occupies bits [k*b, (k+1)*b) of a little-endian,
// LSB-first bit stream (bit j of the stream is bit j % 8 of byte j / 8), the last byte zero-padded.
// So with b = 8 the stream is the codes as bytes, and with b = 4 code 2k is the low nibble of byte k.
// Widths 1..16 are supported. Through the 8-bit API, from a byte boundary, 8 and 4 bits have fast
// paths and the other widths below 8 move whole groups of eight codes (b bytes) at once (with AVX2,
// four groups for widths up to 3); the rest goes through a 64-bit accumulator, code by code.
//
// bit_writer / bit_reader stream codes in pieces (the codecs feed them one tile at a time), so a
// bucket need not start on a byte boundary. Thread safety: one writer/reader per thread.
#include <cstddef>
#include <cstdint>
#include <span>

namespace qgossip::kernels {

inline constexpr unsigned kMaxCodeBits = 16;

// Bytes that hold count codes of the given width.
constexpr std::size_t packed_size(std::size_t count, unsigned bits) { return (count * bits + 7) / 8; }

class bit_writer {
 public:
  // REQUIRES: out has room for every code put() will receive (checked: QG_ENFORCE). The writer owns
  // out: past the bytes written so far it may write zeros (up to 7 bytes ahead) that later codes
  // overwrite.
  explicit bit_writer(std::span<std::byte> out) : out_(out) {}

  // Appends codes; each must be < 2^bits (higher bits would corrupt neighbours; not checked).
  void put(std::span<const std::uint8_t> codes, unsigned bits);
  void put(std::span<const std::uint16_t> codes, unsigned bits);
  // Writes the final partial byte, zero-padded. Returns the number of bytes written in all.
  std::size_t finish();

 private:
  template <typename Code>
  void put_general(std::span<const Code> codes, unsigned bits);
  void reserve(std::size_t count, unsigned bits) const;

  std::span<std::byte> out_;
  std::size_t pos_ = 0;    // next byte of out_ to write
  std::uint64_t acc_ = 0;  // pending bits, LSB first
  unsigned pending_ = 0;   // number of pending bits; < 8 between calls
};

class bit_reader {
 public:
  explicit bit_reader(std::span<const std::byte> in) : in_(in) {}

  // Reads codes.size() codes. REQUIRES: that many remain (checked: QG_ENFORCE); never reads past in.
  void get(std::span<std::uint8_t> codes, unsigned bits);
  void get(std::span<std::uint16_t> codes, unsigned bits);
  // Bits consumed so far.
  std::size_t bit_position() const { return bit_; }
  // True iff every bit after the current position is zero (the padding of a well-formed stream).
  bool rest_is_zero() const;

 private:
  template <typename Code>
  void get_general(std::span<Code> codes, unsigned bits);
  void require(std::size_t count, unsigned bits) const;

  std::span<const std::byte> in_;
  std::size_t bit_ = 0;
};

// One-shot forms. REQUIRES: out.size() == packed_size(codes.size(), bits), resp. in.size() >= that.
void pack_bits(std::span<const std::uint16_t> codes, unsigned bits, std::span<std::byte> out);
void unpack_bits(std::span<const std::byte> in, unsigned bits, std::span<std::uint16_t> codes);

}  // namespace qgossip::kernels
