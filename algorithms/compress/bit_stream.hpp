#pragma once
// Variable-length bit streams for entropy-style codings (Elias omega, run-length, sparse QSGD).
// Bits are written in order and stored LSB-first within each byte (bit j of the stream is bit j % 8
// of byte j / 8), the same convention as kernels/cpu/bitpack.hpp, with the last byte zero-padded.
// put_bits/get_bits move an n-bit number most significant bit first, so binary(N) reads as written.
// (Fixed-width dense codes have a faster path: kernels/cpu/bitpack.hpp.)
//
// The reader never reads past its span: every get returns false once the bits run out, so a
// decoder fed a truncated or random payload reports corruption instead of reading out of bounds.
// Thread safety: one writer/reader per thread.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace qgossip {

class bit_stream_writer {
 public:
  // Appends to out (which may already hold bytes: the stream starts at a byte boundary there).
  explicit bit_stream_writer(std::vector<std::byte>& out) : out_(out), start_(out.size()) {}

  void put_bit(bool bit);
  // The low n bits of value, most significant first. REQUIRES: n <= 64.
  void put_bits(std::uint64_t value, unsigned n);
  // Bits written so far.
  std::size_t bits() const { return bits_; }
  // Bytes this stream occupies in out (the last one zero-padded).
  std::size_t bytes() const { return (bits_ + 7) / 8; }

 private:
  std::vector<std::byte>& out_;
  std::size_t start_;
  std::size_t bits_ = 0;
};

class bit_stream_reader {
 public:
  explicit bit_stream_reader(std::span<const std::byte> in) : in_(in) {}

  [[nodiscard]] bool get_bit(bool& bit);
  // Reads n bits, most significant first. REQUIRES: n <= 64. False (value unspecified) past the end.
  [[nodiscard]] bool get_bits(unsigned n, std::uint64_t& value);
  std::size_t bits_read() const { return pos_; }
  std::size_t bits_left() const { return in_.size() * 8 - pos_; }
  // True when every bit after the current position is zero (the padding of a well-formed stream)
  // and fewer than 8 remain.
  bool at_padding() const;

 private:
  std::span<const std::byte> in_;
  std::size_t pos_ = 0;
};

}  // namespace qgossip
