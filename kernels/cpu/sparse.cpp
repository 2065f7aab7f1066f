#include "kernels/cpu/sparse.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>

#include "core/errors.hpp"
#include "kernels/cpu/uniforms.hpp"

static_assert(std::endian::native == std::endian::little, "position codings are read as little-endian words");

namespace qgossip::kernels {
namespace {

// Values per step of the Bernoulli selection: uniforms, kept positions and values of one tile stay
// in L1.
constexpr std::size_t kTile = 2048;
constexpr std::uint64_t kMaxElements = std::uint64_t{1} << 32;  // positions are 32-bit

// The c-th 32-bit word of a Philox stream (word c % 4 of block c / 4), one block cached.
class word_source {
 public:
  explicit word_source(const philox_stream& rng) : rng_(rng) {}
  std::uint32_t next() {
    if (count_ % 4 == 0) block_ = rng_.block(count_ / 4);
    return block_.w[count_++ % 4];
  }

 private:
  const philox_stream& rng_;
  philox_block block_;
  std::uint64_t count_ = 0;
};

// A uniform integer in [0, range) by Lemire's multiply-and-reject: exact, usually one word.
// REQUIRES: 1 <= range < 2^32.
std::uint32_t uniform_below(word_source& words, std::uint32_t range) {
  std::uint64_t m = std::uint64_t{words.next()} * range;
  auto low = static_cast<std::uint32_t>(m);
  if (low < range) {
    const std::uint32_t reject = static_cast<std::uint32_t>(-range) % range;  // 2^32 mod range
    while (low < reject) {
      m = std::uint64_t{words.next()} * range;
      low = static_cast<std::uint32_t>(m);
    }
  }
  return static_cast<std::uint32_t>(m >> 32);
}

// Ascending positions of the set bits of a bitmap of 64-bit words.
void bitmap_positions(std::span<const std::uint64_t> words, std::vector<std::uint32_t>& positions) {
  for (std::size_t w = 0; w < words.size(); ++w)
    for (std::uint64_t bits = words[w]; bits != 0; bits &= bits - 1)
      positions.push_back(static_cast<std::uint32_t>(64 * w + static_cast<unsigned>(std::countr_zero(bits))));
}

inline std::uint32_t magnitude_bits(float x) { return std::bit_cast<std::uint32_t>(x) & 0x7fffffffu; }

// LSB-first bit writer into a span of known size; put() takes up to 32 bits.
class lsb_writer {
 public:
  explicit lsb_writer(std::span<std::byte> out) : out_(out) {}
  void put(std::uint64_t value, unsigned bits) {
    acc_ |= value << fill_;
    fill_ += bits;
    if (fill_ >= 32) {
      QG_ENFORCE(pos_ + 4 <= out_.size(), "position coding overruns its " << out_.size() << " bytes");
      const auto word = static_cast<std::uint32_t>(acc_);
      std::memcpy(out_.data() + pos_, &word, 4);
      pos_ += 4;
      acc_ >>= 32;
      fill_ -= 32;
    }
  }
  // Writes the last partial bytes; returns the bytes written in all.
  std::size_t finish() {
    for (; fill_ > 0; fill_ = fill_ > 8 ? fill_ - 8 : 0) {
      QG_ENFORCE(pos_ < out_.size(), "position coding overruns its " << out_.size() << " bytes");
      out_[pos_++] = static_cast<std::byte>(acc_ & 0xffu);
      acc_ >>= 8;
    }
    return pos_;
  }

 private:
  std::span<std::byte> out_;
  std::size_t pos_ = 0;
  std::uint64_t acc_ = 0;
  unsigned fill_ = 0;  // pending bits in acc_, < 32 between calls
};

// LSB-first bit reader that never touches a byte outside its span.
class lsb_reader {
 public:
  static constexpr unsigned kWindow = 57;  // bits a window() always holds when that many remain

