#include "algorithms/compress/sparse_elias.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>

#include "algorithms/compress/elias.hpp"
#include "core/errors.hpp"

static_assert(std::endian::native == std::endian::little, "the bit window loads are little-endian");

namespace qgossip {
namespace {

// Codes are handled in stream order: bit k of a word is the k-th bit of the stream. An Elias group
// is written most significant bit first, so it enters a word bit-reversed.
std::uint64_t reverse_low(std::uint64_t x, unsigned width) {  // 1 <= width <= 64
  x = ((x >> 1) & 0x5555555555555555ull) | ((x & 0x5555555555555555ull) << 1);
  x = ((x >> 2) & 0x3333333333333333ull) | ((x & 0x3333333333333333ull) << 2);
  x = ((x >> 4) & 0x0F0F0F0F0F0F0F0Full) | ((x & 0x0F0F0F0F0F0F0F0Full) << 4);
  return __builtin_bswap64(x) >> (64 - width);
}

std::uint64_t low_mask(unsigned count) { return count >= 64 ? ~0ull : (1ull << count) - 1; }

struct stream_code {
  std::uint64_t bits = 0;  // stream order
  unsigned length = 0;
};

// Codes of at most 64 bits: n < 2^52.
constexpr std::uint64_t kOneWordLimit = std::uint64_t{1} << 52;

stream_code omega_code(std::uint64_t n) {
  stream_code c{0, 1};  // the final 0
  while (n > 1) {
    const auto width = static_cast<unsigned>(std::bit_width(n));
    c.bits = reverse_low(n, width) | (c.bits << width);  // prepend the group
    c.length += width;
    n = width - 1;
  }
  return c;
}

// Encoding table for the gaps and magnitudes that dominate: n < 1024 (codes of <= 17 bits).
constexpr std::uint64_t kEncodeTable = 1024;
// Decoding table on the next 12 bits: every code of <= 12 bits (n <= 63) in one lookup.
constexpr unsigned kDecodeBits = 12;
struct short_code {
  std::uint16_t value = 0;
  std::uint8_t length = 0;  // 0: the code is longer than kDecodeBits
};

struct tables {
  std::array<stream_code, kEncodeTable> encode;
  std::array<short_code, 1u << kDecodeBits> decode;

