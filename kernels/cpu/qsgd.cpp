#include "kernels/cpu/qsgd.hpp"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "core/errors.hpp"
#include "core/work_pool.hpp"
#include "kernels/cpu/bitpack.hpp"
#include "kernels/cpu/simd.hpp"
#include "kernels/cpu/uniforms.hpp"

static_assert(std::endian::native == std::endian::little, "the QSGD payload is little-endian");

namespace qgossip::kernels {
namespace {

// Values per inner step: uniforms and codes for one tile stay in L1 between the passes.
constexpr std::size_t kTile = 1024;

// The loops below are instantiated twice: as compiled (portable) and inside QG_TARGET_AVX512 clones,
// where the compiler vectorizes them with 512-bit registers. Forced inlining puts them in the clone.
#define QG_INLINE inline __attribute__((always_inline))

QG_INLINE float scale_l2(const float* v, std::size_t d, bool& finite) {
  constexpr int L = kQsgdScaleLanes;
  double acc[L] = {};
  std::size_t i = 0;
  for (; i + L <= d; i += L)
    for (int j = 0; j < L; ++j) {
      const double x = v[i + j];
      acc[j] += x * x;
    }
  for (int j = 0; i + j < d; ++j) {
    const double x = v[i + j];
    acc[j] += x * x;
  }
  for (int off = L / 2; off > 0; off /= 2)
    for (int j = 0; j < off; ++j) acc[j] += acc[j + off];
  const double sum = acc[0];
  finite = sum <= DBL_MAX;  // false for +Inf and NaN; finite squares cannot overflow a double
  const double norm = std::sqrt(sum);
  return norm > double{FLT_MAX} ? FLT_MAX : static_cast<float>(norm);
}

QG_INLINE float scale_max(const float* v, std::size_t d, bool& finite) {
  // On |v| as bit patterns the integer order is the float order, Inf above every finite value and
  // NaN above Inf; an integer max reduction vectorizes without -ffast-math.
  std::uint32_t m = 0;
  for (std::size_t i = 0; i < d; ++i) {
    std::uint32_t u;
    std::memcpy(&u, v + i, 4);
    u &= 0x7fffffffu;
    m = u > m ? u : m;
  }
  finite = m < 0x7f800000u;
  float s;
  std::memcpy(&s, &m, 4);
  return s;
}

QG_INLINE float bucket_scale(const float* v, std::size_t d, qsgd_norm norm, bool& finite) {
  return norm == qsgd_norm::l2 ? scale_l2(v, d, finite) : scale_max(v, d, finite);
}

template <typename Code>
QG_INLINE void quantize_tile(const float* v, std::size_t m, float scale, std::uint32_t levels, const float* u,
                             Code* codes) {
  const float levels_f = static_cast<float>(levels);
  const auto s = static_cast<std::int32_t>(levels);
  const auto sign_shift = static_cast<std::int32_t>(qsgd_code_bits(levels) - 1);
  // The branches of qsgd_quantize_value, hoisted out of the loop (they depend on the bucket only).
  if (!(scale > 0.0f)) {
    std::fill_n(codes, m, Code{0});
  } else if (qsgd_ratio_form(scale)) {
    const float ratio = qsgd_ratio(scale, levels_f);
    for (std::size_t i = 0; i < m; ++i) {
      const std::uint32_t v_bits = qg_float_bits(v[i]);
      const float x = qg_fmul(qg_bits_float(v_bits & 0x7fffffffu), ratio);
      codes[i] = static_cast<Code>(qsgd_code_of(x, v_bits, u[i], s, sign_shift));
    }
  } else {
    for (std::size_t i = 0; i < m; ++i)
      codes[i] = static_cast<Code>(qsgd_quantize_value(v[i], scale, 0.0f, levels_f, s, sign_shift, u[i]));
  }
}

// Dequantizes m codes; returns nonzero iff one of them is invalid.
template <typename Code>
QG_INLINE std::uint32_t dequantize_tile(const Code* codes, std::size_t m, float step, std::uint32_t levels,
                                        float* out) {
  const std::uint32_t sign_shift = qsgd_code_bits(levels) - 1;
  const std::uint32_t sign_bit = 1u << sign_shift;
  std::uint32_t bad = 0;
  for (std::size_t i = 0; i < m; ++i) {
    const std::uint32_t c = codes[i];
    bad |= static_cast<std::uint32_t>(qsgd_code_invalid(c, levels, sign_bit));
    out[i] = qsgd_dequantize_code(c, step, sign_bit - 1, sign_shift);
  }
  return bad;
}

// Whether any code is out of range (a level above s, or a negative zero): no early exit, so the loop
// vectorizes; first_bad_code then finds which.
template <typename Code>
QG_INLINE bool any_bad_code(const Code* codes, std::size_t m, std::uint32_t levels) {
  const std::uint32_t sign_bit = 1u << (qsgd_code_bits(levels) - 1);
  std::uint32_t bad = 0;
  for (std::size_t i = 0; i < m; ++i)
    bad |= static_cast<std::uint32_t>(qsgd_code_invalid(codes[i], levels, sign_bit));
  return bad != 0;
}

template <typename Code>
std::size_t first_bad_code(const Code* codes, std::size_t m, std::uint32_t levels) {
  const std::uint32_t sign_bit = 1u << (qsgd_code_bits(levels) - 1);
  for (std::size_t i = 0; i < m; ++i)
    if (qsgd_code_invalid(codes[i], levels, sign_bit)) return i;
  return m;
}

void check_layout(const qsgd_layout& layout) {
  QG_ENFORCE(layout.levels >= 1 && layout.levels <= kQsgdMaxLevels, "levels=" << layout.levels);
}

// One piece of a split encode or decode: buckets [first, last) of a vector of n values, whose codes
// start on a byte boundary (pieces_of below), packed into or read from their own bytes.
struct bucket_piece {
  std::size_t n, first, last;
};

// The code bytes of a piece: from its first code's byte to its last code's (to the end of the
// payload for the last piece, which holds the padding).
template <typename Byte>
std::span<Byte> piece_bytes(std::span<Byte> codes, const qsgd_layout& layout, const bucket_piece& p) {
  const std::size_t d = layout.bucket_size(p.n);
  const std::size_t begin = p.first * d * layout.bits() / 8;
  if (p.last == layout.bucket_count(p.n)) return codes.subspan(begin);
  return codes.subspan(begin, p.last * d * layout.bits() / 8 - begin);
}

// The values an encode reads: v = a, or v = a - b (b not empty: qsgd_encode_difference), whose
// bucket is computed into a scratch of the bucket's size, thread_local (one per thread of a split).
struct encode_source {
  std::span<const float> a, b;

