#pragma once
// fp16 and bf16: casts to 16-bit floats (codec_id::fp16, codec_id::bf16). Deterministic, no
// parameters; inline specs "fp16" and "bf16". The conversions are kernels/cpu/half.hpp: round to
// nearest, ties to even, bit-exact and portable (no F16C, no compiler flags).
//
// Payload: the n 16-bit patterns, little-endian, 2n bytes exactly.
// fp16 (IEEE binary16): 11 significant bits, normal range [2^-14, 65504].
//   * Overflow SATURATES: |v| >= 65520 (which round-to-nearest would send to infinity) becomes
//     +-65504, so every finite input encodes. |v| in (65504, 65520) rounds to 65504 anyway.
//   * Below 2^-14 values land on the subnormal grid (multiples of 2^-24) and |v| <= 2^-25 becomes 0.
//   * Error: |C(v)_i - v_i| <= 2^-11 |v_i| in the normal range (alpha^2 = 2^-22 for vectors inside
//     it), but a vector of tiny values (all below 2^-25) or of huge ones (saturated) loses up to all
//     of it: ||C(v) - v|| <= ||v|| always (each error is at most |v_i|), and that is reached, so
//     relative_error_bound(n) = 1, honestly. Biased for the same reasons; unbiased() is false.
// bf16 (the top 16 bits of a float32): 8 significant bits, float32's exponent range.
//   * |v| >= (2 - 2^-8) 2^127 saturates to the bf16 maximum (2 - 2^-7) 2^127 (that tie would
//     otherwise round to infinity); the relative error stays <= 2^-8 there too.
//   * relative_error_bound(n) = 2^-16: |C(v)_i - v_i| <= 2^-8 |v_i| for every normal float32 v_i
//     (float32 subnormals, below 2^-126, round to the 2^-133 grid: outside every codec's bound).
// Decode rejects a wrong size and NaN/Inf patterns as errc::corrupt; every other pattern is exact in
// float32. Thread safety: immutable; encode/decode may run concurrently.
#include <memory>

#include "algorithms/compress/compressor.hpp"

namespace qgossip {

enum class half_format : std::uint8_t { fp16, bf16 };

class half_compressor final : public compressor {
 public:
  explicit half_compressor(half_format format);

  std::string_view name() const override { return format_ == half_format::fp16 ? "fp16" : "bf16"; }
  codec_id id() const override { return format_ == half_format::fp16 ? codec_id::fp16 : codec_id::bf16; }
  std::uint32_t params_tag() const override { return params_tag_; }
  std::string describe() const override { return std::string(name()); }
  bool unbiased() const override { return false; }
  double relative_error_bound(std::size_t n) const override;
  std::size_t max_encoded_bytes(std::size_t n) const override { return 2 * n; }
  void encode(std::span<const float> v, const codec_context& ctx, std::vector<std::byte>& out) const override;
  status decode(std::span<const std::byte> in, const codec_context& ctx, std::span<float> out) const override;

 private:
  half_format format_;
  std::uint32_t params_tag_;
};

// The registry's factories for spec.name == "fp16" / "bf16": no parameters (config_error otherwise).
std::unique_ptr<compressor> make_fp16(const codec_spec& spec, const layer_bounds& layers);
std::unique_ptr<compressor> make_bf16(const codec_spec& spec, const layer_bounds& layers);

}  // namespace qgossip