  explicit lsb_reader(std::span<const std::byte> in) : in_(in) {}
  std::size_t left() const { return 8 * in_.size() - pos_; }
  // The next bits from the current position, bit 0 first; zeros past the end.
  std::uint64_t window() const {
    const std::size_t byte = pos_ / 8;
    std::uint64_t w = 0;
    if (byte + 8 <= in_.size())
      std::memcpy(&w, in_.data() + byte, 8);  // the common case: one unaligned load
    else if (byte < in_.size())
      std::memcpy(&w, in_.data() + byte, in_.size() - byte);
    return w >> (pos_ % 8);
  }
  void skip(std::size_t bits) { pos_ += bits; }

 private:
  std::span<const std::byte> in_;
  std::size_t pos_ = 0;
};

position_fault decode_bitmap(std::span<const std::byte> in, std::size_t n, std::span<std::uint32_t> positions) {
  if (in.size() != bitmap_bytes(n)) return position_fault::size;
  std::size_t count = 0;
  for (std::size_t byte = 0; byte < in.size(); byte += 8) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, in.data() + byte, std::min<std::size_t>(8, in.size() - byte));
    for (; bits != 0; bits &= bits - 1) {
      const std::size_t p = 8 * byte + static_cast<unsigned>(std::countr_zero(bits));
      if (p >= n) return position_fault::padding;
      if (count == positions.size()) return position_fault::count;
      positions[count++] = static_cast<std::uint32_t>(p);
    }
  }
  return count == positions.size() ? position_fault::none : position_fault::count;
}

position_fault decode_rice(std::span<const std::byte> in, std::size_t n, unsigned r,
                           std::span<std::uint32_t> positions) {
  lsb_reader reader(in);
  const std::uint64_t max_quotient = n >> r;
  std::uint64_t next = 0;  // the smallest value the next position may take
  for (std::uint32_t& position : positions) {
    // Unary quotient: a run of one-bits ended by a zero-bit, possibly longer than one window.
    std::uint64_t q = 0;
    for (;;) {
      if (reader.left() == 0) return position_fault::count;
      const auto avail = static_cast<unsigned>(std::min<std::size_t>(lsb_reader::kWindow, reader.left()));
      const unsigned ones = std::min(static_cast<unsigned>(std::countr_one(reader.window())), avail);
      q += ones;
      if (q > max_quotient) return position_fault::range;  // bounds the loop on a run of ones
      if (ones < avail) {
        reader.skip(ones + 1);
        break;
      }
      reader.skip(ones);
    }
    std::uint64_t remainder = 0;
    if (r > 0) {
      if (reader.left() < r) return position_fault::count;
      remainder = reader.window() & ((std::uint64_t{1} << r) - 1);
      reader.skip(r);
    }
    const std::uint64_t p = next + ((q << r) | remainder);  // q <= n >> r: no overflow
    if (p >= n) return position_fault::range;
    position = static_cast<std::uint32_t>(p);
    next = p + 1;
  }
  if (reader.left() >= 8) return position_fault::size;
  if (reader.window() != 0) return position_fault::padding;
  return position_fault::none;
}

}  // namespace