  const float* bucket(std::size_t start, std::size_t len) const {
    if (b.empty()) return a.data() + start;
    thread_local std::vector<float> scratch;
    if (scratch.size() < len) scratch.resize(len);
    const float* __restrict ap = a.data() + start;
    const float* __restrict bp = b.data() + start;
    float* __restrict out = scratch.data();
    for (std::size_t i = 0; i < len; ++i) out[i] = ap[i] - bp[i];
    return out;
  }
};

template <typename Code>
QG_INLINE bool encode_body(simd_level simd, const encode_source& source, const qsgd_layout& layout,
                           const philox_stream& rng, std::span<std::byte> out, const bucket_piece& p) {
  const std::size_t d = layout.bucket_size(p.n);
  const unsigned bits = layout.bits();
  bit_writer writer(piece_bytes(out.subspan(layout.scale_bytes(p.n)), layout, p));
  alignas(64) float u[kTile];
  alignas(64) Code codes[kTile];
  for (std::size_t b = p.first; b < p.last; ++b) {
    const std::size_t start = b * d;
    const std::size_t len = std::min(d, p.n - start);
    const float* v = source.bucket(start, len);
    bool finite = true;
    const float scale = bucket_scale(v, len, layout.norm, finite);
    if (!finite) return false;
    std::memcpy(out.data() + 4 * b, &scale, 4);
    for (std::size_t t = 0; t < len; t += kTile) {
      const std::size_t m = std::min(kTile, len - t);
      philox_uniforms(simd, rng, start + t, std::span<float>(u, m));
      quantize_tile(v + t, m, scale, layout.levels, u, codes);
      writer.put(std::span<const Code>(codes, m), bits);
    }
  }
  writer.finish();
  return true;
}

// What a decode does with the values: writes them (qsgd_decode), adds them into out (qsgd_decode_add),
// or only checks them (qsgd_validate; out is empty then).
enum class decode_mode { write, add, check };

template <decode_mode Mode, typename Code>
QG_INLINE qsgd_decode_result decode_body(std::span<const std::byte> in, const qsgd_layout& layout,
                                         std::span<float> out, const bucket_piece& p) {
  const std::size_t d = layout.bucket_size(p.n);
  const unsigned bits = layout.bits();
  const float levels_f = static_cast<float>(layout.levels);
  bit_reader reader(piece_bytes(in.subspan(layout.scale_bytes(p.n)), layout, p));
  alignas(64) Code codes[kTile];
  alignas(64) float values[kTile];
  for (std::size_t b = p.first; b < p.last; ++b) {
    std::uint32_t scale_bits;
    std::memcpy(&scale_bits, in.data() + 4 * b, 4);
    if (!qsgd_scale_valid(scale_bits)) return {qsgd_fault::scale, b};
    const float step = qg_fdiv(qg_bits_float(scale_bits), levels_f);
    const std::size_t start = b * d;
    const std::size_t len = std::min(d, p.n - start);
    for (std::size_t t = 0; t < len; t += kTile) {
      const std::size_t m = std::min(kTile, len - t);
      reader.get(std::span<Code>(codes, m), bits);
      if constexpr (Mode == decode_mode::check) {
        if (any_bad_code(codes, m, layout.levels))
          return {qsgd_fault::code, start + t + first_bad_code(codes, m, layout.levels)};
        continue;
      }
      float* to = Mode == decode_mode::write ? out.data() + start + t : values;
      if (dequantize_tile(codes, m, step, layout.levels, to) != 0)
        return {qsgd_fault::code, start + t + first_bad_code(codes, m, layout.levels)};
      if constexpr (Mode == decode_mode::add) {
        float* __restrict o = out.data() + start + t;
        for (std::size_t i = 0; i < m; ++i) o[i] += values[i];
      }
    }
  }
  if (p.last == layout.bucket_count(p.n) && !reader.rest_is_zero()) return {qsgd_fault::padding, p.n};
  return {};
}

bool encode_portable(simd_level simd, const encode_source& v, const qsgd_layout& layout,
                     const philox_stream& rng, std::span<std::byte> out, const bucket_piece& p) {
  return layout.bits() <= 8 ? encode_body<std::uint8_t>(simd, v, layout, rng, out, p)
                            : encode_body<std::uint16_t>(simd, v, layout, rng, out, p);
}

template <decode_mode Mode>
qsgd_decode_result decode_portable(std::span<const std::byte> in, const qsgd_layout& layout,
                                   std::span<float> out, const bucket_piece& p) {
  return layout.bits() <= 8 ? decode_body<Mode, std::uint8_t>(in, layout, out, p)
                            : decode_body<Mode, std::uint16_t>(in, layout, out, p);
}

#if defined(QG_HAVE_AVX512_CLONES)
QG_TARGET_AVX512 bool encode_avx512(simd_level simd, const encode_source& v, const qsgd_layout& layout,
                                    const philox_stream& rng, std::span<std::byte> out, const bucket_piece& p) {
  return layout.bits() <= 8 ? encode_body<std::uint8_t>(simd, v, layout, rng, out, p)
                            : encode_body<std::uint16_t>(simd, v, layout, rng, out, p);
}

template <decode_mode Mode>
QG_TARGET_AVX512 qsgd_decode_result decode_avx512(std::span<const std::byte> in, const qsgd_layout& layout,
                                                  std::span<float> out, const bucket_piece& p) {
  return layout.bits() <= 8 ? decode_body<Mode, std::uint8_t>(in, layout, out, p)
                            : decode_body<Mode, std::uint16_t>(in, layout, out, p);
}
#endif

// Buckets per piece when a vector of n values is split over the calling thread's work_pool: about
// kElementGrain values, in a whole number of buckets whose codes fill whole bytes, so every piece
// packs its own bytes and the payload is the same whatever the split. The pieces depend on n and
// the layout only.
std::size_t buckets_per_piece(std::size_t n, const qsgd_layout& layout) {
  const std::size_t d = layout.bucket_size(n);
  const std::size_t whole_bytes = 8 / std::gcd<std::size_t>(d * layout.bits() % 8, 8);
  const std::size_t per = std::max<std::size_t>(1, kElementGrain / std::max<std::size_t>(d, 1));
  return (per + whole_bytes - 1) / whole_bytes * whole_bytes;
}

bool succeeded(bool encoded) { return encoded; }
bool succeeded(const qsgd_decode_result& decoded) { return decoded.ok(); }

// Runs piece(p) for every piece of a vector of n values, on the calling thread's work_pool, and
// returns the result of the first piece (in the vector's order) that did not succeed, else ok.
template <typename Result, typename Piece>
Result split_buckets(std::size_t n, const qsgd_layout& layout, Result ok, Piece piece) {
  const std::size_t buckets = layout.bucket_count(n);
  const std::size_t per = buckets_per_piece(n, layout);
  const std::size_t pieces = (buckets + per - 1) / per;
  if (pieces <= 1) return piece(bucket_piece{n, 0, buckets});
  struct slot {  // one object per piece: no two pieces write one word (as std::vector<bool>'s would)
    Result r;
  };
  std::vector<slot> results(pieces, slot{ok});
  parallel_ranges(buckets, per, [&](std::size_t first, std::size_t last) {
    results[first / per].r = piece(bucket_piece{n, first, last});
  });
  for (const slot& s : results)
    if (!succeeded(s.r)) return s.r;
  return ok;
}

}  // namespace

float qsgd_bucket_scale(std::span<const float> bucket, qsgd_norm norm, bool& finite) {
  return bucket_scale(bucket.data(), bucket.size(), norm, finite);
}

void qsgd_quantize_levels(std::span<const float> v, std::uint64_t first, float scale, std::uint32_t levels,
                          const philox_stream& rng, std::span<std::int32_t> out) {
  check_layout(qsgd_layout{levels, 0, qsgd_norm::l2});
  QG_ENFORCE(out.size() == v.size(), "out=" << out.size() << " v=" << v.size());
  // Codes as the dense path makes them (16-bit, sign at bit 15 for every s <= 32767), then signed.
  constexpr std::int32_t kSign = 1 << 15;
  alignas(64) float u[kTile];
  alignas(64) std::uint16_t codes[kTile];
  const auto s = static_cast<std::int32_t>(levels);
  const float levels_f = static_cast<float>(levels);
  const float ratio = qsgd_ratio(scale, levels_f);
  for (std::size_t t = 0; t < v.size(); t += kTile) {
    const std::size_t m = std::min(kTile, v.size() - t);
    philox_uniforms(rng, first + t, std::span<float>(u, m));
    for (std::size_t i = 0; i < m; ++i)
      codes[i] = static_cast<std::uint16_t>(qsgd_quantize_value(v[t + i], scale, ratio, levels_f, s, 15, u[i]));
    for (std::size_t i = 0; i < m; ++i) {
      const std::int32_t c = codes[i];
      const std::int32_t l = c & (kSign - 1);
      out[t + i] = (c & kSign) ? -l : l;
    }
  }
}

bool qsgd_encode(std::span<const float> v, const qsgd_layout& layout, const philox_stream& rng,
                 std::span<std::byte> out) {
  static const simd_level best = best_simd();
  return qsgd_encode(best, v, layout, rng, out);
}

namespace {

bool encode_split(simd_level simd, const encode_source& v, const qsgd_layout& layout, const philox_stream& rng,
                  std::span<std::byte> out) {
  check_layout(layout);
  QG_ENFORCE(simd_supported(simd), "SIMD level " << to_string(simd) << " is not supported here");
  QG_ENFORCE(out.size() == layout.encoded_bytes(v.a.size()),
             "out=" << out.size() << " expected=" << layout.encoded_bytes(v.a.size()));
  return split_buckets(v.a.size(), layout, true, [&](const bucket_piece& p) {
#if defined(QG_HAVE_AVX512_CLONES)
    if (simd == simd_level::avx512) return encode_avx512(simd, v, layout, rng, out, p);
#endif
    return encode_portable(simd, v, layout, rng, out, p);
  });
}

}  // namespace

bool qsgd_encode(simd_level simd, std::span<const float> v, const qsgd_layout& layout,
                 const philox_stream& rng, std::span<std::byte> out) {
  return encode_split(simd, encode_source{v, {}}, layout, rng, out);
}

bool qsgd_encode_difference(std::span<const float> a, std::span<const float> b, const qsgd_layout& layout,
                            const philox_stream& rng, std::span<std::byte> out) {
  QG_ENFORCE(a.size() == b.size(), a.size() << " vs " << b.size());
  QG_ENFORCE(layout.bucket_size(a.size()) <= kQsgdMaxDifferenceBucket,
             "a bucket of " << layout.bucket_size(a.size()) << " values: encode the difference whole");
  static const simd_level best = best_simd();
  return encode_split(best, encode_source{a, b}, layout, rng, out);
}

qsgd_decode_result qsgd_decode(std::span<const std::byte> in, const qsgd_layout& layout,
                               std::span<float> out) {
  static const simd_level best = best_simd();
  return qsgd_decode(best, in, layout, out);
}

namespace {

// A decode of n values in any mode, split over the calling thread's work_pool.
template <decode_mode Mode>
qsgd_decode_result decode_split(simd_level simd, std::span<const std::byte> in, const qsgd_layout& layout,
                                std::size_t n, std::span<float> out) {
  check_layout(layout);
  QG_ENFORCE(simd_supported(simd), "SIMD level " << to_string(simd) << " is not supported here");
  if (in.size() != layout.encoded_bytes(n)) return {qsgd_fault::size, in.size()};
  return split_buckets(n, layout, qsgd_decode_result{}, [&](const bucket_piece& p) {
#if defined(QG_HAVE_AVX512_CLONES)
    if (simd == simd_level::avx512) return decode_avx512<Mode>(in, layout, out, p);
#endif
    return decode_portable<Mode>(in, layout, out, p);
  });
}

}  // namespace

qsgd_decode_result qsgd_decode(simd_level simd, std::span<const std::byte> in, const qsgd_layout& layout,
                               std::span<float> out) {
  return decode_split<decode_mode::write>(simd, in, layout, out.size(), out);
}

qsgd_decode_result qsgd_validate(std::span<const std::byte> in, const qsgd_layout& layout, std::size_t n) {
  static const simd_level best = best_simd();
  return decode_split<decode_mode::check>(best, in, layout, n, {});
}

void qsgd_decode_add(std::span<const std::byte> in, const qsgd_layout& layout, std::span<float> out) {
  static const simd_level best = best_simd();
  const qsgd_decode_result r = decode_split<decode_mode::add>(best, in, layout, out.size(), out);
  QG_ENFORCE(r.ok(), "qsgd_decode_add of a payload that does not validate: fault " << static_cast<int>(r.fault)
                                                                                     << " at " << r.index);
}

}  // namespace qgossip::kernels