  tables() {
    for (std::uint64_t n = 1; n < kEncodeTable; ++n) encode[n] = omega_code(n);
    for (unsigned pattern = 0; pattern < decode.size(); ++pattern) {
      const auto bit = [&](unsigned k) { return (pattern >> k) & 1u; };
      unsigned pos = 0;
      std::uint64_t n = 1;
      for (;;) {
        if (pos >= kDecodeBits) break;
        if (!bit(pos++)) {
          decode[pattern] = short_code{static_cast<std::uint16_t>(n), static_cast<std::uint8_t>(pos)};
          break;
        }
        if (pos + n > kDecodeBits) break;
        std::uint64_t v = 1;
        for (std::uint64_t i = 0; i < n; ++i) v = (v << 1) | bit(pos++);
        n = v;
      }
    }
  }
};

const tables& the_tables() {
  static const tables t;
  return t;
}

}  // namespace

std::uint64_t sparse_elias_max_bits(std::uint64_t len, std::uint64_t max_magnitude) {
  return len * (2 + elias_omega_bits(max_magnitude)) + 1;
}

void sparse_elias_writer::emit(std::uint64_t bits, unsigned count) {
  if (count > 32) {
    emit(bits & 0xFFFFFFFFull, 32);
    emit(bits >> 32, count - 32);
    return;
  }
  acc_ |= bits << pending_;
  pending_ += count;
  if (pending_ >= 32) {
    const std::size_t at = out_.size();
    out_.resize(at + 4);
    for (int k = 0; k < 4; ++k) out_[at + k] = static_cast<std::byte>(acc_ >> (8 * k));
    acc_ >>= 32;
    pending_ -= 32;
    flushed_bits_ += 32;
  }
}

void sparse_elias_writer::emit_omega(std::uint64_t n) {
  if (n < kEncodeTable) {
    const stream_code& c = the_tables().encode[n];
    emit(c.bits, c.length);
    return;
  }
  // Gaps are at most a bucket's length + 1 and magnitudes < 2^31, so every code fits one word.
  QG_ENFORCE(n < kOneWordLimit, "n=" << n);
  const stream_code c = omega_code(n);
  emit(c.bits, c.length);
}

void sparse_elias_writer::put(std::span<const std::int32_t> values) {
  const tables& t = the_tables();
  for (const std::int32_t x : values) {
    ++pos_;
    if (x == 0) continue;
    const std::uint64_t gap = pos_ - last_;
    const auto magnitude = static_cast<std::uint64_t>(x < 0 ? -static_cast<std::int64_t>(x) : x);
    last_ = pos_;
    if (gap < kEncodeTable && magnitude < kEncodeTable) {  // the common case: one or two emits
      const stream_code& g = t.encode[gap];
      const stream_code& m = t.encode[magnitude];
      const std::uint64_t bits = g.bits | (std::uint64_t{x < 0} << g.length) | (m.bits << (g.length + 1));
      const unsigned length = g.length + 1 + m.length;  // <= 35
      if (length <= 32) {
        emit(bits, length);
      } else {
        emit(bits & 0xFFFFFFFFull, 32);
        emit(bits >> 32, length - 32);
      }
      continue;
    }
    emit_omega(gap);
    emit(x < 0 ? 1 : 0, 1);
    emit_omega(magnitude);
  }
}

void sparse_elias_writer::end_bucket() {
  emit_omega(pos_ + 1 - last_);
  pos_ = 0;
  last_ = 0;
}

void sparse_elias_writer::finish() {
  if (pending_ % 8 != 0) {
    const unsigned pad = 8 - pending_ % 8;
    emit(low_mask(pad), pad);
  }
  while (pending_ >= 8) {
    out_.push_back(static_cast<std::byte>(acc_));
    acc_ >>= 8;
    pending_ -= 8;
    flushed_bits_ += 8;
  }
}

sparse_elias_reader::sparse_elias_reader(std::span<const std::byte> in, std::uint64_t max_magnitude)
    : in_(in), total_bits_(std::uint64_t{in.size()} * 8), max_magnitude_(max_magnitude) {
  QG_ENFORCE(max_magnitude <= std::uint64_t{std::numeric_limits<std::int32_t>::max()},
             "max_magnitude=" << max_magnitude);
}

std::uint64_t sparse_elias_reader::peek() const {
  const std::size_t byte = static_cast<std::size_t>(bit_ / 8);
  std::uint64_t w = 0;
  if (byte + 8 <= in_.size())
    std::memcpy(&w, in_.data() + byte, 8);
  else if (byte < in_.size())
    std::memcpy(&w, in_.data() + byte, in_.size() - byte);
  return w >> (bit_ % 8);
}

bool sparse_elias_reader::read_bits_msb(unsigned count, std::uint64_t& value) {
  if (count > total_bits_ - bit_) return false;
  if (count == 0) {
    value = 0;
    return true;
  }
  if (count > 32) {  // the first bits are the most significant
    std::uint64_t hi = 0, lo = 0;
    if (!read_bits_msb(count - 32, hi) || !read_bits_msb(32, lo)) return false;
    value = (hi << 32) | lo;
    return true;
  }
  value = reverse_low(peek() & low_mask(count), count);
  bit_ += count;
  return true;
}

bool sparse_elias_reader::read_omega(std::uint64_t& n) {
  const short_code c = the_tables().decode[peek() & low_mask(kDecodeBits)];
  if (c.length != 0) {
    // The table read zeros past the end; a code that needs them is truncated.
    if (c.length > total_bits_ - bit_) return false;
    bit_ += c.length;
    n = c.value;
    return true;
  }
  n = 1;
  for (;;) {
    if (bit_ >= total_bits_) return false;
    const bool more = (peek() & 1u) != 0;
    ++bit_;
    if (!more) return true;
    if (n >= 64) return false;  // the group would exceed 64 bits
    std::uint64_t rest = 0;
    if (!read_bits_msb(static_cast<unsigned>(n), rest)) return false;
    n = (std::uint64_t{1} << n) | rest;
  }
}

sparse_elias_fault sparse_elias_reader::read_gap() {
  std::uint64_t gap = 0;
  if (!read_omega(gap)) return sparse_elias_fault::truncated;
  // next_ = pos_ + gap must not pass the end marker len_ + 1 (written so that it cannot overflow).
  if (gap > len_ + 1 - pos_) return sparse_elias_fault::gap;
  next_ = pos_ + gap;
  return sparse_elias_fault::none;
}

sparse_elias_fault sparse_elias_reader::begin_bucket(std::uint64_t len) {
  QG_ENFORCE(len < std::numeric_limits<std::uint64_t>::max(), "len=" << len);
  len_ = len;
  pos_ = 0;
  return read_gap();
}

sparse_elias_fault sparse_elias_reader::get(std::span<std::int32_t> out) {
  QG_ENFORCE(out.size() <= len_ - pos_, "reading " << out.size() << " values with " << len_ - pos_ << " left");
  const tables& t = the_tables();
  const std::size_t count = out.size();
  std::size_t i = 0;
  while (i < count) {
    // The zeros before the next nonzero (or the end marker), as one fill.
    const std::uint64_t zeros = std::min<std::uint64_t>(next_ - pos_ - 1, count - i);
    std::fill_n(out.data() + i, zeros, 0);
    i += zeros;
    pos_ += zeros;
    if (i == count) break;
    ++pos_;  // == next_: a nonzero
    // Fast path: sign, magnitude and the next gap from one window, when both codes are short and
    // the window lies inside the stream (1 + 12 + 12 bits <= the 57 a peek guarantees).
    if (total_bits_ - bit_ >= 64) {
      const std::uint64_t w = peek();
      const short_code m = t.decode[(w >> 1) & low_mask(kDecodeBits)];
      if (m.length != 0) {
        const short_code g = t.decode[(w >> (1 + m.length)) & low_mask(kDecodeBits)];
        if (g.length != 0) {
          if (m.value > max_magnitude_) {
            --pos_;
            return sparse_elias_fault::magnitude;
          }
          if (g.value > len_ + 1 - pos_) {
            --pos_;
            return sparse_elias_fault::gap;
          }
          out[i++] = (w & 1u) ? -static_cast<std::int32_t>(m.value) : static_cast<std::int32_t>(m.value);
          bit_ += 1 + m.length + g.length;
          next_ = pos_ + g.value;
          continue;
        }
      }
    }
    if (bit_ >= total_bits_) {
      --pos_;
      return sparse_elias_fault::truncated;
    }
    const bool negative = (peek() & 1u) != 0;
    ++bit_;
    std::uint64_t magnitude = 0;
    if (!read_omega(magnitude)) {
      --pos_;
      return sparse_elias_fault::truncated;
    }
    if (magnitude > max_magnitude_) {
      --pos_;
      return sparse_elias_fault::magnitude;
    }
    out[i++] = negative ? -static_cast<std::int32_t>(magnitude) : static_cast<std::int32_t>(magnitude);
    if (const sparse_elias_fault f = read_gap(); f != sparse_elias_fault::none) {
      --pos_;
      return f;
    }
  }
  return sparse_elias_fault::none;
}

bool sparse_elias_reader::at_end() const {
  const std::uint64_t left = total_bits_ - bit_;
  if (left >= 8) return false;
  const std::uint64_t mask = low_mask(static_cast<unsigned>(left));
  return (peek() & mask) == mask;
}

std::string to_string(sparse_elias_fault f, std::string_view magnitude_what) {
  switch (f) {
    case sparse_elias_fault::truncated:
      return "payload ends inside, or holds an over-64-bit Elias code,";
    case sparse_elias_fault::gap:
      return "a gap points past the end of the bucket";
    case sparse_elias_fault::magnitude:
      return std::string(magnitude_what);
    case sparse_elias_fault::none:
      break;
  }
  return "unknown fault";
}

}  // namespace qgossip