void bernoulli_select(std::span<const float> v, const philox_stream& rng, std::uint32_t threshold, float scale,
                      std::vector<std::uint32_t>& positions, std::vector<float>& values) {
  QG_ENFORCE(threshold >= 1 && threshold <= (1u << 24), "threshold=" << threshold);
  QG_ENFORCE(v.size() < kMaxElements, "n=" << v.size());
  // u = k * 2^-24 with k = word >> 8, so u < threshold * 2^-24 iff k < threshold (both exact floats).
  const float cut = static_cast<float>(threshold) * 0x1p-24f;
  // Room for the expected count and some: growing a vector of millions costs page faults and copies.
  const double expected = static_cast<double>(v.size()) * threshold * 0x1p-24;
  const auto room = static_cast<std::size_t>(expected * 1.05) + 4096;
  positions.reserve(positions.size() + room);
  values.reserve(values.size() + room);
  alignas(64) float u[kTile];
  alignas(64) std::uint8_t keep[kTile];
  for (std::size_t start = 0; start < v.size(); start += kTile) {
    const std::size_t m = std::min(kTile, v.size() - start);
    philox_uniforms(rng, start, std::span<float>(u, m));
    for (std::size_t i = 0; i < m; ++i) keep[i] = u[i] < cut ? 1 : 0;  // vectorizes
    std::fill(keep + m, keep + (m + 7) / 8 * 8, std::uint8_t{0});
    // Eight flags at a time as one word: skip empty groups, visit the set bytes.
    for (std::size_t g = 0; g < m; g += 8) {
      std::uint64_t flags;
      std::memcpy(&flags, keep + g, 8);
      for (; flags != 0; flags &= flags - 1) {
        const std::size_t i = start + g + static_cast<unsigned>(std::countr_zero(flags)) / 8;
        positions.push_back(static_cast<std::uint32_t>(i));
        values.push_back(v[i] * scale);
      }
    }
  }
}

void sample_positions(const philox_stream& rng, std::uint64_t n, std::uint64_t k,
                      std::vector<std::uint32_t>& positions) {
  QG_ENFORCE(k <= n && n < kMaxElements, "k=" << k << " n=" << n);
  positions.clear();
  positions.reserve(k);
  std::vector<std::uint64_t> taken((n + 63) / 64, 0);
  word_source words(rng);
  for (std::uint64_t j = n - k; j < n; ++j) {
    const std::uint32_t t = uniform_below(words, static_cast<std::uint32_t>(j + 1));
    const std::uint64_t pick = (taken[t / 64] >> (t % 64)) & 1u ? j : t;
    taken[pick / 64] |= std::uint64_t{1} << (pick % 64);
  }
  bitmap_positions(taken, positions);
}

void top_k_positions(std::span<const float> v, std::size_t k, std::vector<std::uint32_t>& positions) {
  const std::size_t n = v.size();
  QG_ENFORCE(k <= n && n < kMaxElements, "k=" << k << " n=" << n);
  positions.clear();
  positions.reserve(k);
  if (k == 0) return;
  // |v| as bit patterns orders like |v|. Find the bin (top 16 bits) holding the k-th largest.
  std::vector<std::uint32_t> histogram(1u << 16, 0);
  for (float x : v) ++histogram[magnitude_bits(x) >> 16];
  std::size_t above = 0;  // elements in bins above `bin`
  std::uint32_t bin = 0xffff;
  for (; above + histogram[bin] < k; --bin) above += histogram[bin];
  // The exact k-th largest magnitude: select among the low halves of that bin.
  std::vector<std::uint16_t> low;
  low.reserve(histogram[bin]);
  for (float x : v) {
    const std::uint32_t a = magnitude_bits(x);
    if (a >> 16 == bin) low.push_back(static_cast<std::uint16_t>(a));
  }
  const std::size_t need = k - above;  // 1 .. histogram[bin]
  std::nth_element(low.begin(), low.begin() + static_cast<std::ptrdiff_t>(need - 1), low.end(),
                   std::greater<>());
  const std::uint32_t threshold = (bin << 16) | low[need - 1];
  std::size_t greater = above;
  for (std::uint16_t x : low) greater += ((bin << 16) | x) > threshold ? 1 : 0;
  std::size_t ties = k - greater;  // elements equal to the threshold to keep: the lowest indices
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t a = magnitude_bits(v[i]);
    if (a > threshold || (a == threshold && ties > 0)) {
      if (a == threshold) --ties;
      positions.push_back(static_cast<std::uint32_t>(i));
    }
  }
}

void gather(std::span<const float> v, std::span<const std::uint32_t> positions, float scale, std::span<float> out) {
  for (std::size_t j = 0; j < positions.size(); ++j) out[j] = v[positions[j]] * scale;
}

