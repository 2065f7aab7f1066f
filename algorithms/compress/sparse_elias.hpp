#pragma once
// The sparse coding of QSGD (Alistarh et al. §3.1, coding=elias) and NUQSGD (Appendix A) for one
// bucket of signed integers, most of them zero: for each nonzero x, in order, at 1-based position p,
//
//     Elias(p - p_prev)   the gap from the previous nonzero (p_prev = 0 before the first), >= 1
//     1 bit               the sign, 1 = negative
//     Elias(|x|)          the magnitude, >= 1
//
// and then the end marker Elias(len + 1 - p_last) (p_last = 0 for an all-zero bucket): a gap to the
// position one past the end. The papers end the stream at the last nonzero, which a decoder of
// several buckets (or of trailing zeros) cannot see; the marker costs |Elias(len + 1 - p_last)| bits
// per bucket, 1 bit when the last value is nonzero, at most |Elias(len + 1)|.
// Elias = Elias omega (elias.hpp). Bits are laid out as bit_stream.hpp lays them (LSB-first in each
// byte, each group of an Elias code most significant bit first), so elias.hpp over a bit_stream
// reads and writes the same streams; this file has its own table-driven coder because the
// bit-at-a-time bit_stream is too slow for the codecs' hot loops (~4x here).
//
// A payload's buckets are followed by 1-bits up to the byte boundary (finish()), not by zeros:
// "0" is Elias(1), so zero padding would parse as one more value and a decoder told n + 1 values
// could accept an encoding of n. With 1s the phantom value's sign and magnitude run out of bits (an
// all-ones Elias code is longer than 7 bits), so every other count fails.
//
// Longest bucket: every value nonzero at the largest magnitude m, len * (2 + |Elias(m)|) + 1 bits
// (sparse_elias_max_bits; plus at most 7 padding bits per payload). Any other bucket is shorter:
// turning the g - 1 zeros inside a gap g >= 2 into nonzeros replaces |Elias(g)| bits by
// g + (g - 1)(1 + |Elias(m)|) >= 3g - 2 >= |Elias(g)| bits.
//
// Both classes stream a bucket in pieces (tiles), so no per-bucket buffer is needed.
// Thread safety: one writer/reader per thread.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qgossip {

// Most bits a bucket of len values with magnitudes <= max_magnitude takes (see above).
// REQUIRES: max_magnitude >= 1.
[[nodiscard]] std::uint64_t sparse_elias_max_bits(std::uint64_t len, std::uint64_t max_magnitude);

class sparse_elias_writer {
 public:
  // Appends to out, from a byte boundary at out.size(); out is complete only after finish().
  explicit sparse_elias_writer(std::vector<std::byte>& out) : out_(out) {}

  // The next values of the current bucket. REQUIRES: each x > INT32_MIN.
  void put(std::span<const std::int32_t> values);
  // Writes the end marker of the current bucket (whose length is the count of values put since the
  // previous end_bucket) and starts the next bucket.
  void end_bucket();
  // Pads with 1-bits to a byte boundary and flushes everything to out. Call once, at the end.
  void finish();
  // Bits written so far (padding included after finish()).
  std::uint64_t bits() const { return flushed_bits_ + pending_; }

 private:
  void emit(std::uint64_t bits, unsigned count);  // bits in stream order, count <= 64
  void emit_omega(std::uint64_t n);

  std::vector<std::byte>& out_;
  std::uint64_t acc_ = 0;   // pending bits, stream order from bit 0
  unsigned pending_ = 0;    // < 32 between calls
  std::uint64_t flushed_bits_ = 0;
  std::uint64_t pos_ = 0;   // values put in this bucket
  std::uint64_t last_ = 0;  // 1-based position of its last nonzero, 0 if none yet
};

enum class sparse_elias_fault : std::uint8_t {
  none = 0,
  truncated,  // the bits ran out, or an Elias code would exceed 64 bits
  gap,        // a gap that points past the bucket's end marker
  magnitude,  // |x| above the maximum the caller allows
};

// The fault as a phrase for a decode error; `magnitude_what` names the caller's limit
// ("a level above s").
std::string to_string(sparse_elias_fault f, std::string_view magnitude_what);

class sparse_elias_reader {
 public:
  // Reads the stream that fills in (which must start at its first bit). Magnitudes above
  // max_magnitude are a fault. REQUIRES: max_magnitude <= INT32_MAX (QG_ENFORCE).
  sparse_elias_reader(std::span<const std::byte> in, std::uint64_t max_magnitude);

  // Starts a bucket of len values (reads the gap to its first nonzero or to its end marker).
  [[nodiscard]] sparse_elias_fault begin_bucket(std::uint64_t len);
  // Decodes the next out.size() values of the bucket; the bucket is complete (end marker included)
  // once len values have been read. REQUIRES: no more than len values in all (QG_ENFORCE).
  [[nodiscard]] sparse_elias_fault get(std::span<std::int32_t> out);
  // 0-based position in the bucket of the value being decoded when a fault was returned.
  std::uint64_t position() const { return pos_; }
  // True iff what is left is the padding finish() writes: fewer than 8 bits, all 1.
  [[nodiscard]] bool at_end() const;
  std::uint64_t bits_read() const { return bit_; }

 private:
  std::uint64_t peek() const;  // the next 57+ bits in stream order, zeros past the end
  [[nodiscard]] bool read_bits_msb(unsigned count, std::uint64_t& value);  // count <= 64
  [[nodiscard]] bool read_omega(std::uint64_t& n);
  [[nodiscard]] sparse_elias_fault read_gap();

  std::span<const std::byte> in_;
  std::uint64_t total_bits_;
  std::uint64_t bit_ = 0;
  std::uint64_t max_magnitude_;
  std::uint64_t len_ = 0;
  std::uint64_t pos_ = 0;   // values decoded in this bucket
  std::uint64_t next_ = 0;  // 1-based position of the next nonzero; len_ + 1 = the end marker
};

}  // namespace qgossip
