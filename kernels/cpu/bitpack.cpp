#include "kernels/cpu/bitpack.hpp"

#include <cstring>

#include "core/errors.hpp"

namespace qgossip::kernels {
namespace {

inline std::uint8_t byte_at(std::span<const std::byte> in, std::size_t i) {
  return std::to_integer<std::uint8_t>(in[i]);
}

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
    // Whole groups of 8 codes fill exactly `bits` bytes: each group gathered into 64 bits, its
    // `bits` low bytes written.
    auto* out = reinterpret_cast<unsigned char*>(out_.data() + pos_);
    const std::uint8_t* c = codes.data();
    const std::size_t groups = codes.size() / 8;
    for (std::size_t g = 0; g < groups; ++g, c += 8, out += bits) {
      std::uint64_t v = 0;
      for (unsigned j = 0; j < 8; ++j) v |= std::uint64_t{c[j]} << (bits * j);
      for (unsigned b = 0; b < bits; ++b) out[b] = static_cast<unsigned char>(v >> (8 * b));
    }
    pos_ += groups * bits;
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
    // remain from its first), the codes shifted out of it.
    const std::uint64_t mask = (1u << bits) - 1;
    const auto* in = reinterpret_cast<const unsigned char*>(in_.data());
    std::size_t p = bit_ / 8, k = 0;
    for (; k + 8 <= codes.size() && p + 8 <= in_.size(); k += 8, p += bits) {
      std::uint64_t v;
      std::memcpy(&v, in + p, 8);  // little-endian host (static_assert in the codecs)
      for (unsigned j = 0; j < 8; ++j) codes[k + j] = static_cast<std::uint8_t>((v >> (bits * j)) & mask);
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