void scatter(std::span<const std::uint32_t> positions, std::span<const float> values, std::span<float> out) {
  std::fill(out.begin(), out.end(), 0.0f);
  for (std::size_t j = 0; j < positions.size(); ++j) out[positions[j]] = values[j];
}

std::size_t rice_bytes(std::span<const std::uint32_t> positions, unsigned r) {
  // Each gap costs its quotient in ones, a zero and r remainder bits.
  std::uint64_t bits = std::uint64_t{positions.size()} * (r + 1);
  std::uint64_t next = 0;
  for (std::uint32_t p : positions) {
    bits += (p - next) >> r;
    next = std::uint64_t{p} + 1;
  }
  return static_cast<std::size_t>((bits + 7) / 8);
}

position_coding choose_position_coding(std::span<const std::uint32_t> positions, std::size_t n) {
  position_coding best{kBitmapTag, bitmap_bytes(n)};
  const std::size_t m = positions.size();
  // Rice is near-optimal for geometric gaps at r ~ log2(mean gap); try that r and its neighbours.
  const std::uint64_t gap_sum = m == 0 ? 0 : std::uint64_t{positions.back()} + 1 - m;
  const std::uint64_t mean_gap = m == 0 ? 0 : gap_sum / m;
  const int r0 = mean_gap == 0 ? 0 : static_cast<int>(std::bit_width(mean_gap)) - 1;
  for (int r = std::max(0, r0 - 1); r <= std::min(31, r0 + 1); ++r) {
    const std::size_t bytes = rice_bytes(positions, static_cast<unsigned>(r));
    if (bytes < best.bytes) best = {static_cast<std::uint8_t>(1 + r), bytes};
  }
  return best;
}

void encode_positions(std::span<const std::uint32_t> positions, std::size_t n, std::uint8_t tag,
                      std::span<std::byte> out) {
  QG_ENFORCE(tag <= kMaxRiceTag, "tag=" << unsigned{tag});
  if (tag == kBitmapTag) {
    QG_ENFORCE(out.size() == bitmap_bytes(n), "out.size()=" << out.size() << " n=" << n);
    std::fill(out.begin(), out.end(), std::byte{0});
    for (std::uint32_t p : positions) out[p / 8] |= static_cast<std::byte>(1u << (p % 8));
    return;
  }
  const unsigned r = tag - 1u;
  const std::uint64_t low_mask = (std::uint64_t{1} << r) - 1;
  lsb_writer writer(out);
  std::uint64_t next = 0;
  for (std::uint32_t p : positions) {
    const std::uint64_t gap = p - next;
    next = std::uint64_t{p} + 1;
    std::uint64_t q = gap >> r;
    for (; q >= 32; q -= 32) writer.put(0xffffffffu, 32);
    writer.put((std::uint64_t{1} << q) - 1, static_cast<unsigned>(q) + 1);  // q ones, then a zero
    if (r > 0) writer.put(gap & low_mask, r);
  }
  const std::size_t written = writer.finish();
  QG_ENFORCE(written == out.size(), "wrote " << written << " bytes into " << out.size());
}

const char* to_string(position_fault fault) {
  switch (fault) {
    case position_fault::none: return "no fault";
    case position_fault::tag: return "an unknown position coding tag";
    case position_fault::size: return "a position bitmap of the wrong size, or bytes after the positions";
    case position_fault::count: return "the wrong number of positions";
    case position_fault::range: return "a position beyond the vector";
    case position_fault::padding: return "nonzero padding bits after the positions";
  }
  return "an unknown position fault";
}

position_fault decode_positions(std::span<const std::byte> in, std::size_t n, std::uint8_t tag,
                                std::span<std::uint32_t> positions) {
  if (tag > kMaxRiceTag) return position_fault::tag;
  if (positions.size() > n) return position_fault::count;
  if (tag == kBitmapTag) return decode_bitmap(in, n, positions);
  return decode_rice(in, n, tag - 1u, positions);
}

}  // namespace qgossip::kernels
