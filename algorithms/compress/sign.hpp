#pragma once
// sign: scaled sign compression (signSGD's operator as CHOCO-SGD uses it). codec_id::sign. Biased.
// Inline spec "sign:bucket=0" (canonical describe()); bucket = d >= 0 values per scale, default 0 =
// the whole vector is one bucket (the last bucket may be shorter; layer bounds are ignored).
//
// Per bucket b of d_b values: C(v)_i = m_b * (-1)^{sign bit of v_i}, m_b = ||v_b||_1 / d_b (so -0 maps
// to -m_b, +0 to +m_b). Payload (kernels/cpu/sign.hpp): the count n (u32), ceil(n/d') float32 scales,
// then one bit per value: 4 + 4 ceil(n/d') + ceil(n/8) bytes exactly (d' = min(d, n), n for d = 0).
//
// Error, per bucket: ||C(v_b) - v_b||^2 = ||v_b||^2 - ||v_b||_1^2 / d_b exactly (for the exact m_b),
// i.e. relative error 1 - ||v_b||_1^2 / (d_b ||v_b||_2^2) <= 1 - 1/d_b, with equality for a one-hot
// bucket (||v||_1 >= ||v||_2), and 0 for a constant-magnitude bucket. Summed over buckets:
// relative_error_bound(n) = 1 - (1 - 2^-40)/d' (d' = 1: 0, the value itself); the 2^-40 covers the
// rounding of m_b to float (|relative error| <= 2^-20 gives an extra d_b m_b^2 delta^2). As for every codec,
// the bound assumes the bucket means are normal floats (>= 2^-126); a bucket of float32 subnormals
// can lose all its precision (relative error up to 1).
// Input must be finite (QG_ENFORCE in encode, out untouched). Decode rejects a wrong size or count, a NaN,
// infinite or negative (-0 included) scale and nonzero padding as errc::corrupt; every other payload
// is a valid encoding. Thread safety: immutable; encode/decode may run concurrently.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "algorithms/compress/compressor.hpp"
#include "kernels/cpu/sign.hpp"

namespace qgossip {

struct sign_options {
  std::size_t bucket = 0;  // d; 0 = the whole vector is one bucket
};

class sign_compressor final : public compressor {
 public:
  explicit sign_compressor(const sign_options& options);

  std::string_view name() const override { return "sign"; }
  codec_id id() const override { return codec_id::sign; }
  std::uint32_t params_tag() const override { return params_tag_; }
  std::string describe() const override { return "sign:bucket=" + std::to_string(options_.bucket); }
  bool unbiased() const override { return false; }
  double relative_error_bound(std::size_t n) const override;
  std::size_t max_encoded_bytes(std::size_t n) const override { return layout_.encoded_bytes(n); }
  void encode(std::span<const float> v, const codec_context& ctx, std::vector<std::byte>& out) const override;
  status decode(std::span<const std::byte> in, const codec_context& ctx, std::span<float> out) const override;
  // Entropy of the sign bits, one binary symbol per value (the scales are side information).
  double entropy_bits_per_value(std::span<const std::byte> encoded, std::size_t n,
                                const codec_context& ctx) const override;

 private:
  sign_options options_;
  kernels::sign_layout layout_;
  std::uint32_t params_tag_;
};

// The registry's factory for spec.name == "sign" (config_error when invalid).
std::unique_ptr<compressor> make_sign(const codec_spec& spec, const layer_bounds& layers);

}  // namespace qgossip
