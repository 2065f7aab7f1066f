#include "algorithms/compress/isgq_packing.hpp"

#include <algorithm>
#include <bit>

#include "core/errors.hpp"

namespace qgossip::isgq_parts {

namespace {

std::uint64_t power(std::uint64_t base, unsigned exponent) {
  std::uint64_t r = 1;
  while (exponent-- > 0) r *= base;
  return r;
}

unsigned word_bits(std::uint32_t base, unsigned digits) {
  return static_cast<unsigned>(std::bit_width(power(base, digits) - 1));
}


class word_writer {
 public:
  explicit word_writer(std::span<std::byte> out) : out_(out) {}
  void put(std::uint32_t word, unsigned bits) {  // bits <= 32, word < 2^bits
    acc_ |= std::uint64_t{word} << pending_;
    pending_ += bits;
    while (pending_ >= 8) {
      QG_ENFORCE(pos_ < out_.size(), "isgq: packing overruns its " << out_.size() << " bytes");
      out_[pos_++] = static_cast<std::byte>(acc_ & 0xffu);
      acc_ >>= 8;
      pending_ -= 8;
    }
  }
  void finish() {
    if (pending_ > 0) put(0, 8 - pending_);
    QG_ENFORCE(pos_ == out_.size(), "isgq: packed " << pos_ << " bytes into " << out_.size());
  }

 private:
  std::span<std::byte> out_;
  std::size_t pos_ = 0;
  std::uint64_t acc_ = 0;
  unsigned pending_ = 0;  // < 8 between calls
};

class word_reader {
 public:
  explicit word_reader(std::span<const std::byte> in) : in_(in) {}
  // REQUIRES: the bits are there (the payload size is checked before any read).
  std::uint32_t get(unsigned bits) {
    while (avail_ < bits) {
      QG_ENFORCE(pos_ < in_.size(), "isgq: unpacking overruns its " << in_.size() << " bytes");
      acc_ |= std::uint64_t{std::to_integer<std::uint8_t>(in_[pos_++])} << avail_;
      avail_ += 8;
    }
    const auto word = static_cast<std::uint32_t>(acc_ & ((std::uint64_t{1} << bits) - 1));
    acc_ >>= bits;
    avail_ -= bits;
    return word;
  }
  bool rest_is_zero() const {
    return acc_ == 0 && std::all_of(in_.begin() + static_cast<std::ptrdiff_t>(pos_), in_.end(),
                                    [](std::byte b) { return b == std::byte{0}; });
  }

 private:
  std::span<const std::byte> in_;
  std::size_t pos_ = 0;
  std::uint64_t acc_ = 0;
  unsigned avail_ = 0;
};

std::uint32_t group_word(const std::uint16_t* codes, std::size_t digits, std::uint32_t base) {
  std::uint64_t w = 0;
  for (std::size_t d = digits; d-- > 0;) w = w * base + codes[d];
  return static_cast<std::uint32_t>(w);
}

// Division of 32-bit words by the base without a divide instruction (Lemire, Kaser & Kurz, "Faster
// remainder by direct computation", 2019): exact for every 32-bit n and divisor d >= 2.
struct fast_divisor {
  std::uint32_t d;
  std::uint64_t m;  // floor((2^64 - 1) / d) + 1
  explicit fast_divisor(std::uint32_t divisor) : d(divisor), m(~std::uint64_t{0} / divisor + 1) {}
  std::uint32_t quotient(std::uint32_t n) const {
    return static_cast<std::uint32_t>((static_cast<unsigned __int128>(m) * n) >> 64);
  }
  std::uint32_t remainder(std::uint32_t n) const {
    const std::uint64_t low = m * n;
    return static_cast<std::uint32_t>((static_cast<unsigned __int128>(low) * d) >> 64);
  }
};

}  // namespace

packing packing_for(std::uint32_t levels) {
  packing p;
  p.base = 2 * levels + 1;
  p.group = 1;
  p.bits = word_bits(p.base, 1);
  // base <= 65535, so base^g stays below 2^48 while the loop runs.
  for (unsigned g = 2; power(p.base, g) <= (std::uint64_t{1} << 32); ++g) {
    const unsigned b = word_bits(p.base, g);
    if (std::uint64_t{b} * p.group < std::uint64_t{p.bits} * g) {
      p.group = g;
      p.bits = b;
    }
  }
  p.limit = power(p.base, p.group);
  return p;
}

std::size_t packed_bytes(std::size_t count, const packing& p) {
  const std::size_t rest = count % p.group;
  const std::size_t bits = count / p.group * p.bits + (rest > 0 ? word_bits(p.base, static_cast<unsigned>(rest)) : 0);
  return (bits + 7) / 8;
}

void pack_codes(std::span<const std::uint16_t> codes, const packing& p, std::span<std::byte> out) {
  word_writer writer(out);
  std::size_t i = 0;
  for (; i + p.group <= codes.size(); i += p.group) writer.put(group_word(codes.data() + i, p.group, p.base), p.bits);
  if (i < codes.size()) {
    const std::size_t rest = codes.size() - i;
    writer.put(group_word(codes.data() + i, rest, p.base), word_bits(p.base, static_cast<unsigned>(rest)));
  }
  writer.finish();
}


unpack_result unpack_codes(std::span<const std::byte> in, const packing& p, std::span<std::uint16_t> codes) {
  word_reader reader(in);
  const fast_divisor base(p.base);
  std::size_t i = 0;
  auto split = [&](std::uint32_t word, std::size_t digits) {
    for (std::size_t d = 0; d < digits; ++d) {
      codes[i + d] = static_cast<std::uint16_t>(base.remainder(word));
      word = base.quotient(word);
    }
  };
  for (; i + p.group <= codes.size(); i += p.group) {
    const std::uint32_t word = reader.get(p.bits);
    if (word >= p.limit) return {unpack_fault::word, i};
    split(word, p.group);
  }
  if (i < codes.size()) {
    const auto rest = static_cast<unsigned>(codes.size() - i);
    const std::uint32_t word = reader.get(word_bits(p.base, rest));
    if (word >= power(p.base, rest)) return {unpack_fault::word, i};
    split(word, rest);
  }
  if (!reader.rest_is_zero()) return {unpack_fault::padding, codes.size()};
  return {};
}

}  // namespace qgossip::isgq_parts
